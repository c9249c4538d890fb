"""Compaction and vacuum: fewer, sorted parts and the same figures at every snapshot; a
vacuum frees what only old snapshots read and refuses those snapshots with one line."""

from __future__ import annotations

import importlib
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.exceptions import DatasetError
from ocp_analytics.store.commits import commit_log, read_commits, table_files
from ocp_analytics.store.manifest import table_entries
from ocp_analytics.store.verify import verify

AS_OF = "2027-01-01T00:00:00Z"
RULES = ["tests", "tests+review"]
runner = CliRunner()


@pytest.fixture
def ds(history: tuple[Path, list[Path]], tmp_path: Path) -> Path:
    """A copy of the four-commit history (a replaced run version, late events)."""
    out = tmp_path / "ds"
    shutil.copytree(history[0], out)
    return out


def _figures(ds: Path, snapshot: int | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    rates = oa.rates(ds, RULES, as_of=AS_OF, by="task_type", snapshot=snapshot)
    acc = oa.acceptance(ds, RULES, as_of=AS_OF, snapshot=snapshot).sort("run_id", "rule")
    return rates, acc


def _same(a: tuple[pl.DataFrame, pl.DataFrame], b: tuple[pl.DataFrame, pl.DataFrame]) -> bool:
    return a[0].equals(b[0]) and a[1].equals(b[1])


def _on_disk(ds: Path) -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in ds.glob("*/*.parquet") if p.parent.name[0] != "_"}


def test_compaction_keeps_every_snapshots_figures(ds: Path) -> None:
    before = {k: _figures(ds, k) for k in (1, 2, 3, 4)}
    all_versions = oa.scan_dataset(ds).scans["runs"].collect().height
    summary = oa.compact(ds)
    assert (summary.seq, summary.parts_before, summary.parts_after) == (5, 12, 6)
    assert summary.rewritten == 12 - 6 + summary.written
    for k, figures in before.items():
        assert _same(_figures(ds, k), figures), f"snapshot {k} changed"
    assert _same(_figures(ds), before[4])
    assert _same(_figures(ds, 5), before[4])
    # every stored version is kept: superseded ones are filtered by readers, as before
    assert oa.scan_dataset(ds).scans["runs"].collect().height == all_versions
    assert verify(ds) == []


def test_compacted_parts_are_sorted_so_their_ranges_are_tight(ds: Path) -> None:
    oa.compact(ds)
    records = read_commits(ds)
    (runs,) = table_entries(records, "runs")
    frame = pl.read_parquet(ds / runs.file)
    time = frame.select(pl.coalesce("ended_at", "started_at").alias("t"))["t"]
    assert time.is_sorted()
    assert runs.time == (time.min(), time.max())
    (signals,) = table_entries(records, "signals")
    assert pl.read_parquet(ds / signals.file)["doc_id"].is_sorted()
    assert commit_log(records)["kind"].to_list() == ["runs", "events", "runs", "events", "compact"]


def test_nothing_small_enough_is_left_alone(ds: Path) -> None:
    assert oa.compact(ds, target_bytes=2).seq is None
    assert [r["seq"] for r in read_commits(ds)] == [1, 2, 3, 4]


def test_vacuum_frees_what_only_old_snapshots_read_and_refuses_them(ds: Path) -> None:
    newest = _figures(ds)
    oa.compact(ds)
    replaced = {f for r in read_commits(ds) for fs in r.get("replaces", {}).values() for f in fs}
    summary = oa.vacuum(ds, older_than="0s")
    assert (summary.deleted, summary.oldest_snapshot) == (len(replaced), 5)
    assert summary.bytes_freed > 0
    assert not replaced & _on_disk(ds)
    for k in (1, 4):
        with pytest.raises(DatasetError, match=rf"snapshot {k} is older than the vacuum of "):
            oa.scan_dataset(ds, snapshot=k)
    assert _same(_figures(ds), newest) and _same(_figures(ds, 5), newest)
    assert verify(ds) == []
    again = oa.vacuum(ds, older_than="0s")
    assert (again.deleted, again.oldest_snapshot) == (0, 5)


