"""sql/queries/flips.sql is held to the engine's flips (issue #37): counts and statistics.

The query gives every column of ``oa.compare``'s flips without groups:
the counts exactly, the difference, its interval, McNemar's p-value (its
exact binomial tail from ``binom()``, its chi-square tail from a series and
a continued fraction of ``erfc``, DuckDB having neither) and Holm's
adjustment to 1e-12. On the bundled examples, on generated documents, and
on acceptance rows drawn so that both forms of McNemar's test and large
statistics occur. The literal cases of the query are in tests/data/sql/
(``flips.json``, ``flips_sample.json``, run by tests/test_sql.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.engine.flips import flips_from
from ocp_analytics.schemas import FLIP_SCHEMA
from ocp_analytics.sql import connect, run_query, sql_files
from tests.conftest import AS_OF

FLIPS_SQL = sql_files() / "queries" / "flips.sql"
RULES = ["tests", "tests+review", "runtime_s<=3600", "review"]


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    return bool(got == want)


def assert_same_flips(sql: pl.DataFrame, engine: pl.DataFrame) -> None:
    """Same columns and rows; counts equal, doubles within 1e-12 (relative or absolute)."""
    assert sql.columns == engine.columns == list(FLIP_SCHEMA)
    assert sql.height == engine.height
    for got, want in zip(sql.iter_rows(named=True), engine.iter_rows(named=True), strict=True):
        for col in sql.columns:
            assert _same(got[col], want[col]), (want["rule_a"], want["rule_b"], col, got, want)


def test_flips_query_equals_compare_on_the_examples(examples_dataset: Path) -> None:
    sql = run_query(examples_dataset, FLIPS_SQL, rules=RULES, as_of=AS_OF)
    _, flips = oa.compare(examples_dataset, RULES, as_of=AS_OF)
    assert_same_flips(sql, flips)


def test_flips_query_equals_compare_on_generated_runs(
    generated: tuple[Path, Path],
) -> None:
    ds, rules = generated
    sql = run_query(ds, FLIPS_SQL, rules=[rules], as_of=AS_OF, variables={"ocp_sample": 2})
    _, flips = oa.compare(ds, [rules], as_of=AS_OF, sample=2, slice_runs=300)
    engine = flips
    assert set(engine["p_method"].drop_nulls()) == {"exact", "chi2-cc"}
    assert_same_flips(sql, engine)


# ------------------------------------------- the query over drawn acceptance rows


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the package's views and macros (over the examples)."""
    ds = tmp_path_factory.mktemp("examples") / "ds"
    oa.ingest(Path(__file__).parent / "data" / "examples" / "v0.3", ds)
    connection = connect(ds, as_of=AS_OF)
    yield connection
    connection.close()


def _over(con: duckdb.DuckDBPyConnection, acc: pl.DataFrame) -> pl.DataFrame:
    """flips.sql with its acceptance rows read from ``acc`` instead of the view."""
    text = FLIPS_SQL.read_text()
    assert text.count("FROM acceptance\n") == 1
    con.register("drawn_acceptance", acc.to_arrow())
    try:
        return con.sql(text.replace("FROM acceptance\n", "FROM drawn_acceptance\n")).pl()
    finally:
        con.unregister("drawn_acceptance")


def _drawn(runs: int, shares: dict[str, tuple[float, float]], seed: int) -> pl.DataFrame:
    """Acceptance rows of ``runs`` runs: per rule, the chances of accepted and rejected."""
    rng = np.random.default_rng(seed)
    words = np.array(["accepted", "rejected", "unknown"])
    frames = []
    for rule, (acc, rej) in shares.items():
        chances = np.array([acc, rej, max(0.0, 1 - acc - rej)])
        drawn = rng.choice(3, runs, p=chances / chances.sum())
        frames.append(
            pl.DataFrame(
                {
                    "run_id": [f"r{i:05d}" for i in range(runs)],
                    "rule": rule,
                    "outcome": words[drawn],
                }
            )
        )
    return pl.concat(frames)


@pytest.mark.parametrize(
    ("runs", "shares"),
    [
        # near-equal bars: many discordant runs, small statistics (the series of erfc)
        (400, {"p": (0.5, 0.4), "q": (0.52, 0.38), "s": (0.45, 0.45)}),
        # far-apart bars: large statistics (the continued fraction), tiny p-values
        (3000, {"p": (0.9, 0.1), "q": (0.3, 0.7), "s": (0.6, 0.3)}),
        # a few runs: the exact test; a rule that decides nothing: no test
        (30, {"p": (0.6, 0.3), "q": (0.4, 0.4), "never": (0.0, 0.0)}),
    ],
)
def test_flips_query_equals_the_engine_on_drawn_rows(
    con: duckdb.DuckDBPyConnection, runs: int, shares: dict[str, tuple[float, float]]
) -> None:
    acc = _drawn(runs, shares, seed=runs)
    sql = _over(con, acc)
    engine = flips_from(acc.lazy()).collect()
    assert_same_flips(sql, engine)
    assert engine["p_value"].null_count() == (4 if "never" in shares else 0)


def test_flips_query_p_values_are_relatively_exact(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Tiny p-values too: the chi-square tail holds to scipy relatively, not only to 1e-12."""
    acc = _drawn(3000, {"p": (0.9, 0.1), "q": (0.3, 0.7), "s": (0.6, 0.3)}, seed=5)
    sql, engine = _over(con, acc), flips_from(acc.lazy()).collect()
    got, want = sql["p_value"].to_numpy(), engine["p_value"].to_numpy()
    shown = want > 0  # below about 1e-308 both are 0
    assert np.all(got[~shown] == 0)
    assert want[shown].min() < 1e-30
    assert np.all(np.abs(got[shown] / want[shown] - 1) < 1e-11), (got, want)
