"""Smoke test of benchmarks/baselines.py on ~200 generated documents: every figure
runs, one in a fresh process as the script runs them, and the hand-written polars and
DuckDB queries give the package's outcomes and attempts_to_acceptance."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import baselines as b  # noqa: E402
from benchmarks.generate import write_ndjson, write_rules  # noqa: E402


def test_baselines_smoke(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_ndjson(data, 200, seed=3, chunk_docs=120)  # two files
    rules = write_rules(tmp_path / "rules.toml", 6, seed=3)
    a = argparse.Namespace(data=data, rules=rules, work=tmp_path / "work", as_of=b.AS_OF)
    a.work.mkdir()

    figures = {}
    for name in (*b.INGEST, *b.EVALUATION):  # in this process, to stay fast
        start = time.perf_counter()
        result = b.FIGURES[name](a)
        figures[name] = {
            "seconds": time.perf_counter() - start,
            "runs": [0.0],
            "peak_rss_mb": 0.0,
            **result,
        }
    assert {figures[n]["docs"] for n in b.INGEST} == {200}
    assert figures["package_accept"]["rows"] == figures["floor"]["rows"] == 200 * 7
    assert figures["polars_handwritten"]["rows"] == figures["duckdb_handwritten"]["rows"] == 1200

    # an evaluation-only run counts the documents of the dataset it reads
    assert b.runs_in_dataset(a.work) == 200
    assert b.runs_in_dataset(tmp_path / "nowhere") == 0

    fresh = b.run_figure("polars_decode", a)  # the script's own path: a child process
    assert fresh["rows"] == 200
    assert fresh["peak_rss_mb"] > 0 and fresh["process_s"] >= fresh["seconds"]

    check = b.check(a, ["polars_handwritten", "duckdb_handwritten"])
    assert check["late_event_rows"] == 0
    assert sum(check["runs_with_awkward_case"].values()) > 0
    for name in ("polars_handwritten", "duckdb_handwritten"):
        c = check[name]
        assert c["mismatches"] == 0, (name, c)
        assert c["rows_baseline"] == c["rows_package"] == 1200

    res = {
        "docs": 200,
        "bytes": 1,
        "rules": 6,
        "repeat": 1,
        "load_before": "-",
        "load_after": "-",
        "figures": figures,
        "ratios": b.ratios(figures),
        "check": check,
        "failed": {},
        "machine": b.machine(),
    }
    assert "package_accept_time_over_duckdb_handwritten" in res["ratios"]
    assert "duckdb_handwritten: identical" in b.render(res)
