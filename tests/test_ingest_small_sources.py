"""Small sources share chunks: every row keeps its own source, every source its own counts.

The reference is the same ingest in chunks of one document, where no chunk
can hold two sources: the tables (every column, ``doc_id`` included), the
batches and each source's counts must be the same.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

import ocp_analytics as oa
from benchmarks.generate import generate_documents
from ocp_analytics.ingestion import batch as ingest_batch

DATA = Path(__file__).parent / "data"
BAD = DATA / "bad"
SOLO = DATA / "examples" / "v0.3" / "solo.ocp.json"
COUNTS = ingest_batch.SourceSummary.COUNTS


def _solo(run_id: str, ended: str) -> bytes:
    doc = json.loads(SOLO.read_text())
    doc["run"]["id"], doc["run"]["ended_at"] = run_id, ended
    return orjson.dumps(doc)


def write_mixed_folder(src: Path) -> Path:
    """One-document files and, between them, every kind of trouble; returns a file to ingest first.

    Read in name order: read problems (a value cut short, a gzip stream cut
    short, bytes after a gzip stream, an empty file, bytes that are not
    UTF-8), quarantined documents, a run id read twice in two files (the
    newer first; the older first), a copy of a file, a file of 20 documents,
    and a file ingested before the folder.
    """
    src.mkdir()
    docs = [orjson.dumps(d) for d in generate_documents(40, seed=5)]
    files: list[tuple[str, bytes]] = [(f"doc-{i:02d}.ocp.json", docs[i]) for i in range(12)]
    files += [(f"doc-{i:02d}.ocp.json", docs[i]) for i in range(32, 40)]
    files += [
        ("doc-02a-truncated.json", (BAD / "truncated.json").read_bytes()),
        ("doc-03a-not_json.ndjson", (BAD / "not_json.ndjson").read_bytes()),
        ("doc-03b-cut.ndjson.gz", gzip.compress(b"\n".join(docs[12:15]) + b"\n")[:-40]),
        ("doc-04a-missing_run_id.json", (BAD / "missing_run_id.json").read_bytes()),
        ("doc-04b-dup1-newer.json", _solo("dup-1", "2026-09-23T12:00:00Z")),
        ("doc-05a-junk.ndjson.gz", (BAD / "gzip_then_junk.ndjson.gz").read_bytes()),
        ("doc-04c-dup2-older.json", _solo("dup-2", "2026-09-23T11:00:00Z")),
        ("doc-05b-dup2-newer.json", _solo("dup-2", "2026-09-23T12:00:00Z")),
        ("doc-04d-dup1-older.json", _solo("dup-1", "2026-09-23T11:00:00Z")),
        ("doc-06a-empty.json", b""),
        ("doc-06b-utf8.ndjson", (BAD / "invalid_utf8_title.ndjson").read_bytes()),
        ("doc-06c-copy.ocp.json", docs[20]),
        ("doc-07a-many.ndjson", b"\n".join(docs[12:32]) + b"\n"),
        ("doc-08a-copy.ocp.json", docs[3]),
        ("doc-08b-surrogate.json", (BAD / "lone_surrogate_title.json").read_bytes()),
        (
            "doc-09a-bad-utf8.json",
            _solo("bad-utf8", "2026-09-23T11:00:00Z").replace(b"One agent", b"One \xe9gent"),
        ),
        ("doc-09b-already.ocp.json", _solo("already", "2026-09-20T11:00:00Z")),
    ]
    for name, data in files:
        (src / name).write_bytes(data)
    return src / "doc-09b-already.ocp.json"


def _ingest(src: Path, ds: Path, first: Path, **options: Any) -> oa.IngestSummary:
    oa.ingest(first, ds)
    return oa.ingest(src, ds, **options)


def _per_source(summary: oa.IngestSummary) -> list[tuple[Any, ...]]:
    return [
        (s.path, s.sha256, s.skipped, *(getattr(s, c) for c in COUNTS)) for s in summary.sources
    ]


def _tables(ds: Path) -> dict[str, list[str]]:
    """Every committed row of every table, ``batch_id`` as its ``seq`` (the rest is random)."""
    scanned = oa.scan_dataset(ds)
    out = {}
    for name, frame in scanned.scans.items():
        rows = frame.collect()
        if "batch_id" in rows.columns:
            rows = rows.with_columns(rows.get_column("batch_id").str.slice(0, 8))
        out[name] = sorted(repr(r) for r in rows.rows())
    return out


def _batches(ds: Path) -> list[list[tuple[str, str, int]]]:
    m = oa.scan_dataset(ds).manifest.sort("seq", maintain_order=True)
    return [
        list(g.select("path", "sha256", "documents").iter_rows())
        for _, g in m.group_by("seq", maintain_order=True)
    ]


@pytest.mark.parametrize("workers", [0, 2])
def test_small_sources_give_the_tables_and_counts_of_one_document_chunks(
    tmp_path: Path, workers: int
) -> None:
    first = write_mixed_folder(tmp_path / "src")
    options = {"chunk_docs": 8, "commit_docs": 25, "workers": workers}
    merged = _ingest(tmp_path / "src", tmp_path / "ds", first, **options)
    ref = _ingest(tmp_path / "src", tmp_path / "ref", first, chunk_docs=1, commit_docs=25)
    assert _per_source(merged) == _per_source(ref)
    assert _batches(tmp_path / "ds") == _batches(tmp_path / "ref")
    assert len(merged.batches) == 3
    assert _tables(tmp_path / "ds") == _tables(tmp_path / "ref")
    for s in merged.sources:  # documents read = runs written + outranked + quarantined
        kept = s.runs_new + s.runs_replaced + s.runs_unchanged + s.runs_outranked
        assert s.documents == kept + s.quarantined, s.path
    assert merged.reconciles
    assert merged.findings_by_code == ref.findings_by_code
    assert merged.quarantine_by_code == ref.quarantine_by_code


def test_rows_of_shared_chunks_name_their_own_source_and_line(tmp_path: Path) -> None:
    first = write_mixed_folder(tmp_path / "src")
    s = _ingest(tmp_path / "src", tmp_path / "ds", first, chunk_docs=8, commit_docs=25)
    ds = oa.scan_dataset(tmp_path / "ds")
    name = lambda rows: sorted((Path(p).name, *rest) for p, *rest in rows)  # noqa: E731
    q = ds.quarantine.select("source_path", "source_line", "code").collect()
    assert name(q.rows()) == [
        ("doc-02a-truncated.json", 1, "truncated"),
        ("doc-03a-not_json.ndjson", 2, "not_json"),
        ("doc-03b-cut.ndjson.gz", 3, "truncated"),
        ("doc-04a-missing_run_id.json", 1, "missing_run_id"),
        ("doc-05a-junk.ndjson.gz", 3, "trailing_garbage"),
        ("doc-06a-empty.json", 1, "empty_file"),
    ]
    f = ds.scans["findings"].select("source_path", "source_line", "code", "json_path").collect()
    assert name(f.rows()) == [
        ("doc-04d-dup1-older.json", 1, "duplicate_run", "$.run.id"),
        ("doc-05b-dup2-newer.json", 1, "duplicate_run", "$.run.id"),
        ("doc-06b-utf8.ndjson", 2, "invalid_utf8", "$.run.title"),
        ("doc-08b-surrogate.json", 1, "lone_surrogate", "$.run.title"),
        ("doc-09a-bad-utf8.json", 1, "invalid_utf8", "$.run.configuration.workflow.title"),
        ("doc-09a-bad-utf8.json", 1, "invalid_utf8", "$.run.title"),
    ]
    runs = ds.scans["runs"].select("source_path", "source_line", "run_id").collect()
    lines = [line for p, line, _ in name(runs.rows()) if p == "doc-07a-many.ndjson"]
    # lines 1, 2 and 9 hold documents read before (doc-03b, doc-06c): unchanged, not written
    assert lines == [n for n in range(1, 21) if n not in (1, 2, 9)]
    dup1 = ds.runs.filter(run_id="dup-1").select("source_path").collect()
    assert name(dup1.rows()) == [("doc-04b-dup1-newer.json",)]
    by_name = {Path(x.path).name: x for x in s.sources}
    assert by_name["doc-09b-already.ocp.json"].skipped
    assert [
        by_name["doc-04d-dup1-older.json"].runs_outranked,
        by_name["doc-05b-dup2-newer.json"].runs_replaced,
        by_name["doc-08a-copy.ocp.json"].runs_unchanged,
        by_name["doc-07a-many.ndjson"].runs_unchanged,
        by_name["doc-03b-cut.ndjson.gz"].quarantined,
    ] == [1, 1, 1, 3, 1]


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every chunk built, in order."""
    sizes: list[int] = []
    real = ingest_batch._build

    def counted(task: Any) -> Any:
        sizes.append(len(task[0].texts))
        return real(task)

    monkeypatch.setattr(ingest_batch, "_build", counted)
    return sizes


