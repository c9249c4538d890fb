"""Late events ingested apart from their runs (issue #11, SEMANTICS §11).

``ingest-events`` stores event records in the ``events`` table; they are
matched to runs when the dataset is read, through the runs' ``commit`` /
``merge`` artifacts. The bundled files: ``tests/data/events/example-events.ndjson``
(a revert and an issue about commit 9f2c1e7, an incident about 0d1e2f3) and
``tests/data/examples/late-revert.ocp.json`` (run ``run_ex_late_revert``,
merged as 9f2c1e7, tests pass, ended 2026-11-30T10:00Z).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.sql import connect

DATA = Path(__file__).parent / "data"
EXAMPLES = DATA / "examples"
LATE_DOC = EXAMPLES / "late-revert.ocp.json"
EVENTS = DATA / "events" / "example-events.ndjson"
BEFORE = "2026-12-01T00:00:00Z"  # before the revert (2026-12-02T09:00Z)
AFTER = "2026-12-03T00:00:00Z"
runner = CliRunner()


def ok(*args: str, input: str | None = None) -> Result:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result


def rows(ds: Path | str, as_of: str, **kw: object) -> list[tuple]:
    acc = oa.acceptance(ds, ["tests"], as_of=as_of, **kw)  # type: ignore[arg-type]
    late = acc.filter(pl.col("run_id") == "run_ex_late_revert").sort("rule")
    return late.select("rule", "outcome", "reasons", "tier").rows()


def write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def event(ident: str, commit: str = "9f2c1e7", **fields: object) -> dict:
    rec = {"id": ident, "commit": commit, "kind": "event", "name": "revert"}
    rec.update({"observed_at": "2026-12-02T09:00:00Z", "tier": "verified"}, **fields)
    return rec


ACCEPTED = [
    ("recorded", "accepted", [], "verified"),
    ("tests", "accepted", [], "verified"),
]
REVERTED = [
    ("recorded", "rejected", ["late:revert"], "verified"),
    ("tests", "rejected", ["late:revert"], "verified"),
]


@pytest.fixture(scope="module")
def examples_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled example, then the example events, through the command line."""
    ds = tmp_path_factory.mktemp("events") / "ds"
    ok("ingest", str(EXAMPLES), "--out", str(ds), "-q")
    out = ok("ingest-events", str(EVENTS), "--out", str(ds)).stdout
    assert "event records read: 3 = events new 3 + unchanged 0 + quarantined 0" in out
    return ds


# ------------------------------------------------------------------ end to end


def test_bundled_example_is_turned_by_the_revert(examples_ds: Path) -> None:
    assert rows(examples_ds, BEFORE) == ACCEPTED
    assert rows(examples_ds, AFTER) == REVERTED
    # the events table as stored
    stored = oa.scan_dataset(examples_ds).events.sort("event_id").collect()
    assert stored.select(
        "event_id", "commit", "name", "value_text", "tier", "source_line"
    ).rows() == [
        ("ev-1", "9f2c1e7", "revert", "reverted in #812", "verified", 1),
        ("ev-2", "9f2c1e7", "issue", "issue/431", "reported", 2),
        ("ev-3", "0d1e2f3", "incident", "INC-77", "reported", 3),
    ]


def test_accept_late_only_lists_the_reverted_run(examples_ds: Path) -> None:
    args = ["accept", str(examples_ds), "--rule", "tests", "--late-only", "-f", "json"]
    after = json.loads(ok(*args, "--as-of", AFTER).stdout)["rows"]
    assert [(r["run_id"], r["rule"], r["outcome"], r["reasons"]) for r in after] == [
        ("run_ex_late_revert", "recorded", "rejected", ["late:revert"]),
        ("run_ex_late_revert", "tests", "rejected", ["late:revert"]),
    ]
    before = json.loads(ok(*args, "--as-of", BEFORE).stdout)["rows"]
    assert before == []
    # the API, and the Parquet writer
    assert oa.acceptance(examples_ds, as_of=AFTER, late_only=True).height == 1


