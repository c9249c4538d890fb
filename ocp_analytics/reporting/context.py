"""The report's inputs, read once: the dataset, the rules, the groups, the window and its period."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ocp_analytics._typing import Period, RulesLike, StoreLike, When
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.scan import Dataset


@dataclass
class Context:
    """The inputs every figure shares, resolved once."""

    dataset: StoreLike | Dataset
    rules: list[Rule]
    names: list[str]
    by: list[str]
    as_of: datetime
    since: datetime | None
    until: datetime | None
    period: str
    sample: int
    snapshot: int | None = None  # the seq of the commit read (None: no commit, or in memory)
    decisions: bool = True  # read the rules' decisions stores where they give the same rows

    def previous(self) -> tuple[datetime, datetime] | None:
        """The window of the same length just before this one (none without ``since``)."""
        if self.since is None:
            return None
        end = self.until or self.as_of
        return self.since - (end - self.since), self.since

    def header(self) -> dict[str, Any]:
        """What every data file says: instant, snapshot, window, period, groups, rules."""
        return {
            "as_of": self.as_of,
            "snapshot": self.snapshot,
            "since": self.since,
            "until": self.until,
            "period": self.period,
            "by": self.by,
            "rules": self.names,
        }


def default_period(since: datetime | None, end: datetime) -> Period:
    """``day`` for windows up to 62 days, ``week`` up to a year or without a start, else ``month``.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> end = datetime(2026, 12, 1, tzinfo=UTC)
    >>> starts = [datetime(y, m, 1, tzinfo=UTC) for y, m in [(2026, 11), (2026, 6), (2024, 1)]]
    >>> [default_period(s, end) for s in starts]
    ['day', 'week', 'month']
    >>> default_period(None, end)
    'week'
    """
    if since is None:
        return "week"
    span = end - since
    if span <= timedelta(days=62):
        return "day"
    return "week" if span <= timedelta(days=366) else "month"


def resolve_context(
    dataset: StoreLike | Dataset,
    rules: RulesLike,
    by: Sequence[str] | str,
    since: When,
    until: When,
    as_of: When,
    period: Period | None,
    sample: int,
) -> Context:
    """Read the report's arguments: the recorded rules first, the period checked or chosen.

    Examples
    --------
    >>> ctx = resolve_context("ds", "tests", "task_type", "30d", None, "2027-01-01", None, 5)
    >>> ctx.names, ctx.by, ctx.period, ctx.since.isoformat()
    (['recorded', 'tests'], ['task_type'], 'day', '2026-12-02T00:00:00+00:00')
    """
    from ocp_analytics.engine.timeaxis import check_period, resolve_as_of, resolve_window
    from ocp_analytics.model.rules import RECORDED, resolve_rules

    when = resolve_as_of(as_of)
    lo, hi = resolve_window(since, until, when)
    alt = resolve_rules(rules)
    names = [RECORDED, *(r.name for r in alt)]
    cols = [by] if isinstance(by, str) else list(by)
    chosen = check_period(period) or default_period(lo, hi or when)
    seq = dataset.snapshot if isinstance(dataset, Dataset) else None
    return Context(dataset, alt, names, cols, when, lo, hi, chosen, sample, seq)
