"""Side-by-side baselines (#12): the package's speed as same-run ratios.

``python -m benchmarks.baselines --data DIR_OF_NDJSON --rules RULES.toml --work WORKDIR
[--repeat 3]``

Every figure runs in a fresh process (this module run again with
``--figure NAME``). The parent measures the wall time of the figure's work
(reported by the child; interpreter start and imports excluded, and also
recorded as ``process_s``), its CPU time (user + system of the child and the
worker processes it waited for: steadier than wall time on a shared machine)
and the peak RSS of the process tree: the largest of ``os.wait4``'s
``ru_maxrss`` and the sum of RSS of the child and its descendants sampled
every 50 ms with psutil (when installed). The figures of a
group run in forward order on even repeats and in reverse order on odd ones;
each figure is the median of its repeats.

Ingest (same NDJSON files):

* ``duckdb_read_ndjson``: DuckDB's own ``read_ndjson`` with declared columns,
  flattened with ``UNNEST`` into runs, attempts and signals Parquet files
  (timestamps parsed; a literal file list, never a glob pattern), each
  document numbered (``row_number() OVER ()``) as the package numbers them.
* ``duckdb_read_ndjson_runid``: the same without the numbering (a window over
  the whole file, which DuckDB computes on one thread): the tables are keyed
  by ``run.id``, as a hand-written conversion would key them. The faster peer.
* ``polars_decode``: ``pl.scan_lines`` + ``str.json_decode(DOCUMENT_DTYPE)``, nothing else.
* ``package_ingest``: ``ocp_analytics.ingest(files, dataset)``.

Evaluation (on the dataset ``package_ingest`` wrote, the rules file's rules):

* ``package_accept``: ``write_acceptance`` of every (run, rule) row with
  reasons, recorded rules + the alternative rules.
* ``package_rates``: ``rates(ds, rules, by="label.team")``.
* ``polars_handwritten`` / ``duckdb_handwritten``: a hand-written query over
  the same Parquet tables giving each run's outcome and
  ``attempts_to_acceptance`` under the alternative rules, written to Parquet
  (no reasons, no tier, no late events matched from the ``events`` table).
* ``floor``: the latest signal per (doc_id, kind, name) plus writing
  runs x (K + 1) rows of (run_id, rule, outcome).

After timing, the outcomes of both hand-written queries are checked (once,
untimed) against the package's for the alternative rules; disagreements are
counted by rule and by the generator's awkward case of the run.

Results: a markdown table and a JSON file in ``--results`` (default: the work folder).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).parent
AS_OF = "2026-12-01T00:00:00Z"
DEFAULT_EXCLUDES = ["revert", "incident"]
DEFAULT_WINDOW_DAYS = 14
INGEST = ("duckdb_read_ndjson", "duckdb_read_ndjson_runid", "polars_decode", "package_ingest")
EVALUATION = (
    "package_accept",
    "package_rates",
    "polars_handwritten",
    "duckdb_handwritten",
    "floor",
)
GLOB_CHARS = set("*?[]{}")


class FigureFailed(RuntimeError):
    """A figure's process failed (for example, killed for lack of memory)."""


# --------------------------------------------------------------------------
# Inputs


def data_files(data: Path) -> list[Path]:
    """The NDJSON files of ``data``, sorted; refused when a path could be read as a glob."""
    files = sorted(p for p in data.iterdir() if p.name.endswith(".ndjson"))
    if not files:
        raise SystemExit(f"no *.ndjson files in {data}")
    bad = [str(p) for p in files if GLOB_CHARS & set(str(p))]
    if bad:  # DuckDB expands glob characters even inside a literal list
        raise SystemExit(f"paths with glob characters are not supported: {bad[:3]}")
    return files


def read_rules(path: Path) -> list[dict[str, Any]]:
    """Alternative rules from a TOML file, with SEMANTICS §3 defaults applied by hand."""
    out = []
    for r in tomllib.loads(path.read_text())["rule"]:
        score = r.get("score")
        excludes = r.get("excludes_events")
        window = r.get("window_days")
        out.append(
            {
                "rule": r["name"],
                "requires": list(dict.fromkeys(r.get("requires") or [])),
                "score_name": score["name"] if score else None,
                "score_target": float(score["target"]) if score else None,
                "score_lower": (score["better"] == "lower") if score else None,
                "excludes": list(dict.fromkeys(DEFAULT_EXCLUDES if excludes is None else excludes)),
                "window_days": DEFAULT_WINDOW_DAYS if window is None else int(window),
            }
        )
    return out


def _out(work: Path, name: str) -> Path:
    d = work / "out"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.parquet"


def _dataset(work: Path) -> Path:
    return work / "package.dataset"


def _runs_in_dataset(work: Path) -> int:
    """Runs in the dataset ``package_ingest`` wrote (the evaluation figures' documents).

    Figures of ``--groups evaluation`` alone count no documents of their own.
    """
    if not _dataset(work).exists():
        return 0
    import polars as pl

    import ocp_analytics as oa

    runs = oa.scan_dataset(_dataset(work)).frames["runs"]
    return int(runs.select(pl.len()).collect().item())


# --------------------------------------------------------------------------
# Ingest figures


