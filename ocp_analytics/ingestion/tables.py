"""Decoded documents → the dataset's tables (runs, attempts, signals, …).

Every table is flattened from the decoded document struct here, one function
a table, and cast to its declared schema (``schemas.py``). Defects inside a
readable document become rows of ``findings`` (``findings.py``) and the
defective value is null, never guessed; documents that are not readable runs
become rows of ``quarantine`` (``quarantine.py``). ``run.labels`` and
``run.acceptance_rule`` come from their own text (``members.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.decode import JSON_NUMBER, Decoded
from ocp_analytics.ingestion.findings import (
    FIND_COLS,
    decode_findings,
    enum_finding,
    findings_where,
    integer_fields,
    listed_findings,
    ts_findings,
)
from ocp_analytics.ingestion.members import side_members
from ocp_analytics.ingestion.quarantine import (
    QuarantineRow,
    quarantine_checks,
    quarantine_details,
    quarantine_frame,
)
from ocp_analytics.ingestion.spans import ChunkMeta
from ocp_analytics.ingestion.timestamps import with_timestamps
from ocp_analytics.model.links import attempt_positions, link_attempts


@dataclass
class ChunkTables:
    """The tables built from one chunk, as polars frames in schema order."""

    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    slow_path: int = 0  # texts the decode read one at a time (Decoded.slow_path)

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.frames[name]


_SCHEMAS = {t: S.polars_schema(t) for t in S.TABLES}


def _cast(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    have = set(frame.collect_schema().names())
    return frame.select(
        [
            pl.col(n).cast(t) if n in have else pl.lit(None, t).alias(n)
            for n, t in _SCHEMAS[table].items()
        ]
    )


# --- per table ----------------------------------------------------------------


def _explode(docs: pl.LazyFrame, path: list[str], idx: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The elements of a list of objects, one row each, and a finding per ``null`` element.

    Null elements are reported here for fast-path documents only: the slow
    and typed paths report them themselves, in the order of their other
    findings (a misfit element is null there too).
    """
    expr = pl.col("doc")
    for p in path:
        expr = expr.struct.field(p)
    exploded = (
        docs.select(
            "run_id",
            "doc_id",
            (pl.col("slow") | pl.col("typed")).alias("checked"),
            expr.alias("item"),
        )
        .with_columns(pl.int_ranges(0, pl.col("item").list.len(), dtype=pl.Int32).alias(idx))
        .explode(["item", idx])
        .cache()
    )
    items = exploded.filter(pl.col("item").is_not_null()).drop("checked").unnest("item")
    nulls = exploded.filter(
        pl.col("item").is_null() & pl.col(idx).is_not_null() & ~pl.col("checked")
    ).select(
        "run_id",
        "doc_id",
        pl.lit("wrong_type").alias("code"),
        pl.format("$." + ".".join(path) + "[{}]", pl.col(idx)).alias("json_path"),
        pl.lit("expected an object, found null; the element is skipped").alias("message"),
    )
    return items, nulls


