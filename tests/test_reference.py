"""Literal tests of the reference evaluator, one group per SEMANTICS.md section."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.property.strategies import alternative_rules, as_of_instants, documents
from tests.reference import RECORDED, RESULT_FIELDS, TIER_Q, evaluate, parse_ts, rule_is_valid

EXAMPLES = Path(__file__).parent / "data" / "examples"
AS_OF = datetime(2027, 1, 1, tzinfo=UTC)
END = "2026-09-23T17:56:00Z"
END_DT = datetime(2026, 9, 23, 17, 56, tzinfo=UTC)
T1 = "2026-09-23T17:10:00Z"
T2 = "2026-09-23T17:20:00Z"
_ABSENT = object()

RESULT_KEYS = set(RESULT_FIELDS)


# ------------------------------------------------------------------ builders


def sig(kind, name, value, at=T1, tier="verified", **extra) -> dict:
    out = {"kind": kind, "name": name, "value": value, "tier": tier, **extra}
    if at is not _ABSENT:
        out["observed_at"] = at
    return out


def verdict(name, value, at=T1, tier="verified", **extra) -> dict:
    return sig("verdict", name, value, at, tier, **extra)


def score(name, value, at=T1, tier="verified", **extra) -> dict:
    return sig("score", name, value, at, tier, **extra)


def event(name, at=T2, tier="reported") -> dict:
    return sig("event", name, "ref/1", at, tier)


def rule(**fields) -> dict:
    return {"name": "r", "definition": "d", **fields}


def make_doc(signals=(), acceptance_rule=_ABSENT, ended_at=END, attempts=()) -> dict:
    run = {"id": "run_1", "signals": list(signals)}
    if acceptance_rule is not _ABSENT:
        run["acceptance_rule"] = acceptance_rule
    if ended_at is not _ABSENT:
        run["ended_at"] = ended_at
    return {"ocp": "0.3", "run": run, "attempts": list(attempts)}


def run_rule(signals=(), as_of=AS_OF, ended_at=END, attempts=(), **fields) -> dict:
    """Evaluate under a recorded rule built from ``fields``."""
    doc = make_doc(signals, rule(**fields), ended_at, attempts)
    return evaluate(doc, RECORDED, as_of)


def load(name: str) -> dict:
    return json.loads((EXAMPLES / name).read_text())


# ------------------------------------------------------------ worked example


def test_worked_example_full_fields():
    result = evaluate(load("v0.3/full-fields.ocp.json"), RECORDED, AS_OF)
    assert result == {
        "outcome": "accepted",
        "reasons": [],
        "tier": "reported",
        "q": 0.95,
        "accepted_attempt": "review.a2",
        "attempts_to_acceptance": 4,
        "accepted_attempt_n": 2,
        "accepted_round": 2,
        "window_open": False,
    }


@pytest.mark.parametrize(
    ("name", "attempt", "count"),
    [
        ("solo", "implement.a1", 1),
        ("best_of_n", "select.a1", 4),
        ("plan_implement", "implement.a1", 2),
        ("implement_review", "review.a2", 4),
        ("plan_implement_review", "review.a1", 3),
        ("swarm", "review.a2", 9),
    ],
)
def test_v03_examples_are_accepted(name, attempt, count):
    result = evaluate(load(f"v0.3/{name}.ocp.json"), RECORDED, AS_OF)
    assert result["outcome"] == "accepted"
    assert (result["accepted_attempt"], result["attempts_to_acceptance"]) == (
        attempt,
        count,
    )


def test_example_without_rule_is_no_rule():
    result = evaluate(load("review-loop-v03.ocp.json"), RECORDED, AS_OF)
    assert (result["outcome"], result["reasons"]) == ("unknown", ["no_rule"])


def test_full_fields_under_alternative_rule_with_issue_event():
    alt = rule(requires=["tests"], excludes_events=["issue"], window_days=14)
    result = evaluate(load("v0.3/full-fields.ocp.json"), alt, AS_OF)
    assert result["outcome"] == "rejected"
    assert result["reasons"] == ["late:issue"]
    assert result["tier"] == "reported"  # tests verified, issue event reported


# ------------------------------------------------------------- §2 timestamps


def test_parse_ts_zulu_and_offset_are_the_same_instant():
    assert parse_ts("2026-09-23T10:53:00-07:00") == datetime(2026, 9, 23, 17, 53, tzinfo=UTC)
    assert parse_ts("2026-09-23T17:53:00Z") == parse_ts("2026-09-23T23:23:00+05:30")
    assert parse_ts("2026-09-23T17:53:00+00:00").tzinfo == UTC


def test_parse_ts_naive_reads_as_utc():
    assert parse_ts("2026-09-23T17:53:00") == datetime(2026, 9, 23, 17, 53, tzinfo=UTC)


def test_parse_ts_fraction_truncated_to_microseconds():
    assert parse_ts("2026-09-23T17:53:00.5Z").microsecond == 500_000
    assert parse_ts("2026-09-23T17:53:00.123Z").microsecond == 123_000
    assert parse_ts("2026-09-23T17:53:00.1234569Z").microsecond == 123_456
    assert parse_ts("2026-09-23T17:53:00.999999999Z").microsecond == 999_999


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01T00:00:00Z",  # month 13
        "2026-02-30T00:00:00Z",  # Feb 30
        "2026-09-23T24:00:00Z",  # hour 24
        "2026-09-23T23:59:60Z",  # leap second
        "2026-09-23T10:00:00+24:00",  # offset hour 24
        "2026-09-23T10:00:00+05:60",  # offset minute 60
        "2026-09-23t10:00:00Z",  # lowercase t
        "2026-09-23T10:00:00z",  # lowercase z
        "2026-09-23 10:00:00Z",  # space
        "2026-09-23T10:00:00.Z",  # empty fraction
        "2026-09-23T10:00Z",  # no seconds
        "2026-09-23T10:00:00+0530",  # offset without colon
        "2026-09-23T10:00:00Z\n",  # trailing newline
        "2026-09-23",
        "garbage",
        "",
    ],
)
def test_parse_ts_rejects(text):
    assert parse_ts(text) is None


@pytest.mark.parametrize("value", [None, 20260923, 1.5, True, ["2026-09-23T10:00:00Z"]])
def test_parse_ts_non_string_is_unknown(value):
    assert parse_ts(value) is None


def test_parse_ts_accepts_leap_day_and_max_offset():
    assert parse_ts("2028-02-29T00:00:00Z") == datetime(2028, 2, 29, tzinfo=UTC)
    assert parse_ts("2026-09-23T23:59:00+23:59") == datetime(2026, 9, 23, tzinfo=UTC)


# ------------------------------------------------------------ §3 rule fields


def test_defaults_requires_empty_gives_unknown_without_reasons():
    result = run_rule([verdict("tests", "pass")])
    assert (result["outcome"], result["reasons"]) == ("unknown", [])
    assert result["tier"] == "asserted"


def test_default_excludes_are_revert_and_incident():
    result = run_rule(
        [verdict("tests", "pass"), event("revert"), event("incident"), event("issue")],
        requires=["tests"],
    )
    assert result["reasons"] == ["late:revert", "late:incident"]


def test_default_window_is_14_days():
    at_14 = (END_DT + timedelta(days=14)).isoformat()
    past_14 = (END_DT + timedelta(days=14, microseconds=1)).isoformat()
    signals = [
        verdict("tests", "pass"),
        event("revert", at_14),
        event("incident", past_14),
    ]
    result = run_rule(signals, requires=["tests"])
    assert result["reasons"] == ["late:revert"]


def test_no_rule_absent_and_null():
    for doc in (make_doc([verdict("tests", "pass")]), make_doc(acceptance_rule=None)):
        result = evaluate(doc, RECORDED, AS_OF)
        assert result == {
            "outcome": "unknown",
            "reasons": ["no_rule"],
            "tier": "asserted",
            "q": 0.70,
            "accepted_attempt": None,
            "attempts_to_acceptance": None,
            "accepted_attempt_n": None,
            "accepted_round": None,
            "window_open": False,
        }


def test_alternative_rule_applies_to_run_without_rule():
    doc = make_doc([verdict("tests", "pass")])
    assert evaluate(doc, rule(requires=["tests"]), AS_OF)["outcome"] == "accepted"


@pytest.mark.parametrize(
    "bad",
    [
        "tests",
        ["tests"],
        rule(requires="tests"),
        rule(requires=["tests", 1]),
        rule(excludes_events="revert"),
        rule(window_days="14"),
        rule(window_days=-1),
        rule(window_days=1.5),
        rule(window_days=True),
        rule(score="runtime_s"),
        rule(score={"name": "runtime_s", "target": 3600, "better": "up"}),
        rule(score={"name": "runtime_s", "better": "lower"}),
        rule(score={"name": "", "target": 1, "better": "lower"}),
        rule(score={"name": "runtime_s", "target": "3600", "better": "lower"}),
        rule(score={"name": "runtime_s", "target": True, "better": "lower"}),
    ],
)
def test_invalid_recorded_rule(bad):
    assert not rule_is_valid(bad)
    result = evaluate(make_doc([verdict("tests", "pass")], bad), RECORDED, AS_OF)
    assert (result["outcome"], result["reasons"]) == ("unknown", ["invalid_rule"])
    assert (result["tier"], result["q"], result["window_open"]) == (
        "asserted",
        0.70,
        False,
    )


@pytest.mark.parametrize(
    "good",
    [
        {},
        rule(requires=None, score=None, excludes_events=None, window_days=None),
        rule(window_days=0),
        rule(window_days=14.0),
        rule(score={"name": "s", "target": float("inf"), "better": "higher"}),
        rule(score={"name": "s", "target": 1, "better": "lower", "scale": "bogus"}),
        {"requires": ["tests"], "name": 5},  # name/definition are not checked
    ],
)
def test_valid_rules(good):
    assert rule_is_valid(good)


def test_window_days_zero_keeps_zero():
    just_after = (END_DT + timedelta(microseconds=1)).isoformat()
    signals = [
        verdict("tests", "pass"),
        event("revert", END),
        event("revert", just_after),
    ]
    result = run_rule(signals, requires=["tests"], window_days=0)
    assert result["reasons"] == ["late:revert"]


def test_duplicate_requires_count_once():
    result = run_rule([verdict("review", "pass")], requires=["tests", "review", "tests"])
    assert result["reasons"] == ["missing:tests"]


def test_empty_excludes_means_no_event_counts():
    signals = [verdict("tests", "pass"), event("revert")]
    assert run_rule(signals, requires=["tests"], excludes_events=[])["outcome"] == "accepted"


# ---------------------------------------------------------------- §4 latest


def test_tie_across_offsets_later_position_wins():
    signals = [
        verdict("tests", "pass", "2026-09-23T17:30:00Z"),
        verdict("tests", "fail", "2026-09-23T10:30:00-07:00"),
    ]
    assert run_rule(signals, requires=["tests"])["outcome"] == "rejected"
    assert run_rule(signals[::-1], requires=["tests"])["outcome"] == "accepted"


def test_tie_across_fraction_lengths_and_naive():
    signals = [
        verdict("tests", "fail", "2026-09-23T17:30:00.000000000Z"),
        verdict("tests", "pass", "2026-09-23T17:30:00"),
    ]
    assert run_rule(signals, requires=["tests"])["outcome"] == "accepted"


def test_non_dict_signals_keep_positions():
    signals = [verdict("tests", "fail", T1), "oops", verdict("tests", "pass", T1), 42]
    assert run_rule(signals, requires=["tests"])["outcome"] == "accepted"


def test_unknown_time_sorts_before_known_time():
    signals = [verdict("tests", "pass", T1), verdict("tests", "fail", _ABSENT)]
    assert run_rule(signals, requires=["tests"])["outcome"] == "accepted"
    garbage = [verdict("tests", "pass", T1), verdict("tests", "fail", "garbage")]
    assert run_rule(garbage, requires=["tests"])["outcome"] == "accepted"


def test_unknown_times_among_themselves_keep_position():
    signals = [verdict("tests", "pass", _ABSENT), verdict("tests", "fail", "")]
    assert run_rule(signals, requires=["tests"])["outcome"] == "rejected"


def test_later_time_beats_later_position():
    signals = [verdict("tests", "pass", T2), verdict("tests", "fail", T1)]
    assert run_rule(signals, requires=["tests"])["outcome"] == "accepted"


def test_null_score_does_not_hide_earlier_number():
    target = {"name": "runtime_s", "target": 3600, "better": "lower"}
    signals = [score("runtime_s", 3300, T1), score("runtime_s", None, T2)]
    assert run_rule(signals, score=target)["outcome"] == "accepted"


@pytest.mark.parametrize("skipped", [None, True, False, "1", "3.5"])
def test_non_numeric_scores_are_skipped(skipped):
    target = {"name": "runtime_s", "target": 3600, "better": "lower"}
    signals = [score("runtime_s", 9999, T1), score("runtime_s", skipped, T2)]
    result = run_rule(signals, score=target)
    assert (result["outcome"], result["reasons"]) == (
        "rejected",
        ["below_target:runtime_s"],
    )


def test_kind_and_name_match_case_sensitively():
    signals = [verdict("Tests", "pass"), sig("Verdict", "tests", "pass")]
    assert run_rule(signals, requires=["tests"])["reasons"] == ["missing:tests"]


def test_wrong_type_fields_read_as_absent():
    signals = [{"kind": ["verdict"], "name": "tests", "value": "pass", "observed_at": T1}]
    assert run_rule(signals, requires=["tests"])["reasons"] == ["missing:tests"]


# ----------------------------------------------------------------- §5 parts


@pytest.mark.parametrize(
    ("value", "outcome", "reasons"),
    [
        ("accept", "accepted", []),
        ("pass", "accepted", []),
        ("ACCEPT", "accepted", []),
        ("Pass", "accepted", []),
        ("reject", "rejected", ["failed:tests"]),
        ("FAIL", "rejected", ["failed:tests"]),
        ("error", "unknown", ["missing:tests"]),
        ("approved", "unknown", ["missing:tests"]),
        ("", "unknown", ["missing:tests"]),
        (" pass", "unknown", ["missing:tests"]),
        (1, "unknown", ["missing:tests"]),
        (True, "unknown", ["missing:tests"]),
        (None, "unknown", ["missing:tests"]),
    ],
)
def test_verdict_values(value, outcome, reasons):
    result = run_rule([verdict("tests", value)], requires=["tests"])
    assert (result["outcome"], result["reasons"]) == (outcome, reasons)


def test_latest_verdict_counts_whatever_its_value():
    signals = [verdict("tests", "pass", T1), verdict("tests", "error", T2)]
    assert run_rule(signals, requires=["tests"])["reasons"] == ["missing:tests"]


def test_no_verdict_is_missing():
    assert run_rule([], requires=["tests"])["reasons"] == ["missing:tests"]


@pytest.mark.parametrize(
    ("value", "better", "outcome"),
    [
        (3600, "lower", "accepted"),
        (3600.0, "lower", "accepted"),
        (3601, "lower", "rejected"),
        (-5, "lower", "accepted"),
        (3600, "higher", "accepted"),
        (3599.5, "higher", "rejected"),
        (float("nan"), "higher", "rejected"),
        (float("nan"), "lower", "rejected"),
        (float("inf"), "higher", "accepted"),
    ],
)
def test_score_against_target(value, better, outcome):
    target = {"name": "runtime_s", "target": 3600, "better": better, "scale": "log"}
    result = run_rule([score("runtime_s", value)], score=target)
    assert result["outcome"] == outcome
    expected = [] if outcome == "accepted" else ["below_target:runtime_s"]
    assert result["reasons"] == expected


def test_missing_score():
    target = {"name": "runtime_s", "target": 3600, "better": "lower"}
    result = run_rule([score("runtime_s", None), score("bench", 1)], score=target)
    assert (result["outcome"], result["reasons"]) == ("unknown", ["missing:runtime_s"])


# ------------------------------------------------------------- §6 combining


def test_fail_beats_unknown():
    signals = [verdict("tests", "error"), verdict("review", "reject")]
    result = run_rule(signals, requires=["tests", "review"])
    assert (result["outcome"], result["reasons"]) == (
        "rejected",
        ["missing:tests", "failed:review"],
    )


def test_reasons_order_requires_score_events():
    target = {"name": "runtime_s", "target": 10, "better": "lower"}
    signals = [event("revert"), score("runtime_s", 11), verdict("review", "fail")]
    result = run_rule(signals, requires=["tests", "review"], score=target)
    assert result["reasons"] == [
        "missing:tests",
        "failed:review",
        "below_target:runtime_s",
        "late:revert",
    ]


def test_event_before_end_counts():
    signals = [verdict("tests", "pass"), event("revert", "2026-09-20T00:00:00Z")]
    assert run_rule(signals, requires=["tests"])["reasons"] == ["late:revert"]


@pytest.mark.parametrize("when", [_ABSENT, "garbage", None, ""])
def test_event_without_time_counts(when):
    signals = [verdict("tests", "pass"), event("incident", when)]
    result = run_rule(signals, requires=["tests"])
    assert (result["outcome"], result["reasons"]) == ("rejected", ["late:incident"])


def test_event_after_as_of_is_ignored():
    as_of = END_DT + timedelta(days=1)
    after = (as_of + timedelta(microseconds=1)).isoformat()
    signals = [verdict("tests", "pass"), event("revert", after)]
    assert run_rule(signals, as_of, requires=["tests"])["outcome"] == "accepted"
    at_as_of = [verdict("tests", "pass"), event("revert", as_of.isoformat())]
    assert run_rule(at_as_of, as_of, requires=["tests"])["outcome"] == "rejected"


def test_event_without_ended_at_counts():
    signals = [verdict("tests", "pass"), event("revert", "2026-12-30T00:00:00Z")]
    for ended_at in (_ABSENT, None, "garbage"):
        result = run_rule(signals, ended_at=ended_at, requires=["tests"])
        assert result["reasons"] == ["late:revert"]


def test_event_outside_window_does_not_count():
    signals = [verdict("tests", "pass"), event("revert", "2026-12-30T00:00:00Z")]
    assert run_rule(signals, requires=["tests"])["outcome"] == "accepted"


def test_multiple_counted_events_each_add_a_reason():
    signals = [event("revert"), event("incident", _ABSENT), event("revert", T1)]
    result = run_rule(signals)
    assert result["outcome"] == "rejected"  # even with no parts at all
    assert result["reasons"] == ["late:revert", "late:incident", "late:revert"]


def test_event_value_is_ignored():
    signals = [verdict("tests", "pass"), sig("event", "revert", None, T2)]
    assert run_rule(signals, requires=["tests"])["outcome"] == "rejected"


# ------------------------------------------------------------------ §7 tier


def test_weakest_tier_of_used_signals():
    target = {"name": "runtime_s", "target": 10, "better": "lower"}
    signals = [
        verdict("tests", "pass", tier="verified"),
        verdict("review", "accept", tier="reported"),
        score("runtime_s", 5, tier="heuristic"),
    ]
    result = run_rule(signals, requires=["tests", "review"], score=target)
    assert (result["outcome"], result["tier"], result["q"]) == (
        "accepted",
        "heuristic",
        0.80,
    )


def test_tier_of_unknown_part_is_not_used():
    signals = [
        verdict("tests", "pass", tier="verified"),
        verdict("review", "error", tier="x"),
    ]
    result = run_rule(signals, requires=["tests", "review"])
    assert (result["outcome"], result["tier"], result["q"]) == (
        "unknown",
        "verified",
        0.98,
    )


def test_failed_score_and_counted_event_tiers_are_used():
    target = {"name": "runtime_s", "target": 10, "better": "lower"}
    signals = [score("runtime_s", 50, tier="reported")]
    assert run_rule(signals, score=target)["tier"] == "reported"
    result = run_rule(
        [verdict("tests", "pass"), event("revert", tier="heuristic")],
        requires=["tests"],
    )
    assert result["tier"] == "heuristic"


@pytest.mark.parametrize(
    ("word", "tier"),
    [
        ("Verified", "verified"),
        ("REPORTED", "reported"),
        ("bogus", "asserted"),
        (3, "asserted"),
    ],
)
def test_tier_words(word, tier):
    result = run_rule([verdict("tests", "pass", tier=word)], requires=["tests"])
    assert (result["tier"], result["q"]) == (tier, TIER_Q[tier])


def test_missing_tier_reads_as_asserted():
    signal = verdict("tests", "pass")
    del signal["tier"]
    assert run_rule([signal], requires=["tests"])["tier"] == "asserted"


def test_nothing_used_is_asserted():
    result = run_rule([], requires=["tests"])
    assert (result["tier"], result["q"]) == ("asserted", 0.70)


# ------------------------------------------------------ §8 attempt at acceptance


def attempt(attempt_id, node, started_at=_ABSENT, **extra) -> dict:
    out = {"id": attempt_id, "node": node, "status": "done", **extra}
    if started_at is not _ABSENT:
        out["started_at"] = started_at
    return out


def accepted_fields(result: dict) -> tuple:
    return (
        result["accepted_attempt"],
        result["attempts_to_acceptance"],
        result["accepted_attempt_n"],
        result["accepted_round"],
    )


def test_attempts_ordered_by_start_with_unknown_last():
    attempts = [
        attempt("late.a1", "w"),  # no start: last
        attempt("b.a1", "w", "2026-09-23T17:05:00Z"),
        attempt("a.a1", "w", "2026-09-23T10:00:00-07:00"),  # 17:00 UTC: first
    ]
    signals = [verdict("tests", "pass", at_attempt="b.a1")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("b.a1", 2, 2, None)
    signals = [verdict("tests", "pass", at_attempt="late.a1")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("late.a1", 3, 3, None)


def test_tied_starts_keep_position_and_last_named_attempt_wins():
    attempts = [
        attempt("x.a1", "x", T1, n=1, round=1),
        "not-an-attempt",
        attempt("y.a1", "y", T1, n=1, round=1),
        attempt("y.a2", "y", T2, n=2, round=2.0),
    ]
    signals = [
        verdict("tests", "pass", at_attempt="y.a2"),
        verdict("review", "pass", at_attempt="x.a1"),
    ]
    result = run_rule(signals, attempts=attempts, requires=["tests", "review"])
    assert accepted_fields(result) == ("y.a2", 3, 2, 2)


def test_deciding_part_is_any_part_at_the_latest_position():
    """§8: the attempt at acceptance is the latest any part names, whichever part it is."""
    attempts = [
        attempt("x.a1", "x", T1, n=1, round=1),
        attempt("x.a2", "x", T2, n=2, round=1),
        attempt("x.a3", "x", "2026-09-23T17:30:00Z", n=3, round=2),
    ]
    signals = [
        verdict("tests", "pass", at_attempt="x.a1"),
        verdict("review", "pass", at_attempt="x.a3"),
        verdict("ci", "pass", at_attempt="nowhere"),  # names no attempt
        score("quality", 0.9, at_attempt="x.a2"),
    ]
    score_rule = {"name": "quality", "target": 0.5, "better": "higher"}
    result = run_rule(
        signals, attempts=attempts, requires=["tests", "review", "ci"], score=score_rule
    )
    assert accepted_fields(result) == ("x.a3", 3, 3, 2)
    result = run_rule(signals, attempts=attempts, requires=["ci", "tests"], score=score_rule)
    assert accepted_fields(result) == ("x.a2", 2, 2, 1)


@pytest.mark.parametrize(
    ("n", "expected"),
    [(7, 7), (3.0, 3), (_ABSENT, 2), (None, 2), ("5", 2), (True, 2), (2.5, 2)],
)
def test_n_falls_back_to_position_within_node(n, expected):
    extra = {} if n is _ABSENT else {"n": n}
    attempts = [
        attempt("w.a1", "w", T1),
        attempt("v.a1", "v", T1),
        attempt("w.a2", "w", T2, **extra),
    ]
    signals = [verdict("tests", "pass", at_attempt="w.a2")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("w.a2", 3, expected, None)


def test_n_fallback_groups_missing_and_non_str_nodes():
    attempts = [
        {"id": "p.a1", "status": "done", "started_at": T1},
        attempt("p.a2", 5, T2),
    ]
    signals = [verdict("tests", "pass", at_attempt="p.a2")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("p.a2", 2, 2, None)


def test_duplicate_attempt_id_uses_first_in_order():
    attempts = [attempt("d.a1", "d", T2, n=2), attempt("d.a1", "d", T1, n=1)]
    signals = [verdict("tests", "pass", at_attempt="d.a1")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("d.a1", 1, 1, None)


def test_at_attempt_naming_nothing_gives_nulls():
    attempts = [attempt("w.a1", "w", T1)]
    for at_attempt in ("ghost.a9", 3, None):
        signals = [verdict("tests", "pass", at_attempt=at_attempt)]
        result = run_rule(signals, attempts=attempts, requires=["tests"])
        assert result["outcome"] == "accepted"
        assert accepted_fields(result) == (None, None, None, None)


def test_score_signal_is_deciding():
    target = {"name": "runtime_s", "target": 10, "better": "lower"}
    attempts = [attempt("w.a1", "w", T1, round=1), attempt("w.a2", "w", T2, round=3)]
    signals = [
        verdict("tests", "pass", at_attempt="w.a1"),
        score("runtime_s", 5, at_attempt="w.a2"),
    ]
    result = run_rule(signals, attempts=attempts, requires=["tests"], score=target)
    assert accepted_fields(result) == ("w.a2", 2, 2, 3)


def test_only_latest_verdict_is_deciding():
    attempts = [attempt("w.a1", "w", T1), attempt("w.a2", "w", T2)]
    signals = [
        verdict("tests", "pass", T1, at_attempt="w.a2"),
        verdict("tests", "pass", T2, at_attempt="w.a1"),
    ]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert accepted_fields(result) == ("w.a1", 1, 1, None)


def test_no_attempt_fields_unless_accepted():
    attempts = [attempt("w.a1", "w", T1)]
    signals = [verdict("tests", "pass", at_attempt="w.a1"), event("revert")]
    result = run_rule(signals, attempts=attempts, requires=["tests"])
    assert result["outcome"] == "rejected"
    assert accepted_fields(result) == (None, None, None, None)


# --------------------------------------------------------------- §9 window


@pytest.mark.parametrize(
    ("as_of", "window_days", "excludes", "ended_at", "expected"),
    [
        (END_DT + timedelta(days=13), None, None, END, True),
        (END_DT + timedelta(days=14), None, None, END, False),  # strict <
        (END_DT + timedelta(days=14, microseconds=-1), None, None, END, True),
        (END_DT, 0, None, END, False),
        (END_DT - timedelta(days=1), 0, None, END, True),
        (END_DT + timedelta(days=1), 14, [], END, False),  # nothing excluded
        (END_DT + timedelta(days=1), 14, ["issue"], END, True),
        (END_DT + timedelta(days=1), 14, None, _ABSENT, False),  # no ended_at
        (END_DT + timedelta(days=1), 14, None, "garbage", False),
    ],
)
def test_window_open(as_of, window_days, excludes, ended_at, expected):
    fields = {
        "requires": ["tests"],
        "window_days": window_days,
        "excludes_events": excludes,
    }
    # a verdict with no time is known at every as_of (§4), so the outcome stays
    result = run_rule([verdict("tests", "fail", _ABSENT)], as_of, ended_at, **fields)
    assert result["outcome"] == "rejected"  # independent of outcome
    assert result["window_open"] is expected


def test_window_open_false_without_rule():
    doc = make_doc([verdict("tests", "pass")])
    assert evaluate(doc, RECORDED, END_DT)["window_open"] is False
    assert evaluate(doc, rule(requires=["tests"]), END_DT)["window_open"] is True


# ------------------------------------------- §1, §4 as_of is a point in time (issue #39)

# The run ended 2025-12-20; its review verdict came ten months after as_of.
PIT_END = "2025-12-20T10:00:00Z"
PIT_AS_OF = datetime(2026, 1, 1, tzinfo=UTC)
PIT_EARLY = "2025-12-20T10:05:00Z"
PIT_LATE = "2026-10-15T12:00:00Z"


def test_verdict_observed_after_as_of_is_not_yet_known():
    signals = [verdict("tests", "pass", PIT_EARLY), verdict("review", "reject", PIT_LATE)]
    fields = {"requires": ["tests", "review"], "ended_at": PIT_END}
    before = run_rule(signals, PIT_AS_OF, **fields)
    assert (before["outcome"], before["reasons"], before["tier"]) == (
        "unknown",
        ["missing:review"],
        "verified",  # the review verdict is not used either
    )
    after = run_rule(signals, datetime(2026, 11, 1, tzinfo=UTC), **fields)
    assert (after["outcome"], after["reasons"]) == ("rejected", ["failed:review"])


def test_latest_verdict_is_the_latest_known_at_as_of():
    signals = [
        verdict("review", "pass", PIT_EARLY, tier="reported"),
        verdict("review", "reject", PIT_LATE),
    ]
    result = run_rule(signals, PIT_AS_OF, requires=["review"], ended_at=PIT_END)
    assert (result["outcome"], result["tier"]) == ("accepted", "reported")


def test_score_observed_after_as_of_is_ignored():
    target = {"name": "runtime_s", "target": 3600, "better": "lower"}
    signals = [
        score("runtime_s", 3300, PIT_EARLY, tier="reported"),
        score("runtime_s", 4000, PIT_LATE),
    ]
    result = run_rule(signals, PIT_AS_OF, score=target, ended_at=PIT_END)
    assert (result["outcome"], result["reasons"], result["tier"]) == ("accepted", [], "reported")
    alone = run_rule(signals[1:], PIT_AS_OF, score=target, ended_at=PIT_END)
    assert (alone["outcome"], alone["reasons"]) == ("unknown", ["missing:runtime_s"])


def test_signal_observed_at_as_of_is_known():
    at = PIT_AS_OF.isoformat()
    just_after = (PIT_AS_OF + timedelta(microseconds=1)).isoformat()
    fields = {"requires": ["tests"], "ended_at": PIT_END}
    assert run_rule([verdict("tests", "fail", at)], PIT_AS_OF, **fields)["outcome"] == "rejected"
    late = run_rule([verdict("tests", "fail", just_after)], PIT_AS_OF, **fields)
    assert late["outcome"] == "unknown"


@pytest.mark.parametrize("when", [_ABSENT, "garbage", None, ""])
def test_signal_without_time_is_always_known(when):
    result = run_rule([verdict("tests", "pass", when)], PIT_AS_OF, requires=["tests"])
    assert result["outcome"] == "accepted"


def test_verdict_after_as_of_does_not_decide_the_attempt():
    attempts = [attempt("w.a1", "w", PIT_EARLY), attempt("w.a2", "w", "2025-12-20T11:00:00Z")]
    signals = [
        verdict("tests", "pass", PIT_EARLY, at_attempt="w.a1"),
        verdict("tests", "pass", PIT_LATE, at_attempt="w.a2"),
    ]
    result = run_rule(signals, PIT_AS_OF, PIT_END, attempts, requires=["tests"])
    assert accepted_fields(result) == ("w.a1", 1, 1, None)


def test_excluded_event_after_as_of_does_not_count():
    signals = [verdict("tests", "pass", PIT_EARLY), event("revert", "2026-01-02T00:00:00Z")]
    fields = {"requires": ["tests"], "ended_at": PIT_END}
    assert run_rule(signals, PIT_AS_OF, **fields)["outcome"] == "accepted"
    turned = run_rule(signals, datetime(2026, 1, 3, tzinfo=UTC), **fields)
    assert (turned["outcome"], turned["reasons"]) == ("rejected", ["late:revert"])


# ------------------------------------------------------------------ API


def test_result_has_exactly_the_keys():
    assert set(run_rule([verdict("tests", "pass")], requires=["tests"])) == RESULT_KEYS


def test_naive_as_of_is_refused():
    with pytest.raises(ValueError):
        evaluate(make_doc(), RECORDED, datetime(2027, 1, 1))


# ------------------------------------------------------------- smoke


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), alternatives=alternative_rules(), as_of=as_of_instants())
def test_evaluate_never_raises(doc, alternatives, as_of):
    json.dumps(doc, allow_nan=False)  # the generator only makes plain JSON
    for chosen in [RECORDED, *alternatives]:
        result = evaluate(doc, chosen, as_of)
        assert set(result) == RESULT_KEYS
        assert result["outcome"] in ("accepted", "rejected", "unknown")
        assert result["q"] == TIER_Q[result["tier"]]
        accepted = result["outcome"] == "accepted"
        if not accepted:
            assert result["accepted_attempt"] is None


@given(st.lists(alternative_rules(), max_size=3))
def test_alternative_rules_are_valid_and_named(batches):
    for rules in batches:
        names = [r["name"] for r in rules]
        assert all(rule_is_valid(r) for r in rules)
        assert len(set(names)) == len(names) and "recorded" not in names
