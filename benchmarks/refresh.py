"""The decisions store (#38): a night's refresh against a full evaluation, and the report.

``python -m benchmarks.refresh --docs 200000 --out bench-refresh``, or over a
dataset already built (the issue's scale: the 10M runs in 300 daily batches
``benchmarks.prune`` builds, its parts hard-linked, never changed)::

    python -m benchmarks.refresh --dataset /tmp/prune-bench/10000000-300/ds \\
        --out /tmp/bench-refresh

The day is the dataset as it is, decided at ``DAY`` (the latest run time, to
the next second: the runs of the last two weeks still have their window
open) by a first ``refresh`` from raw of 20 generated rules and the recorded
rule. Then a night, ingested as two batches: 1 % new runs, 0.2 % of the
runs ingested again with other content (a new version each), and late events
about 0.1 % of the runs, observed during the night and about runs that ended
in the 30 days before it (a revert, an incident: what arrives about last
month's work), 10 % of them about no known commit. ``NIGHT`` is ``DAY``
plus a day. Timed:

- ``accept_20``: ``write_acceptance`` of the 20 rules and the recorded rule
  at ``NIGHT``, from raw (``use_decisions=False``), in this process;
- ``refresh``: the night's ``refresh``, in this process (the target: at most
  10 % of ``accept_20``);
- ``report_raw`` and ``report_store``: ``ocp-analytics report`` over every
  run with the same rules at ``NIGHT``, as whole processes, with
  ``--no-decisions`` (today's report) and from the stores (the target: at
  most 10 % of today's), each ``--repeat`` times alternating, medians,
  peak RSS from ``wait4``.

Prints a Markdown table and the ratios; writes
``results-refresh-<runs>.json`` into ``--results`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from benchmarks import RESULTS
from benchmarks.events import _with_commit, event_record
from benchmarks.generate import generate_documents, write_rules
from benchmarks.generator.world import RUN_FIRST

ROOT = Path(__file__).parent.parent
CLI = [sys.executable, "-m", "ocp_analytics.cli"]


def _write(path: Path, docs: Iterable[dict[str, Any]]) -> Path:
    with path.open("wb") as f:
        for d in docs:
            f.write(orjson.dumps(d) + b"\n")
    return path


def _timed(what: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = what()
    return time.perf_counter() - t, out


def _link_copy(src: Path, dst: Path) -> None:
    """``src`` into ``dst``: Parquet parts hard-linked (never written again), the rest copied."""

    def copy(s: str, d: str) -> None:
        if s.endswith(".parquet"):
            os.link(s, d)
        else:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=copy)


def _day(ds: Path) -> tuple[int, datetime]:
    """The runs of the dataset, and its latest run time to the next second."""
    import ocp_analytics as oa

    runs = oa.scan_dataset(ds).runs
    t = pl.coalesce("ended_at", "started_at")
    n, last = runs.select(pl.len(), t.max()).collect().row(0)
    return n, last.replace(microsecond=0) + timedelta(seconds=1)


def _events(ds: Path, k: int, day: datetime, seed: int) -> list[dict[str, Any]]:
    """``k`` late events observed in the night after ``day``, about runs of the month before."""
    import ocp_analytics as oa

    d = oa.scan_dataset(ds)
    ended = pl.coalesce("ended_at", "started_at")
    recent = (
        d.runs.filter(ended >= day - timedelta(days=30))
        .join(d.artifacts.filter(pl.col("kind") == "merge"), on="doc_id")
        .select("path")
        .unique()
        .sort("path")
        .collect()
        .get_column("path")
    )
    step = max(recent.len() // max(k, 1), 1)
    out = []
    for i in range(k):
        rng = random.Random(f"night:{seed}:{i}")
        commit = recent[(i * step) % recent.len()] if rng.random() < 0.9 else f"unknown-{i}"
        out.append(event_record(rng, f"night-{seed}-{i}", i, commit, day, (0, 86_399)))
    return out


def _night(out: Path, n: int, seed: int) -> tuple[Path, Path]:
    """The night's runs: 1 % new, 0.2 % new versions of runs of the day (fewer signals)."""
    new = (_with_commit(d, seed, i) for i, d in enumerate(generate_documents(n // 100, seed, n), n))
    _write(out / "new.ndjson", new)
    replaced = []
    for i, d in enumerate(generate_documents(n // 500, seed, n // 2), n // 2):
        d = _with_commit(d, seed, i)
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
        replaced.append(d)
    return out / "new.ndjson", _write(out / "replaced.ndjson", replaced)


_PEAK = "ocpa-peak-kb"
# A child's ru_maxrss starts from the RSS of the process it was spawned from (Linux keeps the
# larger at exec), and this process holds the day's acceptance: a small launcher (GNU time)
# spawns the report and says its own peak.
_TIME = shutil.which("time") if sys.platform == "linux" else None


def _process(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and stderr of one whole process."""
    launch = [_TIME, "-f", f"{_PEAK} %M", *cmd] if _TIME else cmd
    start = time.perf_counter()
    proc = subprocess.Popen(launch, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err}")
    said = [ln for ln in err.splitlines() if ln.startswith(_PEAK)]
    peak_kb = int(said[-1].split()[1]) if said else usage.ru_maxrss
    return wall, peak_kb // 1024, err


def main(argv: list[str] | None = None) -> int:
    import ocp_analytics as oa

    p = argparse.ArgumentParser(prog="python -m benchmarks.refresh", description=__doc__)
    p.add_argument("--docs", type=int, default=200_000, help="runs to generate (no --dataset)")
    p.add_argument("--dataset", type=Path, help="a dataset built already (benchmarks.prune)")
    p.add_argument("--seed", type=int, default=0, help="the generator seed the runs have")
    p.add_argument("--out", type=Path, default=Path("bench-refresh"))
    p.add_argument("--repeat", type=int, default=1, help="runs of each report")
    p.add_argument("--results", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    out, seed = a.out, a.seed
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ds, rules = out / "ds", out / "rules.toml"
    write_rules(rules, 20, seed=3)
    if a.dataset is not None:
        _link_copy(a.dataset, ds)
    else:
        docs = (_with_commit(d, seed, i) for i, d in enumerate(generate_documents(a.docs, seed)))
        oa.ingest(_write(out / "day.ndjson", docs), ds)
    n, day = _day(ds)
    night_at = day + timedelta(days=1)
    print(f"{n:,} runs; day {day.isoformat()}", file=sys.stderr)
    build, first = _timed(lambda: oa.refresh(ds, [rules], as_of=day))
    print(f"refresh from raw: {build:.1f} s, {first}", file=sys.stderr)

    oa.ingest(list(_night(out, n, seed)), ds)
    oa.ingest_events(_write(out / "events.ndjson", _events(ds, n // 1000, day, seed)), ds)

    acc = out / "acc.parquet"
    full, _ = _timed(
        lambda: oa.write_acceptance(ds, acc, [rules], as_of=night_at, use_decisions=False)
    )
    print(f"accept_20: {full:.1f} s", file=sys.stderr)
    night, summary = _timed(lambda: oa.refresh(ds, [rules], as_of=night_at))
    print(f"refresh: {night:.2f} s, {summary}", file=sys.stderr)

    first_day = datetime.fromtimestamp(RUN_FIRST, UTC).date().isoformat()
    report = [*CLI, "report", str(ds), "--rules", str(rules), "--as-of", night_at.isoformat()]
    report += ["--since", first_day, "--period", "week", "-o", str(out / "page.html")]
    cmds = {"report_raw": [*report, "--no-decisions"], "report_store": report}
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, int] = dict.fromkeys(cmds, 0)
    said = ""
    for _ in range(a.repeat):
        for name, cmd in cmds.items():
            wall, peak, err = _process(cmd)
            walls[name].append(wall)
            peaks[name] = max(peaks[name], peak)
            said = next((ln for ln in err.splitlines() if "decisions:" in ln), said)
            print(f"{name}: {wall:.1f} s, {peak} MB", file=sys.stderr)
    raw_s, store_s = (statistics.median(walls[k]) for k in cmds)
    result = {
        "runs": n,
        "day": day.isoformat(),
        "night": night_at.isoformat(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "refresh_from_raw_s": build,
        "accept_20_s": full,
        "refresh_s": night,
        "refresh_said": str(summary),
        "report_raw": {
            "wall_s": raw_s,
            "walls": walls["report_raw"],
            "peak_mb": peaks["report_raw"],
        },
        "report_store": {
            "wall_s": store_s,
            "walls": walls["report_store"],
            "peak_mb": peaks["report_store"],
            "said": said,
        },
        "ratios": {"refresh_accept_20": night / full, "report_store_raw": store_s / raw_s},
    }
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"results-refresh-{n}.json").write_bytes(
        orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n"
    )
    print(f"| {n:,} runs | seconds |\n|---|---:|")
    for name, secs in [
        (f"refresh from raw, the day ({first})", build),
        ("accept_20 (write_acceptance, from raw, the night)", full),
        (f"refresh, the night ({summary})", night),
        ("report, from raw (--no-decisions)", raw_s),
        (f"report, from the stores ({said.strip()})", store_s),
    ]:
        print(f"| {name} | {secs:.2f} |")
    print(orjson.dumps(result["ratios"]).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
