"""What an accepted run costs: total cost over accepted runs, a ratio estimator
with a delta-method interval.

The runs are the units: each decided run ``i`` with a recorded cost brings a
cost ``x_i`` and an outcome ``y_i`` (1 accepted, 0 rejected). Cost per
accepted run is ``R = sum x / sum y``, the ratio of the two means. Its
variance to first order (the delta method) is
``Var(R) ≈ sum (x_i - R y_i)² / (N (N - 1) ȳ²)``: the sample variance of
the residuals ``x - R y`` (whose mean is exactly 0), over ``N ȳ²``.
Reference: W. G. Cochran (1977), Sampling Techniques, 3rd ed., chapter 6 (the
ratio estimator and its variance). docs/statistics.md has the formulas.

A run whose cost is not recorded is counted apart, never as a cost of 0.
The partials add up across slices of runs, like those of ``engine.rates``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics.engine.rates import Z95
from ocp_analytics.engine.stats._frames import OUTCOME, FrameT, outcome_flags

COST_PARTIALS = (
    "runs_with_cost",
    "accepted_with_cost",
    "runs_without_cost",
    "accepted_without_cost",
    "cost_total",
    "cost_squares",
    "cost_accepted",
)
COST_COLUMNS = (
    "runs_with_cost",
    "accepted_with_cost",
    "runs_without_cost",
    "accepted_without_cost",
    "cost_total",
    "cost_per_accepted",
    "cost_se",
    "cost_ci_low",
    "cost_ci_high",
)


def cost_partials(runs: FrameT, by: Sequence[str], cost: str, outcome: str = OUTCOME) -> FrameT:
    """Sums per group over decided runs, apart for runs with and without a recorded cost.

    Parameters
    ----------
    runs
        One row per run (and rule, if ``rule`` is in ``by``) with the ``by``
        columns, ``outcome`` and ``cost`` (any per-run measure: ``cost_usd``,
        tokens, wall time; null when not recorded). NaN counts as not recorded.

    Returns
    -------
    DataFrame or LazyFrame
        The ``by`` columns and :data:`COST_PARTIALS`: counts of runs with and
        without a cost (all and accepted), the sum of costs, of their
        squares, and of the costs of accepted runs.

    Examples
    --------
    >>> runs = pl.DataFrame({"outcome": ["accepted", "rejected", "accepted", "unknown"],
    ...                      "cost_usd": [2.0, 1.0, None, 5.0]})
    >>> cost_partials(runs, [], "cost_usd").row(0)
    (2, 1, 1, 1, 3.0, 5.0, 2.0)
    """
    accepted, decided = outcome_flags(outcome)
    x = pl.col(cost).cast(pl.Float64)
    known = x.is_not_null() & ~x.is_nan()
    known_x = pl.when(known).then(x)
    return (
        runs.filter(decided)
        .group_by(*by)
        .agg(
            known.sum().cast(pl.Int64).alias("runs_with_cost"),
            (known & accepted).sum().cast(pl.Int64).alias("accepted_with_cost"),
            (~known).sum().cast(pl.Int64).alias("runs_without_cost"),
            (~known & accepted).sum().cast(pl.Int64).alias("accepted_without_cost"),
            known_x.sum().alias("cost_total"),
            (known_x * known_x).sum().alias("cost_squares"),
            pl.when(accepted).then(known_x).sum().alias("cost_accepted"),
        )
    )


def cost_per_accepted(partials: FrameT, by: Sequence[str], z: float = Z95) -> FrameT:
    """Cost per accepted run per group, with its delta-method interval.

    Over the ``N`` decided runs with a recorded cost, ``A`` of them accepted:
    ``R = cost_total / A``; ``se² = N · sum (x - R y)² / ((N - 1) A²)``,
    from the partial sums as ``sum x² - 2 R sum xy + R² A``; the interval is
    ``R ± z · se`` with its lower bound cut at 0. ``cost_per_accepted`` is
    null when no run with a cost was accepted; the standard error and the
    interval also when ``N < 2``.

    Parameters
    ----------
    partials
        Rows of :func:`cost_partials`, from one slice or many stacked.

    Returns
    -------
    DataFrame or LazyFrame
        One row per group: the ``by`` columns, then :data:`COST_COLUMNS`.

    Examples
    --------
    >>> runs = pl.DataFrame({"outcome": ["accepted", "rejected", "accepted", "rejected"],
    ...                      "cost_usd": [2.0, 1.0, 3.0, 2.0]})
    >>> row = cost_per_accepted(cost_partials(runs, [], "cost_usd"), []).row(0, named=True)
    >>> row["cost_per_accepted"], round(row["cost_se"], 4)
    (4.0, 1.8257)
    """
    sums = partials.group_by(*by).agg(pl.col(*COST_PARTIALS).sum())
    n = pl.col("runs_with_cost").cast(pl.Float64)
    a = pl.col("accepted_with_cost").cast(pl.Float64)
    ratio = pl.when(a > 0).then(pl.col("cost_total") / a)
    # sum (x - R y)² from sums (y is 0 or 1, so y² = y); never below 0
    residuals = (
        pl.col("cost_squares") - 2 * ratio * pl.col("cost_accepted") + ratio * ratio * a
    ).clip(lower_bound=0.0)
    se = pl.when(n > 1).then((n * residuals / ((n - 1) * a * a)).sqrt())
    return sums.select(
        *by,
        "runs_with_cost",
        "accepted_with_cost",
        "runs_without_cost",
        "accepted_without_cost",
        "cost_total",
        ratio.alias("cost_per_accepted"),
        se.alias("cost_se"),
        (ratio - z * se).clip(lower_bound=0.0).alias("cost_ci_low"),
        (ratio + z * se).alias("cost_ci_high"),
    )
