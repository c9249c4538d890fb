"""``findings``: defects inside a readable run, one row each, as lazy frames.

A finding names the run, the document, a code, the JSON path of the value
and a message saying what was found and how it was read (the value itself is
null, never guessed). The helpers here build the findings of a flattened
table's columns (timestamps, enums, whole numbers, lists of problems); the
decode's own (the slow and typed paths') are joined to their runs by
:func:`decode_findings`.
"""

from __future__ import annotations

import polars as pl

from ocp_analytics.ingestion.decode import Decoded
from ocp_analytics.ingestion.timestamps import is_naive_timestamp

FIND_COLS = ("run_id", "doc_id", "code", "json_path", "message")  # before the source columns


def findings_where(
    frame: pl.LazyFrame, cond: pl.Expr, code: str, path: pl.Expr, message: pl.Expr
) -> pl.LazyFrame:
    """A finding ``code`` for each row of ``frame`` where ``cond`` holds."""
    return frame.filter(cond).select(
        "run_id",
        "doc_id",
        pl.lit(code).alias("code"),
        path.alias("json_path"),
        message.alias("message"),
    )


def ts_findings(frame: pl.LazyFrame, name: str, path: pl.Expr) -> list[pl.LazyFrame]:
    """Findings of timestamp ``name`` (parsed) read from ``{name}_raw`` (its text)."""
    col = pl.col(f"{name}_raw")
    bad = col.is_not_null() & pl.col(name).is_null()
    return [
        findings_where(
            frame,
            bad,
            "bad_timestamp",
            path,
            pl.format("cannot read timestamp '{}'; read as unknown time", col.str.slice(0, 80)),
        ),
        findings_where(
            frame,
            is_naive_timestamp(col).fill_null(False),
            "naive_timestamp",
            path,
            pl.format("timestamp '{}' has no offset; read as UTC", col),
        ),
    ]


def enum_finding(
    frame: pl.LazyFrame, col: str, values: tuple[str, ...], path: pl.Expr
) -> pl.LazyFrame:
    """``unknown_enum`` where ``col`` holds a text that is not one of ``values``."""
    c = pl.col(col)
    return findings_where(
        frame,
        c.is_not_null() & ~c.is_in(values),
        "unknown_enum",
        path,
        pl.format("'{}' is not one of " + ", ".join(values), c.str.slice(0, 80)),
    )


def integer_fields(
    frame: pl.LazyFrame, cols: list[str], path_fmt: str, idx: str
) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    """Whole-number columns ``cols``: a fraction or a number beyond 64 bits is null, and a finding.

    Returns ``frame`` with those values nulled, and the findings.
    """
    found = []
    for c in cols:
        v = pl.col(c)
        frac = v.is_not_null() & (v.is_nan() | (v != v.floor()))
        big = v.is_not_null() & ~frac & (v.abs() >= 2.0**63)
        path = pl.format(path_fmt.format(c), pl.col(idx))
        found.append(
            findings_where(
                frame,
                frac,
                "not_integer",
                path,
                pl.format("expected a whole number, found {}; read as null", v),
            )
        )
        found.append(
            findings_where(
                frame,
                big,
                "out_of_range",
                path,
                pl.format("whole number {} does not fit 64 bits; read as null", v),
            )
        )
        frame = frame.with_columns(pl.when(~frac & ~big).then(v).alias(c))
    return frame, found


def decode_findings(dec: Decoded, docs: pl.LazyFrame) -> pl.LazyFrame:
    """The findings the decode named (slow and typed paths), with their run and ``doc_id``.

    By position, and within a document in the order the path named them.
    """
    slow = pl.LazyFrame(
        {
            "pos": pl.Series([f.pos for f in dec.findings], dtype=pl.UInt32),
            "code": pl.Series([f.code for f in dec.findings], dtype=pl.String),
            "json_path": pl.Series([f.json_path for f in dec.findings], dtype=pl.String),
            "message": pl.Series([f.message for f in dec.findings], dtype=pl.String),
        }
    )
    frame = slow
    if dec.typed_findings.height:  # a document is read by one path: a stable sort merges them
        frame = pl.concat([slow, dec.typed_findings.lazy()]).sort("pos", maintain_order=True)
    return frame.join(docs.select("pos", "run_id", "doc_id"), on="pos", maintain_order="left")


def listed_findings(frame: pl.LazyFrame, column: str, code: str) -> pl.LazyFrame:
    """Findings ``code`` of ``column``: each run's list of problems (``path``, ``message``)."""
    return (
        frame.select("run_id", "doc_id", column)
        .explode(column)
        .filter(pl.col(column).is_not_null())
        .unnest(column)
        .select(
            "run_id",
            "doc_id",
            pl.lit(code).alias("code"),
            pl.col("path").alias("json_path"),
            "message",
        )
    )
