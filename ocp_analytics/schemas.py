"""Column types, declared once.

Two kinds of declaration live here and nowhere else:

* ``DOCUMENT_DTYPE``: the polars dtype a run document is decoded into. Only
  the fields ocp-analytics reads are declared; readers ignore the rest (as
  OCP asks). Integers are declared ``Float64`` so that ``14.5`` is seen (and
  reported) rather than silently truncated; timestamps are ``String`` and
  parsed afterwards (docs/figures.md "Times").
* One pyarrow schema per table of the dataset. Every table is cast to its
  schema before it is written; no column type is inferred from data. The
  outputs (acceptance rows, flips) are declared the same way; their polars
  schemas are derived (:func:`polars_schema`).

Of ours, imports only ``_typing`` (the words of the tiers).
"""

from __future__ import annotations

from typing import Any, get_args

import polars as pl
import pyarrow as pa

from ocp_analytics._typing import Tier

OCP_VERSIONS = ("0.1", "0.2", "0.3")
OUTCOME_TIERS: tuple[Tier, ...] = get_args(Tier)
TIER_Q: dict[Tier, float] = {
    "verified": 0.98,
    "reported": 0.95,
    "heuristic": 0.80,
    "asserted": 0.70,
}
SIGNAL_KINDS = ("verdict", "score", "event")
VERDICT_VALUES = ("accept", "reject", "pass", "fail", "error")
BETTER_VALUES = ("higher", "lower")
SCALE_VALUES = ("linear", "log", "fraction")
CONFIGURATION_SOURCES = ("usual", "alternative", "exploration", "user_edit", "habit", "designed")
PROVENANCE_KINDS = ("logged", "designed")
OUTCOME_RESULTS = ("done", "failed", "rejected", "canceled", "settled_unverified", "lost")
ATTEMPT_STATUSES = (
    "queued",
    "working",
    "done",
    "failed",
    "rejected",
    "canceled",
    "settled_unverified",
    "lost",
)

# --- the decode dtype -------------------------------------------------------

# Token counts of ``attempt.cost`` (integers, decoded as Float64 and checked).
COST_TOKENS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_creation_tokens",
    "output_tokens",
    "reasoning_tokens",
)

_S = pl.String
_F = pl.Float64

SIGNAL_DTYPE = pl.Struct(
    {
        "id": _S,
        "kind": _S,
        "name": _S,
        "value": _S,
        "unit": _S,
        "better": _S,
        "target": _F,
        "scale": _S,
        "at_attempt": _S,
        "observed_at": _S,
        "source": pl.Struct({"kind": _S, "ref": _S}),
        "tier": _S,
        # Written only by the per-document sanitizer: the JSON type of
        # ``value`` when the text alone cannot tell it (``"3.5"`` vs ``3.5``).
        "_ocpa_vtype": _S,
    }
)

ATTEMPT_DTYPE = pl.Struct(
    {
        "id": _S,
        "node": _S,
        "n": _F,
        "round": _F,
        "status": _S,
        "started_at": _S,
        "ended_at": _S,
        "outcome": pl.Struct({"result": _S, "evidence": _S}),
        "model": pl.Struct({"raw": _S, "id": _S}),
        "effort": _S,
        "harness": _S,
        "role": pl.Struct({"value": _S}),
        "phase": pl.Struct({"value": _S}),
        "cause": pl.Struct({"type": _S}),
        "cost": pl.Struct({"usd": _F, **dict.fromkeys(COST_TOKENS, _F)}),
    }
)

ARTIFACT_DTYPE = pl.Struct(
    {
        "id": _S,
        "path": _S,
        "kind": pl.Struct({"value": _S}),
        "producer": _S,
        "first_write_at": _S,
    }
)

RUN_DTYPE = pl.Struct(
    {
        "id": _S,
        "title": _S,
        "started_at": _S,
        "ended_at": _S,
        "task": pl.Struct({"id": _S, "type": _S, "subtype": _S, "repo": _S, "org": _S}),
        "configuration": pl.Struct({"id": _S, "source": _S}),
        "provenance": pl.Struct({"kind": _S}),
        "signals": pl.List(SIGNAL_DTYPE),
    }
)

