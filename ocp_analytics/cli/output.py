"""What the commands print and write: tables, CSV, JSON, Parquet, warnings.

``emit`` is the one way a result frame leaves a command: printed, or written
to ``--out`` with a ``wrote N rows`` line on standard error. Tables show the
first ``TABLE_ROWS`` rows; the other formats write every row.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import typer

from ocp_analytics.cli.options import Format
from ocp_analytics.exceptions import OcpAnalyticsError, hint

TABLE_ROWS = 40


def _plain(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists as JSON text, so CSV and terminals can show them."""
    return frame.with_columns(
        [
            pl.col(c).map_elements(
                lambda v: orjson.dumps(v.to_list()).decode(), return_dtype=pl.String
            )
            for c, t in frame.schema.items()
            if isinstance(t, pl.List)
        ]
    )


def json_text(body: dict[str, Any]) -> str:
    """``body`` as indented JSON; instants in ISO 8601 (naive ones as UTC).

    Examples
    --------
    >>> print(json_text({"as_of": datetime(2026, 12, 1), "rows": []}))
    {
      "as_of": "2026-12-01T00:00:00+00:00",
      "rows": []
    }
    """
    return orjson.dumps(
        body, option=orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC, default=str
    ).decode()


def table_text(frame: pl.DataFrame) -> str:
    """The first ``TABLE_ROWS`` rows as an aligned table, and how to get the rest.

    Examples
    --------
    >>> print(table_text(pl.DataFrame({"rule": ["tests"], "runs": [3]})))
    ┌───────┬──────┐
    │ rule  ┆ runs │
    ╞═══════╪══════╡
    │ tests ┆ 3    │
    └───────┴──────┘
    """
    shown = _plain(frame.head(TABLE_ROWS))
    with pl.Config(
        tbl_rows=TABLE_ROWS,
        tbl_cols=-1,
        fmt_str_lengths=60,
        tbl_hide_dataframe_shape=True,
        tbl_width_chars=400,
        tbl_hide_column_data_types=True,
    ):
        text = str(shown)
    if frame.height > TABLE_ROWS:
        text += (
            f"\n({TABLE_ROWS} of {frame.height:,} rows shown; "
            "--format csv|json|parquet --out FILE writes all)"
        )
    return text


def render(frame: pl.DataFrame, fmt: Format, as_of: datetime | None) -> str:
    """A result as an aligned table, CSV, or JSON (``{"as_of": …, "rows": […]}``).

    Examples
    --------
    >>> print(render(pl.DataFrame({"rule": ["tests"], "runs": [3]}), Format.csv, None))
    rule,runs
    tests,3
    <BLANKLINE>
    """
    if fmt is Format.json:
        return json_text({"as_of": as_of.isoformat() if as_of else None, "rows": frame.to_dicts()})
    if fmt is Format.csv:
        return _plain(frame).write_csv()
    text = table_text(frame)
    if as_of is not None:
        text += f"\nas_of: {as_of.isoformat()}"
    return text


def _write_parquet(frame: pl.DataFrame, out: Path, as_of: datetime | None) -> None:
    """Parquet with the instant the rows were judged at in its metadata."""
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    meta = {
        **(table.schema.metadata or {}),
        b"ocp_analytics.as_of": (as_of.isoformat() if as_of else "").encode(),
    }
    pq.write_table(table.replace_schema_metadata(meta), out)


def deliver(text: str, out: Path | None) -> None:
    """Print ``text``, or write it to ``out`` ending in one newline."""
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        out.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


def emit(frame: pl.DataFrame, fmt: Format, out: Path | None, as_of: datetime | None) -> None:
    """Write a result to ``out`` (or print it) as a table, CSV, JSON or Parquet.

    Examples
    --------
    >>> emit(pl.DataFrame({"rule": ["tests"], "runs": [3]}), Format.json, None, None)
    {
      "as_of": null,
      "rows": [
        {
          "rule": "tests",
          "runs": 3
        }
      ]
    }
    """
    if fmt is Format.parquet:
        if out is None:
            raise OcpAnalyticsError(
                hint("--format parquet needs --out FILE.", "add --out result.parquet.")
            )
        _write_parquet(frame, out, as_of)
    else:
        deliver(render(frame, fmt, as_of), out)
    if out is not None:
        typer.echo(f"wrote {frame.height:,} rows to {out}", err=True)


@contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Warnings of the API as one ``warning: …`` line each on standard error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                typer.echo(f"warning: {message}", err=True)


# ------------------------------------------------------------ rates for reading


def _pct(value: float) -> str:
    return f"{100 * value:.1f}".removesuffix(".0")


def rate_text(
    rate: float | None, low: float | None, high: float | None, decided: int, runs: int
) -> str:
    """A rate with its interval and how many runs were decided.

    Examples
    --------
    >>> rate_text(1.0, 0.7846, 1.0, 14, 31)
    '100% [78.5–100] of 14/31 decided'
    >>> rate_text(None, None, None, 0, 3)
    '– of 0/3 decided'
    """
    if rate is None:
        return f"– of {decided:,}/{runs:,} decided"
    return f"{_pct(rate)}% [{_pct(low or 0.0)}–{_pct(high or 0.0)}] of {decided:,}/{runs:,} decided"


def rates_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Rates for reading: ``accept_rate`` becomes one text column with its
    interval and decided share (``100% [78.5–100] of 14/31 decided``)."""
    cells = [
        rate_text(
            r["accept_rate"], r["ci_low"], r["ci_high"], r["accepted"] + r["rejected"], r["runs"]
        )
        for r in frame.iter_rows(named=True)
    ]
    return frame.with_columns(pl.Series("accept_rate", cells, dtype=pl.String)).drop(
        "ci_low", "ci_high", "decided_share"
    )


def matrix_table(m: pl.DataFrame) -> pl.DataFrame:
    """``compare``'s matrix for reading: each rule's rate and interval as one text column."""
    from ocp_analytics.engine.rates import format_rate

    keys = [c for c in m.columns if not c.endswith(("__low", "__high"))]
    names = [c for c in keys if f"{c}__low" in m.columns]
    cells = {
        n: [
            format_rate(r[n], r[f"{n}__low"], r[f"{n}__high"])
            for r in m.select(n, f"{n}__low", f"{n}__high").iter_rows(named=True)
        ]
        for n in names
    }
    return m.select(
        *[c for c in keys if c not in names],
        *[pl.Series(n, cells[n], dtype=pl.String) for n in names],
    )


def flips_table(flips: pl.DataFrame) -> pl.DataFrame:
    """``compare``'s flips for reading: the difference with its interval, and the p-values, as text.

    ``difference`` becomes ``+4.3 pts [-10.4, +21.0]``, ``p_value`` carries
    its method (``0.0129 exact``); ``n`` (= a + b + c + d) is left to the
    other formats.
    """
    from ocp_analytics.engine.flips import format_difference, format_p

    rows = flips.select("difference", "difference_low", "difference_high", "p_value", "p_method")
    diffs, ps = [], []
    for d, lo, hi, p, method in rows.iter_rows():
        diffs.append(format_difference(d, lo, hi))
        ps.append(format_p(p, method))
    return flips.with_columns(
        pl.Series("difference", diffs, dtype=pl.String),
        pl.Series("p_value", ps, dtype=pl.String),
        pl.Series("p_holm", [format_p(p) for p in flips["p_holm"]], dtype=pl.String),
    ).drop("n", "difference_low", "difference_high", "p_method")
