"""The decisions store (#38): after every ingest, late events, re-ingest and rule change,
the refreshed store holds exactly the rows of a full evaluation at the same as_of."""

from __future__ import annotations

import hashlib
import importlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
import xxhash
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from benchmarks.events import _ended, _with_commit, commit_of, event_records
from benchmarks.generate import generate_documents
from ocp_analytics.api.refresh import decisions_or_raw
from ocp_analytics.engine.finality import fingerprint
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.decisions import DecisionStore
from ocp_analytics.store.storage import store

SEED = 5
# the module (``ocp_analytics.api.refresh`` is the function the package exports)
refresh_module = importlib.import_module("ocp_analytics.api.refresh")
KEY = ["run_id", "rule"]


def _docs(start: int, n: int) -> list[dict]:
    return [
        _with_commit(d, SEED, i) for i, d in enumerate(generate_documents(n, SEED, start), start)
    ]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _stored(ds: Path, rules: list[Rule], recorded: bool = True) -> pl.DataFrame:
    """Every live row of the rules' stores, as the store holds it."""
    frames = []
    for target in ([None] if recorded else []) + list(rules):
        st = DecisionStore(store(ds), fingerprint(target))
        record = st.latest()
        assert record is not None
        frames.append(st.scan(record).collect())
    return pl.concat(frames)


def _same_as_full(ds: Path, rules: list[Rule], as_of: str) -> pl.DataFrame:
    """Assert the store's rows are a full evaluation's at ``as_of``; return the stored rows."""
    stored = _stored(ds, rules)
    full = oa.acceptance(ds, rules, as_of=as_of)
    when = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    got = stored.drop("doc_id", "observed_until").with_columns(pl.lit(when).alias("as_of"))
    assert_frame_equal(got.sort(KEY), full.sort(KEY), check_dtypes=False)
    read, summary = decisions_or_raw(ds, rules, as_of=as_of)
    assert_frame_equal(read.sort(KEY), full.sort(KEY), check_dtypes=False)
    assert summary.decided + summary.reused == full.height
    return stored