def test_vacuum_keeps_every_snapshot_newer_than_the_age(ds: Path) -> None:
    oa.compact(ds)
    records = read_commits(ds)
    fourth = datetime.fromisoformat(records[3]["committed_at"])
    # snapshot 4 is current at the instant kept from: it reads the replaced parts
    summary = oa.vacuum(ds, older_than=timedelta(days=30), now=fourth + timedelta(days=30))
    assert (summary.kept_from, summary.deleted, summary.oldest_snapshot) == (4, 0, None)
    assert _same(_figures(ds, 1), _figures(ds, 4)) is False  # both still readable
    far = oa.vacuum(ds, older_than="3650d")
    assert far.deleted == 0
    assert oa.vacuum(ds, older_than=datetime.now(UTC)).deleted > 0


def test_an_instant_before_the_vacuum_is_refused_naming_its_commit(ds: Path) -> None:
    oa.compact(ds)
    oa.vacuum(ds, older_than="0s")
    first = read_commits(ds, readable=False)[0]["committed_at"]
    with pytest.raises(DatasetError, match=r"\(commit 1\) is older than the vacuum"):
        oa.scan_dataset(ds, snapshot=first)


def test_an_age_that_cannot_be_read_is_refused(ds: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read 'thirty days' as an age"):
        oa.vacuum(ds, older_than="thirty days")


def test_a_damaged_part_stops_compaction_before_anything_is_written(ds: Path) -> None:
    part = ds / table_files(ds, read_commits(ds), "signals")[0]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=r"(?s)damaged part signals/.*verify .* --repair"):
        oa.compact(ds)
    assert [r["seq"] for r in read_commits(ds)] == [1, 2, 3, 4]


def test_cli_compact_and_vacuum_print_their_counts(ds: Path) -> None:
    result = runner.invoke(app, ["compact", str(ds), "--target-size", "1MiB"])
    assert result.exit_code == 0, result.output
    assert "commit 5 (compact): live parts 12 -> 6" in result.output
    result = runner.invoke(app, ["vacuum", str(ds), "--older-than", "0s"])
    assert result.exit_code == 0, result.output
    assert "deleted 12 parts" in result.output and "bytes freed" in result.output
    result = runner.invoke(app, ["rates", str(ds), "--rule", "tests", "--snapshot", "3"])
    assert result.exit_code == 1
    assert "snapshot 3 is older than the vacuum of" in result.output
    assert "the oldest readable snapshot is 5" in result.output
    result = runner.invoke(app, ["log", str(ds), "-f", "json"])  # the log lists every commit
    assert result.exit_code == 0, result.output
    assert [r["kind"] for r in orjson.loads(result.stdout)["rows"]][-1] == "compact"
    bad = runner.invoke(app, ["compact", str(ds), "--target-size", "big"])
    assert bad.exit_code == 2 and "is not a size" in bad.output


# --- decisions stores no refresh keeps ---------------------------------------------------


def _one_more_commit(ds: Path, tmp: Path) -> None:
    """A new version of a run: a commit the stores have not followed."""
    doc = orjson.loads((Path(__file__).parent / "data/examples/v0.3/solo.ocp.json").read_bytes())
    doc["run"].update(title="solo, once more", ended_at="2026-09-24T11:00:00-07:00")
    (tmp / "more.json").write_bytes(orjson.dumps(doc))
    oa.ingest(tmp / "more.json", ds)


def _stores(ds: Path) -> dict[str, list[str]]:
    """Each store folder's files (the lock file aside)."""
    root = ds / "decisions"
    return {
        d.name: sorted(
            str(f.relative_to(d)) for f in d.rglob("*") if f.is_file() and f.name != ".lock"
        )
        for d in sorted(root.iterdir())
    }


