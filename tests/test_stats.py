"""Statistics of issue #37 held to independent references.

Each statistic meets a reference it shares no code with: published worked
examples (Newcombe 1998, both papers), scipy.stats and statsmodels (test
dependencies only), brute-force enumeration (pass@k) or a plain per-target
evaluation (threshold sweeps).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from polars.testing import assert_frame_equal
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from ocp_analytics.engine.features import FAIL, PASS, UNKNOWN, score_state
from ocp_analytics.engine.stats import (
    change_call,
    cluster_partials,
    cluster_rates,
    cost_partials,
    cost_per_accepted,
    holm,
    mcnemar,
    mcnemar_method,
    mcnemar_pvalues,
    newcombe_difference,
    paired_difference,
    pass_at_k,
    pass_at_k_by,
    sweep,
    target_for_rate,
    task_counts,
)
from ocp_analytics.exceptions import OcpAnalyticsError

ABCD = (pl.col("a"), pl.col("b"), pl.col("c"), pl.col("d"))


def _paired(tables: Sequence[tuple[int, ...]]) -> list[tuple[float, float, float]]:
    frame = pl.DataFrame(tables, schema=list("abcd"), orient="row")
    d = paired_difference(*ABCD)
    return frame.select(d.estimate.alias("e"), d.low.alias("lo"), d.high.alias("hi")).rows()


def _unpaired(cells: list[tuple[int, int, int, int]]) -> list[tuple[float, float, float]]:
    """(new accepted, new decided, base accepted, base decided) → (estimate, low, high)."""
    frame = pl.DataFrame(cells, schema=["x2", "n2", "x1", "n1"], orient="row")
    d = newcombe_difference(pl.col("x1"), pl.col("n1"), pl.col("x2"), pl.col("n2"))
    return frame.select(d.estimate.alias("e"), d.low.alias("lo"), d.high.alias("hi")).rows()


# -- paired difference: Newcombe (1998), "... based on paired data", method 10 --------------------

# Table III of the paper, method 10 (the 95 % limits, four decimals), and the
# worked example of Fagerland, Lydersen and Laake (2017), "Statistical analysis
# of contingency tables", ch. 8 (Cavo et al. 2012: 59, 6, 16, 80).
NEWCOMBE_PAIRED = [
    ((36, 12, 2, 0), (0.0569, 0.3404)),
    ((20, 12, 2, 16), (0.0562, 0.3292)),
    ((18, 12, 2, 18), (0.0562, 0.3290)),
    ((36, 14, 0, 0), (0.1528, 0.4167)),
    ((35, 14, 0, 1), (0.1461, 0.4175)),
    ((18, 14, 0, 18), (0.1441, 0.3963)),
    ((2, 97, 1, 0), (0.8721, 0.9854)),
    ((59, 6, 16, 80), (-0.1186, -0.0046)),
]


def test_paired_difference_matches_newcombe_1998_table_iii() -> None:
    got = _paired([t for t, _ in NEWCOMBE_PAIRED])
    for (table, (lo, hi)), (e, glo, ghi) in zip(NEWCOMBE_PAIRED, got, strict=True):
        a, b, c, d = table
        assert e == pytest.approx((b - c) / (a + b + c + d))
        assert (round(glo, 4), round(ghi, 4)) == (lo, hi), table


def _newcombe_paired_reference(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Method 10 written out from the paper, on statsmodels' Wilson intervals."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = proportion_confint(a + b, n, method="wilson")
    l2, u2 = proportion_confint(a + c, n, method="wilson")
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0:
        phi = 0.0
    elif cross > 0:
        phi = max(cross - n / 2, 0) / math.sqrt(margins)
    else:
        phi = cross / math.sqrt(margins)
    dl, du = p1 - l1, u2 - p2
    el, eu = u1 - p1, p2 - l2
    low = p1 - p2 - math.sqrt(dl * dl - 2 * phi * dl * du + du * du)
    high = p1 - p2 + math.sqrt(el * el - 2 * phi * el * eu + eu * eu)
    return low, high


def test_paired_difference_matches_the_formula_on_every_small_table() -> None:
    tables = [t for t in itertools.product(range(6), repeat=4) if sum(t) > 0]
    got = _paired(tables)
    for table, (_, lo, hi) in zip(tables, got, strict=True):
        assert (lo, hi) == pytest.approx(_newcombe_paired_reference(*table), abs=1e-12), table


def test_paired_difference_is_null_without_runs() -> None:
    assert _paired([(0, 0, 0, 0)]) == [(None, None, None)]


# -- McNemar ---------------------------------------------------------------------------------------


def test_mcnemar_is_the_exact_binomial_test_below_25_discordant_runs() -> None:
    pairs = [(b, c) for b in range(25) for c in range(25) if 0 < b + c < 25]
    b, c = (np.array(x) for x in zip(*pairs, strict=True))
    got = mcnemar_pvalues(b, c)
    for (bi, ci), p in zip(pairs, got, strict=True):
        assert p == pytest.approx(sps.binomtest(bi, bi + ci, 0.5).pvalue, rel=1e-9), (bi, ci)
        table = [[0, bi], [ci, 0]]
        assert p == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9), (bi, ci)


def test_mcnemar_is_the_continuity_corrected_chi_square_from_25() -> None:
    pairs = [(b, c) for b in range(0, 90, 3) for c in range(0, 90, 2) if b + c >= 25 and b != c]
    b, c = (np.array(x) for x in zip(*pairs, strict=True))
    got = mcnemar_pvalues(b, c)
    for (bi, ci), p in zip(pairs, got, strict=True):
        table = [[0, bi], [ci, 0]]
        assert p == pytest.approx(sm_mcnemar(table, exact=False, correction=True).pvalue), (bi, ci)
        literal = sps.chi2.sf((abs(bi - ci) - 1) ** 2 / (bi + ci), 1)
        assert p == pytest.approx(literal, rel=1e-9)


def test_mcnemar_without_a_difference_is_1() -> None:
    # statsmodels' chi-square takes (0 - 1)² / (b + c) here (p = 0.874 at 20, 20); floored: p = 1
    assert mcnemar_pvalues(np.array([0, 3, 20, 40]), np.array([0, 3, 20, 40])).tolist() == [1.0] * 4


def test_mcnemar_expression_on_columns_keeps_nulls_and_names_its_method() -> None:
    frame = pl.DataFrame({"b": [12, 40, None, 0], "c": [2, 20, 3, 0]})
    got = frame.lazy().select(
        mcnemar(pl.col("b"), pl.col("c")).alias("p"),
        mcnemar_method(pl.col("b"), pl.col("c")).alias("m"),
    )
    rows = [(None if p is None else round(p, 6), m) for p, m in got.collect().rows()]
    assert rows == [(0.012939, "exact"), (0.014171, "chi2-cc"), (None, None), (1.0, "exact")]


# -- Holm ------------------------------------------------------------------------------------------


def test_holm_matches_statsmodels_multipletests() -> None:
    rng = np.random.default_rng(37)
    for size in (1, 2, 5, 17, 60):
        p = rng.uniform(0, 0.2, size) ** 2
        p[: size // 3] = p[0]  # ties
        got = pl.select(holm(pl.lit(pl.Series(p))).alias("h"))["h"].to_numpy()
        expected = multipletests(p, method="holm")[1]
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_holm_per_family_keeps_raw_values_and_nulls() -> None:
    frame = pl.DataFrame(
        {"family": ["x", "x", "x", "y", "y"], "p": [0.01, 0.04, 0.03, None, 0.02]}
    ).with_columns(holm(pl.col("p")).over("family").alias("p_holm"))
    assert frame.rows() == [
        ("x", 0.01, 0.03),
        ("x", 0.04, 0.06),
        ("x", 0.03, 0.06),
        ("y", None, None),
        ("y", 0.02, 0.02),  # one non-null p-value in the family: m = 1
    ]


# -- unpaired difference: Newcombe (1998), "... independent proportions", method 10 ----------------

# Table II of the paper, method 10: (new accepted, new decided, base accepted,
# base decided) and the 95 % limits.
NEWCOMBE_UNPAIRED = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


def test_newcombe_difference_matches_newcombe_1998_table_ii() -> None:
    got = _unpaired([c for c, _ in NEWCOMBE_UNPAIRED])
    for (cell, (lo, hi)), (e, glo, ghi) in zip(NEWCOMBE_UNPAIRED, got, strict=True):
        assert e == pytest.approx(cell[0] / cell[1] - cell[2] / cell[3])
        assert (round(glo, 4), round(ghi, 4)) == (lo, hi), cell


def test_newcombe_difference_matches_statsmodels_newcomb() -> None:
    cells = [
        (x2, n2, x1, n1)
        for n1, n2 in ((1, 1), (3, 7), (12, 5), (40, 33))
        for x1 in range(n1 + 1)
        for x2 in range(n2 + 1)
    ]
    for cell, (_, lo, hi) in zip(cells, _unpaired(cells), strict=True):
        x2, n2, x1, n1 = cell
        ref = confint_proportions_2indep(x2, n2, x1, n1, method="newcomb", compare="diff")
        assert (lo, hi) == pytest.approx(tuple(map(float, ref)), abs=1e-12), cell


def test_newcombe_difference_is_null_when_a_side_has_no_decided_run() -> None:
    assert _unpaired([(3, 5, 0, 0), (0, 0, 3, 5)]) == [(None, None, None)] * 2


def test_change_call_thresholds_and_margin() -> None:
    frame = pl.DataFrame(
        {
            "x1": [48, 48, 60, 14, 15, 0, 300],
            "n1": [80, 80, 80, 29, 30, 0, 1000],
            "x2": [56, 35, 30, 29, 30, 5, 270],
            "n2": [70, 70, 70, 30, 30, 5, 1000],
        }
    )
    d = newcombe_difference(pl.col("x1"), pl.col("n1"), pl.col("x2"), pl.col("n2"))
    n1, n2 = pl.col("n1"), pl.col("n2")
    got = frame.select(
        change_call(d.low, d.high, n1, n2).alias("call"),
        change_call(d.low, d.high, n1, n2, margin=0.02).alias("with_margin"),
        change_call(d.low, d.high, n1, n2, min_decided=1).alias("small"),
    )
    assert got.rows() == [
        ("improved", "improved", "improved"),
        ("within noise", "within noise", "within noise"),
        ("regressed", "regressed", "regressed"),
        ("not enough data", "not enough data", "improved"),  # 29 decided runs on one side
        ("improved", "improved", "improved"),  # 30 on both: enough
        ("not enough data", "not enough data", "not enough data"),  # no run on one side
        # -0.03, interval (-0.0694, 0.0096): a drop, but not significantly beyond 0
        ("within noise", "within noise", "within noise"),
    ]


def test_change_call_margin_only_calls_changes_known_to_exceed_it() -> None:
    frame = pl.DataFrame({"lo": [-0.10, -0.10, 0.01], "hi": [-0.03, -0.01, 0.05], "n": [50] * 3})
    lo, hi, n = pl.col("lo"), pl.col("hi"), pl.col("n")
    got = frame.select(change_call(lo, hi, n, n, margin=0.02).alias("call"))["call"].to_list()
    assert got == ["regressed", "within noise", "within noise"]


# -- cluster-robust rate ---------------------------------------------------------------------------


def _clustered_runs(seed: int, groups: int = 3, tasks: int = 25) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        for t in range(tasks):
            p = rng.beta(2, 2)
            for _ in range(int(rng.integers(1, 9))):
                outcome = rng.choice(
                    ["accepted", "rejected", "unknown"], p=[0.7 * p, 0.7 * (1 - p), 0.3]
                )
                rows.append((f"g{g}", f"t{t}" if rng.random() > 0.05 else None, str(outcome)))
    return pl.DataFrame(rows, schema=["team", "task_id", "outcome"], orient="row")


def _statsmodels_cluster(runs: pl.DataFrame) -> dict[str, tuple[float, float, int]]:
    """Per team: (mean, cluster-robust SE, clusters) of OLS on a constant.

    A run without a task is a cluster of its own.
    """
    out = {}
    decided = runs.filter(pl.col("outcome") != "unknown").with_row_index("i")
    for (team,), part in decided.group_by("team"):
        y = (part["outcome"] == "accepted").cast(pl.Float64).to_numpy()
        ids = part.select(pl.coalesce("task_id", pl.format("run{}", "i")))["task_id"]
        groups = ids.rank("dense").to_numpy()
        fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
        out[str(team)] = (float(fit.params[0]), float(fit.bse[0]), int(ids.n_unique()))
    return out


def test_cluster_rates_match_statsmodels_cluster_robust_ols() -> None:
    runs = _clustered_runs(37)
    got = cluster_rates(cluster_partials(runs.lazy(), ["team"], "task_id"), ["team"], "task_id")
    ref = _statsmodels_cluster(runs)
    for row in got.collect().iter_rows(named=True):
        mean, se, clusters = ref[row["team"]]
        assert row["accept_rate"] == pytest.approx(mean, rel=1e-12)
        assert row["cluster_se"] == pytest.approx(se, rel=1e-9)
        assert row["clusters"] == clusters
        assert row["cluster_ci_low"] == pytest.approx(max(0.0, mean - 1.959963984540054 * se))
        p, n = row["accept_rate"], row["decided"]
        assert row["design_effect"] == pytest.approx(se * se / (p * (1 - p) / n))


def test_cluster_partials_add_up_across_slices() -> None:
    runs = _clustered_runs(5)
    whole = cluster_rates(cluster_partials(runs, ["team"], "task_id"), ["team"], "task_id")
    parts = pl.concat(
        [cluster_partials(runs[i : i + 97], ["team"], "task_id") for i in range(0, len(runs), 97)]
    )
    sliced = cluster_rates(parts, ["team"], "task_id")
    assert_frame_equal(whole.sort("team"), sliced.sort("team"), check_exact=False, rel_tol=1e-12)


def test_cluster_rates_of_independent_runs_are_binomial_up_to_cr1() -> None:
    # one run per cluster: se² = G/(G-1) · p(1-p)/N, the design effect N/(N-1)
    runs = pl.DataFrame(
        {"task_id": [f"t{i}" for i in range(10)], "outcome": ["accepted"] * 3 + ["rejected"] * 7}
    )
    row = cluster_rates(cluster_partials(runs, [], "task_id"), [], "task_id").row(0, named=True)
    assert row["cluster_se"] == pytest.approx(math.sqrt(10 / 9 * 0.3 * 0.7 / 10))
    assert row["design_effect"] == pytest.approx(10 / 9)


def test_cluster_rates_need_two_clusters() -> None:
    runs = pl.DataFrame({"task_id": ["t1"] * 3, "outcome": ["accepted", "rejected", "accepted"]})
    row = cluster_rates(cluster_partials(runs, [], "task_id"), [], "task_id").row(0, named=True)
    assert (row["clusters"], row["cluster_se"], row["cluster_ci_low"]) == (1, None, None)


# -- pass@k and pass^k -----------------------------------------------------------------------------


def test_pass_at_k_matches_enumeration_of_every_k_subset() -> None:
    cases = [(n, c) for n in range(1, 9) for c in range(n + 1)]
    tasks = pl.DataFrame(
        {
            "task_id": [f"{n}/{c}" for n, c in cases],
            "decided": [n for n, _ in cases],
            "accepted": [c for _, c in cases],
        }
    )
    got = {(r["task_id"], r["k"]): r for r in pass_at_k(tasks, 9).iter_rows(named=True)}
    for n, c in cases:
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, 10):
            row = got[(f"{n}/{c}", k)]
            if k > n:
                assert (row["pass_at_k"], row["pass_hat_k"]) == (None, None)
                continue
            subsets = list(itertools.combinations(outcomes, k))
            assert row["pass_at_k"] == pytest.approx(
                sum(map(any, subsets)) / len(subsets), abs=1e-12
            )
            assert row["pass_hat_k"] == pytest.approx(
                sum(map(all, subsets)) / len(subsets), abs=1e-12
            )


def test_pass_at_k_holds_for_large_n() -> None:
    # the binomial coefficients overflow a float from n ≈ 1,030; the products do not
    tasks = pl.DataFrame({"task_id": ["t"], "decided": [5000], "accepted": [4990]})
    got = pass_at_k(tasks, 100).filter(pl.col("k").is_in([1, 50, 100])).rows(named=True)
    for row in got:
        k = row["k"]
        at = 1 - Fraction(math.comb(10, k), math.comb(5000, k))
        hat = Fraction(math.comb(4990, k), math.comb(5000, k))
        assert row["pass_at_k"] == pytest.approx(float(at), rel=1e-12)
        assert row["pass_hat_k"] == pytest.approx(float(hat), rel=1e-10)


def test_pass_at_k_by_averages_tasks_with_enough_runs() -> None:
    runs = pl.DataFrame(
        {
            "team": ["a"] * 9 + ["b"] * 2,
            "task_id": ["t1"] * 5 + ["t2"] * 2 + [None] * 2 + ["t3"] * 2,
            "outcome": [
                *("accepted", "accepted", "rejected", "rejected", "unknown"),  # a/t1
                *("accepted", "rejected"),  # a/t2
                *("accepted", "rejected"),  # a, no task
                *("accepted", "accepted"),  # b/t3
            ],
        }
    )
    tasks = task_counts(runs, ["team"])
    got = pass_at_k_by(pass_at_k(tasks, 3), ["team"]).sort("team", "k")
    # a/t1: n = 4, c = 2 → pass@1 1/2, pass@2 5/6, pass@3 1; pass^2 1/6, pass^3 0.
    # a/t2: n = 2, c = 1 → pass@1 1/2, pass@2 1; pass^2 0.
    expected = [
        ("a", 1, 2, 0.5, 0.5, 2),
        ("a", 2, 2, (5 / 6 + 1) / 2, (1 / 6 + 0) / 2, 2),
        ("a", 3, 1, 1.0, 0.0, 2),
        ("b", 1, 1, 1.0, 1.0, 0),
        ("b", 2, 1, 1.0, 1.0, 0),
        ("b", 3, 0, None, None, 0),
    ]
    for row, exp in zip(got.rows(), expected, strict=True):
        assert (row[:3], row[5]) == (exp[:3], exp[5])
        if exp[3] is None:
            assert row[3:5] == (None, None)
        else:
            assert row[3:5] == pytest.approx(exp[3:5])


def test_pass_at_k_needs_k_max_of_at_least_1() -> None:
    with pytest.raises(OcpAnalyticsError, match="k_max must be at least 1"):
        pass_at_k(pl.DataFrame({"decided": [1], "accepted": [1]}), 0)


# -- cost per accepted run -------------------------------------------------------------------------


def _cost_runs(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    size = 600
    cost = rng.gamma(2.0, 1.5, size)
    cost[rng.random(size) < 0.1] = np.nan
    return pl.DataFrame(
        {
            "team": rng.choice(["a", "b"], size),
            "outcome": rng.choice(["accepted", "rejected", "unknown"], size, p=[0.5, 0.4, 0.1]),
            "cost_usd": cost,
        }
    ).with_columns(pl.col("cost_usd").fill_nan(None))


def test_cost_per_accepted_matches_the_delta_method_in_matrix_form() -> None:
    runs = _cost_runs(37)
    got = cost_per_accepted(cost_partials(runs.lazy(), ["team"], "cost_usd"), ["team"]).collect()
    for row in got.iter_rows(named=True):
        part = runs.filter((pl.col("team") == row["team"]) & (pl.col("outcome") != "unknown"))
        known = part.filter(pl.col("cost_usd").is_not_null())
        x = known["cost_usd"].to_numpy()
        y = (known["outcome"] == "accepted").cast(pl.Float64).to_numpy()
        ratio = x.mean() / y.mean()
        gradient = np.array([1 / y.mean(), -x.mean() / y.mean() ** 2])
        se = math.sqrt(gradient @ np.cov(np.vstack([x, y]), ddof=1) @ gradient / len(x))
        assert row["cost_per_accepted"] == pytest.approx(ratio, rel=1e-12)
        assert row["cost_se"] == pytest.approx(se, rel=1e-9)
        assert row["cost_ci_high"] == pytest.approx(ratio + 1.959963984540054 * se)
        assert row["runs_with_cost"] == len(x)
        assert row["runs_without_cost"] == part["cost_usd"].null_count()
        missing = part.filter(pl.col("cost_usd").is_null() & (pl.col("outcome") == "accepted"))
        assert row["accepted_without_cost"] == len(missing)


def test_cost_partials_add_up_across_slices() -> None:
    runs = _cost_runs(3)
    whole = cost_per_accepted(cost_partials(runs, ["team"], "cost_usd"), ["team"])
    parts = pl.concat(
        [cost_partials(runs[i : i + 77], ["team"], "cost_usd") for i in range(0, 600, 77)]
    )
    sliced = cost_per_accepted(parts, ["team"])
    assert_frame_equal(whole.sort("team"), sliced.sort("team"), check_exact=False, rel_tol=1e-9)


def test_cost_per_accepted_never_counts_a_missing_cost_as_zero() -> None:
    runs = pl.DataFrame(
        {
            "outcome": ["accepted", "accepted", "rejected", "rejected"],
            "cost": [4.0, None, float("nan"), 2.0],
        }
    )
    row = cost_per_accepted(cost_partials(runs, [], "cost"), []).row(0, named=True)
    assert (row["runs_with_cost"], row["accepted_with_cost"]) == (2, 1)
    assert (row["runs_without_cost"], row["accepted_without_cost"]) == (2, 1)
    assert (row["cost_total"], row["cost_per_accepted"]) == (6.0, 6.0)


def test_cost_per_accepted_is_null_without_an_accepted_run() -> None:
    runs = pl.DataFrame({"outcome": ["rejected", "rejected"], "cost": [1.0, 2.0]})
    row = cost_per_accepted(cost_partials(runs, [], "cost"), []).row(0, named=True)
    assert (row["cost_per_accepted"], row["cost_se"], row["cost_ci_low"]) == (None, None, None)


# -- threshold sweep -------------------------------------------------------------------------------


def _sweep_runs(seed: int, size: int = 300) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    value = rng.integers(0, 40, size).astype(float)  # repeats: ties at a target
    value[rng.random(size) < 0.1] = np.nan
    return (
        pl.DataFrame(
            {
                "team": rng.choice(np.array(["a", "b", None], dtype=object), size),
                "value": value,
                "rest": rng.choice([PASS, UNKNOWN, FAIL], size, p=[0.7, 0.15, 0.15]),
                "null": rng.random(size) < 0.1,
            },
            schema_overrides={"rest": pl.Int8},
        )
        .with_columns(pl.when(~pl.col("null")).then(pl.col("value")).alias("value"))
        .drop("null")
    )


def _evaluate_at(runs: pl.DataFrame, target: float, better: str) -> pl.DataFrame:
    """Each run's outcome under the rule with this target: the engine's score part, then §5."""
    score = score_state(pl.col("value"), target, better == "lower")
    rest = pl.col("rest")
    outcome = (
        pl.when((rest == FAIL) | (score == FAIL))
        .then(pl.lit("rejected"))
        .when((rest == PASS) & (score == PASS))
        .then(pl.lit("accepted"))
        .otherwise(pl.lit("unknown"))
    )
    return runs.with_columns(outcome.alias("outcome"))


@pytest.mark.parametrize("better", ["higher", "lower"])
def test_sweep_equals_one_evaluation_per_target(better: str) -> None:
    runs = _sweep_runs(37)
    got = sweep(runs.lazy(), better, ["team"]).collect()  # type: ignore[arg-type]
    targets = runs.filter(pl.col("value").is_not_nan())["value"].unique().drop_nulls().sort()
    rows = []
    for t in targets:
        judged = _evaluate_at(runs, t, better)
        counts = judged.group_by("team").agg(
            pl.lit(t).alias("target"),
            pl.len().cast(pl.Int64).alias("runs"),
            (pl.col("outcome") == "accepted").sum().cast(pl.Int64).alias("accepted"),
            (pl.col("outcome") == "rejected").sum().cast(pl.Int64).alias("rejected"),
            (pl.col("outcome") == "unknown").sum().cast(pl.Int64).alias("unknown"),
        )
        observed = runs.filter(pl.col("value") == t).select("team").unique()
        rows.append(counts.join(observed, on="team", nulls_equal=True))
    expected = pl.concat(rows).sort("team", "target", nulls_last=True)
    columns = ["team", "target", "runs", "accepted", "rejected", "unknown"]
    assert_frame_equal(got.select(columns), expected.select(columns))
    assert got["decided"].to_list() == (got["accepted"] + got["rejected"]).to_list()


def test_sweep_rates_carry_the_wilson_interval() -> None:
    got = sweep(_sweep_runs(5), "higher").filter(pl.col("decided") > 0)
    for row in got.iter_rows(named=True):
        lo, hi = proportion_confint(row["accepted"], row["decided"], method="wilson")
        assert row["accept_rate"] == pytest.approx(row["accepted"] / row["decided"])
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)


@pytest.mark.parametrize("better", ["higher", "lower"])
def test_target_for_rate_is_the_strictest_target_reaching_the_rate(better: str) -> None:
    runs = _sweep_runs(11)
    swept = sweep(runs, better, ["team"])  # type: ignore[arg-type]
    for rate in (0.1, 0.5, 0.7, 0.99):
        got = target_for_rate(swept, rate, better, ["team"])  # type: ignore[arg-type]
        assert got.height == swept["team"].n_unique()
        for row in got.iter_rows(named=True):
            mine = swept.filter(
                pl.col("team").eq_missing(row["team"]), pl.col("accept_rate") >= rate
            )
            best = None
            if mine.height:
                best = mine["target"].max() if better == "higher" else mine["target"].min()
            assert row["target"] == best, (rate, row["team"])


def test_target_for_rate_without_groups_gives_one_row() -> None:
    runs = pl.DataFrame(
        {"value": [1.0, 2.0], "rest": [PASS, FAIL]}, schema_overrides={"rest": pl.Int8}
    )
    swept = sweep(runs, "higher")
    assert target_for_rate(swept, 0.5, "higher")["target"].to_list() == [1.0]
    assert target_for_rate(swept, 0.9, "higher")["target"].to_list() == [None]


def test_sweep_rejects_an_unknown_direction() -> None:
    runs = pl.DataFrame({"value": [1.0], "rest": [PASS]}, schema_overrides={"rest": pl.Int8})
    with pytest.raises(OcpAnalyticsError, match="better must be"):
        sweep(runs, "up")  # type: ignore[arg-type]