def test_late_only_is_refused_with_the_spark_engine(examples_ds: Path) -> None:
    args = ["accept", str(examples_ds), "--late-only", "--engine", "spark"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.output == (
        "error: --late-only is not available with --engine spark yet.\n\n"
        "Hint: run it with --engine polars (the default).\n"
    )


def test_other_examples_are_not_changed_by_events(examples_ds: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    oa.ingest(EXAMPLES, plain)
    a = oa.acceptance(plain, ["tests"], as_of=AFTER).sort("run_id", "rule")
    b = oa.acceptance(examples_ds, ["tests"], as_of=AFTER).sort("run_id", "rule")
    changed = a.join(b, on=["run_id", "rule"]).filter(pl.col("outcome") != pl.col("outcome_right"))
    assert changed.select("run_id", "rule").rows() == [
        ("run_ex_late_revert", "recorded"),
        ("run_ex_late_revert", "tests"),
    ]


def test_event_before_its_run_gives_the_same_result(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest_events(EVENTS, ds)
    assert oa.scan_dataset(ds).runs.collect().height == 0
    oa.ingest(LATE_DOC, ds)
    assert rows(ds, BEFORE) == ACCEPTED
    assert rows(ds, AFTER) == REVERTED


def test_one_commit_shared_by_two_runs_matches_both(tmp_path: Path) -> None:
    doc = json.loads(LATE_DOC.read_text())
    twin = json.loads(LATE_DOC.read_text())
    twin["run"]["id"] = "run_ex_late_twin"
    docs = write_lines(tmp_path / "runs.ndjson", [doc, twin])
    ds = tmp_path / "ds"
    oa.ingest(docs, ds)
    oa.ingest_events(EVENTS, ds)
    acc = oa.acceptance(ds, as_of=AFTER, late_only=True).sort("run_id")
    assert acc.select("run_id", "outcome", "reasons").rows() == [
        ("run_ex_late_revert", "rejected", ["late:revert"]),
        ("run_ex_late_twin", "rejected", ["late:revert"]),
    ]
    assert oa.unmatched_events(ds).select("event_id").collect().rows() == [("ev-3",)]


# ------------------------------------------------------------------ idempotent


def test_rerun_of_the_same_file_is_a_no_op(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    first = oa.ingest_events(EVENTS, ds)
    batches = sorted(p.name for p in (ds / "_batches").iterdir())
    again = oa.ingest_events(EVENTS, ds)
    assert (first.events_new, again.events_new, again.records_read) == (3, 0, 0)
    assert [s.skipped for s in again.sources] == [True]
    assert again.batch_id is None
    assert sorted(p.name for p in (ds / "_batches").iterdir()) == batches
    assert oa.scan_dataset(ds).events.collect().height == 3


def test_same_event_id_twice_is_stored_once(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    within = write_lines(tmp_path / "a.ndjson", [event("ev-1"), event("ev-1")])
    s = oa.ingest_events(within, ds)
    assert (s.records_read, s.events_new, s.events_unchanged, s.quarantined) == (2, 1, 1, 0)
    # across batches: another file holding the same record
    across = write_lines(tmp_path / "b.ndjson", [event("ev-1"), event("ev-2")])
    s = oa.ingest_events(across, ds)
    assert (s.records_read, s.events_new, s.events_unchanged, s.quarantined) == (2, 1, 1, 0)
    stored = oa.scan_dataset(ds).events.sort("event_id").collect()
    assert stored.select("event_id", "source_path", "source_line").rows() == [
        ("ev-1", str(within), 1),
        ("ev-2", str(across), 2),
    ]


def test_same_id_with_other_content_keeps_the_first_and_quarantines_the_later(
    tmp_path: Path,
) -> None:
    ds = tmp_path / "ds"
    a = write_lines(tmp_path / "a.ndjson", [event("ev-1")])
    b = write_lines(
        tmp_path / "b.ndjson",
        [event("ev-2"), event("ev-1", observed_at="2027-02-01T00:00:00Z"), event("ev-2", name="x")],
    )
    oa.ingest_events(a, ds)
    s = oa.ingest_events(b, ds)
    assert (s.records_read, s.events_new, s.events_unchanged, s.quarantined) == (3, 1, 0, 2)
    assert s.reconciles
    ds_ = oa.scan_dataset(ds)
    assert ds_.events.sort("event_id").select(
        "event_id", "observed_at_raw", "name"
    ).collect().rows() == [
        ("ev-1", "2026-12-02T09:00:00Z", "revert"),
        ("ev-2", "2026-12-02T09:00:00Z", "revert"),
    ]
    q = ds_.quarantine.sort("source_line").collect()
    assert q.select("source_line", "code", "json_path").rows() == [
        (2, "conflicting_event", "$.id"),
        (3, "conflicting_event", "$.id"),
    ]
    assert q["message"].to_list() == [
        f"event id 'ev-1' is already stored with other content (from {a}:1); the first "
        "stored record wins: give a correction a new id",
        f"event id 'ev-2' is already stored with other content (from {b}:1); the first "
        "stored record wins: give a correction a new id",
    ]


# ------------------------------------------------------------------ bad records


def test_bad_records_are_quarantined_with_line_and_reason(tmp_path: Path) -> None:
    src = write_lines(
        tmp_path / "bad.ndjson",
        [
            event("ok-1"),
            "{not json",
            ["an", "array"],
            {"commit": "9f2c1e7", "kind": "event", "name": "revert"},
            event("e-5", commit=1234),
            {"id": "e-6", "kind": "event", "name": "revert"},
            event("e-7", kind="verdict"),
            event("ok-8", observed_at="yesterday"),
            event("ok-9", observed_at=None),
        ],
    )
    ds = tmp_path / "ds"
    s = oa.ingest_events(src, ds)
    assert (s.records_read, s.events_new, s.quarantined, s.no_time) == (9, 3, 6, 2)
    assert s.reconciles
    q = oa.scan_dataset(ds).quarantine.sort("source_line").collect()
    assert q.select("source_line", "code", "json_path").rows() == [
        (2, "not_json", None),
        (3, "not_object", "$"),
        (4, "missing_event_id", "$.id"),
        (5, "missing_commit", "$.commit"),
        (6, "missing_commit", "$.commit"),
        (7, "not_event", "$.kind"),
    ]
    assert q["message"][0].startswith("not valid JSON: ")
    assert q["message"].to_list()[1:] == [
        "an event record is a JSON object, not an array",
        "the record has no id (a non-empty string)",
        "the record has commit 1234; the commit it concerns is a non-empty string",
        "the record has no commit; the commit it concerns is a non-empty string",
        "kind is verdict, not 'event'",
    ]
    assert set(q["source_path"]) == {str(src)}
    # an unreadable or absent time is stored as no time: the revert counts whatever the window
    stored = oa.scan_dataset(ds).events.sort("event_id").collect()
    assert stored.select("event_id", "observed_at", "observed_at_raw").rows() == [
        (
            "ok-1",
            pl.Series(["2026-12-02T09:00:00"]).str.to_datetime(time_zone="UTC")[0],
            "2026-12-02T09:00:00Z",
        ),
        ("ok-8", None, "yesterday"),
        ("ok-9", None, None),
    ]


def test_strict_exits_3_after_storing_the_good_records(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "e.ndjson", [event("ok-1"), "nope"])
    result = runner.invoke(app, ["ingest-events", str(src), "-o", str(tmp_path / "ds"), "--strict"])
    assert result.exit_code == 3, result.output
    assert oa.scan_dataset(tmp_path / "ds").events.collect().height == 1


# ------------------------------------------------------------------ sources


def test_gzip_and_standard_input_read_as_ingest_does(tmp_path: Path) -> None:
    gz = tmp_path / "events.ndjson.gz"
    with gzip.open(gz, "wb") as f:
        f.write(EVENTS.read_bytes())
    ds = tmp_path / "ds"
    assert oa.ingest_events(gz, ds).events_new == 3
    piped = json.dumps(event("ev-9"), indent=2) + "\n" + json.dumps(event("ev-1"))
    out = ok("ingest-events", "-", "-o", str(ds), input=piped).stdout
    assert "event records read: 2 = events new 1 + unchanged 0 + quarantined 1" in out
    assert "quarantined by code: conflicting_event 1" in out


def test_a_json_array_of_records(tmp_path: Path) -> None:
    src = tmp_path / "events.json"
    src.write_text(json.dumps([event("ev-1"), {"id": "ev-2"}]))
    s = oa.ingest_events(src, tmp_path / "ds")
    assert (s.events_new, s.quarantined) == (1, 1)
    q = oa.scan_dataset(tmp_path / "ds").quarantine.collect()
    assert q.select("source_index", "code").rows() == [(1, "missing_commit")]


# ------------------------------------------------------------------ unmatched


def test_unmatched_events_api_sql_and_command(examples_ds: Path) -> None:
    assert oa.unmatched_events(examples_ds).select(
        "event_id", "commit", "name"
    ).collect().rows() == [("ev-3", "0d1e2f3", "incident")]
    con = connect(examples_ds, as_of=AFTER)
    assert con.sql("SELECT event_id, commit FROM unmatched_events").fetchall() == [
        ("ev-3", "0d1e2f3")
    ]
    assert con.sql("SELECT event_id FROM events ORDER BY event_id").fetchall() == [
        ("ev-1",),
        ("ev-2",),
        ("ev-3",),
    ]
    assert con.sql(
        "SELECT run_id, event_id, name, sig_idx FROM matched_events ORDER BY sig_idx"
    ).fetchall() == [
        ("run_ex_late_revert", "ev-2", "issue", 2**32),
        ("run_ex_late_revert", "ev-1", "revert", 2**32 + 1),
    ]
    text = ok("unmatched-events", str(examples_ds)).stdout
    assert text.startswith("unmatched events: 1\n")
    assert "ev-3" in text and "0d1e2f3" in text and "ev-1" not in text
    body = json.loads(ok("unmatched-events", str(examples_ds), "-f", "json").stdout)
    assert [r["event_id"] for r in body["rows"]] == ["ev-3"]


def test_every_event_matched_says_so(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "e.ndjson", [event("ev-1")])
    ds = tmp_path / "ds"
    oa.ingest(LATE_DOC, ds)
    out = ok("ingest-events", str(src), "-o", str(ds), "--unmatched").stdout
    assert out.endswith("unmatched events: 0 (every event concerns a run)\n")


def test_a_dataset_made_before_the_events_table_still_reads(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(LATE_DOC, ds)
    shutil.rmtree(ds / "events")
    (ds / "_schema" / "events.parquet").unlink()
    assert oa.scan_dataset(ds).events.collect().height == 0
    assert connect(ds).sql("SELECT count(*) FROM events").fetchall() == [(0,)]
    oa.ingest_events(EVENTS, ds)
    assert rows(ds, AFTER) == REVERTED