# ``run.labels`` and ``run.acceptance_rule`` are deliberately absent: they are
# read from their own JSON text (free keys; a rule's defects must mark it
# invalid rather than fail the document). The decode marks only whether each
# is an object (``decode.DECODE_DTYPE``).
DOCUMENT_DTYPE = pl.Struct(
    {
        "ocp": _S,
        "producer": pl.Struct({"name": _S, "version": _S}),
        "run": RUN_DTYPE,
        "attempts": pl.List(ATTEMPT_DTYPE),
        "artifacts": pl.List(ARTIFACT_DTYPE),
    }
)

# --- table schemas ----------------------------------------------------------

TS = pa.timestamp("us", tz="UTC")
STR = pa.string()
I64 = pa.int64()
F64 = pa.float64()

_DOC_KEY = [
    pa.field("run_id", STR, nullable=False),
    pa.field("doc_id", I64, nullable=False),
]

RUNS = pa.schema(
    [
        *_DOC_KEY,
        pa.field("ocp_version", STR),
        pa.field("producer_name", STR),
        pa.field("producer_version", STR),
        pa.field("started_at", TS),
        pa.field("started_at_raw", STR),
        pa.field("ended_at", TS),
        pa.field("ended_at_raw", STR),
        pa.field("title", STR),
        pa.field("labels", pa.map_(STR, STR)),
        pa.field("task_id", STR),
        pa.field("task_type", STR),
        pa.field("task_subtype", STR),
        pa.field("repo", STR),
        pa.field("org", STR),
        pa.field("configuration_id", STR),
        pa.field("configuration_source", STR),
        pa.field("provenance_kind", STR),
        pa.field("rule_name", STR),
        pa.field("n_attempts", pa.int32()),
        pa.field("n_signals", pa.int32()),
        pa.field("source_path", STR),
        pa.field("source_line", I64),
        pa.field("source_index", I64),
        pa.field("doc_sha256", STR),
        pa.field("batch_id", STR),
    ]
)

ATTEMPTS = pa.schema(
    [
        *_DOC_KEY,
        pa.field("att_idx", pa.int32(), nullable=False),
        pa.field("attempt_id", STR),
        pa.field("node", STR),
        pa.field("n", I64),
        pa.field("round", I64),
        pa.field("status", STR),
        pa.field("started_at", TS),
        pa.field("started_at_raw", STR),
        pa.field("ended_at", TS),
        pa.field("ended_at_raw", STR),
        pa.field("outcome_result", STR),
        pa.field("outcome_evidence", STR),
        pa.field("model_raw", STR),
        pa.field("model_id", STR),
        pa.field("effort", STR),
        pa.field("harness", STR),
        pa.field("role", STR),
        pa.field("phase", STR),
        pa.field("cause_type", STR),
        pa.field("cost_usd", F64),
        pa.field("input_tokens", I64),
        pa.field("cached_input_tokens", I64),
        pa.field("cache_creation_tokens", I64),
        pa.field("output_tokens", I64),
        pa.field("reasoning_tokens", I64),
    ]
)

SIGNALS = pa.schema(
    [
        *_DOC_KEY,
        pa.field("sig_idx", pa.int32(), nullable=False),
        pa.field("signal_id", STR),
        pa.field("kind", STR),
        pa.field("name", STR),
        pa.field("value_text", STR),
        pa.field("value_num", F64),
        pa.field("value_json", STR),
        pa.field("unit", STR),
        pa.field("better", STR),
        pa.field("target", F64),
        pa.field("scale", STR),
        pa.field("at_attempt", STR),
        # the attempt at_attempt names, linked at ingest (docs/figures.md "The attempt
        # at acceptance"): its place (0: none of the run's attempts), n and round
        pa.field("attempt_pos", pa.int32()),
        pa.field("attempt_n", I64),
        pa.field("attempt_round", I64),
        pa.field("observed_at", TS),
        pa.field("observed_at_raw", STR),
        pa.field("source_kind", STR),
        pa.field("source_ref", STR),
        pa.field("tier", STR),
    ]
)

