"""When a stored decision is final (#38): literal cases of engine/finality.py."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from ocp_analytics.engine.features import matched_events
from ocp_analytics.engine.finality import (
    CONTRACT,
    canonical_rule,
    fingerprint,
    is_final,
    observed_until,
    redecide,
)
from ocp_analytics.model.rules import Rule

DECIDED = datetime(2026, 12, 1, tzinfo=UTC)


def _final(window_open: bool, until: datetime | None, arrived: bool = False) -> bool:
    frame = pl.DataFrame(
        {"window_open": [window_open], "observed_until": [until]},
        schema={"window_open": pl.Boolean, "observed_until": pl.Datetime("us", "UTC")},
    )
    expr = is_final(pl.col("window_open"), pl.col("observed_until"), DECIDED, arrived)
    return bool(frame.select(expr).item())


def _ids(*values: int) -> pl.Series:
    return pl.Series("doc_id", list(values), pl.Int64)


def test_a_row_whose_window_is_still_open_is_not_final() -> None:
    assert not _final(window_open=True, until=None)


def test_a_row_whose_window_closed_with_everything_observed_is_final() -> None:
    assert _final(window_open=False, until=None)
    assert _final(window_open=False, until=datetime(2026, 11, 30, tzinfo=UTC))


def test_a_signal_observed_at_the_instant_decided_is_known() -> None:
    assert _final(window_open=False, until=DECIDED)


def test_a_signal_observed_after_the_decision_makes_it_not_final() -> None:
    assert not _final(window_open=False, until=datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC))


def test_something_arrived_since_makes_it_not_final() -> None:
    assert not _final(window_open=False, until=None, arrived=True)


def test_observed_until_reads_the_runs_signals_and_matched_late_events() -> None:
    signals = pl.LazyFrame(
        {
            "doc_id": [1, 1, 2],
            "observed_at": [
                datetime(2026, 11, 1, tzinfo=UTC),
                datetime(2026, 11, 20, tzinfo=UTC),
                None,
            ],
        }
    )
    artifacts = pl.LazyFrame(
        {"doc_id": [2], "kind": ["merge"], "path": ["abc"], "artifact_id": ["m"]}
    )
    later = datetime(2026, 12, 5, tzinfo=UTC)
    events = pl.LazyFrame(
        {
            "event_id": ["e1"],
            "commit": ["abc"],
            "kind": ["event"],
            "name": ["revert"],
            "observed_at": [later],
            "tier": ["verified"],
        }
    )
    matched = matched_events(events, artifacts)
    got = observed_until(signals, matched).collect()
    assert dict(got.select("doc_id", "observed_until").iter_rows()) == {
        1: datetime(2026, 11, 20, tzinfo=UTC),
        2: later,
    }
    # decided on 2026-12-01, run 2's matched revert was not observed yet: not final, and
    # the row may change when it becomes known
    after = observed_until(signals, matched, after=DECIDED).collect()
    assert after.rows() == [(2, later, later)]


def test_a_late_event_matched_later_redecides_its_run() -> None:
    again, dropped = redecide(_ids(), _ids(), touched=_ids(7), gone=_ids())
    assert again.to_list() == [7] and dropped.to_list() == [7]


def test_a_replaced_run_drops_its_old_row_and_decides_the_new_version() -> None:
    old, new = 5, (9 << 32) + 1
    again, dropped = redecide(pending=_ids(old), new=_ids(new), touched=_ids(), gone=_ids(old))
    assert again.to_list() == [new]
    assert dropped.to_list() == [old, new]


def test_pending_rows_and_new_runs_are_decided_again_once() -> None:
    again, dropped = redecide(_ids(3, 1), _ids(8), _ids(3), _ids())
    assert again.to_list() == [1, 3, 8] and dropped.to_list() == [1, 3, 8]


def test_a_changed_rule_definition_has_another_fingerprint() -> None:
    base = Rule("strict", requires=("tests", "review"))
    assert fingerprint(base) != fingerprint(Rule("strict", requires=("tests",)))
    assert fingerprint(base) != fingerprint(
        Rule("strict", requires=("tests", "review"), window_days=30)
    )
    assert fingerprint(base) != fingerprint(Rule("lenient", requires=("tests", "review")))
    assert fingerprint(base) != fingerprint(None)


def test_spellings_of_one_rule_share_a_fingerprint() -> None:
    explicit = Rule(
        "strict",
        requires=("tests", "review", "tests"),
        excludes_events=("revert", "incident"),
        window_days=14,
        definition="any text",
    )
    assert fingerprint(explicit) == fingerprint(Rule("strict", requires=("tests", "review")))
    assert canonical_rule(explicit) == {
        "name": "strict",
        "requires": ["tests", "review"],
        "score": None,
        "excludes_events": ["revert", "incident"],
        "window_days": 14,
    }


def test_the_fingerprint_is_stable() -> None:
    # a store written today is found by tomorrow's version of the package
    assert CONTRACT == 1
    assert fingerprint(None) == "8a43c630075340d6"
