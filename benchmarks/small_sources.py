"""A folder of one-document files beside the same documents as one NDJSON file.

``python -m benchmarks.small_sources --docs 2000 --repeat 3 --out bench-small``

A feed that writes one file per run (``run-00042.ocp.json``) is common; an
ingest should cost about what the same documents cost as one file. Writes the
generator's first ``--docs`` documents (seed 1) under ``--out`` as
``all.ndjson`` and as ``files/run-NNNNN.ocp.json``, one document each (kept
for the next run), then ingests each into a fresh dataset, every ingest in
its own process (``benchmarks/figure.py``'s ``ingest``: the ingest's wall
time, imports excluded; peak RSS from ``wait4``), alternating which goes
first, and reports the medians and their ratio. Writes
``results-small-sources-<docs>.json`` into ``--results`` (default:
``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks import RESULTS, package_state
from benchmarks.child import run_child
from benchmarks.generate import generate_documents


def write_corpus(out: Path, docs: int, seed: int) -> tuple[Path, Path]:
    """The documents as one NDJSON file and as a folder of one-document files (kept)."""
    one, files = out / "all.ndjson", out / "files"
    if one.exists() and files.is_dir() and len(list(files.iterdir())) == docs:
        return one, files
    files.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, doc in enumerate(generate_documents(docs, seed=seed)):
        text = orjson.dumps(doc)
        (files / f"run-{i:05d}.ocp.json").write_bytes(text)
        lines.append(text)
    one.write_bytes(b"\n".join(lines) + b"\n")
    return one, files


def _ingest(data: Path, work: Path) -> tuple[float, float]:
    """One ingest of ``data`` into a fresh dataset under ``work``: seconds, peak RSS (MB)."""
    shutil.rmtree(work / "ds", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    result, usage, _ = run_child("benchmarks.figure", ["ingest", str(data), str(work)], "ingest")
    return result["seconds"], max(usage.ru_maxrss / 1024, result.get("tree_peak_mb", 0.0))


def run(docs: int, repeat: int, out: Path, seed: int) -> dict[str, Any]:
    one, files = write_corpus(out / f"data-{docs}-{seed}", docs, seed)
    runs: dict[str, list[tuple[float, float]]] = {"one_file": [], "files": []}
    for r in range(repeat):
        order = [("one_file", one), ("files", files)]
        for key, data in order if r % 2 == 0 else order[::-1]:
            seconds, peak = _ingest(data, out / "work")
            runs[key].append((seconds, peak))
            print(f"{key:<9} {seconds:8.2f} s  {peak:6.0f} MB", flush=True)
    med = {k: statistics.median(s for s, _ in v) for k, v in runs.items()}
    ratio = med["files"] / med["one_file"]
    print(
        f"{docs:,} one-document files: {med['files']:.2f} s; one NDJSON file: "
        f"{med['one_file']:.2f} s; ratio {ratio:.2f}x"
    )
    return {
        "docs": docs,
        "seed": seed,
        "repeat": repeat,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "package": package_state(),
        "seconds": med,
        "ratio_files_to_one_file": ratio,
        "runs": {k: [{"seconds": s, "peak_rss_mb": p} for s, p in v] for k, v in runs.items()},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("bench-small"))
    p.add_argument("--results", type=Path, default=RESULTS)
    a = p.parse_args()
    result = run(a.docs, a.repeat, a.out, a.seed)
    a.results.mkdir(parents=True, exist_ok=True)
    path = a.results / f"results-small-sources-{a.docs}.json"
    path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