def test_refresh_matches_a_full_evaluation_after_every_step(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    rules = [Rule.parse("tests"), Rule.parse("tests+review"), Rule.parse("bench_score>=0.5")]
    docs = _docs(0, 300)
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:200]), ds)

    # 1. the first refresh decides everything from raw
    first = oa.refresh(ds, rules, as_of="2026-11-10T00:00:00Z")
    assert (first.reused, first.decided) == (0, 800)
    assert set(first.from_raw) == {"recorded", "tests", "tests+review", "bench_score>=0.5"}
    rows1 = _same_as_full(ds, rules, "2026-11-10T00:00:00Z")
    final1 = rows1.filter(~pl.col("window_open") & pl.col("observed_until").is_null())
    assert 0 < final1.height < rows1.height  # some rows were final, some not

    # 2. new runs: only they and the rows not final are decided
    oa.ingest(_write(tmp_path / "b.ndjson", docs[200:]), ds)
    second = oa.refresh(ds, rules, as_of="2026-11-20T00:00:00Z")
    assert second.from_raw == () and second.reused >= final1.height
    assert second.reused + second.decided == 1200
    rows2 = _same_as_full(ds, rules, "2026-11-20T00:00:00Z")
    # a final row is kept as it was decided, its as_of included
    kept = rows2.join(final1.select("doc_id", "rule"), on=["doc_id", "rule"])
    assert kept.height == final1.height
    assert kept["as_of"].unique().to_list() == [datetime(2026, 11, 10, tzinfo=UTC)]

    # 3. late events about old runs (some within their closed windows' reach, some not)
    ended = {i: _ended(d) for i, d in enumerate(docs)}
    feed = list(event_records(300, 60, seed=SEED, ended=ended))
    oa.ingest_events(_write(tmp_path / "events.ndjson", feed), ds)
    third = oa.refresh(ds, rules, as_of="2026-12-01T00:00:00Z")
    assert third.reused > 0
    _same_as_full(ds, rules, "2026-12-01T00:00:00Z")

    # 4. new versions of old runs, refreshed at the same as_of
    changed = json.loads(json.dumps(docs[10:40]))
    for d in changed:
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
    oa.ingest(_write(tmp_path / "again.ndjson", changed), ds)
    fourth = oa.refresh(ds, rules, as_of="2026-12-01T00:00:00Z")
    assert fourth.decided >= 30 * 4 and fourth.reused > 0
    _same_as_full(ds, rules, "2026-12-01T00:00:00Z")

    # 5. one rule's definition changes: that rule alone is decided from raw
    changed_rules = [Rule("tests", requires=("tests",), window_days=30), *rules[1:]]
    fifth = oa.refresh(ds, changed_rules, as_of="2026-12-10T00:00:00Z")
    assert fifth.from_raw == ("tests",)
    _same_as_full(ds, changed_rules, "2026-12-10T00:00:00Z")

    # 6. an as_of before the stores': decided from raw, and still a full evaluation's rows
    sixth = oa.refresh(ds, rules, as_of="2026-11-25T00:00:00Z")
    assert sixth.reused == 0 and len(sixth.from_raw) == 4
    _same_as_full(ds, rules, "2026-11-25T00:00:00Z")

    # 7. nothing changed: everything that was final is reused, nothing written
    again = oa.refresh(ds, rules, as_of="2026-11-25T00:00:00Z")
    assert again.from_raw == () and again.reused > 0
    _same_as_full(ds, rules, "2026-11-25T00:00:00Z")

    # 8. one night: runs given two new versions, and late events about their commits (which
    # the versions they replace share) and about runs replaced in step 4: only the current
    # versions are decided again, each once
    for k in (1, 2):
        twice = json.loads(json.dumps(docs[50:60]))
        for d in twice:
            d["run"]["signals"] = d["run"].get("signals", [])[:k]
        oa.ingest(_write(tmp_path / f"twice{k}.ndjson", twice), ds)
    night = [
        {"id": f"n8-{i}", "commit": commit_of(SEED, i), "kind": "event", "name": "revert",
         "value": "r", "source": {"kind": "ci", "ref": "r"}, "tier": "verified",
         "observed_at": "2026-12-09T00:00:00Z"}
        for i in [*range(12, 18), *range(52, 58)]
    ]  # fmt: skip
    oa.ingest_events(_write(tmp_path / "night.ndjson", night), ds)
    eighth = oa.refresh(ds, rules, as_of="2026-12-10T00:00:00Z")
    assert eighth.from_raw == () and eighth.reused > 0
    _same_as_full(ds, rules, "2026-12-10T00:00:00Z")


def test_a_refresh_killed_before_its_record_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 60)), ds)
    oa.refresh(ds, "tests", as_of="2026-11-10T00:00:00Z")
    oa.ingest(_write(tmp_path / "b.ndjson", _docs(60, 20)), ds)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(DecisionStore, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        oa.refresh(ds, "tests", as_of="2026-11-20T00:00:00Z")
    monkeypatch.undo()
    st = DecisionStore(store(ds), fingerprint(Rule.parse("tests")))
    record = st.latest()
    assert record is not None and record["generation"] == 1
    assert st.scan(record).collect().height == 60  # the killed generation's parts are not read
    leftovers = len(st.root.child("parts").names())
    assert leftovers > len(record["chain"][0]["parts"])

    summary = oa.refresh(ds, "tests", as_of="2026-11-20T00:00:00Z")
    assert summary.reused + summary.decided == 160
    _same_as_full(ds, [Rule.parse("tests")], "2026-11-20T00:00:00Z")


def test_refresh_refuses_tables_in_memory(examples_dataset: Path) -> None:
    tables = dict(oa.scan_dataset(examples_dataset).frames)
    with pytest.raises(oa.DatasetError, match="dataset on disk"):
        oa.refresh(tables)  # type: ignore[arg-type]


def test_the_cli_refresh_says_what_it_reused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli.root import app

    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 20)), ds)
    args = ["refresh", str(ds), "--rule", "tests", "--as-of", "2026-12-01T00:00:00Z"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "decisions: 0 reused, 40 decided" in first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0 and "decisions: " in second.output


@pytest.mark.parametrize("entries", [3, 8])
def test_a_store_refreshed_every_night_keeps_a_short_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: int
) -> None:
    monkeypatch.setattr(refresh_module, "FOLD_ENTRIES", entries)
    ds, rules = tmp_path / "ds", [Rule.parse("tests+review")]
    docs = _docs(0, 240)
    oa.ingest(_write(tmp_path / "day.ndjson", docs[:120]), ds)
    oa.refresh(ds, rules, as_of="2026-11-01T00:00:00Z")
    lengths = []
    for night in range(12):
        new = docs[120 + 10 * night : 130 + 10 * night]
        oa.ingest(_write(tmp_path / f"night-{night}.ndjson", new), ds)
        if night % 4 == 3:  # now and then new versions of old runs, and late events
            changed = json.loads(json.dumps(docs[night * 10 : night * 10 + 8]))
            for d in changed:
                d["run"]["signals"] = d["run"].get("signals", [])[:1]
            oa.ingest(_write(tmp_path / f"again-{night}.ndjson", changed), ds)
            ended = {i: _ended(d) for i, d in enumerate(docs)}
            feed = list(event_records(120, 20, seed=night, ended=ended))
            oa.ingest_events(_write(tmp_path / f"events-{night}.ndjson", feed), ds)
        as_of = f"2026-11-{2 + night:02d}T00:00:00Z"
        oa.refresh(ds, rules, as_of=as_of)
        record = DecisionStore(store(ds), fingerprint(rules[0])).latest()
        assert record is not None
        lengths.append(len(record["chain"]))
        _same_as_full(ds, rules, as_of)
    assert max(lengths) <= entries
    assert 1 in lengths[1:]  # the whole chain folded once the nights grew
    if entries == 3:
        assert 2 in lengths[2:]  # the nights folded into one behind the first entry


