"""One benchmark figure, run in its own process so its peak RSS is its own.

``python -m benchmarks.figure NAME DATA_DIR WORK_DIR [RULES_FILE]`` prints one
JSON line: ``{"seconds": wall, "rows": n}``. The parent (``run.py``) reads
the child's peak RSS from ``wait4``; ``tree_peak_mb`` is the peak of RSS of
the child (its worker threads included) plus any processes it starts,
sampled every 0.1 s (shared pages of child processes would count twice).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

# First, as the command line does: importing ocp_analytics before polars sets
# polars' allocator (ocp_analytics/_allocator.py). Every figure of this
# process, the plain polars and DuckDB baselines too, runs with that setting.
import ocp_analytics  # noqa: F401

# isort: split
import polars as pl


def _files(data: Path) -> list[Path]:
    return sorted(data.glob("part-*.ndjson*"))


def decode_floor(data: Path, work: Path, rules: Path | None) -> int:
    """polars decoding the same NDJSON into the declared dtype: no flattening, no writes."""
    from ocp_analytics.schemas import DOCUMENT_DTYPE

    n = 0
    for f in _files(data):
        frame = (
            pl.scan_lines(f)
            .select(pl.col("line").str.json_decode(DOCUMENT_DTYPE).alias("doc"))
            # Use the decoded value so the decode is not optimised away.
            .select(pl.col("doc").is_not_null().sum())
            .collect()
        )
        n += int(frame.item())
    return n


def ingest(data: Path, work: Path, rules: Path | None) -> int:
    import ocp_analytics as oa

    summary = oa.ingest(data, work / "ds")
    assert summary.reconciles
    return summary.documents_read


def _alt(rules: Path | None) -> Any:
    return [rules] if rules else None


def accept(data: Path, work: Path, rules: Path | None) -> int:
    """Every (run, rule) row written to Parquet, as ``accept --format parquet`` does."""
    import ocp_analytics as oa

    out = work / "acceptance.parquet"
    rows = oa.write_acceptance(work / "ds", out, _alt(rules), recorded=rules is None, as_of=AS_OF)
    out.unlink()
    return rows


def rates(data: Path, work: Path, rules: Path | None) -> int:
    import ocp_analytics as oa

    return oa.rates(work / "ds", _alt(rules), by=["label.team"], as_of=AS_OF).height


def report(data: Path, work: Path, rules: Path | None) -> int:
    """The nightly report by team over the last 30 days: page, charts and data files."""
    import ocp_analytics as oa

    files = oa.report(
        work / "ds",
        _alt(rules),
        by="label.team",
        since="30d",
        as_of=AS_OF,
        out=work / "report.html",
    )
    index = orjson.loads((files.data_dir / "index.json").read_bytes())
    return sum(int(f["rows"]) for f in index["figures"].values())


def sql_accept(data: Path, work: Path, rules: Path | None) -> int:
    from ocp_analytics.sql import connect

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    where = "WHERE rule <> 'recorded'" if rules else "WHERE rule = 'recorded'"
    out = work / "acceptance-sql.parquet"
    con.sql(f"SELECT * FROM acceptance {where}").write_parquet(str(out))  # noqa: S608
    rows = int(
        con.sql("SELECT count(*) FROM read_parquet($p)", params={"p": str(out)}).fetchall()[0][0]
    )
    out.unlink()
    return rows


def sql_rates(data: Path, work: Path, rules: Path | None) -> int:
    from ocp_analytics.sql import connect

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    return int(con.sql("SELECT * FROM rates").to_arrow_table().num_rows)


def accept_all(data: Path, work: Path, rules: Path | None) -> int:
    """``accept --format parquet``: the recorded rules and every alternative rule, written."""
    import ocp_analytics as oa

    out = work / "acceptance-all.parquet"
    rows = oa.write_acceptance(work / "ds", out, _alt(rules), recorded=True, as_of=AS_OF)
    out.unlink()
    return rows


def sql_copy(data: Path, work: Path, rules: Path | None) -> int:
    """``COPY (SELECT * FROM acceptance) TO '….parquet'``: every (run, rule) row, as issue #17."""
    from ocp_analytics.sql import connect

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    out = work / "acceptance-copy.parquet"
    # the relation's write_parquet is DuckDB's COPY … TO, with the path as a value
    con.sql("SELECT * FROM acceptance").write_parquet(str(out))
    rows = int(
        con.sql("SELECT count(*) FROM read_parquet($p)", params={"p": str(out)}).fetchall()[0][0]
    )
    out.unlink()
    return rows


def sql_rates_label(data: Path, work: Path, rules: Path | None) -> int:
    """``sql/queries/rates_by_label.sql`` by label team: the twin of the ``rates`` figure."""
    from ocp_analytics.sql import connect, sql_files

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    con.execute("SET VARIABLE ocp_label = 'team'")
    query = (sql_files() / "queries" / "rates_by_label.sql").read_text()
    return int(con.sql(query).to_arrow_table().num_rows)


def reference(data: Path, work: Path, rules: Path | None) -> int:
    """The per-document reference evaluator over the first REFERENCE_DOCS documents."""
    import tomllib

    from ocp_analytics.engine.timeaxis import resolve_as_of
    from tests import reference as ref

    rule_list = tomllib.loads(rules.read_text())["rule"] if rules else []
    as_of = resolve_as_of(AS_OF)
    n = 0
    for f in _files(data):
        for line in f.read_bytes().splitlines():
            doc = orjson.loads(line)
            for r in rule_list:
                ref.evaluate(doc, r, as_of)
            n += 1
            if n >= REFERENCE_DOCS:
                return n
    return n


AS_OF = "2026-12-01T00:00:00Z"
REFERENCE_DOCS = 20_000
FIGURES = {
    "decode_floor": decode_floor,
    "ingest": ingest,
    "accept": accept,
    "rates": rates,
    "report": report,
    "sql_accept": sql_accept,
    "sql_rates": sql_rates,
    "accept_all": accept_all,
    "sql_copy": sql_copy,
    "sql_rates_label": sql_rates_label,
    "reference": reference,
}


def _sample_tree_rss(stop: threading.Event, peak: list[int]) -> None:
    """Peak RSS of this process plus any child processes (worker pools)."""
    import psutil

    me = psutil.Process()
    while not stop.wait(0.1):
        total = 0
        for p in [me, *me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        peak[0] = max(peak[0], total)


if __name__ == "__main__":
    name, data_dir, work_dir = sys.argv[1:4]
    rules_file = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
    stop, tree_peak = threading.Event(), [0]
    sampler = threading.Thread(target=_sample_tree_rss, args=(stop, tree_peak), daemon=True)
    sampler.start()
    start = time.perf_counter()
    rows = FIGURES[name](Path(data_dir), Path(work_dir), rules_file)
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    result = {"seconds": seconds, "rows": rows, "tree_peak_mb": tree_peak[0] / 2**20}
    print(orjson.dumps(result).decode())
