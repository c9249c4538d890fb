"""The same behaviours on every engine: one test body, run on polars, SQL and Spark.

Six literal runs whose outcomes can be read off by hand (SEMANTICS §5-§8):
each test states what every engine must answer, and the ``backend`` fixture
runs it once per engine (Spark is skipped where pyspark or Java is missing).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.backends import RATE_COUNTS

AS_OF = "2027-01-01T00:00:00Z"
END = "2026-09-23T17:56:00Z"
BAR = {"name": "team_bar", "definition": "tests and review", "requires": ["tests", "review"]}


def _sig(
    kind: str, name: str, value: object, at: str = "2026-09-23T17:10:00Z", attempt: int = 1
) -> dict:
    out = {"kind": kind, "name": name, "value": value, "tier": "verified", "observed_at": at}
    return out | {"at_attempt": f"a{attempt}"} if kind != "event" else out


def _run(run_id: str, team: str, signals: list[dict], rule: dict | None = BAR) -> dict:
    run: dict = {"id": run_id, "ended_at": END, "labels": {"team": team}, "signals": signals}
    if rule is not None:
        run["acceptance_rule"] = rule
    attempts = [{"id": "a1", "node": "implement", "n": 1}, {"id": "a2", "node": "review", "n": 1}]
    return {"ocp": "0.3", "run": run, "attempts": attempts}


TESTS_PASS = _sig("verdict", "tests", "pass")
REVIEW_OK = _sig("verdict", "review", "accept", attempt=2)
DOCS = [
    _run("a1", "a", [TESTS_PASS, REVIEW_OK]),  # accepted
    _run("a2", "a", [_sig("verdict", "tests", "fail"), REVIEW_OK]),  # rejected: failed:tests
    _run("a3", "a", [TESTS_PASS]),  # unknown: missing:review
    # rejected: a revert inside the window (the default excludes_events)
    _run("b1", "b", [TESTS_PASS, REVIEW_OK, _sig("event", "revert", "c1", "2026-09-24T09:00:00Z")]),
    # accepted at its first attempt: review and tests both name a1
    _run(
        "b2",
        "b",
        [TESTS_PASS, _sig("verdict", "review", "pass"), _sig("score", "bench_score", 2500)],
    ),
    _run("b3", "b", [TESTS_PASS], rule=None),  # unknown: no_rule
]
RULES = ["tests", "bench_score>=2400"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import orjson

    import ocp_analytics as oa

    root = tmp_path_factory.mktemp("backends")
    (root / "runs.ndjson").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in DOCS))
    oa.ingest(root / "runs.ndjson", root / "ds")
    return root / "ds"


def test_every_engine_decides_each_run_as_read_by_hand(backend, dataset: Path) -> None:
    got = backend.acceptance(dataset, RULES, AS_OF).select("run_id", "rule", "outcome", "reasons")
    want = {
        ("a1", "recorded"): ("accepted", []),
        ("a2", "recorded"): ("rejected", ["failed:tests"]),
        ("a3", "recorded"): ("unknown", ["missing:review"]),
        ("b1", "recorded"): ("rejected", ["late:revert"]),
        ("b2", "recorded"): ("accepted", []),
        ("b3", "recorded"): ("unknown", ["no_rule"]),
        ("a1", "tests"): ("accepted", []),
        ("a2", "tests"): ("rejected", ["failed:tests"]),
        ("a3", "tests"): ("accepted", []),
        ("b1", "tests"): ("rejected", ["late:revert"]),
        ("b2", "tests"): ("accepted", []),
        ("b3", "tests"): ("accepted", []),
        ("a1", "bench_score>=2400"): ("unknown", ["missing:bench_score"]),
        ("a2", "bench_score>=2400"): ("unknown", ["missing:bench_score"]),
        ("a3", "bench_score>=2400"): ("unknown", ["missing:bench_score"]),
        ("b1", "bench_score>=2400"): ("rejected", ["missing:bench_score", "late:revert"]),
        ("b2", "bench_score>=2400"): ("accepted", []),
        ("b3", "bench_score>=2400"): ("unknown", ["missing:bench_score"]),
    }
    assert {(r[0], r[1]): (r[2], list(r[3])) for r in got.iter_rows()} == want


def test_every_engine_gives_the_attempt_at_acceptance(backend, dataset: Path) -> None:
    got = backend.acceptance(dataset, ["bench_score>=2400"], AS_OF)
    got = got.filter(pl.col("outcome") == "accepted")
    columns = ["run_id", "rule", "accepted_attempt", "attempts_to_acceptance", "accepted_attempt_n"]
    assert got.select(columns).rows() == [
        ("a1", "recorded", "a2", 2, 1),  # the review, at the second attempt, decided last
        ("b2", "bench_score>=2400", "a1", 1, 1),
        ("b2", "recorded", "a1", 1, 1),
    ]


def test_every_engine_counts_the_same_rates(backend, dataset: Path) -> None:
    got = backend.rates(dataset, RULES, AS_OF).select(RATE_COUNTS)
    assert got.rows() == [
        ("bench_score>=2400", 6, 1, 1, 4),
        ("recorded", 6, 2, 2, 2),
        ("tests", 6, 4, 2, 0),
    ]
    rate = backend.rates(dataset, RULES, AS_OF).filter(pl.col("rule") == "tests")
    assert rate["accept_rate"].item() == pytest.approx(4 / 6)


def test_every_engine_counts_rates_by_a_label(backend, dataset: Path) -> None:
    got = backend.rates(dataset, ["tests"], AS_OF, by_label="team").select("group", *RATE_COUNTS)
    assert got.rows() == [
        ("a", "recorded", 3, 1, 1, 1),
        ("a", "tests", 3, 2, 1, 0),
        ("b", "recorded", 3, 1, 1, 1),
        ("b", "tests", 3, 2, 1, 0),
    ]


def test_every_engine_filters_runs_by_a_label(backend, dataset: Path) -> None:
    got = backend.rates(dataset, ["tests"], AS_OF, where=["label.team=b"]).select(RATE_COUNTS)
    assert got.rows() == [("recorded", 3, 1, 1, 1), ("tests", 3, 2, 1, 0)]