def _duckdb_type(dtype: Any) -> str:
    """DuckDB type of a polars dtype of the decode dtype (the sanitizer's field dropped)."""
    import polars as pl

    if isinstance(dtype, pl.Struct):
        fields = [f for f in dtype.fields if not f.name.startswith("_ocpa")]
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duckdb_type(f.dtype)}' for f in fields) + ")"
    if isinstance(dtype, pl.List):
        return _duckdb_type(dtype.inner) + "[]"
    if dtype == pl.Float64:
        return "DOUBLE"
    if dtype == pl.String:
        return "VARCHAR"
    raise TypeError(dtype)


def duckdb_columns() -> dict[str, str]:
    """``read_ndjson`` columns: the package's decode dtype, plus labels and rule as JSON."""
    from ocp_analytics.schemas import DOCUMENT_DTYPE

    cols = {f.name: _duckdb_type(f.dtype) for f in DOCUMENT_DTYPE.fields}
    cols["run"] = cols["run"][:-1] + ', "labels" JSON, "acceptance_rule" JSON)'
    return cols


_DUCK_RUNS = """
SELECT doc_id, run.id AS run_id, ocp AS ocp_version,
  producer.name AS producer_name, producer.version AS producer_version,
  TRY_CAST(run.started_at AS TIMESTAMPTZ) AS started_at, run.started_at AS started_at_raw,
  TRY_CAST(run.ended_at AS TIMESTAMPTZ) AS ended_at, run.ended_at AS ended_at_raw,
  run.title AS title, run.labels::VARCHAR AS labels,
  run.task.id AS task_id, run.task.type AS task_type, run.task.subtype AS task_subtype,
  run.task.repo AS repo, run.task.org AS org,
  run.configuration.id AS configuration_id, run.configuration.source AS configuration_source,
  run.provenance.kind AS provenance_kind, run.acceptance_rule::VARCHAR AS acceptance_rule,
  len(attempts) AS n_attempts, len(run.signals) AS n_signals
FROM docs
"""
_DUCK_ATTEMPTS = """
SELECT doc_id, att_idx, a.id AS attempt_id, a.node AS node,
  a.n::BIGINT AS n, a.round::BIGINT AS round, a.status AS status,
  TRY_CAST(a.started_at AS TIMESTAMPTZ) AS started_at, a.started_at AS started_at_raw,
  TRY_CAST(a.ended_at AS TIMESTAMPTZ) AS ended_at, a.ended_at AS ended_at_raw,
  a.outcome.result AS outcome_result, a.outcome.evidence AS outcome_evidence,
  a.model.raw AS model_raw, a.model.id AS model_id, a.effort AS effort, a.harness AS harness,
  a.role.value AS role, a.phase.value AS phase, a.cause.type AS cause_type,
  a.cost.usd AS cost_usd, a.cost.input_tokens::BIGINT AS input_tokens,
  a.cost.cached_input_tokens::BIGINT AS cached_input_tokens,
  a.cost.cache_creation_tokens::BIGINT AS cache_creation_tokens,
  a.cost.output_tokens::BIGINT AS output_tokens,
  a.cost.reasoning_tokens::BIGINT AS reasoning_tokens
FROM (SELECT doc_id, generate_subscripts(attempts, 1) - 1 AS att_idx, unnest(attempts) AS a
      FROM docs)
WHERE a IS NOT NULL
"""
_DUCK_SIGNALS = """
SELECT doc_id, sig_idx, s.id AS signal_id, s.kind AS kind, s.name AS name,
  s.value AS value_text, TRY_CAST(s.value AS DOUBLE) AS value_num, s.unit AS unit,
  s.better AS better, s.target AS target, s.scale AS scale, s.at_attempt AS at_attempt,
  TRY_CAST(s.observed_at AS TIMESTAMPTZ) AS observed_at, s.observed_at AS observed_at_raw,
  s.source.kind AS source_kind, s.source.ref AS source_ref, s.tier AS tier
FROM (SELECT doc_id, generate_subscripts(run.signals, 1) - 1 AS sig_idx,
             unnest(run.signals) AS s
      FROM docs)
WHERE s IS NOT NULL
"""


_READ = "FROM read_ndjson($files, columns = $cols, format = 'newline_delimited')"
_DOCS_NUMBERED = (
    "CREATE OR REPLACE TEMP TABLE docs AS SELECT $base + row_number() OVER () AS doc_id, * " + _READ
)
_DOCS_BY_RUN_ID = "CREATE OR REPLACE TEMP TABLE docs AS SELECT run.id AS doc_id, * " + _READ


def duckdb_read_ndjson(a: argparse.Namespace, numbered: bool = True) -> dict[str, int]:
    """DuckDB reads each file with declared columns and writes three flattened Parquet parts."""
    import duckdb

    out = a.work / ("duckdb_ndjson" if numbered else "duckdb_ndjson_runid")
    shutil.rmtree(out, ignore_errors=True)
    for t in ("runs", "attempts", "signals"):
        (out / t).mkdir(parents=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"SET threads = {os.cpu_count() or 1}")
    cols = duckdb_columns()
    docs = 0
    for i, f in enumerate(data_files(a.data)):
        con.execute(
            _DOCS_NUMBERED if numbered else _DOCS_BY_RUN_ID,
            {"files": [str(f)], "cols": cols, **({"base": docs} if numbered else {})},
        )
        for table, query in (
            ("runs", _DUCK_RUNS),
            ("attempts", _DUCK_ATTEMPTS),
            ("signals", _DUCK_SIGNALS),
        ):
            con.sql(query).write_parquet(
                str(out / table / f"part-{i:05d}.parquet"), compression="zstd"
            )
        docs += int(con.sql("SELECT count(*) FROM docs").fetchall()[0][0])
    return {"rows": docs, "docs": docs}