RULES = pa.schema(
    [
        *_DOC_KEY,
        pa.field("name", STR),
        pa.field("definition", STR),
        pa.field("requires", pa.list_(STR)),
        pa.field("score_name", STR),
        pa.field("score_target", F64),
        pa.field("score_better", STR),
        pa.field("score_scale", STR),
        pa.field("excludes_events", pa.list_(STR)),
        pa.field("window_days", I64),
        pa.field("valid", pa.bool_(), nullable=False),
        pa.field("invalid_reason", STR),
    ]
)

ARTIFACTS = pa.schema(
    [
        *_DOC_KEY,
        pa.field("art_idx", pa.int32(), nullable=False),
        pa.field("artifact_id", STR),
        pa.field("path", STR),
        pa.field("kind", STR),
        pa.field("producer", STR),
        pa.field("first_write_at", TS),
        pa.field("first_write_at_raw", STR),
    ]
)

FINDINGS = pa.schema(
    [
        *_DOC_KEY,
        pa.field("code", STR, nullable=False),
        pa.field("json_path", STR),
        pa.field("message", STR),
        pa.field("source_path", STR),
        pa.field("source_line", I64),
        pa.field("source_index", I64),
    ]
)

QUARANTINE = pa.schema(
    [
        pa.field("batch_id", STR, nullable=False),
        pa.field("source_path", STR),
        pa.field("source_line", I64),
        pa.field("source_index", I64),
        pa.field("code", STR, nullable=False),
        pa.field("message", STR),
        pa.field("json_path", STR),
        pa.field("raw_head", STR),
    ]
)

