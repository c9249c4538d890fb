"""Per-run features: latest signal per name (ties), attempt positions, event rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ocp_analytics.engine.features import (
    FAIL,
    PASS,
    UNKNOWN,
    event_rows,
    known_at,
    latest_scores,
    latest_verdicts,
    matched_events,
)
from ocp_analytics.model.links import attempt_positions

T0 = datetime(2026, 12, 1, tzinfo=UTC)
T1 = datetime(2026, 12, 2, tzinfo=UTC)


def _signals(rows: list[tuple]) -> pl.LazyFrame:
    cols = ["doc_id", "sig_idx", "kind", "name", "value_text", "value_num", "observed_at"]
    return pl.LazyFrame(
        [dict(zip(cols, r, strict=True)) | {"tier": "verified", "at_attempt": None} for r in rows],
        schema_overrides={"observed_at": pl.Datetime("us", "UTC"), "value_num": pl.Float64},
    )


def test_latest_verdict_unknown_time_first_then_position() -> None:
    s = _signals(
        [
            (1, 0, "verdict", "tests", "fail", None, T1),
            (1, 1, "verdict", "tests", "pass", None, None),  # unknown time sorts first
            (2, 0, "verdict", "tests", "pass", None, T0),
            (2, 1, "verdict", "tests", "error", None, T0),  # a tie: the later position wins
            (3, 0, "verdict", "Tests", "pass", None, T0),  # names are case-sensitive
        ]
    )
    got = latest_verdicts(s).sort("doc_id").collect()
    assert got.select("doc_id", "name", "state").rows() == [
        (1, "tests", FAIL),
        (2, "tests", UNKNOWN),
        (3, "Tests", PASS),
    ]


def test_latest_is_one_row_per_run_and_name_in_any_input_order() -> None:
    """The last row of each (run, name) after the sort, whatever order the rows came in."""
    rows = [
        (2, 1, "verdict", "ci", "fail", None, T1),
        (1, 2, "verdict", "tests", "pass", None, T0),
        (2, 0, "verdict", "ci", "pass", None, T0),
        (1, 0, "verdict", "lint", "fail", None, None),
        (1, 1, "verdict", "tests", "fail", None, T0),  # a tie with position 2: 2 wins
        (3, 0, "verdict", "ci", "pass", None, T0),  # alone in its run
    ]
    got = latest_verdicts(_signals(rows)).sort("doc_id", "name").collect()
    assert got.select("doc_id", "name", "state").rows() == [
        (1, "lint", FAIL),
        (1, "tests", PASS),
        (2, "ci", FAIL),
        (3, "ci", PASS),
    ]


def test_latest_score_skips_values_that_are_not_numbers() -> None:
    s = _signals(
        [
            (1, 0, "score", "runtime", "3300", 3300.0, T0),
            (1, 1, "score", "runtime", None, None, T1),  # a later null does not hide it
        ]
    )
    assert latest_scores(s).collect().select("value").item() == 3300.0


def test_attempt_positions_by_start_then_position_and_n_per_node() -> None:
    att = pl.LazyFrame(
        {
            "doc_id": [1, 1, 1, 1],
            "att_idx": [0, 1, 2, 3],
            "attempt_id": ["b.1", "a.1", "a.2", "b.2"],
            "node": ["b", "a", "a", "b"],
            "n": [None, None, 7, None],
            "round": [None, 1, 2, None],
            "started_at": [T1, T0, None, T1],
        },
        schema_overrides={"started_at": pl.Datetime("us", "UTC"), "n": pl.Int64},
    )
    got = attempt_positions(att).sort("pos").collect()
    assert got.select("at_attempt", "pos", "n", "round").rows() == [
        ("a.1", 1, 1, 1),
        ("b.1", 2, 1, None),
        ("b.2", 3, 2, None),
        ("a.2", 4, 7, 2),  # unknown start sorts last; an explicit n wins
    ]


def test_matched_events_are_appended_after_the_runs_own() -> None:
    runs = pl.LazyFrame(
        {"doc_id": [1], "ended_at": [T0]}, schema_overrides={"ended_at": pl.Datetime("us", "UTC")}
    )
    own = _signals([(1, 3, "event", "issue", None, None, T1)])
    arts = pl.LazyFrame(
        {"doc_id": [1], "kind": ["commit"], "path": [None], "artifact_id": ["abc"]},
        schema_overrides={"path": pl.String},
    )
    events = pl.LazyFrame(
        {
            "event_id": ["e2", "e1"],
            "commit": ["abc", "abc"],
            "kind": ["event", "event"],
            "name": ["revert", "incident"],
            "observed_at": [T1, T1],
            "tier": ["verified", None],
        },
        schema_overrides={"observed_at": pl.Datetime("us", "UTC")},
    )
    rows = event_rows(own, runs, None, matched_events(events, arts)).sort("sig_idx").collect()
    assert rows.select("name", "rank").rows() == [("issue", 0), ("incident", 3), ("revert", 0)]


def test_latest_signals_read_what_was_known_at_as_of() -> None:
    """SEMANTICS §4: signals observed after as_of are set aside before the latest is picked."""
    later = datetime(2026, 12, 3, tzinfo=UTC)
    s = _signals(
        [
            (1, 0, "verdict", "review", "pass", None, T0),
            (1, 1, "verdict", "review", "reject", None, later),  # not yet observed at T1
            (2, 0, "verdict", "review", "reject", None, later),  # nothing known: no row
            (3, 0, "verdict", "review", "reject", None, None),  # no time: always known
            (1, 2, "score", "runtime", None, 3300.0, T1),  # at as_of: known
            (1, 3, "score", "runtime", None, 4000.0, later),
        ]
    )
    known = known_at(s, T1)
    verdicts = latest_verdicts(known).sort("doc_id").collect()
    assert verdicts.select("doc_id", "state").rows() == [(1, PASS), (3, FAIL)]
    assert latest_scores(known).collect().select("value").item() == 3300.0


def test_the_as_of_predicate_reaches_the_parquet_scan(tmp_path: Path) -> None:
    """One filter on the scan every feature reads, not one per rule (performance)."""
    s = _signals([(1, 0, "verdict", "tests", "pass", None, T0)]).collect()
    s.write_parquet(tmp_path / "signals.parquet")
    scan = pl.scan_parquet(tmp_path / "signals.parquet")
    plan = latest_verdicts(known_at(scan, T1), ["tests"]).explain()
    scan_part = plan[plan.index("Parquet SCAN") :]
    assert 'col("observed_at").is_null()' in scan_part
