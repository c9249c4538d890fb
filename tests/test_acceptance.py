"""The literal SEMANTICS.md cases of ``test_reference.py``, run on the engine.

Every test of ``tests/test_reference.py`` that evaluates a document runs here
again with ``evaluate`` replaced by the vectorized engine (documents go
through the real decoder and flattener via ``read_documents``), so each
numbered point of SEMANTICS.md, and the worked example of §8, has a literal
test of the engine too.
"""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
import tests.test_reference as base
from ocp_analytics.engine import _compiled, _recorded
from ocp_analytics.engine import acceptance as acc
from ocp_analytics.ingestion.batch import read_documents
from ocp_analytics.model.rules import rule_from_object
from tests.conftest import AS_OF
from tests.reference import RECORDED
from tests.test_reference import *  # noqa: F403  (re-collect the literal tests)

# Tests of the reference's own helpers (timestamp parsing, rule validity) or
# hypothesis smoke tests have no engine counterpart here.
# The engine reads a naive as_of as UTC (documented) where the reference refuses it.
_SKIP = (
    "test_parse_ts",
    "test_valid_rules",
    "test_invalid_recorded_rule_is_detected",
    "test_never_raises",
    "test_evaluate_never_raises",
    "test_naive_as_of_is_refused",
)


def engine_evaluate(doc: dict, rule: dict | str, as_of: datetime) -> dict[str, Any]:
    """Evaluate one document with the engine; the reference's result shape."""
    d = copy.deepcopy(doc)
    d.setdefault("ocp", "0.3")
    d.setdefault("run", {}).setdefault("id", "run_literal")
    tables = read_documents([d])
    assert tables["quarantine"].collect().height == 0
    recorded = rule == RECORDED
    alt = [] if recorded else [rule_from_object({**rule, "name": "alt"}, where="test")]
    out = oa.acceptance(tables, alt, as_of=as_of, recorded=recorded)
    assert out.height == 1
    row = out.row(0, named=True)
    return {k: row[k] for k in base.RESULT_KEYS}


