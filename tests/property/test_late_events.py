"""Late events matched through commit and merge artifacts (SEMANTICS §11).

The engine, given an ``events`` table beside the run tables, must agree with
the reference evaluator on each document with its matched events appended to
``run.signals``: ties, events before the end, outside the window, after
``as_of``, without a time, unknown commits, one commit shared by several runs.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import orjson
import polars as pl
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import ocp_analytics as oa
from ocp_analytics.ingestion.batch import read_documents
from ocp_analytics.ingestion.timestamps import parse_timestamp
from ocp_analytics.model.rules import rule_from_object
from ocp_analytics.schemas import polars_schema
from tests import reference
from tests.conftest import examples
from tests.property.strategies import (
    GARBAGE_TIMESTAMPS,
    alternative_rules,
    as_of_instants,
    document_batches,
    rendered_instants,
)

COMMITS = ("c0", "c1", "c2")
EXCLUDED = ("revert", "incident", "issue")


def events_frame(records: list[dict]) -> pl.LazyFrame:
    """The ``events`` table of event records, as ingest-events stores it."""
    schema = polars_schema("events")
    rows = [
        {
            "event_id": r["id"],
            "commit": r.get("commit"),
            "kind": r.get("kind"),
            "name": r.get("name"),
            "observed_at_raw": r.get("observed_at"),
            "tier": r.get("tier"),
            "batch_id": "b",
        }
        for r in records
    ]
    frame = pl.DataFrame(rows, schema={k: schema[k] for k in rows[0]} if rows else None)
    return (
        frame.lazy()
        .with_columns(parse_timestamp(pl.col("observed_at_raw")).alias("observed_at"))
        .with_columns(pl.lit(None).alias(c) for c in schema if c not in (*rows[0], "observed_at"))
        .select(schema.names())
        .cast(dict(schema))
        if rows
        else pl.LazyFrame(schema=schema)
    )


@st.composite
def artifacts(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(("commit", "merge", "file")))
        art: dict = {"id": draw(st.sampled_from((f"a{i}", *COMMITS))), "kind": {"value": kind}}
        if draw(st.booleans()):
            art["path"] = draw(st.sampled_from((*COMMITS, "elsewhere")))
        out.append(art)
    return out


@st.composite
def event_records(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(0, 6))):
        rec = {
            "id": f"e{i}",
            "commit": draw(st.sampled_from((*COMMITS, "unknown"))),
            "kind": draw(st.sampled_from(("event", "event", "event", "verdict"))),
            "name": draw(st.sampled_from(EXCLUDED)),
            "tier": draw(st.sampled_from(("verified", "reported", "asserted", None))),
        }
        when = draw(st.one_of(rendered_instants(), st.sampled_from((None, *GARBAGE_TIMESTAMPS))))
        if when is not None:
            rec["observed_at"] = when
        out.append(rec)
    return out


def check(docs: list[dict], records: list[dict], rules: list[dict], as_of) -> None:
    tables = dict(read_documents(docs))
    tables["events"] = events_frame(records)
    alt = [rule_from_object(r, where="generated") for r in rules]
    got = oa.acceptance(tables, alt, as_of=as_of)
    rows = {(r["run_id"], r["rule"]): r for r in got.iter_rows(named=True)}
    for doc in docs:
        full = reference.with_late_events(doc, records)
        for name, rule in [("recorded", reference.RECORDED), *[(r["name"], r) for r in rules]]:
            want = reference.evaluate(full, rule, as_of)
            row = rows[(doc["run"]["id"], name)]
            for f in reference.RESULT_FIELDS:
                a, b = row[f], want[f]
                same = math.isclose(a, b, abs_tol=1e-12) if f == "q" else a == b
                assert same, (
                    f"field {f}: engine {a!r} != reference {b!r} under {name}\n"
                    f"events {records!r}\n{orjson.dumps(doc).decode()}"
                )


@settings(
    max_examples=examples(120),
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    docs=document_batches(4, 8),
    arts=st.lists(artifacts(), min_size=8, max_size=8),
    records=event_records(),
    rules=alternative_rules(),
    as_of=as_of_instants(),
)
def test_matched_events_as_if_appended(docs, arts, records, rules, as_of) -> None:
    docs = [{**d, "artifacts": a} for d, a in zip(docs, arts, strict=False)]
    check(docs, records, rules, as_of)


def test_one_commit_shared_by_two_runs_turns_both() -> None:
    base = {
        "ocp": "0.3",
        "producer": {"name": "t"},
        "privacy": {"profile": "metadata_only"},
        "artifacts": [{"id": "m", "kind": {"value": "merge"}, "path": "abc"}],
    }
    docs = [
        {
            **base,
            "run": {
                "id": run_id,
                "ended_at": "2026-12-01T00:00:00Z",
                "signals": [{"kind": "verdict", "name": "tests", "value": "pass"}],
                "acceptance_rule": {"name": "t", "definition": "t", "requires": ["tests"]},
            },
        }
        for run_id in ("r1", "r2")
    ]
    records = [
        {"id": "e1", "commit": "abc", "kind": "event", "name": "revert",
         "observed_at": "2026-12-03T00:00:00Z", "tier": "verified"},
        {"id": "e2", "commit": "zzz", "kind": "event", "name": "revert",
         "observed_at": "2026-12-03T00:00:00Z"},
    ]  # fmt: skip
    tables = dict(read_documents(docs))
    tables["events"] = events_frame(records)
    acc = oa.acceptance(tables, as_of="2026-12-05T00:00:00Z").sort("run_id")
    assert acc.select("run_id", "outcome", "reasons", "tier").rows() == [
        ("r1", "rejected", ["late:revert"], "asserted"),  # the verdict has no tier
        ("r2", "rejected", ["late:revert"], "asserted"),
    ]
    turned = oa.acceptance(tables, as_of="2026-12-05T00:00:00Z", late_only=True)
    assert turned.height == 2
    before = oa.acceptance(tables, as_of="2026-12-02T00:00:00Z")
    assert before["outcome"].to_list() == ["accepted", "accepted"]


@settings(
    max_examples=examples(25),
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    docs=document_batches(3, 6),
    arts=st.lists(artifacts(), min_size=6, max_size=6),
    records=event_records(),
    rules=alternative_rules(),
    as_of=as_of_instants(),
)
def test_stored_events_engine_sql_and_reference_agree(docs, arts, records, rules, as_of) -> None:
    """Through the dataset on disk (ingest, then ingest-events): engine = SQL = reference."""
    from ocp_analytics.sql import connect

    docs = [{**d, "artifacts": a} for d, a in zip(docs, arts, strict=False)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "runs.ndjson").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
        (root / "events.ndjson").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        oa.ingest(root / "runs.ndjson", root / "ds")
        if records:
            oa.ingest_events(root / "events.ndjson", root / "ds")
        alt = [rule_from_object(r, where="generated") for r in rules]
        order = ["run_id", "rule"]
        engine = oa.acceptance(root / "ds", alt, as_of=as_of).sort(order)
        con = connect(root / "ds", rules=alt, as_of=as_of)
        try:
            sql = con.sql("SELECT * FROM acceptance").pl().sort(order)
        finally:
            con.close()
    fields = ["run_id", "rule", *reference.RESULT_FIELDS]
    assert engine.select(fields).rows() == sql.select(fields).rows()
    got = {(r["run_id"], r["rule"]): r for r in engine.iter_rows(named=True)}
    for doc in docs:
        full = reference.with_late_events(doc, records)
        for name, rule in [("recorded", reference.RECORDED), *[(r["name"], r) for r in rules]]:
            want = reference.evaluate(full, rule, as_of)
            row = got[(doc["run"]["id"], name)]
            for f in reference.RESULT_FIELDS:
                a, b = row[f], want[f]
                assert math.isclose(a, b, abs_tol=1e-12) if f == "q" else a == b, (f, a, b)
