"""Datasets and sources on S3 (#16), against a local moto server.

The same sources read from a local folder and from an S3 prefix, written to
a local dataset and to an S3 one, give the same tables; the commit record
and the lock are conditional PUTs; SQL refuses an S3 dataset with a hint.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics import dataset as D
from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError
from ocp_analytics.sql import connect
from ocp_analytics.storage import store

DATA = Path(__file__).parent / "data"
AS_OF = "2027-01-01T00:00:00Z"
SOURCE_COLUMNS = ("source", "source_path", "path", "batch_id")


def upload(folder: Path, uri: str) -> None:
    """Copy a local folder's files under an S3 prefix."""
    target = store(uri)
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            target.child(*f.relative_to(folder).parts).write_bytes(f.read_bytes())


def table(dataset: object, name: str) -> pl.DataFrame:
    """A table without the columns that name where a document was read."""
    frame = oa.scan_dataset(dataset).scans[name].collect()  # type: ignore[arg-type]
    frame = frame.drop([c for c in frame.columns if c in SOURCE_COLUMNS])
    return frame.sort(frame.columns, nulls_last=True)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("s3-sources")
    shutil.copytree(DATA / "examples", root / "examples")
    shutil.copytree(DATA / "bad", root / "bad", ignore=shutil.ignore_patterns("_make.py"))
    return root


def test_issue16_s3_sources_and_dataset_match_local(
    s3_bucket: str, sources: Path, tmp_path: Path
) -> None:
    upload(sources, f"{s3_bucket}/in")
    local = oa.ingest(sources, tmp_path / "local")
    remote = oa.ingest(f"s3a://{s3_bucket[5:]}/in", f"{s3_bucket}/polars.dataset")
    assert remote.reconciles and remote.documents_read == local.documents_read
    assert remote.quarantined == local.quarantined > 0
    for name in S.TABLES:
        assert table(tmp_path / "local", name).equals(table(f"{s3_bucket}/polars.dataset", name))
    manifest = oa.scan_dataset(f"{s3_bucket}/polars.dataset").manifest
    assert manifest["path"].str.starts_with(f"{s3_bucket}/in/").all()
    # sources already ingested are skipped: same URI, same content
    again = oa.ingest(f"{s3_bucket}/in", f"{s3_bucket}/polars.dataset")
    assert again.documents_read == 0 and not again.batches
    # the engine reads the S3 dataset directly
    got = oa.rates(f"{s3_bucket}/polars.dataset", "tests+review", as_of=AS_OF).collect()
    want = oa.rates(tmp_path / "local", "tests+review", as_of=AS_OF).collect()
    assert got.equals(want) and got.height == 2


def test_issue16_s3_lock_and_commit_are_conditional(s3_bucket: str) -> None:
    root = D.create(f"{s3_bucket}/locked.dataset")
    taken = pytest.raises(DatasetError, match=r"delete s3://ocp-test/locked.dataset/\.lock")
    with D.locked(root), taken, D.locked(root):
        pass
    with D.locked(root):  # released: taken again
        pass
    record = {"batch_id": "x", "seq": 1, "committed_at": "", "files": {}, "sources": []}
    D.commit(root, record)
    with pytest.raises(DatasetError, match="committed by another writer"):
        D.commit(root, {**record, "batch_id": "y"})
    assert [r["batch_id"] for r in D.read_commits(root)] == ["x"]


def test_issue16_s3_orphans_are_removed_and_sql_refuses_with_a_hint(
    s3_bucket: str, sources: Path
) -> None:
    uri = f"{s3_bucket}/orphans.dataset"
    oa.ingest(sources / "examples", uri)
    stray = store(uri).child("runs", "99999999-dead-00000.parquet")
    stray.write_bytes(b"half a part")
    again = oa.ingest(sources / "bad", uri)
    assert again.orphans_removed == 1 and not stray.is_file()
    with pytest.raises(DatasetError, match="aws s3 sync"):
        connect(uri)


def test_issue16_other_schemes_are_refused_with_a_hint(tmp_path: Path) -> None:
    for uri in ("abfss://c@acct.dfs.core.windows.net/ds", "hdfs://nn:8020/ds", "gs://b/ds"):
        with pytest.raises(DatasetError, match="mount the store"):
            oa.ingest(DATA / "examples", uri)
    assert store(f"file://{tmp_path}/a%20b").path == tmp_path / "a b"