def duckdb_read_ndjson_runid(a: argparse.Namespace) -> dict[str, int]:
    """:func:`duckdb_read_ndjson` keyed by ``run.id``: no window numbering the documents."""
    return duckdb_read_ndjson(a, numbered=False)


def polars_decode(a: argparse.Namespace) -> dict[str, int]:
    """polars decoding the NDJSON into the package's decode dtype: no flattening, no writes."""
    import polars as pl

    from ocp_analytics.schemas import DOCUMENT_DTYPE

    n = 0
    for f in data_files(a.data):
        frame = (
            pl.scan_lines(f)
            .select(pl.col("line").str.json_decode(DOCUMENT_DTYPE).alias("doc"))
            .select(pl.col("doc").is_not_null().sum())  # use the value: no decode skipped
            .collect()
        )
        n += int(frame.item())
    return {"rows": n, "docs": n}


def package_ingest(a: argparse.Namespace) -> dict[str, int]:
    import ocp_analytics as oa

    ds = _dataset(a.work)
    shutil.rmtree(ds, ignore_errors=True)
    summary = oa.ingest(data_files(a.data), ds)
    assert summary.reconciles
    return {"rows": summary.documents_read, "docs": summary.documents_read}


# --------------------------------------------------------------------------
# Evaluation figures


def package_accept(a: argparse.Namespace) -> dict[str, int]:
    import ocp_analytics as oa

    rows = oa.write_acceptance(
        _dataset(a.work), _out(a.work, "package_accept"), [a.rules], recorded=True, as_of=a.as_of
    )
    return {"rows": rows}


def package_rates(a: argparse.Namespace) -> dict[str, int]:
    import ocp_analytics as oa

    frame = oa.rates(_dataset(a.work), [a.rules], by="label.team", as_of=a.as_of).collect()
    return {"rows": frame.height}