def test_one_document_files_are_built_as_one_chunk_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i, doc in enumerate(generate_documents(40, seed=2)):
        (src / f"run-{i:03d}.ocp.json").write_bytes(orjson.dumps(doc))
    sizes = _builds(monkeypatch)
    s = oa.ingest(src, tmp_path / "ds")
    assert (sizes, s.runs_new, len(s.batches)) == ([40], 40, 1)

    sizes.clear()
    s = oa.ingest(src, tmp_path / "ds2", commit_docs=15)  # a chunk never spans two batches
    assert (sizes, len(s.batches)) == ([15, 15, 10], 3)
    runs = oa.scan_dataset(tmp_path / "ds2").runs.collect()
    batch_of = {Path(p).name: b[:8] for p, b in runs.select("source_path", "batch_id").rows()}
    seqs = [batch_of[f"run-{i:03d}.ocp.json"] for i in (0, 14, 15, 29, 30, 39)]
    assert seqs == ["00000001", "00000001", "00000002", "00000002", "00000003", "00000003"]
    assert _batches(tmp_path / "ds2") == [
        [(str(src / f"run-{i:03d}.ocp.json"), x.sha256, 1) for i, x in enumerate(s.sources)][a:b]
        for a, b in ((0, 15), (15, 30), (30, 40))
    ]

    sizes.clear()
    again = oa.ingest(src, tmp_path / "ds2")  # the same files again: skipped
    assert (sizes, again.documents_read, all(x.skipped for x in again.sources)) == ([], 0, True)
    changed = src / "run-007.ocp.json"
    changed.write_bytes(_solo("changed", "2026-09-23T12:00:00Z"))
    shutil.copy(SOLO, src / "run-007b.ocp.json")
    later = oa.ingest(src, tmp_path / "ds2")
    assert sizes == [2]
    assert [Path(x.path).name for x in later.sources if not x.skipped] == [
        "run-007.ocp.json",
        "run-007b.ocp.json",
    ]
    assert (later.runs_new, later.reconciles) == (2, True)


def test_a_source_path_seen_again_closes_the_chunk(tmp_path: Path) -> None:
    """A chunk names each source path once (its counts are split by path)."""
    from ocp_analytics.ingestion.chunks import Chunker
    from ocp_analytics.ingestion.sources import Source

    one = tmp_path / "one.json"
    one.write_bytes(SOLO.read_bytes())
    src = Source("x.json", one, one.stat().st_size, "h")
    chunker = Chunker(10)
    assert list(chunker.read(src, [])) == []
    assert list(chunker.read(Source("y.json", one, src.size, "h"), [])) == []
    [(meta, _)] = list(chunker.read(src, []))  # x.json again: the open chunk is taken first
    assert (meta.paths, list(meta.source or [])) == (["x.json", "y.json"], [0, 1])
    meta, _ = chunker.take()
    assert (meta.paths, len(meta.texts)) == (["x.json"], 1)
