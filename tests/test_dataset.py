"""The on-disk dataset: creation, literal paths, scans (``dataset.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ocp_analytics as oa
from ocp_analytics import schemas as S
from ocp_analytics.store import dataset as D

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
