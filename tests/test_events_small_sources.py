"""Small event files share chunks: every row keeps its own source, every source its own counts.

The reference is the same ``ingest_events`` in chunks of one record, where no
chunk can hold two sources: the stored events and quarantine rows (every
column) and each source's counts must be the same.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.ingestion import events as E

BAD = Path(__file__).parent / "data" / "bad"


def _event(i: int, **change: Any) -> dict[str, Any]:
    record = {
        "id": f"ev-{i}",
        "commit": f"c{i % 7:06d}",
        "kind": "event",
        "name": "revert" if i % 2 else "incident",
        "value": f"#{i}",
        "observed_at": f"2026-12-{1 + i % 28:02d}T09:00:00Z",
        "source": {"kind": "ci", "ref": f"ci/{i}"},
        "tier": "verified",
    }
    return {**record, **change}


def _line(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record) + b"\n"


def _folder(src: Path) -> Path:
    """One-record files and, between them, every kind of trouble; returns a file to ingest first."""
    src.mkdir()
    files: list[tuple[str, bytes]] = [
        (f"ev-{i:03d}.json", orjson.dumps(_event(i))) for i in range(30)
    ]
    files += [
        ("ev-002a-same-again.json", orjson.dumps(_event(2))),  # unchanged
        ("ev-002b-other.json", orjson.dumps(_event(2, value="other"))),  # a conflict
        ("ev-003a-no-time.json", orjson.dumps(_event(100, observed_at="not a time"))),
        ("ev-004a-not_json.ndjson", (BAD / "not_json.ndjson").read_bytes()),
        (
            "ev-005a-cut.ndjson.gz",
            gzip.compress(b"".join(_line(_event(i)) for i in range(40, 44)))[:-30],
        ),
        ("ev-006a-empty.json", b""),
        ("ev-007a-many.ndjson", b"".join(_line(_event(i)) for i in range(50, 70))),
        ("ev-007b-no-id.json", orjson.dumps({k: v for k, v in _event(200).items() if k != "id"})),
        (
            "ev-008a-array.json",
            orjson.dumps([_event(i) for i in range(80, 84)] + [_event(81, value="x")]),
        ),
        ("ev-009a-bad-utf8.ndjson", _line(_event(90)).replace(b"#90", b"#\xe9")),
        ("ev-009b-already.json", orjson.dumps(_event(300))),
    ]
    for name, data in files:
        (src / name).write_bytes(data)
    return src / "ev-009b-already.json"


def _ingest(src: Path, ds: Path, first: Path) -> oa.EventsSummary:
    oa.ingest_events(first, ds)
    return oa.ingest_events(src, ds)


def _per_source(summary: oa.EventsSummary) -> list[tuple[Any, ...]]:
    return [
        (s.path, s.skipped, *(getattr(s, c) for c in E.EventSourceSummary.COUNTS))
        for s in summary.sources
    ]


def _table(ds: Path, name: str) -> pl.DataFrame:
    """The rows (in order for events; quarantine rows are held as found, in any order)."""
    frame: pl.DataFrame = oa.scan_dataset(ds)[name].collect().drop("batch_id")
    return frame if name == "events" else frame.sort(frame.columns, nulls_last=True)


def test_small_event_files_give_what_one_record_a_chunk_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _folder(tmp_path / "src")
    shared = _ingest(tmp_path / "src", tmp_path / "shared", first)
    monkeypatch.setattr(E, "CHUNK_RECORDS", 1)
    alone = _ingest(tmp_path / "src", tmp_path / "alone", first)
    assert _per_source(shared) == _per_source(alone)
    assert shared.reconciles and shared.events_unchanged > 0 and shared.quarantined > 0
    counts = {s.path.rsplit("/", 1)[-1]: s for s in shared.sources}
    assert counts["ev-002b-other.json"].quarantined == 1  # the conflict, on its own file
    assert counts["ev-003a-no-time.json"].no_time == 1
    assert counts["ev-009b-already.json"].skipped
    for name in ("events", "quarantine"):
        assert _table(tmp_path / "shared", name).equals(_table(tmp_path / "alone", name)), name


def test_a_folder_of_one_event_files_is_one_batch(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(300):
        (src / f"ev-{i}.json").write_bytes(orjson.dumps(_event(i)))
    summary = oa.ingest_events(src, tmp_path / "ds")
    assert summary.events_new == 300 and len(summary.sources) == 300
    events = oa.scan_dataset(tmp_path / "ds").events.collect()
    paths = events.select(pl.col("source_path").str.extract(r"(ev-\d+)\.json$"), "event_id")
    assert paths.filter(pl.col("source_path") != pl.col("event_id")).height == 0
    shutil.rmtree(src)


def test_two_files_shown_by_the_same_path_keep_their_own_counts(tmp_path: Path) -> None:
    """A name with a byte that is not UTF-8 and one spelling that byte out read alike."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a\\xe9.ndjson").write_bytes(_line(_event(1)) + _line(_event(2)))
    with open(os.path.join(bytes(src), b"a\xe9.ndjson"), "wb") as f:
        f.write(_line(_event(3)))
    summary = oa.ingest_events(src, tmp_path / "ds")
    assert summary.reconciles
    assert sorted((s.records, s.events_new) for s in summary.sources) == [(1, 1), (2, 2)]
