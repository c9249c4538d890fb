"""A SIGKILL in the middle of a compaction or a vacuum leaves a readable dataset with the
same figures; a rerun completes it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.exceptions import DatasetError
from ocp_analytics.store.commits import read_commits
from ocp_analytics.store.verify import verify

AS_OF = "2027-01-01T00:00:00Z"

# Dies as the third part is written (or the third file deleted): work half done.
KILL = """
import os, signal, sys
import ocp_analytics as oa
from ocp_analytics.store import maintenance as M
from ocp_analytics.store.storage import Store

calls = []

def dying(real):
    def call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call

if sys.argv[1] == "compact":
    M.write_parquet_atomic = dying(M.write_parquet_atomic)
    oa.compact(sys.argv[2])
elif sys.argv[1].startswith("evict"):  # dies at the Nth file of a decisions store deleted
    real, n = Store.delete, int(sys.argv[1][5:])

    def delete(self):
        if "/decisions/" in str(self):
            calls.append(1)
            if len(calls) == n:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(self)

    Store.delete = delete
    oa.vacuum(sys.argv[2], older_than="0s")
else:
    Store.delete = dying(Store.delete)
    oa.vacuum(sys.argv[2], older_than="0s")
"""


@pytest.fixture
def ds(history: tuple[Path, list[Path]], tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(history[0], out)
    return out


def _rates(ds: Path) -> pl.DataFrame:
    return oa.rates(ds, ["tests", "tests+review"], as_of=AS_OF, by="task_type")


def _killed(what: str, ds: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL, what, str(ds)])
    assert proc.returncode == -signal.SIGKILL


def _listed(ds: Path) -> set[str]:
    return {f for r in read_commits(ds) for fs in r["files"].values() for f in fs}


def _on_disk(ds: Path) -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in ds.glob("*/*.parquet") if p.parent.name[0] != "_"}


def test_sigkill_mid_compaction_then_rerun_completes(ds: Path) -> None:
    before = _rates(ds)
    _killed("compact", ds)
    assert [r["seq"] for r in read_commits(ds)] == [1, 2, 3, 4]  # nothing committed
    assert _on_disk(ds) - _listed(ds)  # its finished parts are left, unread
    assert _rates(ds).equals(before) and verify(ds) == []
    summary = oa.compact(ds)
    assert summary.seq == 5 and summary.orphans_removed == 2
    assert _on_disk(ds) <= _listed(ds)
    assert _rates(ds).equals(before) and verify(ds) == []


def test_sigkill_mid_vacuum_then_rerun_completes(ds: Path) -> None:
    before = _rates(ds)
    oa.compact(ds)
    replaced = {f for r in read_commits(ds) for fs in r.get("replaces", {}).values() for f in fs}
    _killed("vacuum", ds)
    left = replaced & _on_disk(ds)
    assert 0 < len(left) < len(replaced)
    # the snapshots it makes unreadable were recorded before any part went
    with pytest.raises(DatasetError, match="snapshot 4 is older than the vacuum"):
        oa.scan_dataset(ds, snapshot=4)
    assert _rates(ds).equals(before) and verify(ds) == []
    summary = oa.vacuum(ds, older_than="0s")
    assert (summary.deleted, summary.oldest_snapshot) == (len(left), 5)
    assert not replaced & _on_disk(ds)
    assert _rates(ds).equals(before) and verify(ds) == []


@pytest.mark.parametrize("at", [1, 2, 5])
def test_sigkill_mid_eviction_of_decisions_stores_then_rerun_completes(ds: Path, at: int) -> None:
    """Killed as the first store's newest record, one of its files, a later store's goes."""
    oa.refresh(ds, ["tests", "tests+review"], as_of=AS_OF)
    before = _rates(ds)
    oa.compact(ds)  # a commit the stores have not followed
    _killed(f"evict{at}", ds)
    assert _rates(ds).equals(before) and verify(ds) == []
    summary = oa.vacuum(ds, older_than="0s")
    assert 1 <= summary.stores_deleted <= 4  # three stores and the rule set's codes
    assert not [p for p in (ds / "decisions").rglob("*") if p.is_file() and p.name != ".lock"]
    assert _rates(ds).equals(before)