def polars_handwritten(a: argparse.Namespace) -> dict[str, int]:
    """Outcome and attempts_to_acceptance per (run, rule) in plain polars, to Parquet."""
    from datetime import datetime

    import polars as pl

    import ocp_analytics as oa

    rules = read_rules(a.rules)
    as_of = datetime.fromisoformat(a.as_of)
    f = oa.scan_dataset(_dataset(a.work)).frames
    runs, sig, att = f["runs"], f["signals"], f["attempts"]
    vnames = sorted({n for r in rules for n in r["requires"]})
    snames = sorted({r["score_name"] for r in rules if r["score_name"]})
    enames = sorted({n for r in rules for n in r["excludes"]})

    # Attempt order: started_at (unknown last), then position; the first of a repeated id.
    pos = (
        att.sort("doc_id", pl.col("started_at").is_null(), "started_at", "att_idx")
        .with_columns(pl.int_range(1, pl.len() + 1).over("doc_id").alias("pos"))
        .filter(pl.col("attempt_id").is_not_null())
        .group_by("doc_id", "attempt_id")
        .agg(pl.col("pos").min())
    )
    last = ["observed_at", "sig_idx"]  # unknown time sorts first, ties by position
    # One pass over the signals: the latest verdict and the latest numeric score of
    # each (doc_id, name) the rules need, with the position of the attempt it names.
    latest = (
        sig.filter(
            ((pl.col("kind") == "verdict") & pl.col("name").is_in(vnames))
            | (
                (pl.col("kind") == "score")
                & pl.col("value_num").is_not_null()
                & pl.col("name").is_in(snames)
            )
        )
        .group_by("doc_id", "kind", "name")
        .agg(pl.col("value_text", "value_num", "at_attempt").sort_by(last).last())
        .join(pos, left_on=["doc_id", "at_attempt"], right_on=["doc_id", "attempt_id"], how="left")
        .collect()
    )
    verdicts = (
        latest.lazy()
        .filter(pl.col("kind") == "verdict")
        .with_columns(
            pl.col("value_text")
            .str.to_lowercase()
            .replace_strict(
                {"accept": 2, "pass": 2, "reject": 0, "fail": 0}, default=1, return_dtype=pl.Int8
            )
            .alias("state")
        )
    )
    scores = latest.lazy().filter(pl.col("kind") == "score")
    obs, end = pl.col("observed_at"), pl.col("ended_at")
    events = (
        sig.filter((pl.col("kind") == "event") & pl.col("name").is_in(enames))
        .join(runs.select("doc_id", "ended_at"), on="doc_id")
        .filter(obs.is_null() | (obs <= as_of))
        .group_by("doc_id", "name")
        .agg(
            # counts whatever the window: no time, or the run has no end
            (obs.is_null() | end.is_null()).any().alias("always"),
            (obs - end).min().alias("delta"),
        )
        .collect()
        .lazy()
    )

    wide = runs.select("doc_id", "run_id")
    for n in vnames:
        wide = wide.join(
            verdicts.filter(pl.col("name") == n).select(
                "doc_id", pl.col("state").alias(f"v:{n}"), pl.col("pos").alias(f"vp:{n}")
            ),
            on="doc_id",
            how="left",
        )
    for n in snames:
        wide = wide.join(
            scores.filter(pl.col("name") == n).select(
                "doc_id", pl.col("value_num").alias(f"s:{n}"), pl.col("pos").alias(f"sp:{n}")
            ),
            on="doc_id",
            how="left",
        )
    for n in enames:
        wide = wide.join(
            events.filter(pl.col("name") == n).select(
                "doc_id", pl.col("always").alias(f"ea:{n}"), pl.col("delta").alias(f"ed:{n}")
            ),
            on="doc_id",
            how="left",
        )
    table = wide.collect()

    per_rule = []
    for r in rules:
        parts = [pl.col(f"v:{n}").fill_null(1) for n in r["requires"]]
        places = [pl.col(f"vp:{n}") for n in r["requires"]]
        if r["score_name"]:
            v = pl.col(f"s:{r['score_name']}")
            reached = (v <= r["score_target"]) if r["score_lower"] else (v >= r["score_target"])
            parts.append(
                pl.when(v.is_null())
                .then(1)
                .when(reached & ~v.is_nan())
                .then(2)
                .otherwise(0)
                .cast(pl.Int8)
            )
            places.append(pl.col(f"sp:{r['score_name']}"))
        window = pl.duration(days=r["window_days"])
        late = pl.any_horizontal(
            [
                (pl.col(f"ea:{n}") | (pl.col(f"ed:{n}") <= window)).fill_null(False)
                for n in r["excludes"]
            ]
            or [pl.lit(False)]
        )
        worst = pl.min_horizontal(parts) if parts else pl.lit(None, pl.Int8)
        outcome = (
            pl.when(late)
            .then(pl.lit("rejected"))
            .when(worst.is_null())
            .then(pl.lit("unknown"))
            .when(worst == 0)
            .then(pl.lit("rejected"))
            .when(worst == 2)
            .then(pl.lit("accepted"))
            .otherwise(pl.lit("unknown"))
        )
        attempts = pl.max_horizontal(places) if places else pl.lit(None, pl.Int64)
        per_rule.append(
            table.lazy().select(
                "run_id",
                pl.lit(r["rule"]).alias("rule"),
                outcome.alias("outcome"),
                pl.when(outcome == "accepted")
                .then(attempts.cast(pl.Int64))
                .alias("attempts_to_acceptance"),
            )
        )
    out = _out(a.work, "polars_handwritten")
    pl.concat(per_rule).sink_parquet(out)
    return {"rows": len(rules) * table.height}


