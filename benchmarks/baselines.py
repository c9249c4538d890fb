"""Side-by-side baselines (#12): the package's speed as same-run ratios.

``python -m benchmarks.baselines --data DIR_OF_NDJSON --rules RULES.toml --work WORKDIR
[--repeat 3]``

Every figure runs in a fresh process (this module run again with
``--figure NAME``). The parent measures the wall time of the figure's work
(reported by the child; interpreter start and imports excluded, and also
recorded as ``process_s``), its CPU time (user + system of the child and the
worker processes it waited for: steadier than wall time on a shared machine)
and the peak RSS of the process tree: the largest of ``os.wait4``'s
``ru_maxrss`` and the sum of RSS of the child and its descendants sampled
every 50 ms with psutil (when installed). The figures of a
group run in forward order on even repeats and in reverse order on odd ones;
each figure is the median of its repeats.

Ingest (same NDJSON files):

* ``duckdb_read_ndjson``: DuckDB's own ``read_ndjson`` with declared columns,
  flattened with ``UNNEST`` into runs, attempts and signals Parquet files
  (timestamps parsed; a literal file list, never a glob pattern), each
  document numbered (``row_number() OVER ()``) as the package numbers them.
* ``duckdb_read_ndjson_runid``: the same without the numbering (a window over
  the whole file, which DuckDB computes on one thread): the tables are keyed
  by ``run.id``, as a hand-written conversion would key them. The faster peer.
* ``polars_decode``: ``pl.scan_lines`` + ``str.json_decode(DOCUMENT_DTYPE)``, nothing else.
* ``package_ingest``: ``ocp_analytics.ingest(files, dataset)``.

Evaluation (on the dataset ``package_ingest`` wrote, the rules file's rules):

* ``package_accept``: ``write_acceptance`` of every (run, rule) row with
  reasons, recorded rules + the alternative rules.
* ``package_rates``: ``rates(ds, rules, by="label.team")``.
* ``polars_handwritten`` / ``duckdb_handwritten``: a hand-written query over
  the same Parquet tables giving each run's outcome and
  ``attempts_to_acceptance`` under the alternative rules, written to Parquet
  (no reasons, no tier, no late events matched from the ``events`` table).
* ``floor``: the latest signal per (doc_id, kind, name) plus writing
  runs x (K + 1) rows of (run_id, rule, outcome).

After timing, the outcomes of both hand-written queries are checked (once,
untimed) against the package's for the alternative rules; disagreements are
counted by rule and by the generator's awkward case of the run.

Results: ``results-baselines-<docs>.md`` and ``.json`` (``results-baselines-eval-<docs>``
when only the evaluation ran) in ``--results`` (default: ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks import RESULTS, package_state
from benchmarks.baseline_figures import (
    AS_OF,
    EVALUATION,
    INGEST,
    data_files,
    dataset_path,
    duckdb_read_ndjson,
    duckdb_read_ndjson_runid,
    floor,
    out_path,
    package_accept,
    package_ingest,
    package_rates,
    polars_decode,
    read_rules,
    runs_in_dataset,
)
from benchmarks.handwritten import duckdb_handwritten, polars_handwritten

HERE = Path(__file__).parent


class FigureFailed(RuntimeError):
    """A figure's process failed (for example, killed for lack of memory)."""


FIGURES = {
    "duckdb_read_ndjson": duckdb_read_ndjson,
    "duckdb_read_ndjson_runid": duckdb_read_ndjson_runid,
    "polars_decode": polars_decode,
    "package_ingest": package_ingest,
    "package_accept": package_accept,
    "package_rates": package_rates,
    "polars_handwritten": polars_handwritten,
    "duckdb_handwritten": duckdb_handwritten,
    "floor": floor,
}


def child(a: argparse.Namespace) -> None:
    """Run one figure in this process and print one JSON line."""
    # Imports every figure shares stay out of the timed part. ocp_analytics
    # first, as the command line does: it sets polars' allocator before polars
    # is imported, so the hand-written polars figures run with the same one.
    import ocp_analytics  # noqa: F401

    # isort: split
    import duckdb  # noqa: F401
    import polars  # noqa: F401
    import pyarrow  # noqa: F401

    cpu0, start = os.times(), time.perf_counter()
    result: dict[str, float] = dict(FIGURES[a.figure](a))
    result["seconds"] = time.perf_counter() - start
    cpu1 = os.times()  # this process and the worker processes it waited for
    result["cpu_s"] = sum(cpu1[:4]) - sum(cpu0[:4])
    print(orjson.dumps(result).decode(), flush=True)


