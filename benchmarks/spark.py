"""The Spark engine beside the polars engine, on the same generated documents (#16).

For each engine (polars; Spark ``local[1]``; Spark ``local[2]``) one child
process runs, in order: session start (Spark), ``ingest`` into a fresh
dataset, ``accept`` × 20 rules written to Parquet, ``rates`` by team × 20
rules. The parent samples the RSS of the child's whole process tree (JVM and
Python workers included) every 0.1 s and reports, per step, the wall time and
the peak. Every engine's rates must equal the polars engine's, and the
acceptance files must hold the same number of rows.

Command line::

    python -m benchmarks.spark --docs 200000 --out /tmp/ocp-spark-bench
    python -m benchmarks.spark --docs 2000 --out /tmp/b --results /tmp/b \
        --engines polars,local[2]   # smoke

Writes ``results-spark-<docs>.json`` and ``.md`` into ``--results`` (default:
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import RESULTS

AS_OF = "2026-12-01T00:00:00Z"
FILE_DOCS = 25_000  # documents per NDJSON file: 8 source files at 200k documents


def _child(engine: str, data: Path, rules: Path, work: Path) -> None:
    """Run the steps of one engine, printing one JSON line per step."""
    import ocp_analytics as oa

    def step(name: str, fn: Any) -> Any:
        start = time.time()
        out = fn()
        print(json.dumps({"step": name, "start": start, "end": time.time()}), flush=True)
        return out

    ds = work / "dataset"
    if engine == "polars":
        step("ingest", lambda: oa.ingest(data, ds))
        step("accept_20", lambda: oa.write_acceptance(ds, work / "acc.parquet", rules, as_of=AS_OF))
        rates = step("rates_team_20", lambda: oa.rates(ds, rules, by="label.team", as_of=AS_OF))
        rates.collect().write_parquet(work / "rates.parquet")
        return
    from ocp_analytics import spark as osp

    sp = step("session", lambda: osp.session(engine))
    sp.sparkContext.setLogLevel("ERROR")
    step("ingest", lambda: osp.ingest(sp, data, ds))
    step("accept_20", lambda: osp.write_acceptance(sp, ds, work / "acc.parquet", rules, AS_OF))
    rates = step("rates_team_20", lambda: osp.rates(sp, ds, rules, by="label.team", as_of=AS_OF))
    rates.write_parquet(work / "rates.parquet")
    step("stop", sp.stop)


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def _measure(
    engine: str, data: Path, rules: Path, work: Path, threads: int | None = None
) -> dict[str, Any]:
    """Run one engine's child; its steps with wall time and peak tree RSS."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.spark", "--child", engine]
    cmd += ["--data", str(data), "--rules", str(rules), "--work", str(work)]
    samples: list[tuple[float, int]] = []
    start = time.time()
    env = dict(os.environ)
    if threads is not None:  # polars threads in every process (Spark workers inherit it)
        env["POLARS_MAX_THREADS"] = str(threads)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.time(), _tree_rss(proc.pid)))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    total = time.time() - start
    if proc.returncode:
        raise SystemExit(f"{engine} failed (exit {proc.returncode})")
    steps = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        s = json.loads(line)
        peak = max((r for t, r in samples if s["start"] - 0.1 <= t <= s["end"] + 0.1), default=0)
        steps[s["step"]] = {"seconds": round(s["end"] - s["start"], 2), "peak_mb": peak >> 20}
    peak_all = max((r for _, r in samples), default=0) >> 20
    load = round(os.getloadavg()[1], 1)  # 5-minute load average when the child ended
    return {
        "engine": engine,
        "steps": steps,
        "process_s": round(total, 2),
        "peak_mb": peak_all,
        "load5": load,
        "polars_threads": threads,
    }


def _work_name(engine: str) -> str:
    """A folder name without glob characters: ``local[2]`` -> ``work-local-2``."""
    return "work-" + "".join(c if c.isalnum() else "-" for c in engine).strip("-")


def _check(results: list[dict[str, Any]], out: Path) -> None:
    """Every engine's rates equal the polars engine's; acceptance row counts equal."""
    import polars as pl

    polars = out / _work_name("polars")
    base = pl.read_parquet(polars / "rates.parquet")
    rows = pl.scan_parquet(polars / "acc.parquet").select(pl.len()).collect().item()
    for r in results:
        work = out / _work_name(r["engine"])
        same = pl.read_parquet(work / "rates.parquet").equals(base)
        acc = work / "acc.parquet"
        n = pl.scan_parquet(acc / "*.parquet" if acc.is_dir() else acc).select(pl.len())
        r["rates_equal_polars"] = same
        r["accept_rows"] = n.collect().item()
        if not same or r["accept_rows"] != rows:
            raise SystemExit(f"{r['engine']}: results differ from the polars engine")


def _markdown(docs: int, size: int, results: list[dict[str, Any]]) -> str:
    names = ["session", "ingest", "accept_20", "rates_team_20", "stop"]
    lines = [
        f"# Spark engine beside polars: {docs:,} documents ({size / 1e6:,.0f} MB NDJSON)",
        "",
        "| engine | " + " | ".join(names) + " | process | peak tree RSS | load (5 min) |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    for r in results:
        cells = []
        for n in names:
            s = r["steps"].get(n)
            cells.append("–" if s is None else f"{s['seconds']:.1f} s, {s['peak_mb']:,} MB")
        row = f"| {r['engine']} | " + " | ".join(cells)
        lines.append(row + f" | {r['process_s']:.1f} s | {r['peak_mb']:,} MB | {r['load5']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__)
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("/tmp/ocp-spark-bench"), help="data, work")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the .md and .json")
    p.add_argument("--engines", default="polars,local[1],local[2]")
    p.add_argument("--repeat", type=int, default=1, help="rounds over the engines (interleaved)")
    p.add_argument("--polars-threads", type=int, help="POLARS_MAX_THREADS for every process")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--rules", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        _child(a.child, a.data, a.rules, a.work)
        return 0
    from benchmarks.generate import write_ndjson, write_rules

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    data = a.out / f"data-{a.docs}-{a.seed}"
    if not data.is_dir():
        write_ndjson(data, a.docs, seed=a.seed, chunk_docs=FILE_DOCS, workers=2)
    size = sum(f.stat().st_size for f in data.iterdir())
    rules = write_rules(a.out / "rules-20.toml", 20, seed=a.seed)
    results = []
    for _ in range(a.repeat):
        for engine in a.engines.split(","):
            work = a.out / _work_name(engine)
            if work.exists():
                import shutil

                shutil.rmtree(work)
            results.append(_measure(engine, data, rules, work, a.polars_threads))
            print(json.dumps(results[-1]), flush=True)
        if "polars" in a.engines.split(","):
            _check(results[-len(a.engines.split(",")) :], a.out)
    body = {"docs": a.docs, "seed": a.seed, "ndjson_bytes": size, "as_of": AS_OF}
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"results-spark-{a.docs}.json").write_text(
        json.dumps({**body, "results": results})
    )
    text = _markdown(a.docs, size, results)
    (a.results / f"results-spark-{a.docs}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
