"""How fresh the data is on the morning page: the newest run end and the last ingest.

A page computed over data that stopped arriving looks as plausible as a fresh
one, so the headline says how long before ``as_of`` the newest run ended and
the last ingest was committed, and ``max_staleness`` stops a stale page
before it is written (``report --max-staleness 2d`` exits 1).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl

from ocp_analytics._typing import When
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.reporting.context import Context
from ocp_analytics.store.scan import Dataset


def age_text(delta: timedelta | None) -> str:
    """A duration as days, hours and minutes, the two largest parts.

    Examples
    --------
    >>> age_text(timedelta(days=2, hours=3, minutes=5)), age_text(timedelta(minutes=42))
    ('2d 3h', '42min')
    >>> age_text(timedelta(0)), age_text(None)
    ('0min', '–')
    """
    if delta is None:
        return "–"
    minutes = int(delta.total_seconds() // 60)
    parts = [(minutes // 1440, "d"), (minutes % 1440 // 60, "h"), (minutes % 60, "min")]
    shown = [f"{n}{unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0min"


# how far back the newest run end is looked for first, in the parts the manifest keeps
_RECENT = timedelta(days=7)


def _newest_run_end(ctx: Context) -> datetime | None:
    """The newest ``ended_at`` not after ``as_of`` (a run ending later is not yet known).

    Looked for first among the runs that ended in the last days (read from
    the parts whose runs' times meet ``[as_of - 7 days, as_of]``: a nightly
    dataset's newest batches): a run that ended then has its time in that
    window, so its part is read, and the newest of them is the newest of
    all. The parts also hold older runs, which say nothing (a newer end may
    be in a part not read): only a dataset with no run ending in those days
    is read whole.
    """
    from ocp_analytics.store.scan import scan_dataset

    ds = ctx.dataset if isinstance(ctx.dataset, Dataset) else scan_dataset(ctx.dataset)
    as_of = pl.lit(ctx.as_of).dt.cast_time_unit("us")
    ended = pl.col("ended_at")
    since = ctx.as_of - _RECENT
    recent = ds.within(since, ctx.as_of + timedelta(microseconds=1))
    lately = ended >= pl.lit(since).dt.cast_time_unit("us")
    reads = [(recent, lately)] if recent is not ds else []  # nothing pruned: read it all
    for read, cond in [*reads, (ds, pl.lit(True))]:
        runs = read.current("runs")  # the replaced versions the report's passes share
        value = runs.filter(ended <= as_of, cond).select(ended.max()).collect().item()
        if value is not None:
            return value
    return None


def _last_ingest(ctx: Context) -> datetime | None:
    """The commit time of the newest ingest committed by ``as_of``, up to the snapshot read."""
    from ocp_analytics.engine.timeaxis import resolve_as_of
    from ocp_analytics.store.dataset import read_commits

    path = ctx.dataset.path if isinstance(ctx.dataset, Dataset) else ctx.dataset
    times = [
        resolve_as_of(r["committed_at"])
        for r in read_commits(path, ctx.snapshot)
        if r.get("committed_at")
    ]
    known = [t for t in times if t <= ctx.as_of]
    return max(known, default=None)


def freshness(ctx: Context) -> dict[str, Any]:
    """The newest run end and the last ingest, and how long before ``as_of`` each was.

    Ages are in seconds (``*_age_s``) and as text (``*_age``); ``None`` when
    the dataset has no ended run or no commit record with a time.
    """
    out: dict[str, Any] = {}
    for name, when in (
        ("newest_run_end", _newest_run_end(ctx)),
        ("last_ingest", _last_ingest(ctx)),
    ):
        age = None if when is None else ctx.as_of - when
        out[name] = when
        out[f"{name}_age_s"] = None if age is None else age.total_seconds()
        out[f"{name}_age"] = age_text(age)
    return out


def check_staleness(fresh: dict[str, Any], max_staleness: When, as_of: datetime) -> None:
    """Raise when the newest run ended longer than ``max_staleness`` (``2d``) before ``as_of``.

    Examples
    --------
    >>> from datetime import UTC
    >>> now = datetime(2026, 12, 8, tzinfo=UTC)
    >>> check_staleness({"newest_run_end": datetime(2026, 12, 7, tzinfo=UTC)}, "2d", now)
    >>> check_staleness({"newest_run_end": datetime(2026, 12, 1, tzinfo=UTC)}, "2d", now)
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: stale data: the newest run ended 7d before as_of ...
    """
    from ocp_analytics.engine.timeaxis import resolve_window

    if max_staleness is None:
        return
    limit, _ = resolve_window(max_staleness, None, as_of)
    newest = fresh.get("newest_run_end")
    if newest is not None and limit is not None and newest >= limit:
        return
    ended = (
        "no run has ended"
        if newest is None
        else f"the newest run ended {age_text(as_of - newest)} before as_of"
    )
    raise OcpAnalyticsError(
        hint(
            f"stale data: {ended} {as_of.isoformat()}, more than {max_staleness}; no page written.",
            "check that the ingest job ran, or raise --max-staleness.",
        )
    )
