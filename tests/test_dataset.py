"""The on-disk dataset: creation, literal paths, scans (``dataset.py``)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import xxhash

import ocp_analytics as oa
from ocp_analytics import schemas as S
from ocp_analytics.store import dataset as D
from ocp_analytics.store.scan import Dataset
from ocp_analytics.store.storage import store

SOLO = Path(__file__).parent / "data" / "examples" / "v0.3" / "solo.ocp.json"


@pytest.mark.parametrize("name", ["ds[1]", "ds*", "ds?", "a[b]*?c"])
def test_dataset_path_with_glob_characters_is_read_literally(tmp_path: Path, name: str) -> None:
    # A sibling that the path would match as a pattern must not be read.
    oa.ingest(SOLO, tmp_path / "ds1")
    root = tmp_path / name
    oa.ingest(SOLO, root)
    ds = oa.scan_dataset(root)
    assert ds.runs.select("run_id", "n_signals").collect().rows() == [("run_ex_solo", 2)]
    assert ds.signals.collect().height == 2
    assert ds.scans["attempts"].collect().height == 1


def test_folder_left_by_a_killed_create_is_completed(tmp_path: Path) -> None:
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


@pytest.mark.parametrize("damage", [b"", b"PAR1 not a footer PAR1"])
def test_a_damaged_empty_table_file_is_written_again(tmp_path: Path, damage: bytes) -> None:
    root = tmp_path / "ds"
    oa.ingest(SOLO, root)
    empty = root / D.SCHEMA_DIR / "signals.parquet"
    empty.write_bytes(damage)
    oa.ingest(SOLO, root)  # a rerun reads the schema files first: no traceback from them
    assert pl.read_parquet(empty).columns == S.TABLES["signals"].names


def test_folder_with_other_content_is_still_refused(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "runs").mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    with pytest.raises(oa.DatasetError, match="non-empty folder that is not a dataset"):
        oa.ingest(SOLO, root)


def test_folder_with_a_commit_but_no_marker_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / D.BATCHES).mkdir(parents=True)
    (root / D.BATCHES / "00000001.json").write_text("{}")
    with pytest.raises(oa.DatasetError, match="not a dataset"):
        oa.ingest(SOLO, root)


def test_every_part_has_its_manifest_entry(tmp_path: Path) -> None:
    """Size, rows, SHA-256, XXH3, doc_id and run-time ranges, signal names, as the files hold."""
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
            "xxh3": xxhash.xxh3_128_hexdigest(data),
        }
        if "doc_id" in frame.columns:
            want["doc_id"] = [frame["doc_id"].min(), frame["doc_id"].max()]
        if table == "runs":
            times = frame.select(pl.coalesce("ended_at", "started_at")).to_series()
            want["time"] = [f"{t:%Y-%m-%dT%H:%M:%S.%f}Z" for t in (times.min(), times.max())]
        if table == "signals":  # each distinct kind:name of its verdicts and scores
            named = frame.filter(
                pl.col("kind").is_in(["verdict", "score"]), pl.col("name").is_not_null()
            )
            want["names"] = sorted(
                set(named.select(pl.format("{}:{}", "kind", "name")).to_series())
            )
        assert entry == want


def test_a_part_is_written_as_the_store_writes_parquet(tmp_path: Path) -> None:
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


# --- snapshots (#38) ---------------------------------------------------------------------

DATA = SOLO.parents[2]
AS_OF = "2027-01-01T00:00:00Z"


def _frames(ds: Dataset) -> dict[str, pl.DataFrame]:
    tables = {f"scans.{t}": f for t, f in ds.scans.items()} | ds.frames
    return {t: f.collect().sort(pl.all(), nulls_last=True) for t, f in tables.items()}


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_a_snapshot_is_the_dataset_as_its_commit_left_it(
    history: tuple[Path, list[Path]], seq: int
) -> None:
    """Later ingests, late events and a new version of a run change nothing it reads."""
    ds, copies = history
    then, snap = oa.scan_dataset(copies[seq - 1]), oa.scan_dataset(ds, snapshot=seq)
    assert (snap.snapshot, then.snapshot) == (seq, seq)
    got, want = _frames(snap), _frames(then)
    assert got.keys() == want.keys()
    for table in want:
        assert got[table].equals(want[table]), table
    assert snap.manifest.equals(then.manifest) and snap.signal_links == then.signal_links
    accept = oa.acceptance(snap, as_of=AS_OF).sort("run_id", "rule")
    assert accept.equals(oa.acceptance(copies[seq - 1], as_of=AS_OF).sort("run_id", "rule"))


def test_snapshots_differ_where_commits_changed_the_dataset(
    history: tuple[Path, list[Path]],
) -> None:
    ds, _ = history
    outcome = {
        s: oa.acceptance(oa.scan_dataset(ds, snapshot=s), as_of=AS_OF)
        .filter(pl.col("rule") == "recorded")
        .select("run_id", "outcome")
        for s in (1, 2)
    }
    changed = (
        outcome[1]
        .join(outcome[2], on="run_id")
        .filter(pl.col("outcome") != pl.col("outcome_right"))
    )
    assert changed.rows() == [("run_ex_late_revert", "accepted", "rejected")]  # the revert, at 2
    titles = {
        s: oa.scan_dataset(ds, snapshot=s).runs.filter(pl.col("run_id") == "run_ex_solo")
        for s in (2, 3)
    }
    assert [titles[s].select("title").collect().item() for s in (2, 3)] == [
        "One agent implements on example/widget",
        "solo, again",
    ]
    assert oa.scan_dataset(ds).snapshot == 4


def test_a_snapshot_by_instant_is_the_last_commit_at_or_before_it(
    history: tuple[Path, list[Path]],
) -> None:
    ds, _ = history
    committed = [datetime.fromisoformat(r["committed_at"]) for r in D.read_commits(ds)]
    for seq, at in enumerate(committed, 1):
        assert oa.scan_dataset(ds, snapshot=at).snapshot == seq
        assert oa.scan_dataset(ds, snapshot=at.isoformat()).snapshot == seq
        if seq > 1:
            before = at - timedelta(microseconds=1)
            assert [r["seq"] for r in D.read_commits(ds, before)] == list(range(1, seq))
    naive = committed[1].astimezone(UTC).replace(tzinfo=None)  # naive: UTC
    assert oa.scan_dataset(ds, snapshot=naive).snapshot == 2
    assert oa.scan_dataset(ds, snapshot="2").snapshot == 2


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        (5, "has no commit 5 (its commits are 1 to 4)."),
        (0, "has no commit 0 (its commits are 1 to 4)."),
        ("2020-01-01", "has no commit at or before 2020-01-01T00:00:00.000000Z (its commits are"),
        ("last week", "cannot read the snapshot 'last week' as a commit's seq or an instant."),
    ],
)
def test_a_snapshot_no_commit_matches_is_refused(
    history: tuple[Path, list[Path]], snapshot: int | str, message: str
) -> None:
    ds, _ = history
    with pytest.raises(oa.DatasetError) as caught:
        oa.scan_dataset(ds, snapshot=snapshot)
    first = str(caught.value).splitlines()[0]
    assert message in first
    assert "Hint: " in str(caught.value)


def test_a_snapshot_reads_no_record_after_it(history: tuple[Path, list[Path]]) -> None:
    """A damaged later record stops the latest reads, not a snapshot before it."""
    _, copies = history
    ds = copies[3]
    (ds / D.BATCHES / "00000004.json").write_text("{")
    with pytest.raises(oa.DatasetError, match=r"00000004\.json"):
        oa.scan_dataset(ds)
    assert oa.scan_dataset(ds, snapshot=3).snapshot == 3


def test_an_empty_dataset_has_no_snapshot(tmp_path: Path) -> None:
    D.create(tmp_path / "ds")
    assert oa.scan_dataset(tmp_path / "ds").snapshot is None
    with pytest.raises(oa.DatasetError, match="has no commit 1: it has no commit yet"):
        oa.scan_dataset(tmp_path / "ds", snapshot=1)
