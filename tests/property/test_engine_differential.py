"""The polars engine agrees with the per-document reference on every field.

Generated documents carry the awkward cases (ties across offsets, missing and
naive timestamps, error and odd-case verdicts, null/boolean/string scores,
events before the end, without a time or after ``as_of``, verdicts and
scores observed after ``as_of`` (not yet known: SEMANTICS §4), runs without
``ended_at``, invalid recorded rules, duplicate required names, ``at_attempt``
naming nothing, attempts without ``started_at``). Each example ingests a
batch through the real ingest path, so decoding and flattening are held to
the reference too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import ocp_analytics as oa
from benchmarks.generate import generate_documents
from ocp_analytics.engine import _compiled, _recorded
from ocp_analytics.ingestion.batch import read_documents
from ocp_analytics.model.rules import rule_from_object
from tests import reference
from tests.conftest import examples
from tests.property.strategies import (
    alternative_rules,
    as_of_instants,
    document_batches,
    documents,
)

FIELDS = reference.RESULT_FIELDS
# The engine's settings and the modules that read them.
SETTINGS_OF = {"RECORDED_COMPILED_MAX": _recorded, "_DENSE_MAX": _compiled}
EXAMPLES = 200
BATCH = (10, 14)  # 200 examples x ~12 documents = ~2,400 documents per run


def check_batch(docs: list[dict], rules: list[dict], as_of) -> int:
    tables = read_documents(docs)
    assert tables["quarantine"].collect().height == 0
    alt = [rule_from_object(r, where="generated") for r in rules]
    got = oa.acceptance(tables, alt, as_of=as_of)
    rows = {(r["run_id"], r["rule"]): r for r in got.iter_rows(named=True)}
    assert len(rows) == len(docs) * (1 + len(rules))
    for doc in docs:
        run_id = doc["run"]["id"]
        for name, rule in [("recorded", reference.RECORDED), *[(r["name"], r) for r in rules]]:
            want = reference.evaluate(doc, rule, as_of)
            row = rows[(run_id, name)]
            for f in FIELDS:
                a, b = row[f], want[f]
                same = math.isclose(a, b, abs_tol=1e-12) if f == "q" else a == b
                assert same, (
                    f"{run_id} rule {name} field {f}: engine {a!r} != reference {b!r}\n"
                    f"as_of {as_of.isoformat()} rule {rule!r}\n"
                    f"engine row {row!r}\nreference {want!r}\n"
                    f"{orjson.dumps(doc).decode()}"
                )
            assert row["as_of"] == as_of
    return len(docs)


def check_with(setting: str, value: int, docs: list[dict], rules: list[dict], as_of) -> None:
    """:func:`check_batch` with the engine's ``setting`` set to ``value`` (restored after)."""
    module = SETTINGS_OF[setting]
    saved = getattr(module, setting)
    setattr(module, setting, value)
    try:
        check_batch(docs, rules, as_of)
    finally:
        setattr(module, setting, saved)


# No shrinking: it takes minutes on batches this size, and a failure already
# names the one document and rule that disagree.
SETTINGS = settings(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
INPUTS = {
    "docs": document_batches(*BATCH),
    "rules": alternative_rules(),
    "as_of": as_of_instants(),
}


@settings(SETTINGS, max_examples=examples(EXAMPLES))
@given(**INPUTS)
def test_engine_matches_reference(docs: list[dict], rules: list[dict], as_of) -> None:
    check_batch(docs, rules, as_of)


@settings(SETTINGS, max_examples=examples(60))
@given(**INPUTS)
def test_exploded_recorded_rules_match_reference(
    docs: list[dict], rules: list[dict], as_of
) -> None:
    """Past RECORDED_COMPILED_MAX distinct recorded rules, each run's rule is exploded."""
    check_with("RECORDED_COMPILED_MAX", 0, docs, rules, as_of)


@settings(SETTINGS, max_examples=examples(60))
@given(**INPUTS)
def test_keyed_reasons_match_reference(docs: list[dict], rules: list[dict], as_of) -> None:
    """Rules of too many outcomes to list name their reasons by joined keys."""
    check_with("_DENSE_MAX", 0, docs, rules, as_of)


def test_through_the_on_disk_dataset(tmp_path: Path) -> None:
    """One batch through files and Parquet, to hold the written tables too."""
    docs = list(generate_documents(300, seed=3))
    src = tmp_path / "docs.ndjson"
    src.write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
    summary = oa.ingest(src, tmp_path / "ds")
    assert (summary.quarantined, summary.runs_new) == (0, 300)
    disk = oa.acceptance(tmp_path / "ds", ["tests+review"], as_of="2026-10-01T00:00:00Z")
    mem = oa.acceptance(read_documents(docs), ["tests+review"], as_of="2026-10-01T00:00:00Z")
    key = ["run_id", "rule"]
    assert disk.sort(key).equals(mem.sort(key))


# After every instant the strategies draw: everything observed is known by then.
_END_OF_TIME = datetime(2100, 1, 1, tzinfo=UTC)


def _parts_words(doc: dict, rule: dict | str, as_of: datetime) -> tuple:
    got = reference.evaluate(doc, rule, as_of)
    return got["outcome"], [w for w in got["reasons"] if not w.startswith("late:")], got["tier"]


def _found(condition: Callable[[tuple[dict, datetime]], bool]) -> tuple[dict, datetime]:
    """The first drawn (document, as_of) that meets ``condition`` (no shrinking: any will do)."""
    quick = settings(
        max_examples=3000, database=None, derandomize=True, deadline=None, phases=[Phase.generate]
    )
    return find(st.tuples(documents(), as_of_instants()), condition, settings=quick)


def test_generated_documents_hold_verdicts_and_scores_after_as_of() -> None:
    """The differential tests see documents whose verdict or score part differs
    because a signal was observed after ``as_of`` (SEMANTICS §4)."""
    for kind in ("verdict", "score"):
        rule = (
            {"name": "v", "requires": ["tests"]}
            if kind == "verdict"
            else {"name": "s", "score": {"name": "runtime_s", "target": 3600, "better": "lower"}}
        )

        def differs(case: tuple[dict, datetime], rule: dict = rule) -> bool:
            doc, as_of = case
            return _parts_words(doc, rule, as_of) != _parts_words(doc, rule, _END_OF_TIME)

        doc, as_of = _found(differs)
        times = [
            reference.parse_ts(s.get("observed_at"))
            for s in doc["run"].get("signals") or []
            if isinstance(s, dict) and s.get("kind") == kind
        ]
        assert any(t is not None and t > as_of for t in times), (kind, doc, as_of)
