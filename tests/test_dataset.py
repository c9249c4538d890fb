"""The on-disk dataset: creation, literal paths, scans (``dataset.py``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics import schemas as S
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import store

SOLO = Path(__file__).parent / "data" / "examples" / "v0.3" / "solo.ocp.json"


@pytest.mark.parametrize("name", ["ds[1]", "ds*", "ds?", "a[b]*?c"])
def test_issue9_dataset_path_with_glob_characters_is_read_literally(
    tmp_path: Path, name: str
) -> None:
    # A sibling that the path would match as a pattern must not be read.
    oa.ingest(SOLO, tmp_path / "ds1")
    root = tmp_path / name
    oa.ingest(SOLO, root)
    ds = oa.scan_dataset(root)
    assert ds.runs.select("run_id", "n_signals").collect().rows() == [("run_ex_solo", 2)]
    assert ds.signals.collect().height == 2
    assert ds.scans["attempts"].collect().height == 1


def test_issue9_folder_left_by_a_killed_create_is_completed(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    for name in (D.BATCHES, D.SCHEMA_DIR, "runs", "attempts"):
        (root / name).mkdir(parents=True)
    (root / f".{D.MARKER}.tmp").write_bytes(b"")
    assert not D.is_dataset(root)
    s = oa.ingest(SOLO, root)
    assert (s.runs_new, s.reconciles) == (1, True)
    assert D.is_dataset(root)
    assert sorted(p.name for p in (root / D.SCHEMA_DIR).iterdir()) == sorted(
        f"{t}.parquet" for t in S.TABLES
    )


def test_issue9_folder_with_other_content_is_still_refused(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "runs").mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    with pytest.raises(oa.DatasetError, match="non-empty folder that is not a dataset"):
        oa.ingest(SOLO, root)


def test_issue9_folder_with_a_commit_but_no_marker_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / D.BATCHES).mkdir(parents=True)
    (root / D.BATCHES / "00000001.json").write_text("{}")
    with pytest.raises(oa.DatasetError, match="not a dataset"):
        oa.ingest(SOLO, root)


def test_issue38_every_part_has_its_manifest_entry(tmp_path: Path) -> None:
    """Size, rows, SHA-256 and the doc_id and run-time ranges, as the files hold them."""
    root = tmp_path / "ds"
    oa.ingest([SOLO.parent, SOLO.parents[2] / "bad" / "not_json.ndjson"], root)
    (record,) = D.read_commits(root)
    entries = {e["file"]: e for e in record["parts"]}
    listed = [f for files in record["files"].values() for f in files]
    assert sorted(entries) == sorted(listed) and len(listed) == 6
    for file, entry in entries.items():
        table = file.split("/")[0]
        frame = pl.read_parquet(root / file)
        data = (root / file).read_bytes()
        want: dict[str, Any] = {
            "file": file,
            "table": table,
            "size": len(data),
            "rows": frame.height,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if "doc_id" in frame.columns:
            want["doc_id"] = [frame["doc_id"].min(), frame["doc_id"].max()]
        if table == "runs":
            times = frame.select(pl.coalesce("ended_at", "started_at")).to_series()
            want["time"] = [f"{t:%Y-%m-%dT%H:%M:%S.%f}Z" for t in (times.min(), times.max())]
        assert entry == want


def test_issue38_a_part_is_written_as_the_store_writes_parquet(tmp_path: Path) -> None:
    """The part encoded in memory (to hash it) holds the bytes pyarrow writes to a file."""
    table = S.part_table(oa.scan_dataset(_solo(tmp_path)).signals.collect(), "signals")
    entry = D.write_parquet_atomic(table, tmp_path / "a.parquet", part_of="signals")
    store(tmp_path / "b.parquet").write_parquet(table, options=S.parquet_options("signals"))
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (entry.file, entry.rows) == ("signals/a.parquet", 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet", "ds"]


def _solo(tmp_path: Path) -> Path:
    oa.ingest(SOLO, tmp_path / "ds")
    return tmp_path / "ds"