# --------------------------------------------------------------------------
# The parent: fresh processes, tree RSS, interleaved order, medians


def _sample_tree(pid: int, stop: threading.Event, peak: list[int]) -> None:
    try:
        import psutil
    except ImportError:  # pragma: no cover - wait4 alone then
        return
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.wait(0.05):
        total = 0
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
        peak[0] = max(peak[0], total)


def run_figure(name: str, a: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.baselines",
        "--figure",
        name,
        "--data",
        str(a.data),
        "--rules",
        str(a.rules),
        "--work",
        str(a.work),
        "--as-of",
        a.as_of,
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=HERE.parent)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code:
        raise FigureFailed(f"figure {name} failed with exit code {code}")
    result: dict[str, Any] = orjson.loads(out.splitlines()[-1])
    result["process_s"] = wall
    result["peak_rss_mb"] = max(usage.ru_maxrss / 1024, peak[0] / 2**20)
    return result


def measure(
    group: tuple[str, ...], a: argparse.Namespace, failed: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Each figure of ``group`` ``a.repeat`` times, order reversed on odd repeats.

    A figure that fails is recorded in ``failed`` and not run again.
    """
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in group}
    for rep in range(a.repeat):
        order = group if rep % 2 == 0 else tuple(reversed(group))
        for name in order:
            if name in failed:
                continue
            try:
                r = run_figure(name, a)
            except FigureFailed as exc:
                print(exc, flush=True)
                failed[name] = str(exc)
                continue
            runs[name].append(r)
            print(
                f"  [{rep + 1}/{a.repeat}] {name:<20} {r['seconds']:8.2f} s "
                f"{r['peak_rss_mb']:8.0f} MB  {r['rows']:>12,} rows",
                flush=True,
            )
    return {
        name: {
            "seconds": statistics.median(x["seconds"] for x in rs),
            "runs": [x["seconds"] for x in rs],
            "process_s": statistics.median(x["process_s"] for x in rs),
            "cpu_s": statistics.median(x["cpu_s"] for x in rs),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
            "rows": rs[-1]["rows"],
            **({"docs": rs[-1]["docs"]} if "docs" in rs[-1] else {}),
        }
        for name, rs in runs.items()
        if rs and name not in failed
    }


# --------------------------------------------------------------------------
# The check: hand-written outcomes equal the package's


def _bench_case(path: str, lines: list[int]) -> dict[int, str]:
    """The generator's awkward case of the documents at these 1-based lines of ``path``."""
    wanted, out = set(lines), {}
    with open(path, "rb") as f:
        for i, line in enumerate(f, 1):
            if i in wanted:
                ext = orjson.loads(line)["run"].get("ext") or {}
                out[i] = str(ext.get("dev.ocp-analytics.bench", {}).get("case", "-"))
                if len(out) == len(wanted):
                    break
    return out


def check_ingest(a: argparse.Namespace) -> dict[str, Any]:
    """Rows of the tables DuckDB wrote against the package's runs, attempts and signals."""
    import polars as pl

    import ocp_analytics as oa

    frames = oa.scan_dataset(dataset_path(a.work)).frames
    out: dict[str, Any] = {}
    for t in ("runs", "attempts", "signals"):
        duck = pl.scan_parquet(a.work / "duckdb_ndjson" / t / "*.parquet").select(pl.len())
        out[t] = {
            "duckdb": int(duck.collect().item()),
            "package": int(frames[t].select(pl.len()).collect().item()),
        }
    out["same_rows"] = all(v["duckdb"] == v["package"] for v in out.values())
    return out


def check(a: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """Compare each hand-written output with the package's rows for the alternative rules."""
    import polars as pl

    import ocp_analytics as oa

    keys = ["run_id", "rule"]
    cols = [*keys, "outcome", "attempts_to_acceptance"]
    pkg = (
        pl.scan_parquet(out_path(a.work, "package_accept"))
        .filter(pl.col("rule") != "recorded")
        .select(cols)
        .collect()
    )
    runs = oa.scan_dataset(dataset_path(a.work)).frames["runs"]
    src = runs.select("run_id", "source_path", "source_line").collect()
    # What the check covered: the generator's awkward cases, and late events (§11),
    # which the hand-written queries do not read (they would differ if there were any).
    case = r'"dev\.ocp-analytics\.bench":\{"case":"([^"]+)"'
    covered = (
        pl.scan_lines([str(f) for f in data_files(a.data)])
        .select(pl.col("line").str.extract(case).str.split("+").alias("case"))
        .explode("case")
        .filter(pl.col("case").is_not_null())
        .group_by("case")
        .len()
        .sort("case")
        .collect()
    )
    events = oa.scan_dataset(dataset_path(a.work)).frames["events"].select(pl.len()).collect()
    report: dict[str, Any] = {
        "runs_with_awkward_case": dict(zip(covered["case"], covered["len"], strict=True)),
        "late_event_rows": int(events.item()),
    }
    for name in names:
        other = pl.read_parquet(out_path(a.work, name)).select(cols)
        j = pkg.join(other, on=keys, how="full", suffix="_b", coalesce=True)
        bad = j.filter(
            ~pl.col("outcome").eq_missing(pl.col("outcome_b"))
            | ~pl.col("attempts_to_acceptance").eq_missing(pl.col("attempts_to_acceptance_b"))
        )
        entry: dict[str, Any] = {
            "rows_package": pkg.height,
            "rows_baseline": other.height,
            "mismatches": bad.height,
        }
        if bad.height:
            entry["by_rule"] = dict(Counter(bad["rule"].to_list()).most_common(10))
            entry["by_outcomes"] = {
                f"{k[0]} vs {k[1]}": v
                for k, v in Counter(zip(bad["outcome"], bad["outcome_b"], strict=True)).most_common(
                    10
                )
            }
            where = bad.select("run_id").unique().head(2000).join(src, on="run_id")
            cases: Counter[str] = Counter()
            for (path,), g in where.group_by("source_path"):
                cases.update(_bench_case(str(path), g["source_line"].to_list()).values())
            entry["by_case_of_run"] = dict(cases.most_common(10))
            entry["examples"] = bad.head(5).to_dicts()
        report[name] = entry
    return report


# --------------------------------------------------------------------------
# Report


def machine() -> dict[str, str]:
    import duckdb
    import polars
    import pyarrow

    return {
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "polars": polars.__version__,
        "pyarrow": pyarrow.__version__,
        "duckdb": duckdb.__version__,
    }


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def ratios(figs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Same-run ratios; ``x_over_y`` is a ratio of wall times, ``_docs_per_s`` of throughputs."""
    s = {k: v["seconds"] for k, v in figs.items()}
    out: dict[str, float] = {}
    for base in ("duckdb_read_ndjson", "duckdb_read_ndjson_runid", "polars_decode"):
        if "package_ingest" in s and base in s:
            out[f"package_ingest_docs_per_s_vs_{base}"] = s[base] / s["package_ingest"]
    for pkg in ("package_accept", "package_rates"):
        for base in ("polars_handwritten", "duckdb_handwritten", "floor"):
            if pkg in s and base in s:
                out[f"{pkg}_time_over_{base}"] = s[pkg] / s[base]
    cpu = {k: v["cpu_s"] for k, v in figs.items() if v.get("cpu_s")}
    if "package_ingest" in cpu:
        for base in ("duckdb_read_ndjson", "duckdb_read_ndjson_runid", "polars_decode"):
            if base in cpu:
                out[f"package_ingest_cpu_over_{base}"] = cpu["package_ingest"] / cpu[base]
    for base in ("polars_handwritten", "duckdb_handwritten", "floor"):
        if "package_accept" in cpu and base in cpu:
            out[f"package_accept_cpu_over_{base}"] = cpu["package_accept"] / cpu[base]
    if "duckdb_handwritten" in s and "polars_handwritten" in s:
        out["duckdb_handwritten_time_over_polars_handwritten"] = (
            s["duckdb_handwritten"] / s["polars_handwritten"]
        )
    return out


def render(res: dict[str, Any]) -> str:
    docs, k = res["docs"], res["rules"]
    mb = res["bytes"] / 1e6
    lines = [
        f"### {docs:,} documents ({mb:,.0f} MB NDJSON), {k} alternative rules, "
        f"median of {res['repeat']}",
        "",
        f"Load: before `{res['load_before']}`; after `{res['load_after']}`.",
        "",
        "| figure | wall s (runs) | CPU s | throughput | peak RSS MB | rows |",
        "|---|---|---|---|---|---|",
    ]
    for name, f in res["figures"].items():
        sec = f["seconds"]
        if name in INGEST:
            tput = f"{docs / sec:,.0f} docs/s"
        elif name == "package_rates":
            tput = f"{docs * (k + 1) / sec:,.0f} run×rule/s"
        else:
            kk = k if name.endswith("handwritten") else k + 1
            tput = f"{docs * kk / sec:,.0f} run×rule/s"
        runs = ", ".join(f"{x:.1f}" for x in f["runs"])
        lines.append(
            f"| {name} | {sec:.2f} ({runs}) | {f.get('cpu_s', 0):.1f} | {tput} "
            f"| {f['peak_rss_mb']:,.0f} | {f['rows']:,} |"
        )
    lines += ["", "Ratios (same run):", ""]
    lines += [f"- {key}: {v:.2f}" for key, v in res["ratios"].items()]
    lines += ["", "Check against the package's outcomes (alternative rules):", ""]
    for name, c in res["check"].items():
        if not isinstance(c, dict) or "mismatches" not in c:
            continue
        verdict = "identical" if c["mismatches"] == 0 else f"{c['mismatches']:,} rows differ"
        lines.append(
            f"- {name}: {verdict} (outcome and attempts_to_acceptance; "
            f"{c['rows_baseline']:,} rows vs {c['rows_package']:,})"
        )
        for key in ("by_rule", "by_outcomes", "by_case_of_run"):
            if key in c:
                lines.append(f"  - {key}: {c[key]}")
    covered = res["check"].get("runs_with_awkward_case")
    if covered is not None:
        lines.append(
            "- runs with each awkward case of the generator: "
            + ", ".join(f"{k} {v:,}" for k, v in covered.items())
            + f"; late events apart from runs: {res['check']['late_event_rows']:,}"
        )
    ci = res.get("check_ingest")
    if ci:
        rows = "; ".join(
            f"{t} {v['duckdb']:,} vs {v['package']:,}" for t, v in ci.items() if t != "same_rows"
        )
        lines.append(f"- duckdb_read_ndjson rows against the package's tables: {rows}")
    if res["failed"]:
        lines += ["", "Failed: " + "; ".join(res["failed"].values())]
    lines += ["", "Machine: " + ", ".join(f"{a} {b}" for a, b in res["machine"].items())]
    if "package" in res:
        lines.append(f"Package: {res['package']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="folder of *.ndjson files")
    p.add_argument("--rules", type=Path, required=True, help="alternative rules (TOML)")
    p.add_argument("--work", type=Path, required=True, help="scratch folder")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--as-of", default=AS_OF)
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the .md and .json")
    p.add_argument(
        "--groups",
        default="ingest,evaluation",
        help="which groups of figures to run: ingest, evaluation (reads the dataset "
        "package_ingest wrote), or both (default)",
    )
    p.add_argument("--figure", choices=sorted(FIGURES), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.data, a.rules, a.work = a.data.resolve(), a.rules.resolve(), a.work.resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.figure:
        child(a)
        return 0

    files = data_files(a.data)
    size = sum(f.stat().st_size for f in files)
    for f in files:  # the same page cache for every ingest figure
        with f.open("rb") as fh:
            while fh.read(1 << 24):
                pass
    load_before = uptime()
    print(load_before, flush=True)
    figures: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    groups = set(a.groups.split(","))
    if "ingest" in groups:
        figures.update(measure(INGEST, a, failed))
    if "evaluation" in groups and (
        "package_ingest" in figures or dataset_path(a.work).exists()
    ):  # the evaluation reads the dataset package_ingest wrote
        figures.update(measure(EVALUATION, a, failed))
    names = [n for n in ("polars_handwritten", "duckdb_handwritten") if n in figures]
    res: dict[str, Any] = {
        "command": "python -m benchmarks.baselines "
        f"--data {a.data} --rules {a.rules} --work {a.work} --repeat {a.repeat} "
        f"--groups {a.groups}",
        "docs": max((f.get("docs", 0) for f in figures.values()), default=0)
        or runs_in_dataset(a.work),
        "bytes": size,
        "rules": len(read_rules(a.rules)),
        "repeat": a.repeat,
        "as_of": a.as_of,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": load_before,
        "load_after": uptime(),
        "machine": machine(),
        "package": package_state(),
        "figures": figures,
        "ratios": ratios(figures),
        "check": check(a, names) if "package_accept" in figures else {},
        "check_ingest": check_ingest(a)
        if {"duckdb_read_ndjson", "package_ingest"} <= set(figures)
        else {},
        "failed": failed,
    }
    text = render(res)
    print(text)
    a.results.mkdir(parents=True, exist_ok=True)
    stem = f"results-baselines{'' if 'ingest' in groups else '-eval'}-{res['docs']}"
    (a.results / f"{stem}.json").write_bytes(
        orjson.dumps(res, option=orjson.OPT_INDENT_2, default=str)
    )
    (a.results / f"{stem}.md").write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
