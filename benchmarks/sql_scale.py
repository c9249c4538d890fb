"""SQL at scale (#17): ``rates`` by a label through DuckDB beside ``oa.rates``, same figures.

``python -m benchmarks.sql_scale --dataset DS --rules RULES.toml --label team --work DIR``

Each side runs in its own process (peak RSS from ``wait4``; DuckDB and polars
run inside that process) and writes its rows to ``DIR``:

- ``engine``: ``oa.rates(DS, [RULES], by="label.<label>", as_of=…)``;
- ``sql``: ``sql/queries/rates_by_label.sql`` with ``ocp_label = <label>``
  through ``oa.connect`` with the same rules and ``as_of``, DuckDB's default
  settings (no memory limit set).

The parent then checks that both give the same rows: every count equal,
every rate and interval within 1e-9. Prints a Markdown table and writes
``results-sql-scale-<runs>.json`` into ``--results`` (default: ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from benchmarks import RESULTS
from benchmarks.child import run_child

AS_OF = "2026-12-01T00:00:00Z"
SIDES = ("engine", "sql")


def _side(name: str, ds: Path, rules: Path, label: str, out: Path) -> int:
    import ocp_analytics as oa

    if name == "engine":
        frame = oa.rates(ds, [rules], by=f"label.{label}", as_of=AS_OF)
    else:
        from ocp_analytics.sql import connect, sql_files

        con = connect(ds, rules=[rules], as_of=AS_OF)
        con.execute("SET VARIABLE ocp_label = ?", [label])
        query = (sql_files() / "queries" / "rates_by_label.sql").read_text()
        frame = pl.from_arrow(con.sql(query).to_arrow_table())  # type: ignore[assignment]
    frame.write_parquet(out)
    return frame.height


def _child(name: str, ds: Path, rules: Path, label: str, work: Path) -> dict[str, Any]:
    out = work / f"rates-{name}.parquet"
    args = ["--child", name, str(ds), str(rules), label, str(out)]
    result, usage, wall = run_child("benchmarks.sql_scale", args, f"side {name}")
    return {
        "seconds": result["seconds"],
        "process_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "rows": result["rows"],
        "out": str(out),
    }


def same_rows(a: pl.DataFrame, b: pl.DataFrame) -> list[str]:
    """Differences between two rates frames (empty when the same), floats within 1e-9."""
    keys = ["rule", next(c for c in a.columns if c.startswith("label."))]
    if sorted(a.columns) != sorted(b.columns):
        return [f"columns differ: {sorted(set(a.columns) ^ set(b.columns))}"]
    a, b = a.sort(keys, nulls_last=True), b.select(a.columns).sort(keys, nulls_last=True)
    if a.height != b.height:
        return [f"{a.height} rows against {b.height}"]
    problems = []
    for col in a.columns:
        for i, (x, y) in enumerate(zip(a[col].to_list(), b[col].to_list(), strict=True)):
            if isinstance(x, float) and isinstance(y, float):
                if math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                    continue
            elif x == y:
                continue
            problems.append(f"row {i} column {col}: {x!r} against {y!r}")
    return problems[:20]


def main(argv: list[str] | None = None) -> int:
    """Time both sides and compare their rows."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--child":
        name, ds, rules, label, out = args[1], Path(args[2]), Path(args[3]), args[4], Path(args[5])
        start = time.perf_counter()
        rows = _side(name, ds, rules, label, out)
        print(orjson.dumps({"seconds": time.perf_counter() - start, "rows": rows}).decode())
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks.sql_scale")
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--rules", type=Path, required=True)
    p.add_argument("--label", default="team")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the .json")
    a = p.parse_args(args)
    a.work.mkdir(parents=True, exist_ok=True)
    import ocp_analytics as oa

    runs = oa.scan_dataset(a.dataset).runs.select(pl.len()).collect().item()
    results: dict[str, Any] = {"runs": runs, "label": a.label, "as_of": AS_OF}
    for side in SIDES:
        results[side] = _child(side, a.dataset, a.rules, a.label, a.work)
        print(f"{side}: {results[side]}", file=sys.stderr)
    engine = pl.read_parquet(results["engine"]["out"])
    sql = pl.read_parquet(results["sql"]["out"])
    results["differences"] = same_rows(engine, sql)
    results["ratio_time"] = results["sql"]["seconds"] / results["engine"]["seconds"]
    results["ratio_memory"] = results["sql"]["peak_rss_mb"] / results["engine"]["peak_rss_mb"]
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"results-sql-scale-{runs}.json").write_bytes(
        orjson.dumps(results, option=orjson.OPT_INDENT_2)
    )
    print(markdown(results))
    return 0 if not results["differences"] else 1


def markdown(results: dict[str, Any]) -> str:
    """The two sides as a Markdown table, with the check."""
    lines = [
        f"{results['runs']:,} runs, rates by label {results['label']!r}, as_of {results['as_of']}",
        "",
        "| side | wall s | CPU s | peak RSS MB | rows |",
        "|---|---|---|---|---|",
    ]
    for side in SIDES:
        r = results[side]
        lines.append(
            f"| {side} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
            f"{r['peak_rss_mb']:,.0f} | {r['rows']:,} |"
        )
    diff = results["differences"]
    lines += [
        "",
        f"SQL / engine: time {results['ratio_time']:.2f}, memory {results['ratio_memory']:.2f}; "
        + ("same rows (counts equal, rates within 1e-9)" if not diff else f"DIFFER: {diff}"),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
