"""The side-by-side figures of ``benchmarks/baselines.py``: its inputs, the ingest
figures (DuckDB's ``read_ndjson``, polars' decode, the package's ingest), the
package's evaluation figures and the floor.

Each figure is a function of the parsed command line returning its counts
(``rows``, and ``docs`` for ingest); ``baselines.py`` times it in a fresh
process. The hand-written evaluation queries are in ``benchmarks/handwritten.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

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


def out_path(work: Path, name: str) -> Path:
    d = work / "out"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.parquet"


def dataset_path(work: Path) -> Path:
    return work / "package.dataset"


def runs_in_dataset(work: Path) -> int:
    """Runs in the dataset ``package_ingest`` wrote (the evaluation figures' documents).

    Figures of ``--groups evaluation`` alone count no documents of their own.
    """
    if not dataset_path(work).exists():
        return 0
    import polars as pl

    import ocp_analytics as oa

    runs = oa.scan_dataset(dataset_path(work)).frames["runs"]
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

    ds = dataset_path(a.work)
    shutil.rmtree(ds, ignore_errors=True)
    summary = oa.ingest(data_files(a.data), ds)
    assert summary.reconciles
    return {"rows": summary.documents_read, "docs": summary.documents_read}


# --------------------------------------------------------------------------
# Evaluation figures


def package_accept(a: argparse.Namespace) -> dict[str, int]:
    import ocp_analytics as oa

    rows = oa.write_acceptance(
        dataset_path(a.work),
        out_path(a.work, "package_accept"),
        [a.rules],
        recorded=True,
        as_of=a.as_of,
    )
    return {"rows": rows}


def package_rates(a: argparse.Namespace) -> dict[str, int]:
    import ocp_analytics as oa

    frame = oa.rates(dataset_path(a.work), [a.rules], by="label.team", as_of=a.as_of)
    return {"rows": frame.height}


def floor(a: argparse.Namespace) -> dict[str, int]:
    """Latest signal per (doc_id, kind, name); runs x (K + 1) rows of (run_id, rule, outcome)."""
    import polars as pl

    import ocp_analytics as oa

    f = oa.scan_dataset(dataset_path(a.work)).frames
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
    out = out_path(a.work, "floor")
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
