"""Run the benchmark suite at a chosen size and write its results file.

``python -m benchmarks.run --docs 200000 [--repeat 3] [--out bench-data] [--figures a,b]``

Generates the documents and rules under ``--out`` (kept for the next run) and
writes ``benchmarks/results/results-<docs>.md`` and ``.json`` (with
``--smoke``: under ``--out``, so a smoke run leaves the stored results alone).

``ingest_awkward`` ingests the same documents with 15 % of them carrying one
value in the wrong JSON type (as producers send them; ``--mistyped`` of
``benchmarks/generate.py``), ``ingest_score_text`` with every document
carrying a score written as text: beside ``ingest``, they show what such
values cost.

Every figure runs in a fresh process (``benchmarks/figure.py``); its peak RSS
comes from ``wait4``. Each figure is the median of ``--repeat`` runs, and all
ratios are computed from figures taken in this same run, side by side.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from benchmarks import RESULTS, package_state
from benchmarks.child import FigureFailed, run_child
from benchmarks.generate import write_ndjson, write_rules


@dataclass
class Figure:
    """One measured figure."""

    key: str
    figure: str
    rules: int
    seconds: float
    rows: int
    peak_rss_mb: float
    runs: list[float]

    def per_second(self, units: float) -> float:
        return units / self.seconds if self.seconds else 0.0


def _child(name: str, data: Path, work: Path, rules: Path | None) -> tuple[float, int, float]:
    args = [name, str(data), str(work), str(rules or "")]
    result, usage, _ = run_child("benchmarks.figure", args, f"figure {name}")
    peak = max(usage.ru_maxrss / 1024, result.get("tree_peak_mb", 0.0))
    return result["seconds"], result["rows"], peak


def measure(
    key: str,
    name: str,
    data: Path,
    work: Path,
    rules: tuple[int, Path | None],
    repeat: int,
    fresh: bool = False,
) -> Figure:
    times, rss, rows = [], [], 0
    for _ in range(repeat):
        if fresh and (work / "ds").exists():
            shutil.rmtree(work / "ds")
        seconds, rows, peak = _child(name, data, work, rules[1])
        times.append(seconds)
        rss.append(peak)
    fig = Figure(key, name, rules[0], statistics.median(times), rows, max(rss), times)
    print(
        f"{key:<22} {fig.seconds:8.2f} s  {fig.rows:>12,} rows  {fig.peak_rss_mb:8.0f} MB",
        flush=True,
    )
    return fig


def machine() -> dict[str, str]:
    import duckdb
    import polars
    import pyarrow

    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":")[1].strip()
    except OSError:
        pass
    return {
        "cores": str(os.cpu_count()),
        "memory": mem,
        "python": platform.python_version(),
        "polars": polars.__version__,
        "pyarrow": pyarrow.__version__,
        "duckdb": duckdb.__version__,
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


# The corpora of the ingest figures beside ``ingest``: (folder suffix, share
# of documents with a mistyped value, which value).
AWKWARD = {
    "ingest_awkward": ("-mistyped15", 0.15, "mixed"),
    "ingest_score_text": ("-scoretext100", 1.0, "score_text"),
}


def _corpus(data: Path, docs: int, seed: int, mistyped: float = 0.0, kind: str = "mixed") -> Path:
    """The documents in ``data``, generated unless there (kept for the next run)."""
    if not data.exists():
        t = time.perf_counter()
        write_ndjson(
            data, docs, seed=seed, chunk_docs=100_000, workers=2, mistyped=mistyped, kind=kind
        )
        print(f"generated {docs:,} documents in {time.perf_counter() - t:.1f} s")
    return data


def run(
    docs: int, repeat: int, out: Path, seed: int, figures: set[str] | None = None
) -> dict[str, object]:
    data = _corpus(out / f"data-{docs}-{seed}", docs, seed)
    size = sum(f.stat().st_size for f in data.glob("part-*"))
    r20 = write_rules(out / "rules-20.toml", 20, seed=seed)
    r100 = write_rules(out / "rules-100.toml", 100, seed=seed)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    none: tuple[int, Path | None] = (0, None)
    plan = [
        ("decode_floor", "decode_floor", none, repeat, False),
        ("ingest", "ingest", none, repeat, True),
        *((key, "ingest", none, repeat, True) for key in AWKWARD),
        ("accept_recorded", "accept", none, repeat, False),
        ("accept_20", "accept", (20, r20), repeat, False),
        ("accept_100", "accept", (100, r100), repeat, False),
        ("rates_team_20", "rates", (20, r20), repeat, False),
        ("report_team_20", "report", (20, r20), repeat, False),
        ("sql_accept_recorded", "sql_accept", none, repeat, False),
        ("sql_accept_20", "sql_accept", (20, r20), repeat, False),
        ("sql_rates_20", "sql_rates", (20, r20), repeat, False),
        ("accept_all_20", "accept_all", (20, r20), repeat, False),
        ("sql_copy_20", "sql_copy", (20, r20), repeat, False),
        ("sql_rates_label_20", "sql_rates_label", (20, r20), repeat, False),
        ("reference_20", "reference", (20, r20), 1, False),
    ]
    figs, failed = [], {}
    for key, name, rules, n, fresh in plan:
        if figures is not None and key not in figures:
            continue
        where, at = data, work
        if key in AWKWARD:  # its own documents, and its own dataset (the others read work/ds)
            suffix, share, kind = AWKWARD[key]
            where = _corpus(out / f"data-{docs}-{seed}{suffix}", docs, seed, share, kind)
            at = out / f"work{suffix}"
            at.mkdir(parents=True, exist_ok=True)
        try:
            figs.append(measure(key, name, where, at, rules, n, fresh=fresh))
        except FigureFailed as exc:
            print(exc, flush=True)
            failed[key] = str(exc)
    by = {f.key: f for f in figs}
    ratios = _ratios(by, docs)
    end_to_end = {}
    if "ingest" in by and "rates_team_20" in by:
        ing, rat = by["ingest"], by["rates_team_20"]
        end_to_end = {
            "seconds": ing.seconds + rat.seconds,
            "peak_rss_mb": max(ing.peak_rss_mb, rat.peak_rss_mb),
        }
    return {
        "failed": failed,
        "end_to_end_ingest_rates_20": end_to_end,
        "docs": docs,
        "bytes": size,
        "seed": seed,
        "repeat": repeat,
        "machine": machine(),
        "package": package_state(),
        "figures": [asdict(f) for f in figs],
        "ratios": ratios,
    }


def _ratios(by: dict[str, Figure], docs: int) -> dict[str, float]:
    pairs = {
        "ingest_vs_decode_floor": ("ingest", "decode_floor"),
        "sql_vs_engine_recorded": ("sql_accept_recorded", "accept_recorded"),
        "sql_vs_engine_20": ("sql_accept_20", "accept_20"),
        "sql_vs_engine_rates_20": ("sql_rates_20", "rates_team_20"),
        "sql_copy_vs_engine_accept_all_20": ("sql_copy_20", "accept_all_20"),
        "sql_vs_engine_rates_label_20": ("sql_rates_label_20", "rates_team_20"),
    }
    out = {k: by[a].seconds / by[b].seconds for k, (a, b) in pairs.items() if a in by and b in by}
    for key in AWKWARD:  # docs/s of the corpus with mistyped values over that of ``ingest``
        if key in by and "ingest" in by:
            out[f"{key}_vs_ingest_docs_per_s"] = by["ingest"].seconds / by[key].seconds
    if "reference_20" in by and "accept_20" in by:
        ref = by["reference_20"]
        out["engine_vs_reference_20_rules"] = by["accept_20"].per_second(
            docs * 20
        ) / ref.per_second(ref.rows * 20)
    return out


def render(results: dict[str, object]) -> str:
    docs = int(results["docs"])  # type: ignore[call-overload]
    mb = int(results["bytes"]) / 1e6  # type: ignore[call-overload]
    figs = results["figures"]
    assert isinstance(figs, list)
    lines = [
        f"## Suite at {docs:,} documents ({mb:,.0f} MB NDJSON), median of "
        f"{results['repeat']} run(s)",
        "",
        "| figure | rules | wall s | throughput | peak RSS MB |",
        "|---|---|---|---|---|",
    ]
    for f in figs:
        seconds = f["seconds"]
        rules = f["rules"] or "recorded"
        if f["figure"] in ("decode_floor", "ingest"):
            rules = "–"
            tput = f"{docs / seconds:,.0f} docs/s, {mb / seconds:,.0f} MB/s"
        elif f["figure"] == "reference":
            tput = f"{f['rows'] * 20 / seconds:,.0f} run×rule/s ({f['rows']:,} docs)"
        else:
            k = max(f["rules"], 1)
            tput = f"{docs * k / seconds:,.0f} run×rule/s"
        lines.append(f"| {f['key']} | {rules} | {seconds:.2f} | {tput} | {f['peak_rss_mb']:,.0f} |")
    ratios = results["ratios"]
    assert isinstance(ratios, dict)
    lines += ["", "Ratios (same run):", ""]
    lines += [f"- {k}: {v:.2f}" for k, v in ratios.items()]
    e2e = results.get("end_to_end_ingest_rates_20")
    if isinstance(e2e, dict) and e2e:
        lines.append(
            f"- end to end (ingest + rates by team x 20 rules): {e2e['seconds']:.1f} s, "
            f"peak RSS {e2e['peak_rss_mb']:,.0f} MB"
        )
    failed = results.get("failed")
    if isinstance(failed, dict) and failed:
        lines += ["", "Failed: " + "; ".join(failed.values())]
    m = results["machine"]
    assert isinstance(m, dict)
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in m.items())]
    if "package" in results:
        lines.append(f"Package: {results['package']}")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("bench-data"))
    p.add_argument("--smoke", action="store_true", help="write results under --out only")
    p.add_argument("--figures", help="comma-separated figure keys to run (default: all)")
    a = p.parse_args()
    chosen = set(a.figures.split(",")) if a.figures else None
    results = run(a.docs, a.repeat, a.out, a.seed, chosen)
    text = render(results)
    print(text)
    target = a.out if a.smoke else RESULTS
    target.mkdir(parents=True, exist_ok=True)
    (target / f"results-{a.docs}.json").write_bytes(
        orjson.dumps(results, option=orjson.OPT_INDENT_2)
    )
    (target / f"results-{a.docs}.md").write_text(text)


if __name__ == "__main__":
    main()