def test_a_fold_killed_before_its_record_leaves_the_nights_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_module, "FOLD_ENTRIES", 1)
    ds, rules = tmp_path / "ds", [Rule.parse("tests")]
    docs = _docs(0, 80)
    oa.ingest(_write(tmp_path / "day.ndjson", docs[:60]), ds)
    oa.refresh(ds, rules, as_of="2026-11-01T00:00:00Z")
    oa.ingest(_write(tmp_path / "night.ndjson", docs[60:]), ds)
    commit = DecisionStore.commit

    def killed_fold(self: DecisionStore, gen: Any, previous: Any, ids: Any, meta: dict) -> Any:
        if meta.get("folded"):
            raise KeyboardInterrupt
        return commit(self, gen, previous, ids, meta)

    monkeypatch.setattr(DecisionStore, "commit", killed_fold)
    with pytest.raises(KeyboardInterrupt):
        oa.refresh(ds, rules, as_of="2026-11-02T00:00:00Z")
    st = DecisionStore(store(ds), fingerprint(None))  # the first store refreshed: the recorded
    record = st.latest()
    assert record is not None and len(record["chain"]) == 2 and "folded" not in record
    read, _ = decisions_or_raw(ds, rules, as_of="2026-11-02T00:00:00Z")  # through its chain
    full = oa.acceptance(ds, rules, as_of="2026-11-02T00:00:00Z", use_decisions=False)
    assert_frame_equal(read.sort(KEY), full.sort(KEY), check_dtypes=False)
    monkeypatch.setattr(DecisionStore, "commit", commit)
    oa.refresh(ds, rules, as_of="2026-11-02T00:00:00Z")  # nothing changed: no new generation
    oa.ingest(_write(tmp_path / "more.ndjson", _docs(80, 5)), ds)
    oa.refresh(ds, rules, as_of="2026-11-03T00:00:00Z")
    record = st.latest()
    assert record is not None and len(record["chain"]) <= 2 and record["folded"]
    listed = {p for e in record["chain"] for p in e["parts"]}
    oa.refresh(ds, rules, as_of="2026-11-03T00:00:00Z")  # the next refresh deletes what is unlisted
    assert {f"parts/{n}" for n in st.root.child("parts").names()} == listed
    _same_as_full(ds, rules, "2026-11-03T00:00:00Z")


def test_a_pending_row_is_decided_again_only_once_it_may_read_otherwise(tmp_path: Path) -> None:
    ds, rules = tmp_path / "ds", [Rule.parse("tests"), Rule.parse("tests+review")]
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 300)), ds)
    oa.refresh(ds, rules, as_of="2026-11-10T00:00:00Z")
    stores = [DecisionStore(store(ds), fingerprint(t)) for t in [None, *rules]]

    def pending() -> pl.DataFrame:
        frames = []
        for st in stores:
            record = st.latest()
            assert record is not None
            frames.append(st.pending(record))
        return pl.concat(frames)

    held = pending()
    assert held.height > 0 and held["changes_at"].null_count() == 0
    for later in ["2026-11-10T06:00:00Z", "2026-11-14T00:00:00Z", "2026-12-31T00:00:00Z"]:
        when = datetime.fromisoformat(later.replace("Z", "+00:00"))
        due = held.filter(pl.col("changes_at") <= when).height
        if later.startswith("2026-11-10"):
            assert due < held.height  # six hours on, most pending rows read the same
        summary = oa.refresh(ds, rules, as_of=later)
        assert summary.decided == due  # the others read the same at `later`: kept
        _same_as_full(ds, rules, later)
        held = pending()
    assert held.height == 0  # by the end of the year every window has closed


