"""Ingestion: examples, bad input (one defect a fixture), re-ingest, replacement."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import ocp_analytics as oa

DATA = Path(__file__).parent / "data"
EXAMPLES = DATA / "examples"
BAD = DATA / "bad"
EXPECTED_BAD = json.loads((BAD / "expected.json").read_text())

# OCP-DIGEST §16: attempts and signals per example document.
EXAMPLE_COUNTS = {
    "run_ex_solo": (1, 2),
    "run_ex_best_of_n": (4, 3),
    "run_ex_plan_implement": (2, 2),
    "run_ex_implement_review": (4, 4),
    "run_ex_plan_implement_review": (3, 3),
    "run_ex_swarm": (9, 4),
    "run_ex_full_a": (4, 6),
    "run-minimal-01": (4, 0),
    "run-assemble-v01": (12, 0),
    "swarm-example-01": (6, 0),
    "run_golden_e190_pass": (1, 2),
    "run_golden_e191_pass": (4, 4),
    "run_golden_e192_pass": (2, 2),
    "run_golden_e193_pass": (4, 4),
    "run_golden_e194_pass": (4, 6),
    "run_golden_e195_pass": (4, 4),
    "run_golden_w182_pass": (1, 2),
    "run_golden_w196_pass": (4, 6),
    "broken-tier": (0, 0),
}


def test_every_example_ingests_with_digest_counts(tmp_path: Path) -> None:
    summary = oa.ingest(EXAMPLES, tmp_path / "ds")
    assert summary.reconciles
    assert summary.quarantined == 0
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect()
    got = {r: (a, s) for r, a, s in runs.select("run_id", "n_attempts", "n_signals").rows()}
    for run_id, counts in EXAMPLE_COUNTS.items():
        assert got[run_id] == counts, run_id
    ds = oa.scan_dataset(tmp_path / "ds")
    per_run = ds.attempts.group_by("run_id").len().collect()
    assert dict(per_run.rows())["run_ex_swarm"] == 9


def test_review_loop_v01_and_v03_share_a_run_id_and_the_later_wins(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest([EXAMPLES / "review-loop-v01.ocp.json"], ds)
    s = oa.ingest([EXAMPLES / "review-loop-v03.ocp.json"], ds)
    assert (s.runs_replaced, s.runs_new) == (1, 0)
    runs = oa.scan_dataset(ds).runs.collect()
    assert runs.select("run_id", "ocp_version").rows() == [("run-review-loop-01", "0.3")]
    assert oa.scan_dataset(ds).attempts.collect().height == 8


@pytest.mark.parametrize("name", sorted(EXPECTED_BAD))
def test_bad_input_lands_where_expected(tmp_path: Path, name: str) -> None:
    exp = EXPECTED_BAD[name]
    summary = oa.ingest([BAD / name], tmp_path / "ds")
    ds = oa.scan_dataset(tmp_path / "ds")
    assert summary.reconciles
    if exp["table"] is None:  # an odd but clean shape: nothing to report
        assert (ds.runs.collect().height, summary.quarantined) == (exp["runs"], 0)
        assert ds.findings.collect().height == 0
        return
    table = getattr(ds, exp["table"]).collect()
    rows = table.filter(pl.col("code") == exp["code"])
    assert rows.height == 1, table
    row = rows.row(0, named=True)
    assert row["source_path"] == str(BAD / name)
    if "line" in exp:
        assert row["source_line"] == exp["line"]
    if "path" in exp:
        assert row["json_path"] == exp["path"]
    assert row["message"]
    if "message" in exp:
        assert row["message"] == exp["message"]
    if exp["runs"] is not None:
        assert ds.runs.collect().height == exp["runs"]
    if exp["table"] == "quarantine":
        assert row["raw_head"] is not None and len(row["raw_head"]) <= 1024
        assert ds.findings.collect().height == 0
    else:
        assert summary.quarantined == 0
        assert ds.findings.collect().height == 1, ds.findings.collect()
    if "rule_valid" in exp:
        assert ds.rules.collect().get_column("valid").to_list() == [exp["rule_valid"]]


def test_defective_fields_are_null_not_guessed(tmp_path: Path) -> None:
    for i, name in enumerate(["bad_observed_at", "attempt_n_fraction", "window_days_string"]):
        doc = json.loads((BAD / f"{name}.json").read_text())
        doc["run"]["id"] = f"run_{i}"
        oa.ingest(_write(tmp_path / f"{name}.json", doc), tmp_path / "ds")
    ds = oa.scan_dataset(tmp_path / "ds")
    sig = ds.signals.collect()
    assert sig.get_column("observed_at").null_count() == 1
    assert "yesterday" in sig.get_column("observed_at_raw").to_list()
    assert ds.attempts.collect().get_column("n").to_list().count(None) == 1
    rule = ds.rules.collect().filter(~pl.col("valid"))
    assert rule.get_column("window_days").to_list() == [None]
    acc = oa.acceptance(ds, as_of="2027-01-01T00:00:00Z").sort("run_id")
    assert acc.get_column("reasons").to_list() == [[], [], ["invalid_rule"]]


def test_strict_raises_after_ingesting_the_rest(tmp_path: Path) -> None:
    with pytest.raises(oa.StrictIngestError, match="quarantined"):
        oa.ingest([BAD / "not_json.ndjson"], tmp_path / "ds", strict=True)
    assert oa.scan_dataset(tmp_path / "ds").runs.collect().height == 2


def test_reingest_same_content_is_a_noop(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES / "v0.3", ds)
    s = oa.ingest(EXAMPLES / "v0.3", ds)
    assert all(src.skipped for src in s.sources)
    assert s.documents_read == 0
    assert oa.scan_dataset(ds).runs.collect().height == 7
    assert len(oa.scan_dataset(ds).manifest) == 7


def test_identical_document_in_another_file_is_unchanged(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES / "v0.3" / "solo.ocp.json", ds)
    copy = tmp_path / "copy.json"
    shutil.copy(EXAMPLES / "v0.3" / "solo.ocp.json", copy)
    s = oa.ingest(copy, ds)
    assert (s.runs_unchanged, s.runs_new, s.runs_replaced) == (1, 0, 0)
    scanned = oa.scan_dataset(ds)
    assert scanned.runs.collect().height == 1
    assert scanned.signals.collect().height == 2


def test_newer_version_replaces_older_for_every_table(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    oa.ingest(_write(tmp_path / "v1.json", doc), ds)
    doc["run"]["signals"] = doc["run"]["signals"][:1]
    doc["run"]["signals"][0]["value"] = "fail"
    s = oa.ingest(_write(tmp_path / "v2.json", doc), ds)
    assert s.runs_replaced == 1
    scanned = oa.scan_dataset(ds)
    assert scanned.runs.collect().height == 1
    assert scanned.signals.collect().get_column("value_text").to_list() == ["fail"]
    acc = oa.acceptance(scanned, as_of="2027-01-01T00:00:00Z")
    assert acc.get_column("outcome").to_list() == ["rejected"]


def _solo(run_id: str, ended: str, title: str, late: str | None = None) -> str:
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    doc["run"]["id"], doc["run"]["ended_at"], doc["run"]["title"] = run_id, ended, title
    if late is not None:
        doc["run"]["signals"].append(
            {"id": "late", "kind": "event", "name": "issue", "value": "i/1", "observed_at": late}
        )
    return json.dumps(doc)


def test_duplicate_run_id_in_one_batch_latest_ended_at_wins(tmp_path: Path) -> None:
    """The later-read version is older: it is outranked, not written, and named in a finding."""
    src = tmp_path / "twice.ndjson"
    newer = _solo("r", "2026-09-23T12:00:00Z", "newer")
    older = _solo("r", "2026-09-23T11:00:00Z", "older")
    src.write_text(newer + "\n" + older + "\n")
    s = oa.ingest(src, tmp_path / "ds")
    assert (s.runs_new, s.runs_replaced, s.runs_outranked, s.documents_read) == (1, 0, 1, 2)
    assert s.reconciles
    ds = oa.scan_dataset(tmp_path / "ds")
    assert ds.runs.collect().get_column("title").to_list() == ["newer"]
    assert ds.scans["runs"].collect().height == 1
    f = ds.findings.collect()
    assert f.select("run_id", "code", "json_path", "source_line").rows() == [
        ("r", "duplicate_run", "$.run.id", 2)
    ]
    assert "is outranked by the current version" in f.item(0, "message")


def test_duplicate_run_id_same_ended_at_latest_signal_wins(tmp_path: Path) -> None:
    """A re-emitted document with a late event appended wins over the original."""
    src = tmp_path / "twice.ndjson"
    original = _solo("r", "2026-09-23T11:00:00Z", "original")
    appended = _solo("r", "2026-09-23T11:00:00Z", "appended", late="2026-09-30T00:00:00Z")
    src.write_text(original + "\n" + appended + "\n")
    s = oa.ingest(src, tmp_path / "ds")
    assert (s.runs_new, s.runs_replaced, s.runs_outranked) == (1, 1, 0)
    ds = oa.scan_dataset(tmp_path / "ds")
    assert ds.runs.collect().get_column("title").to_list() == ["appended"]
    assert ds.scans["runs"].collect().height == 2  # the original stays as superseded
    f = ds.findings.collect()
    assert f.select("code", "source_line").rows() == [("duplicate_run", 2)]


def test_duplicate_run_id_does_not_depend_on_file_names(tmp_path: Path) -> None:
    """Same ended_at and signals: the larger doc_sha256 wins, whichever file is read first."""
    import hashlib

    a = _solo("r", "2026-09-23T11:00:00Z", "a")
    b = _solo("r", "2026-09-23T11:00:00Z", "b")
    winner = (
        "a"
        if hashlib.sha256(a.encode()).hexdigest() > hashlib.sha256(b.encode()).hexdigest()
        else "b"
    )
    titles = []
    for order in ((a, b), (b, a)):
        folder = tmp_path / f"src-{len(titles)}"
        folder.mkdir()
        (folder / "1.ndjson").write_text(order[0] + "\n")
        (folder / "2.ndjson").write_text(order[1] + "\n")
        oa.ingest(folder, tmp_path / f"ds-{len(titles)}")
        runs = oa.scan_dataset(tmp_path / f"ds-{len(titles)}").runs.collect()
        titles.append(runs.get_column("title").to_list())
    assert titles == [[winner], [winner]]


@pytest.mark.parametrize("merge_factor", [0, 1, 2, 1_000_000])
def test_run_index_is_a_dict_of_the_latest_hash(merge_factor: int) -> None:
    """The index's segments, merged or not, answer as one dict updated in order."""
    import random

    from ocp_analytics.store.run_index import RunIndex

    schema = {"k": pl.UInt64, "h": pl.UInt64}
    rng = random.Random(merge_factor)
    index = RunIndex(pl.DataFrame({"k": [5, 9], "h": [1, 2]}, schema=schema))
    index.MERGE_FACTOR = merge_factor
    model = {5: 1, 9: 2}
    for _ in range(80):
        keys = [rng.randrange(50) for _ in range(rng.randrange(8))]  # repeats within a chunk too
        asked = pl.Series("k", [*keys, rng.randrange(60), 2**64 - 1], dtype=pl.UInt64)
        assert index.lookup(asked).to_list() == [model.get(k) for k in asked.to_list()]
        hashes = [rng.randrange(1000) for _ in keys]
        index.add(pl.DataFrame({"k": keys, "h": hashes}, schema=schema))
        model.update(zip(keys, hashes, strict=True))
    for seg in index.segments:
        assert seg.get_column("k").is_sorted() and seg.get_column("k").n_unique() == seg.height
    if merge_factor == 1_000_000:
        assert len(index.segments) == 1


