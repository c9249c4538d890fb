"""Scale checks (``-m slow``): 200,000 generated runs over three batches.

Correctness only (timings and memory are measured in ``benchmarks/``): the
ingest reconciles, reingesting changes nothing, and sliced evaluation (rates
and the acceptance file) equals one pass over every run.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from benchmarks.generate import write_ndjson, write_rules

pytestmark = pytest.mark.slow
AS_OF = "2027-01-01T00:00:00Z"
N = 200_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("scale")
    write_ndjson(tmp / "src", N, seed=11, chunk_docs=25_000, workers=2)
    summary = oa.ingest(tmp / "src", tmp / "ds", commit_docs=60_000)
    assert summary.reconciles and summary.documents_read == N
    assert len(summary.batches) == 3  # committed at file boundaries past 60k: 75k, 150k, 200k
    return tmp / "ds", write_rules(tmp / "rules.toml", 20, seed=11)


def test_reingest_changes_nothing(big: tuple[Path, Path]) -> None:
    ds, _ = big
    again = oa.ingest(ds.parent / "src", ds)
    assert again.documents_read == 0
    assert oa.scan_dataset(ds).runs.select(pl.len()).collect().item() == N


def test_sliced_rates_equal_one_slice(big: tuple[Path, Path]) -> None:
    ds, rules = big
    by = ["label.team"]
    many = oa.rates(ds, rules, by=by, as_of=AS_OF, slice_runs=30_000)
    one = oa.rates(ds, rules, by=by, as_of=AS_OF, slice_runs=10 * N)
    assert_frame_equal(many, one)
    assert many.filter(pl.col("rule") == "recorded")["runs"].sum() == N


def test_sliced_acceptance_file_has_every_row(big: tuple[Path, Path]) -> None:
    ds, rules = big
    out = ds.parent / "acc.parquet"
    rows = oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=45_000)
    assert rows == N * 21
    counts = pl.scan_parquet(out).group_by("rule").len().collect()
    assert counts.get_column("len").to_list() == [N] * 21
    want = oa.acceptance(ds, rules, as_of=AS_OF).filter(pl.col("rule") == "recorded")
    got = pl.scan_parquet(out).filter(pl.col("rule") == "recorded")
    assert_frame_equal(got.sort("run_id").collect(), want.sort("run_id"))