def test_vacuum_deletes_the_stores_no_refresh_wrote_since_and_keeps_the_others(
    ds: Path, tmp_path: Path
) -> None:
    from ocp_analytics.api.stored import observing

    oa.refresh(ds, ["tests"], as_of=AS_OF)
    between = datetime.now(UTC)
    assert oa.vacuum(ds, older_than="0s").stores_deleted == 0  # at the newest commit: kept
    _one_more_commit(ds, tmp_path)
    oa.refresh(ds, ["tests+review"], as_of=AS_OF)  # the recorded rule's store follows too
    before = _stores(ds)
    # recorded, tests, tests+review, and each rule set's codes (recorded with one of them)
    assert len(before) == 5 and all(before.values())
    assert sum(name.startswith("set-") for name in before) == 2
    want = oa.rates(ds, RULES, as_of=AS_OF, use_decisions=False)
    summary = oa.vacuum(ds, older_than=between)
    # the store of tests and the codes of its rule set: no refresh wrote them since
    assert summary.stores_deleted == 2 and summary.store_bytes_freed > 0
    assert "decisions stores no refresh wrote since then: 2 stores deleted" in str(summary)
    after = _stores(ds)
    assert sum(bool(files) for files in after.values()) == 3
    assert all(files == before[n] for n, files in after.items() if files)
    with observing() as seen:
        got = oa.rates(ds, RULES, as_of=AS_OF)
    assert seen[0].from_raw == ("tests",)  # read from raw, the same figures
    assert got.equals(want)
    assert oa.vacuum(ds, older_than=between).stores_deleted == 0  # nothing left to delete
    oa.refresh(ds, RULES, as_of=AS_OF)  # built again (and the codes of this rule set)
    assert all(files for name, files in _stores(ds).items() if not name.startswith("set-"))


def test_vacuum_keeps_the_stores_when_told_or_while_a_refresh_holds_one(
    ds: Path, tmp_path: Path
) -> None:
    from ocp_analytics.store.dataset import locked
    from ocp_analytics.store.decisions import DecisionStore
    from ocp_analytics.store.storage import store

    oa.refresh(ds, RULES, as_of=AS_OF)
    _one_more_commit(ds, tmp_path)
    before = _stores(ds)
    assert oa.vacuum(ds, older_than="0s", keep_decisions=True).stores_deleted == 0
    name = sorted(before)[0]
    with locked(DecisionStore(store(str(ds)), name).root):  # as a refresh writing it does
        # the two other stores and the rule set's codes
        assert oa.vacuum(ds, older_than="0s").stores_deleted == 3
    assert _stores(ds) == {n: (files if n == name else []) for n, files in before.items()}
    result = runner.invoke(app, ["vacuum", str(ds), "--older-than", "0s", "--keep-decisions"])
    assert result.exit_code == 0 and "decisions stores" not in result.output
    result = runner.invoke(app, ["vacuum", str(ds), "--older-than", "0s"])
    assert result.exit_code == 0, result.output
    assert "1 store deleted" in result.output


def test_a_store_left_without_its_newest_record_is_deleted_and_built_again(ds: Path) -> None:
    """An eviction killed after the newest record went: the files left are no store."""
    oa.refresh(ds, ["tests"], as_of=AS_OF)
    want = oa.rates(ds, ["tests"], as_of=AS_OF, use_decisions=False)
    for record in (ds / "decisions").glob("*/_generations/*.json"):
        record.unlink()
    assert oa.rates(ds, ["tests"], as_of=AS_OF).equals(want)  # no record: from raw
    # the files left, however new: two stores and the rule set's codes
    assert oa.vacuum(ds, older_than="30d").stores_deleted == 3
    assert not any(_stores(ds).values())
    oa.refresh(ds, ["tests"], as_of=AS_OF)
    assert oa.rates(ds, ["tests"], as_of=AS_OF).equals(want)


def test_a_vacuum_during_a_refresh_leaves_its_stores_alone(
    ds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh holds its stores' locks from before it reads their records to its commit."""
    from ocp_analytics.store.decisions import evict_stores
    from ocp_analytics.store.storage import store

    refresh_module = importlib.import_module("ocp_analytics.api.refresh")
    oa.refresh(ds, RULES, as_of=AS_OF)
    _one_more_commit(ds, tmp_path)
    real, evicted = refresh_module._plans, []

    def planning(*args: object, **kwargs: object) -> object:
        evicted.append(evict_stores(store(str(ds)), datetime.now(UTC) + timedelta(days=1), -1))
        return real(*args, **kwargs)

    monkeypatch.setattr(refresh_module, "_plans", planning)
    summary = oa.refresh(ds, RULES, as_of=AS_OF)
    assert evicted == [(0, 0)] and summary.reused > 0
    assert verify(ds) == []
    want = oa.rates(ds, RULES, as_of=AS_OF, use_decisions=False)
    assert oa.rates(ds, RULES, as_of=AS_OF).equals(want)