def _restamp(st: DecisionStore, record: dict[str, Any], rel: str) -> None:
    """Make the store's newest record say what the rewritten file ``rel`` now holds."""
    data = st.root.child(rel).read_bytes()
    for entry in record["chain"]:
        for f in entry.get("files", []):
            if f["file"] == rel:
                sha, fast = hashlib.sha256(data).hexdigest(), xxhash.xxh3_128_hexdigest(data)
                f.update(bytes=len(data), sha256=sha, xxh3=fast)
    target = st.root.child("_generations", st.records()[-1])
    target.path.write_bytes(orjson.dumps(record))


def test_a_pending_file_without_changes_at_has_every_row_decided_again(tmp_path: Path) -> None:
    ds, rules = tmp_path / "ds", [Rule.parse("tests")]
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 200)), ds)
    oa.refresh(ds, rules, as_of="2026-11-10T00:00:00Z")
    held = 0
    for target in [None, *rules]:  # as a store written before changes_at was kept
        st = DecisionStore(store(ds), fingerprint(target))
        record = st.latest()
        assert record is not None
        rel = record["chain"][0]["pending"]
        path = st.root.child(rel).path
        pl.read_parquet(path).select("doc_id").write_parquet(path)
        _restamp(st, record, rel)
        held += st.pending(record).height
        assert st.pending(record)["changes_at"].null_count() == st.pending(record).height
    summary = oa.refresh(ds, rules, as_of="2026-11-10T06:00:00Z")
    assert summary.decided == held  # every one, as before changes_at: none is known to wait
    _same_as_full(ds, rules, "2026-11-10T06:00:00Z")


def test_deciding_from_the_columns_decide_reads_gives_the_full_tables_rows(
    tmp_path: Path,
) -> None:
    """``DECIDE_READS`` (what a refresh reads once, into memory) loses nothing decide reads.

    Over runs with late events matched and not, old parts without the
    signals' links beside new ones (decide links them from the attempts),
    every rule kind and the recorded rule: the rows from the tables cut to
    those columns are the rows from the full tables.
    """
    from ocp_analytics.engine.acceptance import DECIDE_READS, decide
    from ocp_analytics.engine.evaluate import SLICED_TABLES
    from tests.test_evaluate import _strip_links

    ds = tmp_path / "ds"
    docs = _docs(0, 400)
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:200]), ds)
    oa.ingest(_write(tmp_path / "b.ndjson", docs[200:]), ds)
    ended = {i: _ended(d) for i, d in enumerate(docs)}
    oa.ingest_events(_write(tmp_path / "e.ndjson", list(event_records(400, 80, SEED, ended))), ds)
    _strip_links(ds, {1})
    rules = [Rule.parse("tests+review"), Rule.parse("bench_score>=0.5"), Rule.parse("tests")]
    scanned = oa.scan_dataset(ds)
    full = {t: scanned.frames[t] for t in (*SLICED_TABLES, "events")}
    cut = {
        t: f.select(c for c in DECIDE_READS[t] if c in f.collect_schema().names())
        if t in DECIDE_READS
        else f
        for t, f in full.items()
    }
    assert scanned.signals.select(pl.col("attempt_pos").null_count()).collect().item() > 0
    as_of = datetime(2026, 12, 1, tzinfo=UTC)
    want, got = (
        pl.collect_all(decide(t, rules, as_of, recorded=True, closes=True)) for t in (full, cut)
    )
    late = pl.col("reasons").list.eval(pl.element().str.starts_with("late:")).list.any()
    assert sum(w.filter(late).height for w in want) > 0  # late events turned some runs
    for w, g in zip(want, got, strict=True):
        assert_frame_equal(g.sort(KEY), w.sort(KEY))
