"""``sql/queries/rates_by_period.sql`` holds to ``oa.rates(..., period=...)`` (issue #10).

The literal case is ``tests/data/sql/rates_by_period.json`` (also run by
``tests/test_sql.py``); here the same case goes through the polars engine,
and both engines meet on generated documents, for every period and window.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import ocp_analytics as oa
from benchmarks.generate import write_ndjson, write_rules
from ocp_analytics.sql import run_query, sql_files

CASE = Path(__file__).parent / "data" / "sql" / "rates_by_period.json"
QUERY = sql_files() / "queries" / "rates_by_period.sql"
AS_OF = "2026-12-01T00:00:00Z"


def _plain(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime) else v


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in r.items()} for r in frame.iter_rows(named=True)]


def _assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    for g, w in zip(got, want, strict=True):
        assert list(g) == list(w), "columns differ"
        for col, value in w.items():
            if isinstance(value, float) and isinstance(g[col], float):
                assert math.isclose(g[col], value, rel_tol=1e-12, abs_tol=1e-12), (w, col)
            else:
                assert g[col] == value, f"row {w}: column {col} is {g[col]!r}"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("period")
    write_ndjson(root / "docs", 2000, seed=7)
    oa.ingest(root / "docs", root / "ds")
    return root / "ds", write_rules(root / "rules.toml", 3, seed=7)


def test_literal_case_through_the_engine(tmp_path: Path) -> None:
    case = json.loads(CASE.read_text())
    src = tmp_path / "docs.ndjson"
    src.write_bytes(b"\n".join(orjson.dumps(d) for d in case["documents"]) + b"\n")
    oa.ingest(src, tmp_path / "ds")
    v = case["variables"]
    frame = oa.rates(
        tmp_path / "ds",
        as_of=case["as_of"],
        period=v["ocp_period"],
        since=v.get("ocp_since"),
        until=v.get("ocp_until"),
    )
    _assert_same(_rows(frame), case["expected"])


# The generated runs end from June to November 2026: an as_of in September
# leaves runs (and signals) after it, which a point-in-time as_of sets aside.
MID_AS_OF = "2026-09-01T00:00:00Z"


@pytest.mark.parametrize(
    ("period", "since", "until", "as_of"),
    [
        ("day", "30d", None, AS_OF),
        ("week", "2026-06-01T00:00:00Z", "2026-09-01T00:00:00Z", AS_OF),
        ("month", None, None, AS_OF),
        ("week", "60d", None, MID_AS_OF),
        ("month", None, None, MID_AS_OF),
    ],
)
def test_sql_equals_engine_on_generated_documents(
    generated: tuple[Path, Path], period: str, since: str | None, until: str | None, as_of: str
) -> None:
    ds, rules = generated
    lo, hi = oa.resolve_window(since, until, as_of)
    engine = oa.rates(ds, [rules], as_of=as_of, period=period, since=since, until=until)
    sql = run_query(
        ds,
        QUERY,
        rules=[rules],
        as_of=as_of,
        variables={"ocp_period": period, "ocp_since": lo, "ocp_until": hi},
    )
    got = engine.sort("period", "rule")
    assert got.height > 3
    _assert_same(_rows(sql), _rows(got))
    if since is not None and until is None:  # the window ends at as_of (SEMANTICS §10)
        assert hi == datetime.fromisoformat(as_of)
        assert got["period"].max() < hi  # type: ignore[operator]


def test_runs_with_no_time_have_a_null_period_without_a_window(tmp_path: Path) -> None:
    """Four bundled examples have neither ended_at nor started_at."""
    oa.ingest(Path(__file__).parent / "data" / "examples", tmp_path / "ds")
    as_of = "2027-01-01T00:00:00Z"
    engine = oa.rates(tmp_path / "ds", "tests+review", as_of=as_of, period="week")
    sql = run_query(
        tmp_path / "ds", QUERY, rules="tests+review", as_of=as_of, variables={"ocp_period": "week"}
    )
    _assert_same(_rows(sql), _rows(engine))
    untimed = sql.filter(pl.col("period").is_null())
    assert untimed.select("rule", "runs").rows() == [("recorded", 4), ("tests+review", 4)]
    windowed = run_query(
        tmp_path / "ds",
        QUERY,
        as_of=as_of,
        variables={"ocp_period": "week", "ocp_since": datetime.fromisoformat("2026-01-01T00:00Z")},
    )
    assert windowed["period"].null_count() == 0


def test_unknown_period_is_refused_with_a_hint(generated: tuple[Path, Path]) -> None:
    with pytest.raises(Exception, match="Hint: SET VARIABLE ocp_period"):
        run_query(generated[0], QUERY, as_of=AS_OF, variables={"ocp_period": "year"})