# The same answer in hand-written DuckDB SQL: the latest verdict / numeric score per
# (doc_id, name) by arg_max over one order key (unknown time first, then position); the
# verdicts of a run as one MAP (its per-run features); the rules as a K-row table cross
# joined to runs, each rule's `requires` looked up in the map; one row per (run, rule).
# (Measured on 50k runs: 2.6 s, against 3.0-4.5 s for joining a (rule, name) table to the
# latest verdicts and grouping by (run, rule).)
_DUCK_ACCEPT = """
WITH
runs AS (
  SELECT doc_id, run_id, ended_at FROM read_parquet($runs)
  QUALIFY doc_id = max(doc_id) OVER (PARTITION BY run_id)
),
req AS (SELECT rule, unnest(requires) AS name FROM rules),
sc_rule AS (SELECT rule, score_name AS name, score_target, score_lower FROM rules
            WHERE score_name IS NOT NULL),
ex AS (SELECT rule, unnest(excludes) AS name, window_days FROM rules),
sig AS (
  SELECT doc_id, kind, name, value_text, value_num, at_attempt, observed_at,
    coalesce(epoch_us(observed_at), -9223372036854775807)::HUGEINT * 4294967296
      + sig_idx AS okey
  FROM read_parquet($signals)
),
pos AS (
  SELECT doc_id, attempt_id, min(pos) AS pos FROM (
    SELECT doc_id, attempt_id,
      row_number() OVER (PARTITION BY doc_id ORDER BY started_at NULLS LAST, att_idx) AS pos
    FROM read_parquet($attempts))
  WHERE attempt_id IS NOT NULL GROUP BY ALL
),
verdict AS MATERIALIZED (
  SELECT v.doc_id, v.name,
    CASE WHEN lower(v.v) IN ('accept', 'pass') THEN 2
         WHEN lower(v.v) IN ('reject', 'fail') THEN 0 ELSE 1 END AS state, p.pos
  FROM (SELECT doc_id, name,
          arg_max_null(value_text, okey) AS v, arg_max_null(at_attempt, okey) AS at
        FROM sig WHERE kind = 'verdict' AND name IN (SELECT name FROM req) GROUP BY ALL) v
  LEFT JOIN pos p ON p.doc_id = v.doc_id AND p.attempt_id = v.at
),
score AS (
  SELECT doc_id, name, arg_max_null(value_num, okey) AS v, arg_max_null(at_attempt, okey) AS at
  FROM sig WHERE kind = 'score' AND value_num IS NOT NULL
    AND name IN (SELECT name FROM sc_rule) GROUP BY ALL
),
vfeat AS (
  SELECT doc_id, map_from_entries(list({'k': name, 'v': {'s': state, 'p': pos}})) AS vf
  FROM verdict GROUP BY doc_id
),
sparts AS (
  SELECT s.doc_id, r.rule,
    CASE WHEN isnan(s.v) THEN 0
         WHEN (r.score_lower AND s.v <= r.score_target)
           OR (NOT r.score_lower AND s.v >= r.score_target) THEN 2
         ELSE 0 END AS sstate,
    p.pos AS spos
  FROM score s JOIN sc_rule r USING (name)
  LEFT JOIN pos p ON p.doc_id = s.doc_id AND p.attempt_id = s.at
),
late AS (
  SELECT DISTINCT s.doc_id, ex.rule
  FROM sig s JOIN ex USING (name) JOIN runs USING (doc_id)
  WHERE s.kind = 'event'
    AND (s.observed_at IS NULL OR s.observed_at <= $as_of)
    AND (runs.ended_at IS NULL OR s.observed_at IS NULL
         OR epoch_us(s.observed_at) - epoch_us(runs.ended_at)
            <= ex.window_days * 86400000000)
),
judged AS (
  SELECT runs.run_id, rules.rule,
    list_min(list_transform(rules.requires, lambda n: coalesce(vf.vf[n].s, 1))) AS vmin,
    list_max(list_transform(rules.requires, lambda n: vf.vf[n].p)) AS vpos,
    late.doc_id IS NOT NULL AS is_late, sp.sstate, sp.spos, rules.score_name, rules.requires
  FROM runs CROSS JOIN rules
  LEFT JOIN vfeat vf ON vf.doc_id = runs.doc_id
  LEFT JOIN sparts sp ON sp.doc_id = runs.doc_id AND sp.rule = rules.rule
  LEFT JOIN late ON late.doc_id = runs.doc_id AND late.rule = rules.rule
),
decided AS (
  SELECT run_id, rule,
    CASE
      WHEN is_late THEN 'rejected'
      WHEN len(requires) = 0 AND score_name IS NULL THEN 'unknown'
      WHEN vmin = 0 OR sstate = 0 THEN 'rejected'
      WHEN coalesce(vmin, 2) = 2 AND (score_name IS NULL OR sstate = 2) THEN 'accepted'
      ELSE 'unknown'
    END AS outcome,
    greatest(vpos, spos) AS best_pos
  FROM judged
)
SELECT run_id, rule, outcome,
  CASE WHEN outcome = 'accepted' THEN best_pos END AS attempts_to_acceptance
FROM decided
"""


def _parts(ds: Path) -> dict[str, list[str]]:
    from ocp_analytics.store.dataset import read_commits, table_files

    records = read_commits(ds)
    return {
        t: [str(ds / f) for f in table_files(ds, records, t)]
        for t in ("runs", "attempts", "signals")
    }


def duckdb_handwritten(a: argparse.Namespace) -> dict[str, int]:
    """Outcome and attempts_to_acceptance per (run, rule) in hand-written DuckDB SQL."""
    from datetime import datetime

    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rules = pa.Table.from_pylist(
        read_rules(a.rules),
        schema=pa.schema(
            [
                ("rule", pa.string()),
                ("requires", pa.list_(pa.string())),
                ("score_name", pa.string()),
                ("score_target", pa.float64()),
                ("score_lower", pa.bool_()),
                ("excludes", pa.list_(pa.string())),
                ("window_days", pa.int64()),
            ]
        ),
    )
    con.register("rules", rules)
    params: dict[str, Any] = {**_parts(_dataset(a.work)), "as_of": datetime.fromisoformat(a.as_of)}
    out = _out(a.work, "duckdb_handwritten")
    con.sql(_DUCK_ACCEPT, params=params).write_parquet(str(out))
    rows = con.sql("SELECT count(*) FROM read_parquet($p)", params={"p": str(out)}).fetchall()
    return {"rows": int(rows[0][0])}


def floor(a: argparse.Namespace) -> dict[str, int]:
    """Latest signal per (doc_id, kind, name); runs x (K + 1) rows of (run_id, rule, outcome)."""
    import polars as pl

    import ocp_analytics as oa

    f = oa.scan_dataset(_dataset(a.work)).frames
    latest = (
        f["signals"]
        .group_by("doc_id", "kind", "name")
        .agg(
            pl.col("value_text", "value_num", "at_attempt").sort_by("observed_at", "sig_idx").last()
        )
        .select(pl.len())
        .collect()
        .item()
    )
    names = ["recorded", *(r["rule"] for r in read_rules(a.rules))]
    outcomes = ["accepted", "rejected", "unknown"]
    rules = pl.LazyFrame({"rule": names, "k": list(range(len(names)))})
    out = _out(a.work, "floor")
    (
        f["runs"]
        .select("run_id", "doc_id")
        .join(rules, how="cross")
        .select(
            "run_id",
            "rule",
            ((pl.col("doc_id") + pl.col("k")) % 3)
            .replace_strict(dict(enumerate(outcomes)), return_dtype=pl.String)
            .alias("outcome"),
        )
        .sink_parquet(out)
    )
    rows = pl.scan_parquet(out).select(pl.len()).collect().item()
    return {"rows": int(rows), "latest_groups": int(latest)}


