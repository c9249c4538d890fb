"""What becomes a ``quarantine`` row: one per text that is no readable run.

Three kinds, all built here against the table's schema: a read problem of a
source (a stream cut short, an unreadable or empty file: :func:`quarantine_problems`),
a text the decode rejects (not JSON, not an object), and a decoded document
that is still no run (:func:`quarantine_checks`: no run object, no run id, an
unknown ``ocp`` version). Each row names the source, the line (or array
index), a code, a message, the JSON path and the head of the text.
"""

from __future__ import annotations

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.read import ReadProblem
from ocp_analytics.ingestion.sources import Source
from ocp_analytics.ingestion.spans import ChunkMeta

RAW_HEAD = 1024
QuarantineRow = tuple[int, str, str, str | None]  # position, code, message, JSON path


def quarantine_checks(docs: pl.LazyFrame) -> pl.LazyFrame:
    """Decoded texts that are still not readable runs: ``q_code`` (null: a readable run)."""
    run = pl.col("doc").struct.field("run")
    rid = run.struct.field("id")
    ocp = pl.col("doc").struct.field("ocp")
    return docs.with_columns(
        pl.when(run.is_null())
        .then(pl.lit("missing_run"))
        .when(rid.is_null() | (rid.str.strip_chars() == ""))
        .then(pl.lit("missing_run_id"))
        .when(~ocp.is_in(S.OCP_VERSIONS).fill_null(False))
        .then(pl.lit("unknown_version"))
        .alias("q_code")
    )


def quarantine_details() -> list[pl.Expr]:
    """``q_message`` and ``q_path`` of rows with a ``q_code`` (computed for those rows only)."""
    code = pl.col("q_code")
    ocp = pl.col("doc").struct.field("ocp")
    return [
        pl.when(code == "missing_run")
        .then(pl.lit("the document has no run object"))
        .when(code == "missing_run_id")
        .then(pl.lit("run.id is missing or empty"))
        .otherwise(
            pl.format("ocp version '{}' is not one of 0.1, 0.2, 0.3", ocp.fill_null("(missing)"))
        )
        .alias("q_message"),
        pl.when(code == "missing_run")
        .then(pl.lit("$.run"))
        .when(code == "missing_run_id")
        .then(pl.lit("$.run.id"))
        .otherwise(pl.lit("$.ocp"))
        .alias("q_path"),
    ]


def quarantine_frame(rows: list[QuarantineRow], meta: ChunkMeta, batch_id: str) -> pl.DataFrame:
    """Quarantine rows (position, code, message, JSON path) of one chunk."""
    frame = pl.DataFrame(
        {
            "batch_id": [batch_id] * len(rows),
            "source_path": [meta.path(p) for p, *_ in rows],
            "source_line": [meta.lines[p] for p, *_ in rows],
            "source_index": [meta.indexes[p] for p, *_ in rows],
            "code": [c for _, c, _, _ in rows],
            "message": [m for _, _, m, _ in rows],
            "json_path": [jp for *_, jp in rows],
            "raw_head": [meta.texts[p][:RAW_HEAD] for p, *_ in rows],
        },
        schema=S.polars_schema("quarantine"),
    )
    return frame


def quarantine_problems(problems: list[ReadProblem], source: Source, batch_id: str) -> pl.DataFrame:
    """Quarantine rows of a source's read problems, one each."""
    meta = ChunkMeta(
        [source.path],
        [p.head for p in problems],
        [p.line for p in problems],
        [None] * len(problems),
    )
    rows: list[QuarantineRow] = [(i, p.code, p.message, None) for i, p in enumerate(problems)]
    return quarantine_frame(rows, meta, batch_id)