@pytest.fixture(autouse=True)
def _engine(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if request.node.name.startswith(_SKIP):
        pytest.skip("reference-only helper test")
    if any(f"[{x}-" in request.node.name for x in ("nan", "inf", "-inf")):
        pytest.skip("NaN and infinity are not JSON; see test_nan_score_never_reaches_a_target")
    monkeypatch.setattr(base, "evaluate", engine_evaluate)


def test_nan_score_never_reaches_a_target() -> None:
    """SEMANTICS §5: NaN never reaches a target (only possible past JSON, e.g. a frame)."""
    import polars as pl

    doc = {
        "ocp": "0.3",
        "run": {
            "id": "r",
            "signals": [
                {
                    "kind": "score",
                    "name": "s",
                    "value": 1.0,
                    "observed_at": "2026-01-01T00:00:00Z",
                    "tier": "verified",
                }
            ],
        },
    }
    tables = read_documents([doc])
    tables["signals"] = tables["signals"].with_columns(pl.lit(float("nan")).alias("value_num"))
    for better in ("higher", "lower"):
        rule = oa.Rule("x", score=oa.ScoreTarget("s", 0.0, better))
        row = oa.acceptance(tables, [rule], as_of="2027-01-01T00:00:00Z", recorded=False)
        got = row.row(0, named=True)
        assert (got["outcome"], got["reasons"]) == ("rejected", ["below_target:s"])


def _verdict(name: str, value: str, at: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"kind": "verdict", "name": name, "value": value, "observed_at": at}


def test_rules_of_many_parts_name_every_reason_in_order() -> None:
    """Reasons are coded 39 parts to an integer: 45 parts need two, and keep their order."""
    from tests.reference import evaluate

    names = [f"check_{i:02d}" for i in range(45)]
    signals = [_verdict(n, "fail" if i % 3 == 0 else "pass") for i, n in enumerate(names) if i % 5]
    short = {"requires": names[:3]}
    docs = [
        {
            "ocp": "0.3",
            "run": {"id": "long", "signals": signals, "acceptance_rule": {"requires": names[::-1]}},
        },
        {"ocp": "0.3", "run": {"id": "short", "signals": signals, "acceptance_rule": short}},
        {"ocp": "0.3", "run": {"id": "none", "signals": signals}},
    ]
    as_of = datetime.fromisoformat("2027-01-01T00:00:00+00:00")
    rule = {"name": "all", "requires": names}
    tables = read_documents(docs)
    alt = [rule_from_object(rule, where="test")]
    got = oa.acceptance(tables, alt, as_of=as_of)
    rows = {(r["run_id"], r["rule"]): r for r in got.iter_rows(named=True)}
    assert len(rows) == 6
    for doc in docs:
        for name, want_rule in [("recorded", RECORDED), ("all", rule)]:
            want = evaluate(doc, want_rule, as_of)
            row = rows[(doc["run"]["id"], name)]
            assert (row["outcome"], row["reasons"]) == (want["outcome"], want["reasons"])
    assert rows[("long", "recorded")]["reasons"][:2] == ["failed:check_42", "missing:check_40"]
    assert len(rows[("long", "all")]["reasons"]) == 9 + 12  # 9 missing, 12 failed


def test_many_parts_by_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same reasons when every rule's words are joined by keys (no table of outcomes)."""
    monkeypatch.setattr(_compiled, "_DENSE_MAX", 0)
    test_rules_of_many_parts_name_every_reason_in_order()


def test_a_slice_of_runs_without_readable_rules() -> None:
    """No recorded definition to compile: every run says why it has none."""
    docs = [
        {"ocp": "0.3", "run": {"id": "none", "signals": [_verdict("tests", "pass")]}},
        {"ocp": "0.3", "run": {"id": "bad", "acceptance_rule": {"requires": "tests"}}},
    ]
    tables = read_documents(docs)
    got = oa.acceptance(tables, ["tests"], as_of="2027-01-01T00:00:00Z")
    rows = {(r["run_id"], r["rule"]): r["reasons"] for r in got.iter_rows(named=True)}
    assert rows == {
        ("none", "recorded"): ["no_rule"],
        ("bad", "recorded"): ["invalid_rule"],
        ("none", "tests"): [],
        ("bad", "tests"): ["missing:tests"],
    }


def test_late_words_of_odd_event_names_keep_order_and_text() -> None:
    """Counted events are keyed by codes, so names holding separators read back as written.

    (Alternative rules refuse control characters in names; recorded ones may hold them.)
    """
    from tests.reference import evaluate

    odd = ["re;vert", "in,cident", "x\x1fy", "plain"]
    ev = lambda n, at: {"kind": "event", "name": n, "value": "seen", "observed_at": at}  # noqa: E731
    end = "2026-01-01T00:00:00Z"
    attempt = {"id": "a1", "n": 1, "started_at": end, "ended_at": end, "status": "completed"}

    def doc(ident: str, names: list[str]) -> dict[str, Any]:
        signals = [_verdict("tests", "pass")]
        signals += [ev(n, f"2026-01-0{2 + i}T00:00:00Z") for i, n in enumerate(names)]
        rule = {"requires": ["tests"], "excludes_events": odd[:3]}
        return {
            "ocp": "0.3",
            "run": {
                "id": ident,
                "signals": signals,
                "attempts": [attempt],
                "acceptance_rule": rule,
            },
        }

    docs = [doc("both", [odd[2], odd[0]]), doc("one", [odd[1]]), doc("other", [odd[3]])]
    as_of = datetime.fromisoformat("2027-01-01T00:00:00+00:00")
    rules = [{"name": "late", "requires": ["tests"], "excludes_events": [odd[1], odd[3]]}]
    got = oa.acceptance(
        read_documents(docs), [rule_from_object(r, where="test") for r in rules], as_of=as_of
    )
    rows = {(r["run_id"], r["rule"]): r for r in got.iter_rows(named=True)}
    for d in docs:
        for name, want_rule in [("recorded", RECORDED), ("late", rules[0])]:
            want = evaluate(d, want_rule, as_of)
            row = rows[(d["run"]["id"], name)]
            assert (row["outcome"], row["reasons"]) == (want["outcome"], want["reasons"])
    assert rows[("both", "recorded")]["reasons"] == ["late:x\x1fy", "late:re;vert"]
    assert rows[("other", "late")]["reasons"] == ["late:plain"]


@pytest.mark.parametrize("path", ["compiled", "keys", "exploded"])
def test_coded_texts_are_the_same_words(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """decide(coded=True) gives rule, outcome and tier as Enum columns of the same words."""
    from ocp_analytics.engine.evaluate import open_tables
    from ocp_analytics.engine.timeaxis import resolve_as_of
    from ocp_analytics.model.rules import resolve_rules

    if path == "keys":
        monkeypatch.setattr(_compiled, "_DENSE_MAX", 0)
    if path == "exploded":
        monkeypatch.setattr(_recorded, "RECORDED_COMPILED_MAX", 0)
    ds, rules = generated
    tables = open_tables(ds)[0]
    alt, when = resolve_rules([rules, "tests+review"]), resolve_as_of(AS_OF)
    plain = [f.collect() for f in acc.decide(tables, alt, when)]
    coded = [f.collect() for f in acc.decide(tables, alt, when, coded=True)]
    assert len(plain) == len(coded) == len(alt) + 1
    for p, c in zip(plain, coded, strict=True):
        assert all(isinstance(c.schema[k], pl.Enum) for k in acc.CODED)
        if path == "compiled":  # words from a table of outcomes: Enum words too
            assert c.schema["reasons"] == pl.List(c.schema["reasons"].inner)  # type: ignore[union-attr]
            assert isinstance(c.schema["reasons"].inner, pl.Enum)  # type: ignore[union-attr]
        words = c.with_columns(
            pl.col(acc.CODED).cast(pl.String), pl.col("reasons").cast(pl.List(pl.String))
        )
        assert_frame_equal(words.sort("run_id"), p.sort("run_id"))  # rows come in any order