def _signals(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    sig, nulls = _explode(docs, ["run", "signals"], "sig_idx")
    v = pl.col("value")
    vtype = pl.coalesce(
        pl.col("_ocpa_vtype"),
        pl.when(v.is_null())
        .then(pl.lit("null"))
        .when(v.str.contains(JSON_NUMBER))
        .then(pl.lit("number"))
        .otherwise(pl.lit("string")),
    )
    quoted = pl.struct(v=v).struct.json_encode().str.slice(5).str.head(-1)
    sig = (
        sig.with_columns(vtype.alias("vtype"))
        .with_columns(
            v.alias("value_text"),
            pl.when(pl.col("vtype") == "number")
            .then(v.cast(pl.Float64, strict=False))
            .alias("value_num"),
            pl.when(pl.col("vtype") == "string")
            .then(quoted)
            .when(pl.col("vtype") == "null")
            .then(pl.lit("null"))
            .otherwise(v)
            .alias("value_json"),
            pl.col("observed_at").alias("observed_at_raw"),
            pl.col("source").struct.field("kind").alias("source_kind"),
            pl.col("source").struct.field("ref").alias("source_ref"),
            pl.col("id").alias("signal_id"),
        )
        .pipe(with_timestamps, {"observed_at": "observed_at_raw"})
        .cache()
    )
    return _cast(sig, "signals"), [nulls, *_signal_findings(sig)]


def _signal_findings(sig: pl.LazyFrame) -> list[pl.LazyFrame]:
    """Findings of the flattened signals: timestamps, values that do not fit, enums."""
    base = "$.run.signals[{}]"
    path = lambda f: pl.format(base + f, pl.col("sig_idx"))  # noqa: E731
    v, kind, vt = pl.col("value"), pl.col("kind"), pl.col("vtype")
    # a verdict word in another case (Accept, PASS) counts as the word (docs/figures.md,
    # "outcome and reasons"): its own code, apart from the values that do not count
    other_case = (
        (kind == "verdict")
        & (vt == "string")
        & ~v.is_in(S.VERDICT_VALUES)
        & v.str.to_lowercase().is_in(S.VERDICT_VALUES)
    ).fill_null(False)
    bad_value = (
        ((kind == "verdict") & ((vt != "string") | ~v.str.to_lowercase().is_in(S.VERDICT_VALUES)))
        | ((kind == "score") & ~vt.is_in(["number", "null"]))
        | ((kind == "event") & (vt != "string"))
        | (
            (kind == "score")
            & (pl.col("scale") == "fraction")
            & ((pl.col("value_num") < 0) | (pl.col("value_num") > 1))
        )
    ).fill_null(False)
    return [
        *ts_findings(sig, "observed_at", path(".observed_at")),
        findings_where(
            sig,
            bad_value,
            "bad_value",
            path(".value"),
            pl.format(
                "value {} does not fit a {} signal (E195)",
                pl.col("value_json").str.slice(0, 80),
                kind,
            ),
        ),
        findings_where(
            sig,
            other_case,
            "verdict_case",
            path(".value"),
            pl.format(
                "verdict {} is not lower case; it counts as {}",
                pl.col("value_json").str.slice(0, 80),
                v.str.to_lowercase(),
            ),
        ),
        enum_finding(sig, "kind", S.SIGNAL_KINDS, path(".kind")),
        enum_finding(sig, "tier", S.OUTCOME_TIERS, path(".tier")),
        enum_finding(sig, "better", S.BETTER_VALUES, path(".better")),
        enum_finding(sig, "scale", S.SCALE_VALUES, path(".scale")),
    ]


def _attempts(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    att, nulls = _explode(docs, ["attempts"], "att_idx")
    cost = pl.col("cost")
    att = (
        att.with_columns(
            pl.col("id").alias("attempt_id"),
            pl.col("started_at").alias("started_at_raw"),
            pl.col("ended_at").alias("ended_at_raw"),
            pl.col("outcome").struct.field("result").alias("outcome_result"),
            pl.col("outcome").struct.field("evidence").alias("outcome_evidence"),
            pl.col("model").struct.field("raw").alias("model_raw"),
            pl.col("model").struct.field("id").alias("model_id"),
            pl.col("role").struct.field("value").alias("role"),
            pl.col("phase").struct.field("value").alias("phase"),
            pl.col("cause").struct.field("type").alias("cause_type"),
            cost.struct.field("usd").alias("cost_usd"),
            *[cost.struct.field(t).alias(t) for t in S.COST_TOKENS],
        )
        .pipe(with_timestamps, {"started_at": "started_at_raw", "ended_at": "ended_at_raw"})
        .cache()
    )
    att, found = integer_fields(att, ["n", "round"], "$.attempts[{{}}].{}", "att_idx")
    att, found_cost = integer_fields(
        att, list(S.COST_TOKENS), "$.attempts[{{}}].cost.{}", "att_idx"
    )
    path = lambda f: pl.format("$.attempts[{}]" + f, pl.col("att_idx"))  # noqa: E731
    found += [
        nulls,
        *found_cost,
        *ts_findings(att, "started_at", path(".started_at")),
        *ts_findings(att, "ended_at", path(".ended_at")),
        enum_finding(att, "status", S.ATTEMPT_STATUSES, path(".status")),
        enum_finding(att, "outcome_result", S.OUTCOME_RESULTS, path(".outcome.result")),
    ]
    return _cast(att, "attempts"), found


def _artifacts(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    art, nulls = _explode(docs, ["artifacts"], "art_idx")
    art = (
        art.with_columns(
            pl.col("id").alias("artifact_id"),
            pl.col("kind").struct.field("value").alias("kind"),
            pl.col("first_write_at").alias("first_write_at_raw"),
        )
        .pipe(with_timestamps, {"first_write_at": "first_write_at_raw"})
        .cache()
    )
    path = pl.format("$.artifacts[{}].first_write_at", pl.col("art_idx"))
    return _cast(art, "artifacts"), [nulls, *ts_findings(art, "first_write_at", path)]


def _rules(docs: pl.LazyFrame, side: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    rules = (
        side.drop("labels", "labels_problems")
        .filter(pl.col("has_rule"))
        .join(docs.select("doc_id", "run_id"), on="doc_id", maintain_order="left")
    )
    return _cast(rules, "rules"), [listed_findings(rules, "problems", "invalid_rule")]


def _runs(
    docs: pl.LazyFrame, side: pl.LazyFrame, batch_id: str
) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    run = pl.col("doc").struct.field("run")
    task = run.struct.field("task")
    labels = side.select("doc_id", "labels", "labels_problems")
    runs = (
        docs.join(labels, on="doc_id", how="left", maintain_order="left")
        .with_columns(
            pl.col("doc").struct.field("ocp").alias("ocp_version"),
            pl.col("doc").struct.field("producer").struct.field("name").alias("producer_name"),
            pl.col("doc")
            .struct.field("producer")
            .struct.field("version")
            .alias("producer_version"),
            run.struct.field("started_at").alias("started_at_raw"),
            run.struct.field("ended_at").alias("ended_at_raw"),
            run.struct.field("title").alias("title"),
            task.struct.field("id").alias("task_id"),
            task.struct.field("type").alias("task_type"),
            task.struct.field("subtype").alias("task_subtype"),
            task.struct.field("repo").alias("repo"),
            task.struct.field("org").alias("org"),
            run.struct.field("configuration").struct.field("id").alias("configuration_id"),
            run.struct.field("configuration").struct.field("source").alias("configuration_source"),
            run.struct.field("provenance").struct.field("kind").alias("provenance_kind"),
            pl.col("doc").struct.field("attempts").list.len().fill_null(0).alias("n_attempts"),
            run.struct.field("signals").list.len().fill_null(0).alias("n_signals"),
            pl.lit(batch_id).alias("batch_id"),
        )
        .pipe(with_timestamps, {"started_at": "started_at_raw", "ended_at": "ended_at_raw"})
        .cache()
    )
    found = [
        *ts_findings(runs, "started_at", pl.lit("$.run.started_at")),
        *ts_findings(runs, "ended_at", pl.lit("$.run.ended_at")),
        enum_finding(
            runs,
            "configuration_source",
            S.CONFIGURATION_SOURCES,
            pl.lit("$.run.configuration.source"),
        ),
        enum_finding(runs, "provenance_kind", S.PROVENANCE_KINDS, pl.lit("$.run.provenance.kind")),
        listed_findings(runs, "labels_problems", "wrong_type"),
    ]
    return runs, found


def _readable(
    dec: Decoded, meta: ChunkMeta, doc_id_base: int
) -> tuple[list[QuarantineRow], pl.DataFrame]:
    """The quarantine rows of a decoded chunk, and its readable runs.

    A run's row holds ``pos``, ``doc``, ``text``, ``slow``, ``typed``, ``doc_id``,
    ``run_id`` and where it came from (``source_path``, ``source_line``,
    ``source_index``, ``doc_sha256``).
    """
    checked = quarantine_checks(dec.frame.lazy())
    bad, docs = pl.collect_all(
        [
            checked.filter(pl.col("q_code").is_not_null()).select(
                "pos", "q_code", *quarantine_details()
            ),
            checked.filter(pl.col("q_code").is_null()).select(
                "pos",
                "doc",
                "text",
                "slow",
                "typed",
                (pl.col("pos").cast(pl.Int64) + doc_id_base).alias("doc_id"),
                pl.col("doc").struct.field("run").struct.field("id").alias("run_id"),
            ),
        ],
        engine="in-memory",
    )
    quarantine = [(int(p), c, m, jp) for p, c, m, jp in bad.iter_rows()]
    quarantine += [(r.pos, r.code, r.message, r.json_path) for r in dec.rejected]
    pos = docs.get_column("pos").to_list()
    docs = docs.with_columns(
        meta.source_paths(pos),
        pl.Series("source_line", [meta.lines[p] for p in pos], dtype=pl.Int64),
        pl.Series("source_index", [meta.indexes[p] for p in pos], dtype=pl.Int64),
        pl.Series("doc_sha256", meta.sha256(pos), dtype=pl.String),
    )
    return quarantine, docs


def build_tables(dec: Decoded, meta: ChunkMeta, doc_id_base: int, batch_id: str) -> ChunkTables:
    """Build every table of one decoded chunk.

    ``doc_id`` of the text at position ``pos`` is ``doc_id_base + pos``. The
    tables are planned lazily and materialized together (one
    :func:`polars.collect_all`), so the steps they share run once.

    Examples
    --------
    >>> from ocp_analytics.ingestion.decode import decode_texts
    >>> texts = ['{"ocp": "0.3", "run": {"id": "r1", "ended_at": "2026-01-02T03:04:05"}}', "[]"]
    >>> meta = ChunkMeta(["mem"], texts, [1, 2], [None, None])
    >>> t = build_tables(decode_texts(texts), meta, 100, "b1")
    >>> t["runs"].select("doc_id", "run_id").rows(), t["quarantine"].get_column("code").to_list()
    ([(100, 'r1')], ['not_object'])
    >>> t["findings"].select("code", "json_path").rows()
    [('naive_timestamp', '$.run.ended_at')]
    """
    quarantine, docs = _readable(dec, meta, doc_id_base)
    side = side_members(docs, dec.side).lazy()
    lazy_docs = docs.lazy()
    runs, found = _runs(lazy_docs, side, batch_id)
    rules, f_rules = _rules(lazy_docs, side)
    runs = runs.join(
        rules.select("doc_id", pl.col("name").alias("rule_name")),
        on="doc_id",
        how="left",
        maintain_order="left",
    )
    signals, f_sig = _signals(lazy_docs)
    attempts, f_att = _attempts(lazy_docs)
    signals = _cast(link_attempts(signals, attempt_positions(attempts)), "signals")
    artifacts, f_art = _artifacts(lazy_docs)
    slow = decode_findings(dec, lazy_docs)
    findings = pl.concat(
        [f.select(FIND_COLS) for f in [*found, *f_rules, *f_sig, *f_att, *f_art, slow]]
    )
    findings = findings.join(
        lazy_docs.select("doc_id", "source_path", "source_line", "source_index"),
        on="doc_id",
        how="left",
        maintain_order="left",
    )
    planned = {
        "runs": _cast(runs, "runs"),
        "attempts": attempts,
        "signals": signals,
        "rules": rules,
        "artifacts": artifacts,
        "findings": _cast(findings, "findings"),
    }
    # a chunk's tables are small: the in-memory engine builds them with less
    # CPU than the streaming one (benchmarks/RESULTS.md)
    collected = pl.collect_all(planned.values(), engine="in-memory")
    frames = dict(zip(planned, collected, strict=True))
    frames["quarantine"] = quarantine_frame(quarantine, meta, batch_id)
    return ChunkTables(frames, dec.slow_path)
