"""What the commands print and write: tables, CSV, JSON, Parquet, warnings.

``emit`` is the one way a result frame leaves a command: printed, or written
to ``--out`` with a ``wrote N rows`` line on standard error. Tables fit a
terminal: they show the columns a reader scans (``--wide`` shows all),
``as_of`` once in a footer, at most ``TABLE_ROWS`` rows (the newest periods
when rows have one) and how many were left out; the other formats write every
row and column. Rates read as ``66.0 % [65.7–66.3] of 1,234 decided``
(:mod:`ocp_analytics.reporting.numbers`, the page's spelling too).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import typer

from ocp_analytics.cli.options import Format
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.reporting.numbers import pct, rate_text

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


def _newest(frame: pl.DataFrame, rows: int) -> pl.DataFrame:
    """The last ``rows`` rows, those of the newest periods (rows with no period go first)."""
    if "period" not in frame.columns:
        return frame.head(rows)
    if frame.height <= rows:
        return frame
    ordered = frame.with_row_index("_at").sort("period", "_at", nulls_last=False)
    keep = ordered.tail(rows)["_at"]
    return frame.with_row_index("_at").filter(pl.col("_at").is_in(keep.implode())).drop("_at")


def table_text(frame: pl.DataFrame) -> str:
    """At most ``TABLE_ROWS`` rows as an aligned table, and how many were left out.

    Rows with a ``period`` keep the newest periods: a cap that kept the first
    rows would hide the weeks a reader opens the table for.

    Examples
    --------
    >>> print(table_text(pl.DataFrame({"rule": ["tests"], "runs": [3]})))
    ┌───────┬──────┐
    │ rule  ┆ runs │
    ╞═══════╪══════╡
    │ tests ┆ 3    │
    └───────┴──────┘
    """
    shown = _plain(_newest(frame, TABLE_ROWS))
    with pl.Config(
        tbl_rows=TABLE_ROWS,
        tbl_cols=-1,
        fmt_str_lengths=60,
        tbl_hide_dataframe_shape=True,
        tbl_width_chars=400,
        tbl_hide_column_data_types=True,
    ):
        text = str(shown)
    left = frame.height - shown.height
    if left:
        which = "the newest periods" if "period" in frame.columns else "the first rows"
        text += (
            f"\n({shown.height} of {frame.height:,} rows shown, {which}; {left:,} left out; "
            "--format csv|json|parquet --out FILE writes all)"
        )
    return text


def render(
    frame: pl.DataFrame, fmt: Format, as_of: datetime | None, snapshot: int | None = None
) -> str:
    """A result as an aligned table, CSV, or JSON (``{"as_of": …, "snapshot": …, "rows": […]}``).

    ``snapshot`` (the ``seq`` of the commit read) goes beside ``as_of``: the
    table's last line, the JSON header; with both, a rerun reads the same rows.

    Examples
    --------
    >>> print(render(pl.DataFrame({"rule": ["tests"], "runs": [3]}), Format.csv, None))
    rule,runs
    tests,3
    <BLANKLINE>
    >>> from datetime import UTC
    >>> when = datetime(2027, 1, 1, tzinfo=UTC)
    >>> render(pl.DataFrame({"runs": [3]}), Format.table, when, 12).splitlines()[-1]
    'as_of: 2027-01-01T00:00:00+00:00, snapshot: 12'
    """
    if fmt is Format.json:
        head = stamp(as_of, snapshot)
        return json_text({**head, "rows": frame.to_dicts()})
    if fmt is Format.csv:
        return _plain(frame).write_csv()
    text = table_text(frame.drop("as_of", strict=False))
    if as_of is not None:
        text += "\n" + footer_line(as_of, snapshot)
    return text


def stamp(as_of: datetime | None, snapshot: int | None) -> dict[str, Any]:
    """The JSON header of a result: ``as_of``, and ``snapshot`` beside it when there is one.

    Examples
    --------
    >>> from datetime import UTC
    >>> stamp(datetime(2027, 1, 1, tzinfo=UTC), 3)
    {'as_of': '2027-01-01T00:00:00+00:00', 'snapshot': 3}
    >>> stamp(None, None)
    {'as_of': None}
    """
    if as_of is None:
        return {"as_of": None}
    return {"as_of": as_of.isoformat(), "snapshot": snapshot}


def footer_line(as_of: datetime, snapshot: int | None) -> str:
    """A table's last line: the instant judged at and the commit read (none: no commit)."""
    return f"as_of: {as_of.isoformat()}, snapshot: {'none' if snapshot is None else snapshot}"


def _write_parquet(
    frame: pl.DataFrame, out: Path, as_of: datetime | None, snapshot: int | None = None
) -> None:
    """Parquet with the instant the rows were judged at and the commit read in its metadata."""
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    meta = {
        **(table.schema.metadata or {}),
        b"ocp_analytics.as_of": (as_of.isoformat() if as_of else "").encode(),
    }
    if as_of is not None:
        meta[b"ocp_analytics.snapshot"] = ("" if snapshot is None else str(snapshot)).encode()
    pq.write_table(table.replace_schema_metadata(meta), out)


def deliver(text: str, out: Path | None) -> None:
    """Print ``text``, or write it to ``out`` ending in one newline."""
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        out.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