@pytest.mark.parametrize("merge_factor", [0, 2, 1_000_000])
@pytest.mark.parametrize("workers", [0, 2])
def test_classification_across_chunks_and_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, merge_factor: int, workers: int
) -> None:
    """New / replaced / outranked / unchanged are the same however the known runs are held.

    (0: every chunk its own segment; 10⁶: one segment, every chunk merged into it.)
    """
    from ocp_analytics.store.run_index import RunIndex

    monkeypatch.setattr(RunIndex, "MERGE_FACTOR", merge_factor)
    lines = []
    for i in range(12):
        # ids repeat across chunks of 2; ended_at hours 0 7 2 9 4 11 6 1 8 3 10 5
        lines.append(_solo(f"r{i % 5}", f"2026-09-23T{(i * 7) % 12:02d}:00:00Z", f"t{i}"))
    (tmp_path / "a.ndjson").write_text("\n".join(lines) + "\n")
    s = oa.ingest(tmp_path / "a.ndjson", tmp_path / "ds", chunk_docs=2, workers=workers)
    # r0: hours 0, 11, 10 -> new, replaced, outranked; r1: 7, 6, 5; r2: 2, 1; r3: 9, 8; r4: 4, 3
    counts = (s.runs_new, s.runs_replaced, s.runs_outranked, s.runs_unchanged)
    assert counts == (5, 1, 6, 0)
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect().sort("run_id")
    assert runs.get_column("title").to_list() == ["t5", "t1", "t2", "t3", "t4"]
    (tmp_path / "b.ndjson").write_text("\n".join(lines[1:6]) + "\n")  # the current versions
    again = oa.ingest(tmp_path / "b.ndjson", tmp_path / "ds", chunk_docs=2, workers=workers)
    assert (again.runs_new, again.runs_replaced, again.runs_unchanged) == (0, 0, 5)
    (tmp_path / "c.ndjson").write_text("\n".join(lines[7:12]) + "\n")  # a later batch wins
    later = oa.ingest(tmp_path / "c.ndjson", tmp_path / "ds", chunk_docs=2, workers=workers)
    assert (later.runs_new, later.runs_replaced, later.runs_outranked) == (0, 5, 0)
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect().sort("run_id")
    assert runs.get_column("title").to_list() == ["t10", "t11", "t7", "t8", "t9"]


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_formats_arrays_compression_globs_and_stdin(tmp_path: Path) -> None:
    docs = [json.loads(p.read_text()) for p in sorted((EXAMPLES / "v0.3").glob("*.json"))]
    (tmp_path / "arr.json").write_text(json.dumps(docs[:2]))
    lines = "\n".join(json.dumps(d) for d in docs[2:4]) + "\n"
    (tmp_path / "a.ndjson.gz").write_bytes(gzip.compress(lines.encode()))
    lines = "\n".join(json.dumps(d) for d in docs[4:6]) + "\n"
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines.encode()))
    s = oa.ingest(
        [str(tmp_path / "*.json"), str(tmp_path / "*.gz"), str(tmp_path / "*.zst")], tmp_path / "ds"
    )
    assert (s.documents_read, s.runs_new) == (6, 6)
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect()
    arr = runs.filter(pl.col("source_path").str.ends_with("arr.json"))
    assert sorted(arr.get_column("source_index").to_list()) == [0, 1]
    out = subprocess.run(
        [sys.executable, "-m", "ocp_analytics.cli", "ingest", "-", "--out", str(tmp_path / "ds2")],
        input=json.dumps(docs[6]) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert "documents read: 1 = runs written 1" in out.stdout


def test_missing_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(oa.SourceError, match="matches no file"):
        oa.ingest(tmp_path / "nothing-here", tmp_path / "ds")


def test_labels_are_queryable_by_key(tmp_path: Path) -> None:
    oa.ingest(EXAMPLES, tmp_path / "ds")
    runs = oa.scan_dataset(tmp_path / "ds").runs
    got = (
        runs.select("run_id", oa.label("example"))
        .filter(pl.col("run_id") == "run_ex_full_a")
        .collect()
    )
    assert got.row(0) == ("run_ex_full_a", "full-fields")


def test_cli_strict_exit_code(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocp_analytics.cli",
            "ingest",
            str(BAD / "not_json.ndjson"),
            "--out",
            str(tmp_path / "ds"),
            "--strict",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 3
    assert "quarantined 1" in out.stdout
    assert "not_json 1" in out.stdout


def test_empty_source_folder_is_a_noop(tmp_path: Path) -> None:
    (tmp_path / "drop").mkdir()
    s = oa.ingest(tmp_path / "drop", tmp_path / "ds")
    assert (s.sources, s.documents_read, s.batches, s.reconciles) == ([], 0, [], True)
    assert str(s).splitlines()[1] == "sources: 0 (no document file found; nothing to do)"
    assert oa.scan_dataset(tmp_path / "ds").runs.collect().height == 0
    drop, ds = str(tmp_path / "drop"), str(tmp_path / "ds")
    out = subprocess.run(
        [sys.executable, "-m", "ocp_analytics.cli", "ingest", drop, "-o", ds, "-q"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


def _ingest_a_b_with_a_found_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finding: Callable[[Path, int], int]
) -> oa.IngestSummary:
    """Ingest a.json and b.json (one run each); ``finding(path, size)`` stands in for
    the size check that finds a.json (b.json is found as usual)."""
    from ocp_analytics.ingestion import sources

    (tmp_path / "src").mkdir()
    for name in ("a.json", "b.json"):
        shutil.copy(EXAMPLES / "v0.3" / "solo.ocp.json", tmp_path / "src" / name)
    real = sources._readable_size

    def found(path: Path) -> int:
        return finding(path, real(path)) if path.name == "a.json" else real(path)

    monkeypatch.setattr(sources, "_readable_size", found)
    return oa.ingest(tmp_path / "src", tmp_path / "ds")


def test_a_file_gone_between_finding_and_reading_is_quarantined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def then_gone(path: Path, size: int) -> int:
        path.unlink()
        return size

    s = _ingest_a_b_with_a_found_by(tmp_path, monkeypatch, then_gone)
    assert (s.documents_read, s.runs_new, s.quarantined, s.reconciles) == (2, 1, 1, True)
    q = oa.scan_dataset(tmp_path / "ds").quarantine.collect()
    assert q.select("code").rows() == [("unreadable",)]
    assert [x.sha256 == "" for x in s.sources] == [True, False]


def test_manifest_hash_is_the_files_read_once_or_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new file is hashed while it is read (not read twice); the manifest holds its SHA-256.

    Also when the read stops early (bytes after the gzip member: hashed again) and for
    a changed file at an ingested path (hashed first, then ingested again).
    """
    import hashlib

    from ocp_analytics.ingestion import sources

    line = (EXAMPLES / "v0.3" / "solo.ocp.json").read_bytes().replace(b"\n", b"") + b"\n"
    files = {
        "a.ndjson": line,
        "b.json": (EXAMPLES / "v0.3" / "solo.ocp.json").read_bytes(),
        "c.ndjson.gz": gzip.compress(line.replace(b"run_ex_solo", b"run_c")),
        "d.ndjson.gz": gzip.compress(line.replace(b"run_ex_solo", b"run_d")) + b"junk" * 3,
        "e.ndjson.zst": zstandard.ZstdCompressor().compress(line.replace(b"run_ex_solo", b"e")),
    }
    (tmp_path / "src").mkdir()
    for name, data in files.items():
        (tmp_path / "src" / name).write_bytes(data)
    hashed: list[str] = []
    real = sources._sha256

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(sources, "_sha256", counting)
    s = oa.ingest(tmp_path / "src", tmp_path / "ds")
    assert s.reconciles
    assert hashed == ["d.ndjson.gz"]  # only the read that stopped early
    manifest = oa.scan_dataset(tmp_path / "ds").manifest
    got = dict(zip(manifest["path"].str.split("/").list.last(), manifest["sha256"], strict=True))
    assert got == {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
    # the same path again: hashed first; unchanged -> skipped, changed -> read again
    hashed.clear()
    (tmp_path / "src" / "a.ndjson").write_bytes(line.replace(b"run_ex_solo", b"run_a2"))
    again = oa.ingest(tmp_path / "src", tmp_path / "ds")
    assert sorted(hashed) == sorted(files)
    assert [x.skipped for x in again.sources] == [False, True, True, True, True]
    assert again.runs_new == 1


def test_reingest_is_keyed_on_content_and_resolved_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(EXAMPLES / "v0.3" / "solo.ocp.json", tmp_path / "a.json")
    monkeypatch.chdir(tmp_path)
    first = oa.ingest("a.json", "ds")
    assert first.runs_new == 1
    for spelling in ("./a.json", str(tmp_path / "a.json"), "../" + tmp_path.name + "/a.json"):
        again = oa.ingest(spelling, "ds")
        assert [s.skipped for s in again.sources] == [True], spelling
    manifest = oa.scan_dataset("ds").manifest
    assert manifest.select("path", "resolved").rows() == [("a.json", str(tmp_path / "a.json"))]


def test_stdin_pretty_printed_documents(tmp_path: Path) -> None:
    docs = [json.loads(p.read_text()) for p in sorted((EXAMPLES / "v0.3").glob("*.json"))[:3]]
    text = "".join(json.dumps(d, indent=2) + "\n" for d in docs)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocp_analytics.cli",
            "ingest",
            "-",
            "-q",
            "-o",
            str(tmp_path / "ds"),
        ],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "documents read: 3 = runs written 3" in out.stdout
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect().sort("source_line")
    assert runs.select("source_path", "source_line").rows()[0] == ("-", 1)


def test_read_documents_takes_strings_orjson_refuses() -> None:
    docs = [
        {"ocp": "0.3", "run": {"id": "r1", "title": "\ud800"}, "attempts": [{"n": 10**30}]},
        '{"ocp": "0.3", "run": {"id": "r2", "title": "caf\udce9"}}',  # bytes read as escapes
    ]
    t = oa.read_documents(docs)
    found = t["findings"].select("run_id", "code", "json_path").collect().sort("run_id", "code")
    assert found.rows() == [
        ("r1", "lone_surrogate", "$.run.title"),
        ("r1", "out_of_range", "$.attempts[0].n"),
        ("r2", "invalid_utf8", "$.run.title"),
    ]


def test_file_name_that_is_not_utf8_does_not_abort_the_ingest(tmp_path: Path) -> None:
    import os

    (tmp_path / "src").mkdir()
    shutil.copy(EXAMPLES / "v0.3" / "solo.ocp.json", tmp_path / "src" / os.fsdecode(b"\xff.json"))
    s = oa.ingest(tmp_path / "src", tmp_path / "ds")
    assert (s.runs_new, s.reconciles) == (1, True)
    runs = oa.scan_dataset(tmp_path / "ds").runs.select("source_path").collect()
    assert runs.rows() == [(str(tmp_path / "src") + "/\\xff.json",)]


def test_unreadable_file_is_quarantined_and_the_rest_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: Path, size: int) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    s = _ingest_a_b_with_a_found_by(tmp_path, monkeypatch, denied)
    assert (s.documents_read, s.runs_new, s.quarantined, s.reconciles) == (2, 1, 1, True)
    q = oa.scan_dataset(tmp_path / "ds").quarantine.collect()
    assert q.select("source_path", "source_line", "code").rows() == [
        (str(tmp_path / "src" / "a.json"), 1, "unreadable")
    ]
    assert q.item(0, "message") == (
        f"the file cannot be read: PermissionError: [Errno 13] Permission denied: "
        f"'{tmp_path / 'src' / 'a.json'}'"
    )


# --- timestamps (SEMANTICS §2), held to the reference reader ---------------------------

_TIMESTAMPS = [
    "2026-09-23T17:53:00Z",
    "2026-09-23T17:53:00.1234569+05:30",
    "2026-09-23T17:53:00",
    "2028-02-29T00:00:00Z",
    "2026-09-23T23:59:00+23:59",
    "2026-02-30T00:00:00Z",
    "2026-09-23T24:00:00Z",
    "2026-09-23T23:59:60Z",
    "2026-09-23T23:59:60.5+01:00",
    "2026-09-23T10:00:00+24:00",
    "2026-09-23T10:00:00+05:60",
    "2026-09-23T10:00:00+0530",
    "2026-09-23T10:00:00.Z",
    "2026-09-23T1\u0661:00:00Z",  # a non-ASCII digit
    "2026-09-23T10:00:00 ",
    "0000-01-01T00:00:00Z",
    "0000-12-31T23:00:00-02:00",
    "0001-01-01T00:30:00+01:00",
    "0001-01-01T01:30:00+01:00",
    "9999-12-31T23:30:00-01:00",
    "9999-12-31T23:30:00+01:00",
    "garbage",
    "",
    None,
]


@pytest.mark.parametrize("text", _TIMESTAMPS)
def test_parse_timestamp_reads_what_the_reference_reads(text: str | None) -> None:
    from ocp_analytics.ingestion.timestamps import parse_timestamp
    from tests.reference import parse_ts

    got = pl.LazyFrame({"t": [text]}, schema={"t": pl.String})
    value = got.select(parse_timestamp(pl.col("t"))).collect().item()
    assert value == parse_ts(text)


def _two(low: int = 0, high: int = 99) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda v: f"{v:02d}")


@st.composite
def _timestamp_texts(draw: st.DrawFn) -> str:
    """Texts of the RFC 3339 shape, with every field at and past its limits."""
    year = draw(st.sampled_from(["0000", "0001", "1969", "2028", "9999"]) | st.just("2026"))
    month, day = draw(_two(0, 13)), draw(_two(0, 32))
    clock = draw(
        st.sampled_from(["24:00:00", "23:60:00", "23:59:60", "00:00:00"])
        | st.builds("{}:{}:{}".format, _two(0, 25), _two(0, 61), _two(0, 61))
    )
    fraction = draw(st.sampled_from(["", "."]) | st.text("0123456789", min_size=1, max_size=12))
    if fraction and fraction != ".":
        fraction = "." + fraction
    zone = draw(
        st.sampled_from(["", "Z", "z", "+0530", "+05", "-00:00"])
        | st.builds("{}{}:{}".format, st.sampled_from("+-"), _two(0, 30), _two(0, 65))
    )
    sep = draw(st.sampled_from(["T", "T", "t", " "]))
    return f"{year}-{month}-{day}{sep}{clock}{fraction}{zone}"


@settings(max_examples=150, deadline=None)
@given(st.lists(_timestamp_texts(), min_size=1, max_size=40))
def test_parse_timestamp_is_the_reference_on_generated_texts(texts: list[str]) -> None:
    """Vectorized, so checked in batches: every text reads as the reference reads it."""
    from ocp_analytics.ingestion.timestamps import parse_timestamp, with_timestamps
    from tests.reference import parse_ts

    frame = pl.LazyFrame({"t": texts}, schema={"t": pl.String})
    got = frame.select(parse_timestamp(pl.col("t"))).collect().to_series().to_list()
    assert got == [parse_ts(t) for t in texts], texts
    both = with_timestamps(frame, {"at": "t"}).collect().get_column("at").to_list()
    assert both == got


_R = '{"name": "r", "requires": ["tests"]}'
# (document text, labels as {key: value}, recorded rule name or None): each one
# a text where cutting the member out of the text would go wrong if trusted.
_SIDE_CASES = [
    (
        '{"ocp":"0.3","run":{"id":"a","labels":{"t":"x}y"},"acceptance_rule":' + _R + "}}",
        {"t": "x}y"},
        "r",
    ),
    ('{"ocp":"0.3","run":{"id":"a","labels":{"t":"{"}}}', {"t": "{"}, None),
    ('{"ocp":"0.3","attempts":[{"labels":{"t":"wrong"}}],"run":{"id":"a"}}', None, None),
    (
        '{"ocp":"0.3","attempts":[{"labels":{"t":"wrong"}}],"run":{"id":"a","labels":{"t":"ok"}}}',
        {"t": "ok"},
        None,
    ),
    (
        '{"ocp":"0.3","attempts":[{"labels":{}}],"run":{"id":"a","lab\\u0065ls":{"t":"ok"}}}',
        {"t": "ok"},
        None,
    ),
    ('{"ocp":"0.3","run":{"id":"a","labels":{"t":"ok","t":"second"}}}', {"t": "ok"}, None),
    ('{"ocp":"0.3","run":{"id":"a","labels":\n {"t" : "ok"} }}', {"t": "ok"}, None),
    (
        '{"ocp":"0.3","run":{"id":"a","acceptance_rule":{"name":"deep","score":{"name":"s",'
        '"target":0.5,"x":{"y":{}}}}}}',
        None,
        "deep",
    ),
    ('{"ocp":"0.3","run":{"id":"a","acceptance_rule":{"name":"b}","definition":"{"}}}', None, "b}"),
    (
        '{"ocp":"0.3","run":{"id":"a","acceptance_rule":{"name":"x"},"acceptance_rule":{"name":"y"}}}',
        None,
        "x",
    ),
    (
        '{"ocp":"0.3","run":{"id":"a","labels":{"t":"ok"},"title":"\\"labels\\": {}"}}',
        {"t": "ok"},
        None,
    ),
    ('{"ocp":"0.3","run":{"id":"a","labels":{"t":"\\u00e9"},"title":true}}', {"t": "é"}, None),
]


def test_member_texts_are_read_once_and_kept_within_a_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Distinct labels/rule texts are read in Python once, however many chunks repeat them."""
    from ocp_analytics.ingestion import members

    reads: list[str] = []
    real = members._load_member

    def counting(text: str | None) -> object:
        reads.append(str(text))
        return real(text)

    monkeypatch.setattr(members, "_load_member", counting)
    dtypes = {"labels": members._LABELS_DTYPE, "labels_problems": members._PROBLEMS_DTYPE}
    texts = members._MemberTexts("labels_json", members._labels_of, dtypes, limit=3)
    first = texts.read(pl.Series(['{"t":"a"}', '{"t":"a"}', None, "{cut", '{"n":1}']))
    assert sorted(reads) == sorted(['{"t":"a"}', "{cut", '{"n":1}'])
    first = first.sort("labels_json")
    assert first.get_column("labels_json").to_list() == ['{"n":1}', '{"t":"a"}']
    assert first.get_column("labels_problems").to_list()[0][0]["path"] == "$.run.labels.n"
    reads.clear()
    again = texts.read(pl.Series(['{"t":"a"}', '{"n":1}']))
    assert reads == [] and again.sort("labels_json").equals(first)
    with pytest.raises(ValueError):
        texts.read(pl.Series(["{cut"]), strict=True)
    texts.read(pl.Series(['{"t":"b"}', '{"t":"c"}']))  # over the limit: what was read is forgotten
    reads.clear()
    texts.read(pl.Series(['{"t":"d"}']))
    assert texts.frame.get_column("labels_json").to_list() == ['{"t":"d"}']
    # an earlier result is extended even after the process's texts were forgotten
    more = texts.read(pl.Series(['{"t":"e"}']), strict=True, known=first)
    assert sorted(more.get_column("labels_json").to_list()) == ['{"n":1}', '{"t":"a"}', '{"t":"e"}']


@pytest.mark.parametrize(("text", "labels", "rule"), _SIDE_CASES)
def test_labels_and_rule_are_read_from_the_run_itself(
    text: str, labels: dict[str, str] | None, rule: str | None
) -> None:
    from ocp_analytics.ingestion.batch import read_documents

    tables = read_documents([text])
    runs = tables["runs"].collect()
    assert runs.height == 1
    got = runs.get_column("labels").to_list()[0]
    assert got == labels
    names = tables["rules"].collect().get_column("name").to_list()
    assert names == ([] if rule is None else [rule])
    assert runs.get_column("rule_name").to_list() == [rule]


def test_summary_counts_the_documents_read_one_at_a_time(tmp_path: Path) -> None:
    run = '{"ocp": "0.3", "run": {"id": "%s", "signals": [{"kind": "verdict", "value": %s}]}}'
    lines = [
        run % ("r1", '"pass"'),  # clean: many at a time
        run % ("r2", "true"),  # a verdict written as a boolean: many at a time, a finding
        run % ("r3", '"\\ud800"'),  # a lone surrogate escape: one at a time
        '{"ocp": "0.3", "run": {"id": "r4"',  # not JSON: one at a time, quarantined
    ]
    (tmp_path / "a.ndjson").write_text("\n".join(lines) + "\n")
    s = oa.ingest(tmp_path / "a.ndjson", tmp_path / "ds", workers=0)
    assert (s.runs_new, s.quarantined, s.slow_path) == (3, 1, 2)
    assert s.findings_by_code == {"bad_value": 2, "lone_surrogate": 1}  # (r3: read as null)
    time_line = [x for x in str(s).splitlines() if x.startswith("time:")]
    assert time_line[0].endswith("documents/s; slow path: 2 documents)")
