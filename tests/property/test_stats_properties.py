"""Properties of the statistics of issue #37 on generated counts and runs.

Each property holds a statistic to an independent reference (scipy,
statsmodels, exact rational arithmetic, one evaluation per target) or to an
invariant a correct implementation cannot break (bounds, symmetry, partials
that add up across any split of the runs).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from ocp_analytics.engine.features import FAIL, PASS, UNKNOWN, score_state
from ocp_analytics.engine.stats import (
    cluster_partials,
    cluster_rates,
    cost_partials,
    cost_per_accepted,
    holm,
    mcnemar_pvalues,
    newcombe_difference,
    paired_difference,
    pass_at_k,
    sweep,
)
from tests.conftest import examples

SETTINGS = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
counts = st.integers(0, 400)
tables = st.tuples(counts, counts, counts, counts).filter(lambda t: sum(t) > 0)


@SETTINGS
@given(st.lists(tables, min_size=1, max_size=20))
def test_paired_interval_holds_its_estimate_within_minus_1_and_1(
    rows: list[tuple[int, ...]],
) -> None:
    frame = pl.DataFrame(rows, schema=list("abcd"), orient="row")
    a, b, c, d_ = (pl.col(x) for x in "abcd")
    d = paired_difference(a, b, c, d_)
    swapped = paired_difference(a, c, b, d_)
    got = frame.select(
        d.estimate.alias("e"),
        d.low.alias("lo"),
        d.high.alias("hi"),
        swapped.low.alias("slo"),
        swapped.high.alias("shi"),
    )
    for e, lo, hi, slo, shi in got.rows():
        assert -1 - 1e-12 <= lo <= e <= hi <= 1 + 1e-12
        # B against A is the mirror image of A against B
        assert (slo, shi) == pytest.approx((-hi, -lo), abs=1e-12)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(1, 500), st.integers(1, 500), st.floats(0, 1), st.floats(0, 1)),
        min_size=1,
        max_size=20,
    )
)
def test_unpaired_interval_matches_statsmodels(cells: list[tuple[int, int, float, float]]) -> None:
    rows = [(round(p * n1), n1, round(q * n2), n2) for n1, n2, p, q in cells]
    frame = pl.DataFrame(rows, schema=["x1", "n1", "x2", "n2"], orient="row")
    d = newcombe_difference(pl.col("x1"), pl.col("n1"), pl.col("x2"), pl.col("n2"))
    got = frame.select(d.low.alias("lo"), d.high.alias("hi")).rows()
    for (x1, n1, x2, n2), (lo, hi) in zip(rows, got, strict=True):
        ref = confint_proportions_2indep(x2, n2, x1, n1, method="newcomb", compare="diff")
        assert (lo, hi) == pytest.approx(tuple(map(float, ref)), abs=1e-12)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=30))
def test_mcnemar_is_symmetric_and_exact_below_25(pairs: list[tuple[int, int]]) -> None:
    b, c = (np.array(x) for x in zip(*pairs, strict=True))
    p = mcnemar_pvalues(b, c)
    np.testing.assert_array_equal(p, mcnemar_pvalues(c, b))
    assert ((p >= 0) & (p <= 1)).all()
    for (bi, ci), pi in zip(pairs, p, strict=True):
        if 0 < bi + ci < 25:
            assert pi == pytest.approx(sps.binomtest(bi, bi + ci, 0.5).pvalue, rel=1e-9)


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=40))
def test_holm_matches_statsmodels_and_never_lowers_a_p_value(values: list[float | None]) -> None:
    series = pl.Series("p", values, dtype=pl.Float64)
    got = pl.DataFrame(series).select(holm(pl.col("p")))["p"]
    known = np.array([v for v in values if v is not None])
    assert got.null_count() == len(values) - len(known)
    if len(known):
        expected = multipletests(known, method="holm")[1]
        np.testing.assert_allclose(got.drop_nulls().to_numpy(), expected, rtol=1e-12, atol=1e-15)
        assert (got.drop_nulls().to_numpy() >= known - 1e-15).all()


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(1, 300), st.floats(0, 1)), min_size=1, max_size=10),
    st.integers(1, 12),
)
def test_pass_at_k_is_the_exact_ratio_of_binomial_coefficients(
    tasks: list[tuple[int, float]], k_max: int
) -> None:
    rows = [(n, round(f * n)) for n, f in tasks]
    frame = pl.DataFrame(rows, schema=["decided", "accepted"], orient="row").with_row_index("task")
    got = pass_at_k(frame, k_max).sort("task", "k")
    for (task, k), at, hat in zip(
        got.select("task", "k").rows(), got["pass_at_k"], got["pass_hat_k"], strict=True
    ):
        n, c = rows[task]
        if k > n:
            assert (at, hat) == (None, None)
            continue
        assert at == pytest.approx(
            float(1 - Fraction(math.comb(n - c, k), math.comb(n, k))), abs=1e-12
        )
        assert hat == pytest.approx(float(Fraction(math.comb(c, k), math.comb(n, k))), abs=1e-12)
    by_task = got.drop_nulls("pass_at_k").group_by("task")
    # one more try never lowers pass@k nor raises pass^k
    assert by_task.agg((pl.col("pass_at_k").diff() >= -1e-12).all())["pass_at_k"].all()
    assert by_task.agg((pl.col("pass_hat_k").diff() <= 1e-12).all())["pass_hat_k"].all()


runs_drawn = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]),  # group
        st.sampled_from(["t1", "t2", "t3", "t4", None]),  # cluster
        st.sampled_from(["accepted", "rejected", "unknown"]),
        st.one_of(st.none(), st.floats(0, 10)),  # cost
    ),
    min_size=1,
    max_size=80,
)


@SETTINGS
@given(runs_drawn, st.integers(1, 80))
def test_cluster_and_cost_partials_add_up_across_any_split(rows: list[tuple], cut: int) -> None:
    runs = pl.DataFrame(rows, schema=["team", "task_id", "outcome", "cost"], orient="row")
    parts = [runs[:cut], runs[cut:]]
    by = ["team"]
    whole = cluster_rates(cluster_partials(runs, by, "task_id"), by, "task_id").sort("team")
    split = pl.concat([cluster_partials(p, by, "task_id") for p in parts], how="vertical_relaxed")
    sliced = cluster_rates(split, by, "task_id").sort("team")
    assert_frame_equal(whole, sliced, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)
    whole_cost = cost_per_accepted(cost_partials(runs, by, "cost"), by).sort("team")
    split_cost = pl.concat([cost_partials(p, by, "cost") for p in parts], how="vertical_relaxed")
    sliced_cost = cost_per_accepted(split_cost, by).sort("team")
    assert_frame_equal(whole_cost, sliced_cost, check_exact=False, rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.one_of(st.none(), st.just(float("nan")), st.integers(0, 6).map(float)),
            st.sampled_from([PASS, UNKNOWN, FAIL]),
        ),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from(["higher", "lower"]),
)
def test_sweep_equals_one_evaluation_per_target(rows: list[tuple], better: str) -> None:
    runs = pl.DataFrame(rows, schema=["team", "value", "rest"], orient="row").cast(
        {"rest": pl.Int8}
    )
    got = sweep(runs, better, ["team"])  # type: ignore[arg-type]
    for row in got.iter_rows(named=True):
        part = runs.filter(pl.col("team") == row["team"])
        score = score_state(pl.col("value"), row["target"], better == "lower")
        rest = pl.col("rest")
        judged = part.select(
            ((rest == PASS) & (score == PASS)).sum().alias("accepted"),
            ((rest == FAIL) | (score == FAIL)).sum().alias("rejected"),
        )
        assert (row["accepted"], row["rejected"]) == judged.row(0)
        assert row["runs"] == part.height
    finite = runs.filter(pl.col("value").is_not_nan()).drop_nulls("value")
    assert got.height == finite.select("team", "value").unique().height
