"""One benchmark figure, run in its own process so its peak RSS is its own.

``python -m benchmarks.figure NAME DATA_DIR WORK_DIR [RULES_FILE]`` prints one
JSON line: ``{"seconds": wall, "rows": n}``. The parent (``run.py``) reads
the child's peak RSS from ``wait4``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
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
    import ocp_analytics as oa

    frame = oa.acceptance(work / "ds", _alt(rules), recorded=rules is None, as_of=AS_OF)
    return frame.collect().height


def rates(data: Path, work: Path, rules: Path | None) -> int:
    import ocp_analytics as oa

    return oa.rates(work / "ds", _alt(rules), by=["label.team"], as_of=AS_OF).collect().height


def sql_accept(data: Path, work: Path, rules: Path | None) -> int:
    from ocp_analytics.sql import connect

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    where = "WHERE rule <> 'recorded'" if rules else "WHERE rule = 'recorded'"
    table = con.sql(f"SELECT * FROM acceptance {where}").to_arrow_table()  # noqa: S608
    return int(table.num_rows)


def sql_rates(data: Path, work: Path, rules: Path | None) -> int:
    from ocp_analytics.sql import connect

    con = connect(work / "ds", rules=_alt(rules), as_of=AS_OF)
    return int(con.sql("SELECT * FROM rates").to_arrow_table().num_rows)


def reference(data: Path, work: Path, rules: Path | None) -> int:
    """The per-document reference evaluator over the first REFERENCE_DOCS documents."""
    import tomllib

    from ocp_analytics.acceptance import resolve_as_of
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
    "sql_accept": sql_accept,
    "sql_rates": sql_rates,
    "reference": reference,
}

if __name__ == "__main__":
    name, data_dir, work_dir = sys.argv[1:4]
    rules_file = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
    start = time.perf_counter()
    rows = FIGURES[name](Path(data_dir), Path(work_dir), rules_file)
    seconds = time.perf_counter() - start
    print(orjson.dumps({"seconds": seconds, "rows": rows}).decode())
