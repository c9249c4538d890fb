"""Manifests that prune (#38): a window's commands against the same over every run.

Builds ``--runs`` generated runs ingested as ``--batches`` batches, each batch
the runs of one stretch of time, as a daily ingest writes them: the seeded
generator's runs (``benchmarks/generate.py``) span the 318 days of 2026 from
January 1st, so with 300 batches a batch holds about a day (with 100, about
three). Then it times whole processes, each command ``--repeat`` times,
alternating, with the instant of knowledge ``T`` the latest run time:

- ``ocp-analytics rates DS --as-of T --since 1d`` against ``rates DS --as-of T``;
- ``ocp-analytics report DS --as-of T --since 7d`` (it reads the 7 days before
  too: the previous window) against ``report`` over every run (``--since`` the
  first day, ``--period week``, the week the 7-day page draws being its default
  below 62 days).

The ratio is taken on the median wall times less the start-up (``ocp-analytics
--version``: the interpreter and the package's imports), reported beside it,
and again less the command's fixed cost (the same command over an empty
window: start-up, commit records, the report's charts); peak RSS is each
process's own (``os.wait4``).

Each run carries a commit artifact (``benchmarks.events``), which the late
events of ``benchmarks.refresh``'s night, run over this dataset, match.

Command line (the issue's scale is ``--runs 10000000 --batches 300``; it needs
about 25 GB of disk while it builds, about 20 minutes, then 10 for the timings)::

    python -m benchmarks.prune --runs 1000000 --batches 100 --out /tmp/prune-bench

``--out`` keeps the dataset: a second run with the same ``--runs`` and
``--batches`` times it again without building. The JSON report goes to
``benchmarks/results/results-prune-<runs>-<batches>.json`` (``--results DIR``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from benchmarks.events import _with_commit
from benchmarks.generate import generate_documents
from benchmarks.generator.world import RUN_FIRST, RUN_SPAN

ROOT = Path(__file__).parent.parent
CLI = [sys.executable, "-m", "ocp_analytics.cli"]
PRUNE = [sys.executable, "-m", "benchmarks.prune"]
CHUNK = 50_000  # documents a generating job writes
# Runs end up to a few hours after they start; the last batch takes the stragglers.
_SPAN = RUN_SPAN + 2 * 86_400


def _run_time(doc: dict[str, Any]) -> datetime | None:
    run = doc["run"]
    text = run.get("ended_at") or run.get("started_at")
    try:
        t = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _bucket(t: datetime | None, index: int, batches: int) -> int:
    """The batch of a run: its stretch of time (a run without a readable time: any)."""
    if t is None:
        return index % batches
    at = (t.timestamp() - RUN_FIRST) / _SPAN * batches
    return min(batches - 1, max(0, int(at)))


def _generate(job: tuple[Path, int, int, int, int]) -> int:
    """Documents ``start`` .. ``start + n - 1`` into one file per batch: ``src/BBBBB/JJJJJ``."""
    src, seed, start, n, batches = job
    files: dict[int, BinaryIO] = {}
    try:
        for i, doc in enumerate(generate_documents(n, seed, start)):
            # a commit artifact each, which the late events of benchmarks.refresh's night match
            doc = _with_commit(doc, seed, start + i)
            b = _bucket(_run_time(doc), start + i, batches)
            if b not in files:
                (src / f"{b:05d}").mkdir(parents=True, exist_ok=True)
                files[b] = (src / f"{b:05d}" / f"{start // CHUNK:05d}.ndjson").open("wb")
            files[b].write(orjson.dumps(doc) + b"\n")
    finally:
        for f in files.values():
            f.close()
    return n


def build(out: Path, runs: int, batches: int, seed: int, workers: int) -> dict[str, float]:
    """Generate the runs into a folder per batch, then ingest each folder as one batch."""
    src, ds = out / "src", out / "ds"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(ds, ignore_errors=True)
    jobs = [(src, seed, s, min(CHUNK, runs - s), batches) for s in range(0, runs, CHUNK)]
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        assert sum(pool.map(_generate, jobs)) == runs
    generated = time.perf_counter() - start
    return {"generate_s": generated, "ingest_s": ingest_batches(src, ds)}


def ingest_batches(src: Path, ds: Path) -> float:
    """Ingest each folder of ``src`` as one batch, in order, as one file (a day's NDJSON).

    A folder's files are joined first: ingest pays a fixed cost per source
    file, which 200 small files a batch would make the build's largest. A
    folder is deleted once ingested, so a build stopped part way resumes here.
    """
    import ocp_analytics as oa

    start = time.perf_counter()
    for folder in sorted(f for f in src.iterdir() if f.is_dir()):
        day = src / f"{folder.name}.ndjson"
        with day.open("wb") as out:
            for part in sorted(folder.glob("*.ndjson")):
                out.write(part.read_bytes())
        oa.ingest(day, ds)
        shutil.rmtree(folder)  # the disk holds one batch of NDJSON at a time
        day.unlink()
    return time.perf_counter() - start


def latest_run_time(ds: Path) -> datetime:
    """The latest run time the manifest records, to the next second: the benchmark's as_of."""
    from ocp_analytics.store.commits import read_commits
    from ocp_analytics.store.manifest import record_entries

    ends = [e.time[1] for r in read_commits(ds) for e in record_entries(r) if e.time]
    return max(ends).replace(microsecond=0) + timedelta(seconds=1)


def _measure(cmd: Sequence[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss // 1024


def commands(ds: Path, as_of: str, page: Path) -> dict[str, list[str]]:
    """Each timed command, by name: the windowed one, its peer over every run, an empty one.

    The empty window (the two days before the first run) opens no part of
    runs: what is left is the command's fixed cost (start-up, commit records,
    the page's charts).
    """
    first = datetime.fromtimestamp(RUN_FIRST, UTC)
    empty = ["--since", (first - timedelta(days=2)).isoformat(), "--until", first.isoformat()]
    rates = [*CLI, "rates", str(ds), "--as-of", as_of]
    report = [*CLI, "report", str(ds), "--as-of", as_of, "-o", str(page)]
    return {
        "startup": [*CLI, "--version"],
        "rates_since_1d": [*rates, "--since", "1d"],
        "rates_all": rates,
        "rates_empty": [*rates, *empty],
        "report_since_7d": [*report, "--since", "7d"],
        "report_all": [*report, "--since", first.date().isoformat(), "--period", "week"],
        "report_empty": [*report, *empty, "--period", "day"],
    }


def timings(cmds: dict[str, list[str]], repeat: int) -> dict[str, dict[str, Any]]:
    """Every command ``repeat`` times, in turn (so drift touches each alike): medians."""
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, list[int]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            wall, peak = _measure(cmd)
            walls[name].append(wall)
            peaks[name].append(peak)
            print(f"{name}: {wall:.2f} s, {peak} MB", file=sys.stderr)
    return {
        k: {"wall_s": statistics.median(walls[k]), "walls": walls[k], "peak_mb": max(peaks[k])}
        for k in cmds
    }


def ratios(t: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Windowed against whole: start-up taken off both, then the empty window's cost; memory."""
    up = t["startup"]["wall_s"]
    out = {}
    for command, window in (("rates", "since_1d"), ("report", "since_7d")):
        part, whole, fixed = (t[f"{command}_{k}"]["wall_s"] for k in (window, "all", "empty"))
        out[f"{command}_{window}_time"] = (part - up) / (whole - up)
        out[f"{command}_{window}_time_less_fixed"] = (part - fixed) / (whole - fixed)
        out[f"{command}_{window}_memory"] = (
            t[f"{command}_{window}"]["peak_mb"] / t[f"{command}_all"]["peak_mb"]
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.prune", description=__doc__)
    p.add_argument("--runs", type=int, default=1_000_000)
    p.add_argument("--batches", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="work folder (the dataset is kept)")
    p.add_argument("--workers", type=int, default=2, help="generating processes")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    out = a.out / f"{a.runs}-{a.batches}"
    if a.build_only:
        built = build(out, a.runs, a.batches, a.seed, a.workers)
        (out / "build.json").write_bytes(orjson.dumps(built))
        return 0
    if not (out / "ds" / "ocp-dataset.json").is_file():
        # in a process of its own: a child forked from a large parent counts its pages
        # in its peak RSS, so the timed commands are started from a small process
        subprocess.run([*PRUNE, *(argv or sys.argv[1:]), "--build-only"], check=True, cwd=ROOT)
    built = orjson.loads((out / "build.json").read_bytes()) if (out / "build.json").exists() else {}
    as_of = latest_run_time(out / "ds")
    cmds = commands(out / "ds", as_of.isoformat(), out / "page.html")
    t = timings(cmds, a.repeat)
    result = {
        "runs": a.runs,
        "batches": a.batches,
        "as_of": as_of.isoformat(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "build": built,
        "timings": t,
        "ratios": ratios(t),
    }
    a.results.mkdir(parents=True, exist_ok=True)
    path = a.results / f"results-prune-{a.runs}-{a.batches}.json"
    path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print(orjson.dumps(result["ratios"]).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
