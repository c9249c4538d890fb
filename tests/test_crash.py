"""A SIGKILL in the middle of an ingest leaves a readable dataset; a rerun completes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

import ocp_analytics as oa
from benchmarks.generate import write_ndjson
from ocp_analytics.store.dataset import is_dataset

SCRIPT = """
import sys
import ocp_analytics as oa
oa.ingest(sys.argv[1], sys.argv[2], chunk_docs=500, commit_docs=1000)
"""


def _committed_docs(ds: Path) -> int:
    return int(oa.scan_dataset(ds).manifest.get_column("documents").sum())


@pytest.mark.parametrize("per_file", [1000, 7], ids=["chunks-of-one-file", "files-share-chunks"])
def test_sigkill_mid_ingest_then_rerun_completes(tmp_path: Path, per_file: int) -> None:
    """Killed inside a later batch; with files of 7 documents, its chunks span files."""
    src = tmp_path / "src"
    n = 8000
    write_ndjson(src, n, seed=7, chunk_docs=per_file)
    ds = tmp_path / "ds"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(src), str(ds)])
    batches = ds / "_batches"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if batches.is_dir() and any(batches.glob("*.json")):
            break
        time.sleep(0.01)
    time.sleep(0.3)  # land somewhere inside a later batch
    killed_before_end = proc.poll() is None
    if killed_before_end:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 0 < _committed_docs(ds) < n

    # Readable, and exactly the committed sources' runs (as before the batch).
    scanned = oa.scan_dataset(ds)
    runs = scanned.runs.collect()
    assert runs.height == _committed_docs(ds)
    assert runs.get_column("run_id").n_unique() == runs.height
    assert scanned.signals.join(scanned.runs, on="doc_id", how="anti").collect().height == 0

    summary = oa.ingest(src, ds)
    assert summary.reconciles
    final = oa.scan_dataset(ds).runs.collect()
    assert final.height == n
    assert final.get_column("run_id").n_unique() == n
    assert _committed_docs(ds) == n
    # Every part on disk is listed by a commit record: the killed batch's
    # orphans were removed before the rerun wrote its own.
    records = [orjson.loads(p.read_bytes()) for p in (ds / "_batches").glob("*.json")]
    listed = {f for r in records for files in r["files"].values() for f in files}
    on_disk = {
        f"{t}/{p.name}"
        for t in ("runs", "attempts", "signals", "rules")
        for p in (ds / t).glob("*.parquet")
    }
    assert on_disk <= listed
    assert killed_before_end, "the ingest finished before it could be killed; raise n"


KILL_IN_CREATE = """
import os, signal, sys
import ocp_analytics as oa
from ocp_analytics.store import dataset as D

real, calls = D.write_parquet_atomic, []

def write_then_die(table, path):
    calls.append(path)
    if len(calls) == 3:  # the third empty schema file of the new folder
        os.kill(os.getpid(), signal.SIGKILL)
    real(table, path)

D.write_parquet_atomic = write_then_die
oa.ingest(sys.argv[1], sys.argv[2])
"""


def test_sigkill_while_the_dataset_folder_is_created_then_rerun_completes(
    tmp_path: Path,
) -> None:
    src = Path(__file__).parent / "data" / "examples" / "v0.3"
    ds = tmp_path / "ds"
    proc = subprocess.run([sys.executable, "-c", KILL_IN_CREATE, str(src), str(ds)])
    assert proc.returncode == -signal.SIGKILL
    assert ds.is_dir() and not is_dataset(ds)
    summary = oa.ingest(src, ds)
    assert (summary.runs_new, summary.reconciles) == (7, True)
    assert oa.scan_dataset(ds).runs.collect().height == 7


def test_polars_ingest_clears_what_a_killed_spark_ingest_staged(tmp_path: Path) -> None:
    """Parts a Spark job staged before it was killed are removed (and counted) by any ingest."""
    from ocp_analytics.store import dataset as D

    src = tmp_path / "src"
    write_ndjson(src, 20, seed=3)
    ds = tmp_path / "ds"
    oa.ingest(src, ds)
    staged = ds / D.STAGING / "00000002-deadbeef" / "runs"
    staged.mkdir(parents=True)
    (staged / "00000002-deadbeef-s00000-a0-00000.parquet").write_bytes(b"PAR1")
    more = tmp_path / "more"
    write_ndjson(more, 5, seed=4)
    summary = oa.ingest(more, ds)
    assert summary.orphans_removed == 1
    assert not (ds / D.STAGING).exists()
    assert _committed_docs(ds) == 25
