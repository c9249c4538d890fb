"""The time axis: ``as_of``, ``--since`` / ``--until`` windows and periods; pure.

A run's time is its ``ended_at``, or its ``started_at`` when it has no end
(a run still going, or one whose producer did not record the end). A run with
neither is outside every window and has no period. Windows are half-open,
``since <= time < until``; a window with a start and no end ends at
``as_of``, the instant of knowledge (docs/time.md). Periods are UTC
calendar buckets: days, weeks starting on Monday, months.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import polars as pl

from ocp_analytics._typing import Period, When
from ocp_analytics.exceptions import OcpAnalyticsError, hint

# Each period's polars interval; the keys are the words of ``Period``, in order.
PERIODS: dict[Period, str] = {"day": "1d", "week": "1w", "month": "1mo"}
# Minutes and months never share a letter: ``1m`` read as one minute once
# turned a month's question into a minute's answer, so a bare ``m`` is refused.
_DURATION = re.compile(r"^\s*(\d+)\s*(min|h|d|w|mo|m)\s*$")
_UNITS = {"min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION_HINT = (
    "give an instant (2026-11-01T00:00:00Z, 2026-11-01) or a duration before as_of: "
    "90min, 12h, 30d, 2w or 3mo (calendar months)."
)


def _months_before(when: datetime, months: int) -> datetime:
    """``when`` moved back ``months`` calendar months, the day clipped to the month's last."""
    index = when.year * 12 + when.month - 1 - months
    year, month = divmod(index, 12)
    month += 1
    following = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=when.tzinfo)
    last_day = (following - timedelta(days=1)).day
    return when.replace(year=year, month=month, day=min(when.day, last_day))


def _duration_before(value: str, as_of: datetime, what: str) -> datetime | None:
    """The instant ``value`` (a duration such as ``30d``) before ``as_of``; None if no duration.

    Examples
    --------
    >>> when = datetime(2026, 3, 31, tzinfo=UTC)
    >>> _duration_before("1mo", when, "since").isoformat()
    '2026-02-28T00:00:00+00:00'
    >>> _duration_before("90min", when, "since").isoformat()
    '2026-03-30T22:30:00+00:00'
    >>> _duration_before("1m", when, "since")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: since '1m' is ambiguous: ...
    """
    m = _DURATION.match(value)
    if m is None:
        return None
    count, unit = int(m.group(1)), m.group(2)
    if unit == "m":
        raise OcpAnalyticsError(
            hint(
                f"{what} {value!r} is ambiguous: m could be minutes or months.",
                f"write {count}min for minutes or {count}mo for calendar months.",
            )
        )
    if unit == "mo":
        return _months_before(as_of, count)
    return as_of - timedelta(**{_UNITS[unit]: count})


def resolve_as_of(as_of: When) -> datetime:
    """``as_of`` as an aware UTC instant; now when ``None``; naive reads as UTC.

    Examples
    --------
    >>> resolve_as_of("2026-12-01T10:00:00+02:00").isoformat()
    '2026-12-01T08:00:00+00:00'
    >>> resolve_as_of("2026-12-01").isoformat()
    '2026-12-01T00:00:00+00:00'
    """
    if as_of is None:
        return datetime.now(UTC).replace(microsecond=0)
    if isinstance(as_of, str):
        try:
            as_of = datetime.fromisoformat(as_of.strip().replace("Z", "+00:00"))
        except ValueError:
            raise OcpAnalyticsError(
                hint(
                    f"cannot read {as_of!r} as an instant.",
                    "use ISO 8601, for example 2026-12-01T00:00:00Z.",
                )
            ) from None
    if as_of.tzinfo is None:
        return as_of.replace(tzinfo=UTC)
    return as_of.astimezone(UTC)


