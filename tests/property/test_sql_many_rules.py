"""The SQL views agree with the polars engine under the recorded rules plus 20 alternative rules.

The SQL evaluates rules as a join of one row per run (``run_features``) with
a table of the K alternative rules plus the recorded one (issue #17), so
mistakes show up when rules share names, differ only in target or window,
or repeat a required name. Two tests, each comparing the ``acceptance``
view, the ``rates`` view and ``queries/flips.sql`` with the engine field by
field (``check_batch`` of ``test_sql_differential.py``):

* ``test_sql_matches_engine_20_rules``: hypothesis documents (ties, unknown
  times, odd verdict words, late and future events, invalid recorded rules,
  dangling attempts) under 20 drawn valid rules.
* ``test_sql_matches_engine_benchmark_rules``: 1,500 documents of the seeded
  benchmark generator under its 20 rules (``rules-20`` of the benchmarks),
  the data and rules the performance figures are measured on.
* ``test_sql_matches_engine_with_late_events``: the bundled examples and
  their late events (SEMANTICS §11, matched to runs through commits) under
  the same 20 rules, before and after the revert arrives.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ocp_analytics as oa
from benchmarks.generate import generate_documents, write_rules
from ocp_analytics.model.rules import rule_from_object
from tests.property.strategies import as_of_instants, valid_rules
from tests.property.test_sql_differential import (
    BATCH,
    _assert_rows_equal,
    _frames,
    check_batch,
    document_mix,
)

RULES = 20
EXAMPLES = 8
DATA = Path(__file__).resolve().parent.parent / "data"


def twenty_rules() -> st.SearchStrategy[list[dict]]:
    """20 valid rules named alt_1 … alt_20 (names, targets and windows collide often)."""
    return st.tuples(*(valid_rules(name=f"alt_{i + 1}") for i in range(RULES))).map(list)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(docs=document_mix(*BATCH), rules=twenty_rules(), as_of=as_of_instants())
def test_sql_matches_engine_20_rules(docs: list[dict], rules: list[dict], as_of: datetime) -> None:
    assert check_batch(docs, rules, as_of) == len(docs)


def test_sql_matches_engine_benchmark_rules() -> None:
    docs = list(generate_documents(1500, seed=7))
    with tempfile.TemporaryDirectory() as tmp:
        rules_file = write_rules(Path(tmp) / "rules-20.json", RULES, seed=7)
        rules = orjson.loads(rules_file.read_bytes())
    assert len(rules) == RULES
    assert check_batch(docs, rules, datetime(2026, 12, 1, tzinfo=UTC)) == 1500


def test_sql_matches_engine_with_late_events(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(DATA / "examples", ds)
    oa.ingest_events(DATA / "events" / "example-events.ndjson", ds)
    made = write_rules(tmp_path / "rules-20.json", RULES, seed=7)
    rules = [rule_from_object(r, where="rules-20") for r in orjson.loads(made.read_bytes())]
    # before the revert (2026-12-02T09:00Z) arrives, and after
    for as_of in (datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 3, tzinfo=UTC)):
        f = _frames(ds, rules, as_of)
        order = ["run_id", "rule"]
        sql, engine = f["sql"].sort(order), f["engine"].sort(order)
        late = sql.filter(run_id="run_ex_late_revert", rule="recorded")
        assert late.height == 1
        _assert_rows_equal(sql, engine, order, f"acceptance at {as_of}", {})
        _assert_rows_equal(f["sql_rates"], f["engine_rates"], ["rule"], "rates", {})
    assert "late:revert" in late["reasons"].item()