# Late events that arrive apart from their run (docs/late-events.md): OCP signals of
# kind "event" plus the commit they concern, matched to runs at read time
# through the runs' commit/merge artifacts. Not per run: every committed row is
# current (an event id is stored once; the first stored record wins, see events.py).
EVENTS = pa.schema(
    [
        pa.field("event_id", STR, nullable=False),
        pa.field("commit", STR),
        pa.field("kind", STR),
        pa.field("name", STR),
        pa.field("value_text", STR),
        pa.field("observed_at", TS),
        pa.field("observed_at_raw", STR),
        pa.field("source_kind", STR),
        pa.field("source_ref", STR),
        pa.field("tier", STR),
        pa.field("batch_id", STR, nullable=False),
        pa.field("source_path", STR),
        pa.field("source_line", pa.int64()),
        pa.field("source_index", pa.int64()),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "runs": RUNS,
    "attempts": ATTEMPTS,
    "signals": SIGNALS,
    "rules": RULES,
    "artifacts": ARTIFACTS,
    "findings": FINDINGS,
    "quarantine": QUARANTINE,
    "events": EVENTS,
}

# Parquet encoding of the dataset's parts. Only texts with few distinct values
# are dictionary-encoded (ids, timestamps' texts, messages are plain: a
# dictionary there is built, outgrown and dropped on every page, and zstd
# packs them smaller anyway); min/max statistics only where a reader can prune
# on them: numbers, instants, and the texts of which a part holds one or a
# few neighbouring values (``_PART_CONSTANT``). A few-valued text such as
# ``kind`` spans its whole range in every part, so its statistics prune
# nothing and only cost time. Both cut a part's CPU and size: see
# benchmarks/RESULTS.md, "Ingest: one read per file, ..." (2026-12-05) and
# (b91c147) under "Ingest: what the fast path reads" (2026-12-05/06).
_FEW_VALUES = frozenset(
    {
        "ocp_version", "producer_name", "producer_version", "task_type", "task_subtype",
        "repo", "org", "configuration_source", "provenance_kind", "rule_name", "source_path",
        "batch_id", "node", "status", "outcome_result", "outcome_evidence", "model_raw",
        "model_id", "effort", "harness", "role", "phase", "cause_type", "kind", "name", "unit",
        "better", "scale", "at_attempt", "source_kind", "tier", "code", "score_name",
        "score_better", "score_scale",
    }
)  # fmt: skip


_PART_CONSTANT = ("batch_id", "source_path")


def parquet_options(table: str) -> dict[str, Any]:
    """``pyarrow.parquet.write_table`` options for a part of ``table``.

    Parts do not store the Arrow schema (see :func:`part_table`).

    Examples
    --------
    >>> o = parquet_options("signals")
    >>> "kind" in o["use_dictionary"], "signal_id" in o["use_dictionary"]
    (True, False)
    >>> [c in o["write_statistics"] for c in ("observed_at", "kind", "value_json")]
    [True, False, False]
    >>> "batch_id" in parquet_options("runs")["write_statistics"]
    True
    """
    schema = TABLES[table]
    few = [f.name for f in schema if f.name in _FEW_VALUES and f.type == STR]
    plain = (STR, pa.large_string())
    flat = [f.name for f in schema if f.type not in plain and not pa.types.is_nested(f.type)]
    constant = [c for c in _PART_CONSTANT if c in schema.names]
    return {"use_dictionary": few, "write_statistics": flat + constant, "store_schema": False}


def as_views(t: pa.DataType) -> pa.DataType:
    """``t`` with every string as a string view: how polars hands texts over without a copy.

    Examples
    --------
    >>> as_views(pa.map_(pa.string(), pa.large_string()))
    MapType(map<string_view, string_view>)
    """
    if t in (STR, pa.large_string()):
        return pa.string_view()
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        return pa.map_(key.with_type(as_views(key.type)), item.with_type(as_views(item.type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(as_views(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(as_views(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(as_views(f.type)) for f in t])
    return t


# What a part is handed to the Parquet writer as: the declared schema with its
# strings as string views, polars' own layout, so no text is copied on the way.
_PART_SCHEMAS = {
    name: pa.schema([f.with_type(as_views(f.type)) for f in schema])
    for name, schema in TABLES.items()
}


def part_table(frame: pl.DataFrame, table: str) -> pa.Table:
    """A frame of ``table`` as Arrow, as its Parquet part is written.

    Strings are handed over as string views (no copy, where large strings cost
    a good part of a chunk's CPU: benchmarks/RESULTS.md, (0cb6996) "Parts from
    polars' own strings"). Parquet stores them as it
    stores any string, and the Arrow schema is not stored (``store_schema``
    off), so every reader (pyarrow, polars, DuckDB, Spark) reads the declared
    types from Parquet's own schema: strings as ``string``, instants in UTC,
    the declared nullability.

    Examples
    --------
    >>> t = part_table(pl.DataFrame(schema=polars_schema("findings")), "findings")
    >>> t.schema.field("code").type, t.schema.field("code").nullable
    (DataType(string_view), False)
    """
    return frame.to_arrow(compat_level=pl.CompatLevel.newest()).cast(_PART_SCHEMAS[table])


# Tables holding one version of a run's content, keyed by ``doc_id``.
RUN_TABLES = ("runs", "attempts", "signals", "rules", "artifacts", "findings")


# What the engine writes: one row per (run, rule) (docs/figures.md, "Per run: the
# acceptance table"); large strings,
# as polars hands them to Arrow. Only the four attempt columns can be null;
# the others are declared ``not null`` (Parquet REQUIRED), which readers can
# rely on and which spares the writer their definition levels (less of its
# CPU: benchmarks/RESULTS.md, (30fb182) under "The deciding attempt picked
# once a part, required columns", 2026-12-05). Casting a null into them fails.
_LSTR = pa.large_string()


def _required(name: str, t: pa.DataType) -> pa.Field:
    return pa.field(name, t, nullable=False)


ACCEPTANCE = pa.schema(
    [
        _required("run_id", _LSTR),
        _required("rule", _LSTR),
        _required("outcome", _LSTR),
        _required("reasons", pa.large_list(_required("item", _LSTR))),
        _required("tier", _LSTR),
        _required("q", pa.float64()),
        ("accepted_attempt", _LSTR),
        ("attempts_to_acceptance", pa.int64()),
        ("accepted_attempt_n", pa.int64()),
        ("accepted_round", pa.int64()),
        _required("window_open", pa.bool_()),
        _required("as_of", TS),
    ]
)

# Rule-versus-rule comparison (docs/figures.md "Comparing rules", docs/statistics.md): per ordered
# pair of rules (group columns, when any, come first):
# - ``runs_compared``: runs evaluated under both rules; ``flips``: of those,
#   accepted under ``rule_a`` and not under ``rule_b`` (rejected or unknown);
# - the paired table over the runs decided under both: ``a`` accepted under
#   both, ``b`` accepted under ``rule_a`` and rejected under ``rule_b``, ``c``
#   the reverse, ``d`` rejected under both; ``n = a + b + c + d``;
# - ``difference`` = accept rate under ``rule_a`` minus under ``rule_b`` over
#   those ``n`` runs, ``(b - c) / n``, with Newcombe's paired 95 % interval;
# - McNemar's two-sided ``p_value``, its ``p_method`` (``exact`` or
#   ``chi2-cc``) and ``p_holm``, Holm's adjustment across the comparison's
#   cells (all null when ``n = 0``);
# - ``sample_run_ids``: the first few flipped runs' ids.
# ``flips`` counts ``b`` and the runs unknown under ``rule_b``; it is not
# symmetric, while the table of the reverse pair swaps ``b`` and ``c``.
_COUNT = pa.uint32()
FLIPS = pa.schema(
    [
        ("rule_a", _LSTR),
        ("rule_b", _LSTR),
        ("runs_compared", _COUNT),
        ("flips", _COUNT),
        ("a", _COUNT),
        ("b", _COUNT),
        ("c", _COUNT),
        ("d", _COUNT),
        ("n", _COUNT),
        ("difference", pa.float64()),
        ("difference_low", pa.float64()),
        ("difference_high", pa.float64()),
        ("p_value", pa.float64()),
        ("p_method", _LSTR),
        ("p_holm", pa.float64()),
        ("sample_run_ids", pa.large_list(_LSTR)),
    ]
)
OUTPUTS: dict[str, pa.Schema] = {"acceptance": ACCEPTANCE, "flips": FLIPS}


def _polars_dtype(t: pa.DataType) -> pl.DataType:
    """The polars type of an Arrow type used here (no conversion of data, so
    polars does not import pandas, which is slow to import)."""
    simple: dict[pa.DataType, pl.DataType] = {
        pa.string(): pl.String(),
        pa.large_string(): pl.String(),
        pa.uint32(): pl.UInt32(),
        pa.int32(): pl.Int32(),
        pa.int64(): pl.Int64(),
        pa.float64(): pl.Float64(),
        pa.bool_(): pl.Boolean(),
    }
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        return pl.Datetime(t.unit, t.tz)
    if pa.types.is_map(t):
        return pl.Map(_polars_dtype(t.key_type), _polars_dtype(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pl.List(_polars_dtype(t.value_type))
    raise TypeError(f"no polars type known for {t}")  # pragma: no cover


def polars_schema(table: str) -> pl.Schema:
    """The polars schema of a dataset table or an output (derived from its pyarrow schema).

    Examples
    --------
    >>> polars_schema("acceptance")["reasons"]
    List(String)
    """
    schema = {**TABLES, **OUTPUTS}[table]
    return pl.Schema({f.name: _polars_dtype(f.type) for f in schema})


# The polars schema of the flips (``engine.rates``: partials and their combine).
FLIP_SCHEMA = polars_schema("flips")