def emit(
    frame: pl.DataFrame,
    fmt: Format,
    out: Path | None,
    as_of: datetime | None,
    snapshot: int | None = None,
) -> None:
    """Write a result to ``out`` (or print it) as a table, CSV, JSON or Parquet.

    ``as_of`` and ``snapshot`` are written as :func:`render` writes them, and
    into a Parquet file's metadata (``ocp_analytics.as_of``,
    ``ocp_analytics.snapshot``).

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
        _write_parquet(frame, out, as_of, snapshot)
    else:
        deliver(render(frame, fmt, as_of, snapshot), out)
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

# what a reader scans in ``rates``; every other column with --wide or another format
NARROW = ("rule", "runs", "decided", "accept_rate", "attempts_median")


def rates_table(frame: pl.DataFrame, keys: Sequence[str], wide: bool = False) -> pl.DataFrame:
    """Rates for reading: ``accept_rate`` as one text column with its interval and count.

    ``keys`` are the group columns (and ``period``); without ``wide`` only
    they and :data:`NARROW` are kept.

    Examples
    --------
    >>> f = pl.DataFrame({"rule": ["tests"], "runs": [31], "accepted": [14], "rejected": [0],
    ...                   "accept_rate": [1.0], "ci_low": [0.7846], "ci_high": [1.0],
    ...                   "decided_share": [14 / 31], "attempts_median": [2.0]})
    >>> rates_table(f, []).row(0)
    ('tests', 31, 14, '100.0 % [78.5–100.0] of 14 decided', 2.0)
    """
    decided = pl.col("accepted") + pl.col("rejected")
    cells = [
        rate_text(r["accept_rate"], r["ci_low"], r["ci_high"], r["accepted"] + r["rejected"])
        for r in frame.iter_rows(named=True)
    ]
    out = frame.with_columns(
        pl.Series("accept_rate", cells, dtype=pl.String), decided.alias("decided")
    )
    if wide:
        rest = [c for c in out.columns if c not in (*keys, *NARROW)]
        out = out.with_columns(pl.col("decided_share").map_elements(pct, return_dtype=pl.String))
        return out.select(*keys, *[c for c in NARROW if c in out.columns], *rest).drop(
            "ci_low", "ci_high"
        )
    return out.select(*keys, *[c for c in NARROW if c in out.columns])


def matrix_table(m: pl.DataFrame) -> pl.DataFrame:
    """``compare``'s matrix for reading: each rule's rate, interval and count as one text column.

    The columns ``RULE__low`` and ``RULE__high`` (and any other ``RULE__…``
    count) fold into the column ``RULE``; the count is ``RULE__decided`` when
    the matrix carries it.

    Examples
    --------
    >>> m = pl.DataFrame({"group": ["a"], "t": [0.5], "t__low": [0.2], "t__high": [0.8],
    ...                   "t__decided": [6]})
    >>> matrix_table(m).row(0)
    ('a', '50.0 % [20.0–80.0] of 6 decided')
    """
    names = [c for c in m.columns if f"{c}__low" in m.columns]
    parts = tuple(f"{n}__" for n in names)
    keys = [c for c in m.columns if c not in names and not c.startswith(parts)]
    cells = {
        n: [
            rate_text(
                r[n],
                r[f"{n}__low"],
                r[f"{n}__high"],
                r.get(f"{n}__decided"),
            )
            for r in m.iter_rows(named=True)
        ]
        for n in names
    }
    return m.select(
        *keys,
        *[pl.Series(n, cells[n], dtype=pl.String) for n in names],
    )


def flips_table(flips: pl.DataFrame) -> pl.DataFrame:
    """``compare``'s flips for reading: the difference with its interval, and the p-values, as text.

    ``difference`` becomes ``+4.3 pts [-10.4, +21.0]``, ``p_value`` carries
    its method (``0.0129 exact``); ``n`` (= a + b + c + d) is left to the
    other formats.
    """
    from ocp_analytics.engine.flips import format_difference, format_p

    flips = sort_flips(flips)
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


def sort_flips(flips: pl.DataFrame) -> pl.DataFrame:
    """Flips largest first (then by group and pair, so the order is stable).

    Examples
    --------
    >>> f = pl.DataFrame({"rule_a": ["x", "y"], "rule_b": ["y", "x"], "flips": [1, 9]})
    >>> sort_flips(f)["flips"].to_list()
    [9, 1]
    """
    return flips.sort(pl.col("flips"), descending=True, maintain_order=True)


def no_run_line(
    since: str | None, until: str | None, as_of: datetime, where: Sequence[str] = ()
) -> str:
    """What a command says when its window (or ``--where``) selects no run.

    Examples
    --------
    >>> from datetime import UTC
    >>> print(no_run_line("7d", None, datetime(2026, 12, 8, tzinfo=UTC)))
    no run in the window 2026-12-01T00:00:00+00:00 → 2026-12-08T00:00:00+00:00 (as_of ...)
    >>> no_run_line(None, None, datetime(2026, 12, 8, tzinfo=UTC), ["label.team=x"])
    'no run with --where label.team=x (as_of 2026-12-08T00:00:00+00:00)'
    """
    from ocp_analytics.engine.timeaxis import resolve_window

    lo, hi = resolve_window(since, until, as_of)
    parts = []
    if lo is not None or hi is not None:
        start = lo.isoformat() if lo else "the first run"
        end = hi.isoformat() if hi else "the last run"
        parts.append(f"in the window {start} → {end}")
    if where:
        parts.append("with " + " ".join(f"--where {w}" for w in where))
    return f"no run {' '.join(parts)} (as_of {as_of.isoformat()})"
