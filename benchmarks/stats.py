"""The statistics of issue #37 at scale, each beside plain ``rates`` in the same run.

``python -m benchmarks.stats --docs 2000000 [--out bench-stats] [--repeat 1]``

Generates ``--docs`` documents (kept under ``--out`` for the next run),
ingests them once, then times each figure in a fresh process (its peak RSS
from ``wait4``), every one by team over the same dataset and ``as_of``:

- ``rates``: ``oa.rates`` of one rule, the reference the others are read against;
- ``rates_cluster``: the same with the cluster-robust interval by task;
- ``compare``: two rules with flips and the paired test;
- ``passk``: pass@k and pass^k for k = 1..5 by task;
- ``cost``: cost per accepted run (USD) with its interval;
- ``sweep``: the accept rate at every observed ``runtime_s`` target;
- ``check``: the CI gate, the last 30 days against the 30 before.

Writes ``benchmarks/results/results-stats-<docs>.json`` and prints a table
of seconds, peak memory and the ratio to ``rates``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

from benchmarks import RESULTS
from benchmarks.child import run_child
from benchmarks.generate import write_ndjson

AS_OF = "2026-12-01T00:00:00Z"
RULE = "tests+review"
FIGURES = ("rates", "rates_cluster", "compare", "passk", "cost", "sweep", "check")


def _figure(name: str, ds: Path) -> int:
    """Run one figure over ``ds``; the number of rows it gives."""
    import ocp_analytics as oa

    team = ["label.team"]
    if name == "rates":
        return oa.rates(ds, RULE, by=team, as_of=AS_OF).height
    if name == "rates_cluster":
        return oa.rates(ds, RULE, by=team, cluster="task_id", as_of=AS_OF).height
    if name == "compare":
        return oa.compare(ds, ["tests", RULE], by=team, as_of=AS_OF)[1].height
    if name == "passk":
        return oa.passk(ds, RULE, k=5, by=team, as_of=AS_OF).height
    if name == "cost":
        return oa.cost(ds, RULE, by=team, as_of=AS_OF).height
    if name == "sweep":
        return oa.sweep(ds, "tests+runtime_s<=3600", by=team, as_of=AS_OF).height
    if name == "check":
        result = oa.check(
            ds,
            RULE,
            baseline={"since": "60d", "until": "30d"},
            candidate={"since": "30d"},
            by=team,
            as_of=AS_OF,
        )
        return len(result.groups)
    raise SystemExit(f"unknown figure {name!r}")


def _child_main(name: str, ds: Path) -> None:
    import warnings

    warnings.simplefilter("ignore")  # a rule's unknown names are not what is timed
    start = time.perf_counter()
    rows = _figure(name, ds)
    print(orjson.dumps({"seconds": time.perf_counter() - start, "rows": rows}).decode())


def _prepare(docs: int, out: Path) -> Path:
    import ocp_analytics as oa

    data, ds = out / f"data-{docs}", out / f"ds-{docs}"
    if not (ds / "ocp-dataset.json").exists():
        if not data.exists():
            print(f"generating {docs:,} documents in {data}", file=sys.stderr)
            write_ndjson(data, docs, workers=2)
        print(f"ingesting into {ds}", file=sys.stderr)
        oa.ingest(data, ds)
    return ds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--out", type=Path, default=Path("bench-stats"))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--figures", default=",".join(FIGURES))
    p.add_argument("--child", nargs=2, metavar=("FIGURE", "DATASET"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child_main(args.child[0], Path(args.child[1]))
        return 0
    ds = _prepare(args.docs, args.out)
    times: dict[str, dict[str, list[float]]] = {}
    counts: dict[str, int] = {}
    for _ in range(args.repeat):  # figures interleaved, so load drifts hit every figure alike
        for name in args.figures.split(","):
            result, usage, wall = run_child("benchmarks.stats", ["--child", name, str(ds)], name)
            entry = times.setdefault(name, {"seconds": [], "wall": [], "peak_mb": []})
            entry["seconds"].append(result["seconds"])
            entry["wall"].append(wall)
            entry["peak_mb"].append(usage.ru_maxrss / 1024)
            counts[name] = result["rows"]
    base = statistics.median(times["rates"]["seconds"]) if "rates" in times else None
    print(f"{'figure':<14} {'seconds':>8} {'x rates':>8} {'peak MB':>8} {'rows':>6}")
    for name, entry in times.items():
        sec, peak = statistics.median(entry["seconds"]), max(entry["peak_mb"])
        ratio = f"{sec / base:.2f}" if base else "-"
        print(f"{name:<14} {sec:>8.2f} {ratio:>8} {peak:>8.0f} {counts[name]:>6}")
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"results-stats-{args.docs}.json"
    report = {"docs": args.docs, "as_of": AS_OF, "figures": times, "rows": counts}
    target.write_bytes(orjson.dumps(report))
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
