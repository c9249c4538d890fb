"""The time axis: as_of, --since/--until windows, periods (API and engine)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import pytest

import ocp_analytics as oa
from ocp_analytics.engine.timeaxis import resolve_as_of, resolve_window

AS_OF = "2026-12-10T00:00:00Z"


def _doc(run_id: str, ended: str | None, started: str | None = None, ok: bool = True) -> dict:
    run: dict = {
        "id": run_id,
        "signals": [{"kind": "verdict", "name": "tests", "value": "pass" if ok else "fail"}],
        "acceptance_rule": {"name": "t", "definition": "t", "requires": ["tests"]},
    }
    if ended:
        run["ended_at"] = ended
    if started:
        run["started_at"] = started
    return {"ocp": "0.3", "producer": {"name": "t"}, "privacy": {"profile": "x"}, "run": run}


DOCS = [
    _doc("mon", "2026-11-30T10:00:00Z"),
    _doc("tue", "2026-12-01T23:59:59+00:00", ok=False),
    _doc("next", "2026-12-08T00:00:00Z"),
    _doc("started_only", None, started="2026-12-02T08:00:00Z"),
    _doc("timeless", None),
]


@pytest.fixture
def ds(tiny_dataset: Callable[[Iterable[dict]], Path]) -> Path:
    return tiny_dataset(DOCS)


def test_durations_count_back_from_as_of() -> None:
    lo, hi = resolve_window("7d", "12h", AS_OF)
    assert lo == datetime(2026, 12, 3, tzinfo=UTC)
    assert hi == datetime(2026, 12, 9, 12, tzinfo=UTC)
    assert resolve_window(None, None, AS_OF) == (None, None)
    assert resolve_as_of("2026-12-01T01:00:00+01:00") == datetime(2026, 12, 1, tzinfo=UTC)


def test_a_window_with_a_start_and_no_end_ends_at_as_of() -> None:
    """SEMANTICS §10: ``30d`` is the 30 days before as_of, not the runs after it too."""
    assert resolve_window("30d", None, AS_OF) == (
        datetime(2026, 11, 10, tzinfo=UTC),
        datetime(2026, 12, 10, tzinfo=UTC),
    )
    lo, hi = resolve_window("2026-12-01", None, "2026-12-10T02:00:00+02:00")
    assert (lo, hi) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 10, tzinfo=UTC))
    # an until given is kept, also after as_of; no window at all stays unbounded
    assert resolve_window("30d", "2027-01-01", AS_OF)[1] == datetime(2027, 1, 1, tzinfo=UTC)
    assert resolve_window(None, "2026-12-05", AS_OF) == (None, datetime(2026, 12, 5, tzinfo=UTC))


def test_a_start_at_or_after_as_of_with_no_end_is_refused() -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="not before as_of") as err:
        resolve_window("2026-12-10", None, AS_OF)
    assert "Hint: give an earlier since, a later as_of, or an until." in str(err.value)
    with pytest.raises(oa.OcpAnalyticsError, match="the window is empty"):
        resolve_window("0d", None, AS_OF)


def test_runs_after_as_of_are_outside_a_window_with_no_end(ds: Path) -> None:
    """``since`` alone: a run ending after as_of is not in the window (until = as_of)."""
    as_of = "2026-12-05T00:00:00Z"
    acc = oa.acceptance(ds, as_of=as_of, since="2026-11-01")
    assert sorted(acc["run_id"]) == ["mon", "started_only", "tue"]  # not "next" (12-08)
    rates = oa.rates(ds, as_of=as_of, since="7d")
    assert rates.select("runs", "accepted", "rejected").rows() == [(3, 2, 1)]
    # no window at all: every run, each judged on what was known at as_of
    everything = oa.acceptance(ds, as_of=as_of)
    assert everything.height == len(DOCS)


def test_the_report_window_ends_at_as_of(ds: Path, tmp_path: Path) -> None:
    """``report --since 7d``: the 7 days before as_of, against the 7 days before those."""
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    import json

    files = oa.report(ds, as_of="2026-12-05T00:00:00Z", since="7d", out=tmp_path / "r.html")
    head = json.loads((files.data_dir / "headline.json").read_text())
    assert (head["since"], head["until"]) == (
        "2026-11-28T00:00:00+00:00",
        "2026-12-05T00:00:00+00:00",
    )
    (row,) = head["rows"]
    assert (row["rule"], row["runs"], row["prev_runs"]) == ("recorded", 3, 0)  # not "next"


@pytest.mark.parametrize("bad", ["yesterday", "7 days", "-3d", "2026-13-01"])
def test_unreadable_window_says_what_to_give(bad: str) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="Hint: give an instant"):
        resolve_window(bad, None, AS_OF)


def test_empty_window_is_refused() -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="the window is empty"):
        resolve_window("2026-12-02", "2026-12-01", AS_OF)


def test_since_until_filter_on_end_else_start(ds: Path) -> None:
    acc = oa.acceptance(ds, as_of=AS_OF, since="2026-12-01", until="2026-12-08")
    assert sorted(acc["run_id"]) == ["started_only", "tue"]  # until is exclusive
    week = oa.acceptance(ds, as_of=AS_OF, since="10d")  # from 2026-11-30
    assert sorted(week["run_id"]) == ["mon", "next", "started_only", "tue"]


def test_rates_by_week_and_day(ds: Path) -> None:
    weekly = oa.rates(ds, as_of=AS_OF, period="week")
    rows = weekly.select("period", "runs", "accepted", "rejected").rows()
    assert rows == [
        (datetime(2026, 11, 30, tzinfo=UTC), 3, 2, 1),  # Monday 30 Nov: mon, tue, started_only
        (datetime(2026, 12, 7, tzinfo=UTC), 1, 1, 0),
        (None, 1, 1, 0),  # no time at all: its own (null) period, last
    ]
    daily = oa.rates(ds, as_of=AS_OF, period="day", since="2026-12-01")
    assert daily.select("period", "runs").rows() == [
        (datetime(2026, 12, 1, tzinfo=UTC), 1),
        (datetime(2026, 12, 2, tzinfo=UTC), 1),
        (datetime(2026, 12, 8, tzinfo=UTC), 1),
    ]
    monthly = oa.rates(ds, as_of=AS_OF, period="month", since="2026-11-01")
    assert monthly.select("period", "runs").rows() == [
        (datetime(2026, 11, 1, tzinfo=UTC), 1),
        (datetime(2026, 12, 1, tzinfo=UTC), 3),
    ]


def test_unknown_period_is_refused(ds: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="use one of day, week, month"):
        oa.rates(ds, as_of=AS_OF, period="year")


def test_window_with_no_runs_gives_no_rows(ds: Path) -> None:
    assert oa.rates(ds, as_of=AS_OF, since="2025-01-01", until="2025-02-01").height == 0
    matrix, flips = oa.compare(ds, ["tests"], as_of=AS_OF, since="2025-01-01", until="2025-02-01")
    assert matrix.height == 0
    assert flips.height == 0


def test_period_words_are_spelled_once() -> None:
    from typing import get_args

    from ocp_analytics._typing import Period
    from ocp_analytics.engine.timeaxis import PERIODS

    assert tuple(PERIODS) == get_args(Period) == ("day", "week", "month")