FIGURES = {
    "duckdb_read_ndjson": duckdb_read_ndjson,
    "duckdb_read_ndjson_runid": duckdb_read_ndjson_runid,
    "polars_decode": polars_decode,
    "package_ingest": package_ingest,
    "package_accept": package_accept,
    "package_rates": package_rates,
    "polars_handwritten": polars_handwritten,
    "duckdb_handwritten": duckdb_handwritten,
    "floor": floor,
}


def child(a: argparse.Namespace) -> None:
    """Run one figure in this process and print one JSON line."""
    # Imports every figure shares stay out of the timed part. ocp_analytics
    # first, as the command line does: it sets polars' allocator before polars
    # is imported, so the hand-written polars figures run with the same one.
    import ocp_analytics  # noqa: F401

    # isort: split
    import duckdb  # noqa: F401
    import polars  # noqa: F401
    import pyarrow  # noqa: F401

    cpu0, start = os.times(), time.perf_counter()
    result: dict[str, float] = dict(FIGURES[a.figure](a))
    result["seconds"] = time.perf_counter() - start
    cpu1 = os.times()  # this process and the worker processes it waited for
    result["cpu_s"] = sum(cpu1[:4]) - sum(cpu0[:4])
    print(orjson.dumps(result).decode(), flush=True)


# --------------------------------------------------------------------------
# The parent: fresh processes, tree RSS, interleaved order, medians


def _sample_tree(pid: int, stop: threading.Event, peak: list[int]) -> None:
    try:
        import psutil
    except ImportError:  # pragma: no cover - wait4 alone then
        return
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.wait(0.05):
        total = 0
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        peak[0] = max(peak[0], total)


def run_figure(name: str, a: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.baselines",
        "--figure",
        name,
        "--data",
        str(a.data),
        "--rules",
        str(a.rules),
        "--work",
        str(a.work),
        "--as-of",
        a.as_of,
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=HERE.parent)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code:
        raise FigureFailed(f"figure {name} failed with exit code {code}")
    result: dict[str, Any] = orjson.loads(out.splitlines()[-1])
    result["process_s"] = wall
    result["peak_rss_mb"] = max(usage.ru_maxrss / 1024, peak[0] / 2**20)
    return result


