"""The SQL views agree with the polars engine on every field.

Each example ingests a batch of generated documents (``strategies.py``: ties
across offsets, unknown times, odd verdict words, non-numeric scores, late
and future events, invalid recorded rules, duplicate attempt ids, …) through
the real ingest path, then compares, for the recorded rules and a set of
alternative rules at one ``as_of``:

* the ``acceptance`` view with ``ocp_analytics.engine.acceptance``, row by row and
  field by field (reasons exactly, q within 1e-12, same column types);
* the ``rates`` view with ``rates_from`` (no grouping);
* ``sql/queries/flips.sql`` with ``flips_from``.

Drawing a document through hypothesis costs ~50 ms, and a batch of 100
drawn at once overruns hypothesis's choice budget (minutes per example). So
each example draws 10–20 documents from ``document_batches`` and recombines
them into 100–150 (``document_mix``): the rule and ``ended_at`` of one drawn
document, the signals and attempts of another, sometimes the signals of two
documents together (more collisions and ties) or attempts from a third
(dangling ``at_attempt``), all chosen by a drawn seed. Any document is a fair
input here: the test compares two engines, not an expected value.
20 examples of 100–150 documents: at least 2,000 documents per run.
"""

from __future__ import annotations

import math
import random
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ocp_analytics as oa
from ocp_analytics.engine.rates import flips_from, rates_from
from ocp_analytics.model.rules import Rule, rule_from_object
from ocp_analytics.sql import connect, sql_files
from tests.property.strategies import (
    alternative_rules,
    as_of_instants,
    document_batches,
)

EXAMPLES = 20
BATCH = (100, 150)  # documents per example, after recombination
DRAWN = (10, 20)  # documents drawn through hypothesis per example
FLOAT_TOLERANCE = 1e-12


def _signals_of(doc: dict) -> list | None:
    return doc["run"].get("signals")


def _mixed(rnd: random.Random, drawn: list[dict], i: int) -> dict:
    """A new document from parts of drawn ones (see the module docstring)."""
    a, b, c = (rnd.choice(drawn) for _ in range(3))
    run = {k: v for k, v in a["run"].items() if k != "signals"}
    signals = _signals_of(b)
    if rnd.random() < 0.3 and isinstance(_signals_of(c), list):
        signals = [*(signals or []), *_signals_of(c)]
    if signals is not None:
        run["signals"] = [
            {**x, "id": f"sig_{k}"} if isinstance(x, dict) else x for k, x in enumerate(signals)
        ]
    if rnd.random() < 0.25:
        run.pop("ended_at", None)
        if "ended_at" in c["run"]:
            run["ended_at"] = c["run"]["ended_at"]
    attempts = (c if rnd.random() < 0.2 else b)["attempts"]
    run["id"] = f"run_{i}"
    return {**a, "run": run, "attempts": attempts}


@st.composite
def document_mix(draw: st.DrawFn, min_size: int, max_size: int) -> list[dict]:
    """``min_size``–``max_size`` documents: the drawn ones, then recombinations."""
    drawn = draw(document_batches(*DRAWN))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    size = draw(st.integers(min_size, max_size))
    mixed = [_mixed(rnd, drawn, i) for i in range(len(drawn), size)]
    return [*drawn, *mixed]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=FLOAT_TOLERANCE) or (
            math.isnan(a) and math.isnan(b)
        )
    return a == b


def _assert_rows_equal(
    sql: pl.DataFrame,
    engine: pl.DataFrame,
    keys: list[str],
    what: str,
    docs: dict[str, dict],
) -> None:
    assert sql.columns == engine.columns, f"{what}: columns {sql.columns} != {engine.columns}"
    assert sql.height == engine.height, f"{what}: {sql.height} rows != {engine.height}"
    for got, want in zip(sql.iter_rows(named=True), engine.iter_rows(named=True), strict=True):
        for col in sql.columns:
            if not _same(got[col], want[col]):
                key = {k: want[k] for k in keys}
                doc = docs.get(str(want.get("run_id")))
                raise AssertionError(
                    f"{what} {key} column {col}: "
                    f"SQL {got[col]!r} != engine {want[col]!r}"
                    + (f"\n{orjson.dumps(doc).decode()}" if doc else "")
                )


def _frames(ds: Path, rules: list[Rule], as_of: datetime) -> dict[str, pl.DataFrame]:
    engine = oa.acceptance(ds, rules, as_of=as_of)
    con = connect(ds, rules=rules, as_of=as_of)
    try:
        return {
            "sql": con.sql("SELECT * FROM acceptance").pl(),
            "sql_rates": con.sql("SELECT * FROM rates").pl(),
            "sql_flips": con.sql((sql_files() / "queries" / "flips.sql").read_text()).pl(),
            "engine": engine,
            "engine_rates": rates_from(engine.lazy()).collect(),
            "engine_flips": flips_from(engine.lazy()).collect(),
        }
    finally:
        con.close()


def check_batch(docs: list[dict], rule_objects: list[dict], as_of: datetime) -> int:
    """Ingest ``docs`` and hold the SQL views to the engine; return the count."""
    rules = [rule_from_object(r, where="generated") for r in rule_objects]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "docs.ndjson"
        src.write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
        summary = oa.ingest(src, Path(tmp) / "ds")
        assert summary.quarantined == 0 and summary.runs_new == len(docs)
        f = _frames(Path(tmp) / "ds", rules, as_of)
    by_id = {d["run"]["id"]: d for d in docs}
    order = ["run_id", "rule"]
    sql, engine = f["sql"].sort(order), f["engine"].sort(order)
    assert sql.schema == engine.schema, f"{sql.schema} != {engine.schema}"
    assert sql.height == len(docs) * (1 + len(rules))
    _assert_rows_equal(sql, engine, order, "acceptance", by_id)
    assert (sql["as_of"] == as_of).all()
    # Counts are Int64 in SQL and UInt32 in polars; values must agree exactly.
    _assert_rows_equal(f["sql_rates"], f["engine_rates"], ["rule"], "rates", {})
    _assert_rows_equal(f["sql_flips"], f["engine_flips"], ["rule_a", "rule_b"], "flips", {})
    return len(docs)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(docs=document_mix(*BATCH), rules=alternative_rules(), as_of=as_of_instants())
def test_sql_matches_engine(docs: list[dict], rules: list[dict], as_of: datetime) -> None:
    check_batch(docs, rules, as_of)


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(docs=document_batches(1, 20), as_of=as_of_instants())
def test_sql_matches_engine_recorded_only(docs: list[dict], as_of: datetime) -> None:
    check_batch(docs, [], as_of)
