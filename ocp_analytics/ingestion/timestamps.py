"""RFC 3339 text to instants, as docs/figures.md "Times" reads it (every timestamp of a document).

Each timestamp is stored twice: its text as written (``*_raw``) and the
instant parsed here (``Datetime(us, UTC)``, null when unreadable); the
findings of an unreadable or naive one are built in ``findings.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

# Seconds 00-59: a leap second (":60") is no instant Python reads (docs/figures.md "Times").
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})?$"

_FIRST_INSTANT = datetime(1, 1, 1, tzinfo=UTC)
_LAST_INSTANT = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_FIRST_US = (_FIRST_INSTANT - _EPOCH) // _US
_LAST_US = (_LAST_INSTANT - _EPOCH) // _US


def _parse_unchecked(col: pl.Expr) -> pl.Expr:
    """RFC 3339 text → instant, without the range check (see :func:`parse_timestamp`).

    One aware parse; the naive parse only where it missed. chrono reads a
    fraction of any length, truncated to the time unit. The aware parse is
    chrono's RFC 3339 item (``%+``): on texts of ``TS_PATTERN``'s shape it
    reads what ``%Y-%m-%dT%H:%M:%S%.f%#z`` reads, with less CPU (polars hands
    chrono the format anew for every text, and ``%+`` is one item; figures in
    ``benchmarks/RESULTS.md``).
    """
    ok = col.str.contains(TS_PATTERN) & ~col.str.starts_with("0000")
    aware = col.str.to_datetime("%+", time_zone="UTC", strict=False, time_unit="us", cache=False)
    naive = (
        pl.when(aware.is_null())
        .then(col)
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us", cache=False)
        .dt.replace_time_zone("UTC")
    )
    return pl.when(ok).then(pl.coalesce(aware, naive))


def _in_range(value: pl.Expr) -> pl.Expr:
    """``value`` where it lies in years 1-9999 (UTC), else null (bounds as integers)."""
    return pl.when(value.to_physical().is_between(_FIRST_US, _LAST_US)).then(value)


def parse_timestamp(col: pl.Expr) -> pl.Expr:
    """Parse RFC 3339 text to ``Datetime(us, UTC)`` as docs/figures.md "Times" says.

    ``Z`` and ``±HH:MM`` offsets; no offset reads as UTC; fractions of any
    length truncated to microseconds; anything else is null: impossible
    calendar values, a leap second, and instants outside years 1-9999 once
    moved to UTC (as the reference reader, Python's ``datetime``, says).
    For the columns of a frame :func:`with_timestamps` does the same with
    less CPU (polars computes a sub-expression used twice twice).

    Examples
    --------
    >>> s = pl.Series(["2026-09-23T23:59:59.1234567+02:00", "2026-09-23T23:59:60Z",
    ...                "0000-01-01T00:00:00Z", "9999-12-31T23:00:00-01:00"])
    >>> pl.select(parse_timestamp(pl.lit(s))).to_series().cast(pl.String).to_list()
    ['2026-09-23 21:59:59.123456+00:00', None, None, None]
    """
    return _in_range(_parse_unchecked(col))


def with_timestamps(frame: pl.LazyFrame, columns: dict[str, str]) -> pl.LazyFrame:
    """Add parsed timestamp columns ``{name: text column}`` (:func:`parse_timestamp`).

    Parsed in one step, range-checked in the next, so each text is parsed once.

    Examples
    --------
    >>> f = pl.LazyFrame({"t": ["2026-09-23T23:59:59Z", "9999-12-31T23:00:00-01:00", None]})
    >>> with_timestamps(f, {"at": "t"}).collect().get_column("at").cast(pl.String).to_list()
    ['2026-09-23 23:59:59.000000+00:00', None, None]
    """
    return frame.with_columns(
        _parse_unchecked(pl.col(raw)).alias(name) for name, raw in columns.items()
    ).with_columns(_in_range(pl.col(name)).alias(name) for name in columns)


# TS_PATTERN without an offset (one scan instead of two for the finding).
_NAIVE_PATTERN = TS_PATTERN.replace(r"(Z|[+-]\d{2}:\d{2})?$", "$")


def is_naive_timestamp(col: pl.Expr) -> pl.Expr:
    """True where a well-formed timestamp has no offset.

    Examples
    --------
    >>> s = pl.Series(["2026-09-23T23:59:59", "2026-09-23T23:59:59Z", "2026-09-23"])
    >>> pl.select(is_naive_timestamp(pl.lit(s))).to_series().to_list()
    [True, False, False]
    """
    return col.str.contains(_NAIVE_PATTERN)