def measure(
    group: tuple[str, ...], a: argparse.Namespace, failed: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Each figure of ``group`` ``a.repeat`` times, order reversed on odd repeats.

    A figure that fails is recorded in ``failed`` and not run again.
    """
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in group}
    for rep in range(a.repeat):
        order = group if rep % 2 == 0 else tuple(reversed(group))
        for name in order:
            if name in failed:
                continue
            try:
                r = run_figure(name, a)
            except FigureFailed as exc:
                print(exc, flush=True)
                failed[name] = str(exc)
                continue
            runs[name].append(r)
            print(
                f"  [{rep + 1}/{a.repeat}] {name:<20} {r['seconds']:8.2f} s "
                f"{r['peak_rss_mb']:8.0f} MB  {r['rows']:>12,} rows",
                flush=True,
            )
    return {
        name: {
            "seconds": statistics.median(x["seconds"] for x in rs),
            "runs": [x["seconds"] for x in rs],
            "process_s": statistics.median(x["process_s"] for x in rs),
            "cpu_s": statistics.median(x["cpu_s"] for x in rs),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
            "rows": rs[-1]["rows"],
            **({"docs": rs[-1]["docs"]} if "docs" in rs[-1] else {}),
        }
        for name, rs in runs.items()
        if rs and name not in failed
    }


# --------------------------------------------------------------------------
# The check: hand-written outcomes equal the package's


def _bench_case(path: str, lines: list[int]) -> dict[int, str]:
    """The generator's awkward case of the documents at these 1-based lines of ``path``."""
    wanted, out = set(lines), {}
    with open(path, "rb") as f:
        for i, line in enumerate(f, 1):
            if i in wanted:
                ext = orjson.loads(line)["run"].get("ext") or {}
                out[i] = str(ext.get("dev.ocp-analytics.bench", {}).get("case", "-"))
                if len(out) == len(wanted):
                    break
    return out


def check_ingest(a: argparse.Namespace) -> dict[str, Any]:
    """Rows of the tables DuckDB wrote against the package's runs, attempts and signals."""
    import polars as pl

    import ocp_analytics as oa

    frames = oa.scan_dataset(_dataset(a.work)).frames
    out: dict[str, Any] = {}
    for t in ("runs", "attempts", "signals"):
        duck = pl.scan_parquet(a.work / "duckdb_ndjson" / t / "*.parquet").select(pl.len())
        out[t] = {
            "duckdb": int(duck.collect().item()),
            "package": int(frames[t].select(pl.len()).collect().item()),
        }
    out["same_rows"] = all(v["duckdb"] == v["package"] for v in out.values())
    return out


def check(a: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """Compare each hand-written output with the package's rows for the alternative rules."""
    import polars as pl

    import ocp_analytics as oa

    keys = ["run_id", "rule"]
    cols = [*keys, "outcome", "attempts_to_acceptance"]
    pkg = (
        pl.scan_parquet(_out(a.work, "package_accept"))
        .filter(pl.col("rule") != "recorded")
        .select(cols)
        .collect()
    )
    runs = oa.scan_dataset(_dataset(a.work)).frames["runs"]
    src = runs.select("run_id", "source_path", "source_line").collect()
    # What the check covered: the generator's awkward cases, and late events (§11),
    # which the hand-written queries do not read (they would differ if there were any).
    case = r'"dev\.ocp-analytics\.bench":\{"case":"([^"]+)"'
    covered = (
        pl.scan_lines([str(f) for f in data_files(a.data)])
        .select(pl.col("line").str.extract(case).str.split("+").alias("case"))
        .explode("case")
        .filter(pl.col("case").is_not_null())
        .group_by("case")
        .len()
        .sort("case")
        .collect()
    )
    events = oa.scan_dataset(_dataset(a.work)).frames["events"].select(pl.len()).collect()
    report: dict[str, Any] = {
        "runs_with_awkward_case": dict(zip(covered["case"], covered["len"], strict=True)),
        "late_event_rows": int(events.item()),
    }
    for name in names:
        other = pl.read_parquet(_out(a.work, name)).select(cols)
        j = pkg.join(other, on=keys, how="full", suffix="_b", coalesce=True)
        bad = j.filter(
            ~pl.col("outcome").eq_missing(pl.col("outcome_b"))
            | ~pl.col("attempts_to_acceptance").eq_missing(pl.col("attempts_to_acceptance_b"))
        )
        entry: dict[str, Any] = {
            "rows_package": pkg.height,
            "rows_baseline": other.height,
            "mismatches": bad.height,
        }
        if bad.height:
            entry["by_rule"] = dict(Counter(bad["rule"].to_list()).most_common(10))
            entry["by_outcomes"] = {
                f"{k[0]} vs {k[1]}": v
                for k, v in Counter(zip(bad["outcome"], bad["outcome_b"], strict=True)).most_common(
                    10
                )
            }
            where = bad.select("run_id").unique().head(2000).join(src, on="run_id")
            cases: Counter[str] = Counter()
            for (path,), g in where.group_by("source_path"):
                cases.update(_bench_case(str(path), g["source_line"].to_list()).values())
            entry["by_case_of_run"] = dict(cases.most_common(10))
            entry["examples"] = bad.head(5).to_dicts()
        report[name] = entry
    return report


# --------------------------------------------------------------------------
# Report


def machine() -> dict[str, str]:
    import duckdb
    import polars
    import pyarrow

    return {
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "polars": polars.__version__,
        "pyarrow": pyarrow.__version__,
        "duckdb": duckdb.__version__,
    }


def package_state() -> str:
    """The commit measured, and any uncommitted change to the package in the work tree."""
    git = ["git", "-C", str(HERE.parent)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "ocp_analytics"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    changed = [line[3:] for line in dirty.stdout.splitlines()]
    return head.stdout.strip() + (f" + uncommitted: {', '.join(changed)}" if changed else "")


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def ratios(figs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Same-run ratios; ``x_over_y`` is a ratio of wall times, ``_docs_per_s`` of throughputs."""
    s = {k: v["seconds"] for k, v in figs.items()}
    out: dict[str, float] = {}
    for base in ("duckdb_read_ndjson", "duckdb_read_ndjson_runid", "polars_decode"):
        if "package_ingest" in s and base in s:
            out[f"package_ingest_docs_per_s_vs_{base}"] = s[base] / s["package_ingest"]
    for pkg in ("package_accept", "package_rates"):
        for base in ("polars_handwritten", "duckdb_handwritten", "floor"):
            if pkg in s and base in s:
                out[f"{pkg}_time_over_{base}"] = s[pkg] / s[base]
    cpu = {k: v["cpu_s"] for k, v in figs.items() if v.get("cpu_s")}
    if "package_ingest" in cpu:
        for base in ("duckdb_read_ndjson", "duckdb_read_ndjson_runid", "polars_decode"):
            if base in cpu:
                out[f"package_ingest_cpu_over_{base}"] = cpu["package_ingest"] / cpu[base]
    for base in ("polars_handwritten", "duckdb_handwritten", "floor"):
        if "package_accept" in cpu and base in cpu:
            out[f"package_accept_cpu_over_{base}"] = cpu["package_accept"] / cpu[base]
    if "duckdb_handwritten" in s and "polars_handwritten" in s:
        out["duckdb_handwritten_time_over_polars_handwritten"] = (
            s["duckdb_handwritten"] / s["polars_handwritten"]
        )
    return out


def render(res: dict[str, Any]) -> str:
    docs, k = res["docs"], res["rules"]
    mb = res["bytes"] / 1e6
    lines = [
        f"### {docs:,} documents ({mb:,.0f} MB NDJSON), {k} alternative rules, "
        f"median of {res['repeat']}",
        "",
        f"Load: before `{res['load_before']}`; after `{res['load_after']}`.",
        "",
        "| figure | wall s (runs) | CPU s | throughput | peak RSS MB | rows |",
        "|---|---|---|---|---|---|",
    ]
    for name, f in res["figures"].items():
        sec = f["seconds"]
        if name in INGEST:
            tput = f"{docs / sec:,.0f} docs/s"
        elif name == "package_rates":
            tput = f"{docs * (k + 1) / sec:,.0f} run×rule/s"
        else:
            kk = k if name.endswith("handwritten") else k + 1
            tput = f"{docs * kk / sec:,.0f} run×rule/s"
        runs = ", ".join(f"{x:.1f}" for x in f["runs"])
        lines.append(
            f"| {name} | {sec:.2f} ({runs}) | {f.get('cpu_s', 0):.1f} | {tput} "
            f"| {f['peak_rss_mb']:,.0f} | {f['rows']:,} |"
        )
    lines += ["", "Ratios (same run):", ""]
    lines += [f"- {key}: {v:.2f}" for key, v in res["ratios"].items()]
    lines += ["", "Check against the package's outcomes (alternative rules):", ""]
    for name, c in res["check"].items():
        if not isinstance(c, dict) or "mismatches" not in c:
            continue
        verdict = "identical" if c["mismatches"] == 0 else f"{c['mismatches']:,} rows differ"
        lines.append(
            f"- {name}: {verdict} (outcome and attempts_to_acceptance; "
            f"{c['rows_baseline']:,} rows vs {c['rows_package']:,})"
        )
        for key in ("by_rule", "by_outcomes", "by_case_of_run"):
            if key in c:
                lines.append(f"  - {key}: {c[key]}")
    covered = res["check"].get("runs_with_awkward_case")
    if covered is not None:
        lines.append(
            "- runs with each awkward case of the generator: "
            + ", ".join(f"{k} {v:,}" for k, v in covered.items())
            + f"; late events apart from runs: {res['check']['late_event_rows']:,}"
        )
    ci = res.get("check_ingest")
    if ci:
        rows = "; ".join(
            f"{t} {v['duckdb']:,} vs {v['package']:,}" for t, v in ci.items() if t != "same_rows"
        )
        lines.append(f"- duckdb_read_ndjson rows against the package's tables: {rows}")
    if res["failed"]:
        lines += ["", "Failed: " + "; ".join(res["failed"].values())]
    lines += ["", "Machine: " + ", ".join(f"{a} {b}" for a, b in res["machine"].items())]
    if "package" in res:
        lines.append(f"Package: {res['package']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="folder of *.ndjson files")
    p.add_argument("--rules", type=Path, required=True, help="alternative rules (TOML)")
    p.add_argument("--work", type=Path, required=True, help="scratch folder")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--as-of", default=AS_OF)
    p.add_argument("--results", type=Path, help="folder for the .md and .json (default: --work)")
    p.add_argument(
        "--groups",
        default="ingest,evaluation",
        help="which groups of figures to run: ingest, evaluation (reads the dataset "
        "package_ingest wrote), or both (default)",
    )
    p.add_argument("--figure", choices=sorted(FIGURES), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.data, a.rules, a.work = a.data.resolve(), a.rules.resolve(), a.work.resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.figure:
        child(a)
        return 0

    files = data_files(a.data)
    size = sum(f.stat().st_size for f in files)
    for f in files:  # the same page cache for every ingest figure
        with f.open("rb") as fh:
            while fh.read(1 << 24):
                pass
    load_before = uptime()
    print(load_before, flush=True)
    figures: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    groups = set(a.groups.split(","))
    if "ingest" in groups:
        figures.update(measure(INGEST, a, failed))
    if "evaluation" in groups and (
        "package_ingest" in figures or _dataset(a.work).exists()
    ):  # the evaluation reads the dataset package_ingest wrote
        figures.update(measure(EVALUATION, a, failed))
    names = [n for n in ("polars_handwritten", "duckdb_handwritten") if n in figures]
    res: dict[str, Any] = {
        "command": "python -m benchmarks.baselines "
        f"--data {a.data} --rules {a.rules} --work {a.work} --repeat {a.repeat} "
        f"--groups {a.groups}",
        "docs": max((f.get("docs", 0) for f in figures.values()), default=0)
        or _runs_in_dataset(a.work),
        "bytes": size,
        "rules": len(read_rules(a.rules)),
        "repeat": a.repeat,
        "as_of": a.as_of,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": load_before,
        "load_after": uptime(),
        "machine": machine(),
        "package": package_state(),
        "figures": figures,
        "ratios": ratios(figures),
        "check": check(a, names) if "package_accept" in figures else {},
        "check_ingest": check_ingest(a)
        if {"duckdb_read_ndjson", "package_ingest"} <= set(figures)
        else {},
        "failed": failed,
    }
    text = render(res)
    print(text)
    target = a.results or a.work
    target.mkdir(parents=True, exist_ok=True)
    stem = f"baselines-{res['docs']}"
    (target / f"{stem}.json").write_bytes(
        orjson.dumps(res, option=orjson.OPT_INDENT_2, default=str)
    )
    (target / f"{stem}.md").write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