def _instant(value: When, as_of: datetime, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        before = _duration_before(value, as_of, what)
        if before is not None:
            return before
        try:
            return resolve_as_of(value)
        except OcpAnalyticsError:
            raise OcpAnalyticsError(
                hint(f"cannot read {what} {value!r}.", _DURATION_HINT)
            ) from None
    return resolve_as_of(value)


def resolve_window(
    since: When, until: When, as_of: When
) -> tuple[datetime | None, datetime | None]:
    """The window ``[since, until)`` as UTC instants (docs/time.md).

    Durations (``30d``) count back from ``as_of``, and a window with a start
    and no end ends at ``as_of``: ``as_of`` is the instant of knowledge, so
    ``since="30d"`` means the 30 days before it, never the runs after it.
    With neither bound there is no window (``(None, None)``): every run is
    read, each judged on what was observed by ``as_of``.

    Examples
    --------
    >>> lo, hi = resolve_window("7d", None, "2026-12-08T00:00:00Z")
    >>> lo.isoformat(), hi.isoformat()
    ('2026-12-01T00:00:00+00:00', '2026-12-08T00:00:00+00:00')
    >>> resolve_window(None, "2026-12-01", "2026-12-08")[0] is None
    True
    >>> resolve_window("2026-12-02", "2026-12-01", None)
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: the window is empty: since ...
    """
    when = resolve_as_of(as_of)
    lo = _instant(since, when, "since")
    hi = _instant(until, when, "until")
    if lo is not None and hi is None:
        if lo >= when:
            raise OcpAnalyticsError(
                hint(
                    f"the window is empty: since {lo.isoformat()} is not before as_of "
                    f"{when.isoformat()}, where a window with no until ends.",
                    "give an earlier since, a later as_of, or an until.",
                )
            )
        return lo, when
    if lo is not None and hi is not None and lo >= hi:
        raise OcpAnalyticsError(
            hint(
                f"the window is empty: since {lo.isoformat()} is not before until "
                f"{hi.isoformat()}.",
                "swap them, or leave one out.",
            )
        )
    return lo, hi


def run_time() -> pl.Expr:
    """A run's time on the axis: ``ended_at``, else ``started_at`` (over ``runs``)."""
    return pl.coalesce(pl.col("ended_at"), pl.col("started_at"))


def in_window(since: datetime | None, until: datetime | None) -> pl.Expr | None:
    """Filter of the runs inside ``[since, until)``; ``None`` when unbounded.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> runs = pl.DataFrame({
    ...     "ended_at": [datetime(2026, 12, 1, tzinfo=UTC), None, None],
    ...     "started_at": [None, datetime(2026, 11, 1, tzinfo=UTC), None]})
    >>> runs.filter(in_window(datetime(2026, 11, 15, tzinfo=UTC), None)).height
    1
    """
    cond: pl.Expr | None = None
    t = run_time()
    if since is not None:
        cond = t >= pl.lit(since).dt.cast_time_unit("us")
    if until is not None:
        upper = t < pl.lit(until).dt.cast_time_unit("us")
        cond = upper if cond is None else cond & upper
    return cond


def check_period(period: str | None) -> Period | None:
    """``period`` itself when it is ``day``, ``week``, ``month`` or ``None``.

    Examples
    --------
    >>> check_period("week")
    'week'
    >>> check_period("year")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: unknown period 'year'.
    <BLANKLINE>
    Hint: use one of day, week, month.
    """
    if period is None:
        return None
    for word in PERIODS:
        if period == word:
            return word
    raise OcpAnalyticsError(
        hint(f"unknown period {period!r}.", f"use one of {', '.join(PERIODS)}.")
    )


def period_start(period: Period) -> pl.Expr:
    """The UTC start of the run's period bucket (over ``runs``), named ``period``.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> runs = pl.DataFrame({"ended_at": [datetime(2026, 12, 3, 15, tzinfo=UTC)],
    ...                      "started_at": [None]}, schema_overrides={
    ...                      "started_at": pl.Datetime("us", "UTC")})
    >>> runs.select(period_start("week")).item().isoformat()
    '2026-11-30T00:00:00+00:00'
    """
    return run_time().dt.truncate(PERIODS[check_period(period) or "day"]).alias("period")
