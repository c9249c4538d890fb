"""Ingestion: examples, bad input (one defect a fixture), re-ingest, replacement."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import zstandard

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
    acc = oa.acceptance(ds, as_of="2027-01-01T00:00:00Z").collect().sort("run_id")
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
    acc = oa.acceptance(scanned, as_of="2027-01-01T00:00:00Z").collect()
    assert acc.get_column("outcome").to_list() == ["rejected"]


def test_same_run_twice_in_one_file_keeps_the_later(tmp_path: Path) -> None:
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    first = json.dumps(doc)
    doc["title"] = "second"
    doc["run"]["title"] = "second"
    src = tmp_path / "twice.ndjson"
    src.write_text(first + "\n" + json.dumps(doc) + "\n")
    s = oa.ingest(src, tmp_path / "ds")
    assert (s.runs_new, s.runs_replaced, s.documents_read) == (1, 1, 2)
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect()
    assert runs.get_column("title").to_list() == ["second"]


@pytest.mark.parametrize("merge_rows", [1, 3, 1_000_000])
@pytest.mark.parametrize("workers", [0, 2])
def test_classification_across_chunks_and_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, merge_rows: int, workers: int
) -> None:
    """New / replaced / unchanged are the same however the known runs are held."""
    from ocp_analytics.ingest import _Known

    monkeypatch.setattr(_Known, "SEGMENT_ROWS", merge_rows)
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    lines = []
    for i in range(12):
        doc["run"]["id"] = f"r{i % 5}"  # ids repeat across chunks of 2
        doc["run"]["title"] = f"t{i % 7}"  # sometimes the same content again
        lines.append(json.dumps(doc))
    (tmp_path / "a.ndjson").write_text("\n".join(lines) + "\n")
    s = oa.ingest(tmp_path / "a.ndjson", tmp_path / "ds", chunk_docs=2, workers=workers)
    assert (s.runs_new, s.runs_replaced, s.runs_unchanged) == (5, 7, 0)
    (tmp_path / "b.ndjson").write_text("\n".join(lines[-5:]) + "\n")
    again = oa.ingest(tmp_path / "b.ndjson", tmp_path / "ds", chunk_docs=2, workers=workers)
    assert (again.runs_new, again.runs_replaced, again.runs_unchanged) == (0, 0, 5)
    runs = oa.scan_dataset(tmp_path / "ds").runs.collect().sort("run_id")
    assert runs.get_column("title").to_list() == [f"t{i % 7}" for i in (10, 11, 7, 8, 9)]


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
