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
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.generate import generate_documents, write_rules
from tests.property.strategies import as_of_instants, valid_rules
from tests.property.test_sql_differential import BATCH, check_batch, document_mix

RULES = 20
EXAMPLES = 8


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
    assert check_batch(docs, rules, datetime.fromisoformat("2026-12-01T00:00:00+00:00")) == 1500
