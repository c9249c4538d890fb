"""Datasets and sources on object stores (#16): S3 on a local moto server,
Azure on a local Azurite server (each test runs on both).

The same sources read from a local folder and from a prefix, written to a
local dataset and to a remote one, give the same tables; the commit record
and the lock are conditional PUTs; SQL refuses a remote dataset with a hint.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, SourceError
from ocp_analytics.sql import connect
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import store

DATA = Path(__file__).parent / "data"
AS_OF = "2027-01-01T00:00:00Z"
SOURCE_COLUMNS = ("source", "source_path", "path", "batch_id")


def alias(uri: str) -> str:
    """The other spelling of a store's scheme: s3a:// for s3://, abfs:// for abfss://."""
    return uri.replace("s3://", "s3a://", 1).replace("abfss://", "abfs://", 1)


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


def test_remote_sources_and_dataset_match_local(bucket: str, sources: Path, tmp_path: Path) -> None:
    upload(sources, f"{bucket}/in")
    local = oa.ingest(sources, tmp_path / "local")
    remote = oa.ingest(alias(f"{bucket}/in"), f"{bucket}/polars.dataset")
    assert remote.reconciles and remote.documents_read == local.documents_read
    assert remote.quarantined == local.quarantined > 0
    for name in S.TABLES:
        assert table(tmp_path / "local", name).equals(table(f"{bucket}/polars.dataset", name))
    manifest = oa.scan_dataset(f"{bucket}/polars.dataset").manifest
    assert manifest["path"].str.starts_with(f"{bucket}/in/").all()
    # sources already ingested are skipped: same URI, same content
    again = oa.ingest(f"{bucket}/in", f"{bucket}/polars.dataset")
    assert again.documents_read == 0 and not again.batches
    with pytest.raises(SourceError, match="matches no object"):
        oa.ingest(f"{bucket}/no-such-prefix", f"{bucket}/polars.dataset")
    # the engine reads the S3 dataset directly
    got = oa.rates(f"{bucket}/polars.dataset", "tests+review", as_of=AS_OF)
    want = oa.rates(tmp_path / "local", "tests+review", as_of=AS_OF)
    assert got.equals(want) and got.height == 2


def test_remote_lock_and_commit_are_conditional(bucket: str) -> None:
    root = D.create(f"{bucket}/locked.dataset")
    where = re.escape(f"delete {bucket}/locked.dataset/.lock")
    taken = pytest.raises(DatasetError, match=where)
    with D.locked(root), taken, D.locked(root):
        pass
    with D.locked(root):  # released: taken again
        pass
    record = {"batch_id": "x", "seq": 1, "committed_at": "", "files": {}, "sources": []}
    D.commit(root, record)
    with pytest.raises(DatasetError, match="committed by another writer"):
        D.commit(root, {**record, "batch_id": "y"})
    assert [r["batch_id"] for r in D.read_commits(root)] == ["x"]


def test_remote_orphans_are_removed_and_sql_reads_the_store(
    bucket: str, sources: Path, tmp_path: Path
) -> None:
    uri = f"{bucket}/orphans.dataset"
    oa.ingest(sources / "examples", uri)
    stray = store(uri).child("runs", "99999999-dead-00000.parquet")
    stray.write_bytes(b"half a part")
    again = oa.ingest(sources / "bad", uri)
    assert again.orphans_removed == 1 and not stray.is_file()
    # the SQL views read the store through its own client: the numbers of a local copy
    local = tmp_path / "local"
    oa.ingest(sources / "examples", local)
    oa.ingest(sources / "bad", local)
    query = "SELECT rule, runs, accepted, unknown FROM rates ORDER BY rule"
    got = connect(alias(uri), rules="tests+review", as_of=AS_OF).sql(query).fetchall()
    want = connect(local, rules="tests+review", as_of=AS_OF).sql(query).fetchall()
    assert got == want and len(got) == 2
    count = "SELECT count(*) FROM quarantine"
    assert connect(uri).sql(count).fetchall() == connect(local).sql(count).fetchall()


def test_other_schemes_are_refused_with_a_hint(tmp_path: Path) -> None:
    for uri in ("hdfs://nn:8020/ds", "gs://b/ds", "wasbs://c@a.blob.core.windows.net/ds"):
        with pytest.raises(DatasetError, match="mount the store"):
            oa.ingest(DATA / "examples", uri)
    assert store(f"file://{tmp_path}/a%20b").path == tmp_path / "a b"


def test_a_local_name_with_a_colon_is_a_path(tmp_path: Path, monkeypatch) -> None:
    """Only ``scheme://`` is a URI: ``run:2026-12-03.dataset`` is a folder name."""
    monkeypatch.chdir(tmp_path)
    assert not store("run:2026-12-03.dataset").remote
    summary = oa.ingest(DATA / "examples" / "v0.3", "run:2026-12-03.dataset")
    assert summary.runs_new == 7 and (tmp_path / "run:2026-12-03.dataset" / D.MARKER).is_file()
    query = "SELECT rule, runs, accepted FROM rates ORDER BY rule"
    got = connect("run:2026-12-03.dataset", rules="tests+review", as_of=AS_OF).sql(query)
    assert got.fetchall() == [("recorded", 7, 7), ("tests+review", 7, 4)]


def test_s3_settings_follow_the_sdk_precedence(monkeypatch) -> None:
    """AWS_REGION over AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL."""
    for key, value in {
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_REGION": "us-east-2",
        "AWS_ENDPOINT_URL": "http://general:1",
        "AWS_ENDPOINT_URL_S3": "http://s3only:2",
    }.items():
        monkeypatch.setenv(key, value)
    options = store("s3://b/ds").storage_options() or {}
    assert options["aws_region"] == "us-east-2"
    assert options["aws_endpoint_url"] == "http://s3only:2"
    assert options["aws_allow_http"] == "true"


def test_a_flipped_object_is_named_before_a_read(bucket: str, tmp_path: Path) -> None:
    """Reads hash the objects they open (store/read_check.py): one GET, no size request."""
    from ocp_analytics.store import read_check
    from ocp_analytics.store.commits import read_commits

    uri = f"{bucket}/flipped.dataset"
    oa.ingest(DATA / "examples" / "v0.3", uri)
    want = oa.rates(uri, "tests", as_of=AS_OF)
    rel = read_commits(store(uri))[0]["files"]["signals"][0]
    part = store(uri).child(*rel.split("/"))
    data = bytearray(part.read_bytes())
    data[len(data) // 3] ^= 0x01
    part.write_bytes(bytes(data))
    read_check._CHECKED.clear()  # a new process
    with pytest.raises(DatasetError, match=f"damaged part {re.escape(rel)}: its bytes differ"):
        oa.rates(uri, "tests", as_of=AS_OF)
    part.delete()
    read_check._CHECKED.clear()
    with pytest.raises(DatasetError, match=f"damaged part {re.escape(rel)}: missing"):
        oa.rates(uri, "tests", as_of=AS_OF)
    assert want.height == 2
