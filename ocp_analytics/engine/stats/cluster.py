"""An accept rate whose runs come in clusters (runs of the same task, the same
repository, …): a cluster-robust (CR1, Liang–Zeger sandwich) interval.

The Wilson interval takes the runs as independent. Runs of one task share its
difficulty: ten runs of an easy task are not ten independent tries, and the
Wilson interval is then too narrow. The sandwich estimator lets runs of a
cluster be correlated in any way and only takes clusters as independent.

It is the standard error of the mean of the 0/1 outcomes, the same as an OLS
fit of the outcome on a constant with ``cov_type="cluster"`` in statsmodels
(whose default small-sample factor, ``G/(G-1) · (N-1)/(N-k)`` with ``k = 1``
parameter, is ``G/(G-1)``: CR1). Reference: K.-Y. Liang and S. L. Zeger
(1986), Biometrika 73:13-22; A. C. Cameron and D. L. Miller (2015), "A
practitioner's guide to cluster-robust inference", Journal of Human Resources
50:317-372. docs/statistics.md has the formulas.

Like the counts of ``engine.rates``, the figures come from partials that add
up across slices of runs: per (group, cluster), the decided and accepted runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics.engine.rates import Z95
from ocp_analytics.engine.stats._frames import OUTCOME, FrameT, outcome_flags

CLUSTER_COLUMNS = (
    "decided",
    "accepted",
    "clusters",
    "accept_rate",
    "cluster_se",
    "cluster_ci_low",
    "cluster_ci_high",
    "design_effect",
)


def cluster_partials(
    runs: FrameT, by: Sequence[str], cluster: str, outcome: str = OUTCOME
) -> FrameT:
    """Decided and accepted runs per (``by``, ``cluster``): partials that add up across slices.

    A run whose ``cluster`` is null is a cluster of its own (it shares
    nothing known with any other run): it keeps its own row, with a null
    cluster. Runs that are not decided do not count.

    Parameters
    ----------
    runs
        One row per run (and rule, if ``rule`` is in ``by``), with the
        ``by`` columns, ``cluster`` and ``outcome`` (``accepted``,
        ``rejected`` or ``unknown``).

    Examples
    --------
    >>> runs = pl.DataFrame({"task_id": ["t1", "t1", "t2", None, None],
    ...                      "outcome": ["accepted", "rejected", "accepted",
    ...                                  "accepted", "unknown"]})
    >>> cluster_partials(runs, [], "task_id").sort("task_id", nulls_last=True).rows()
    [('t1', 2, 1), ('t2', 1, 1), (None, 1, 1)]
    """
    accepted, decided = outcome_flags(outcome)
    rows = runs.filter(decided).select(
        *by,
        cluster,
        pl.lit(1, pl.Int64).alias("decided"),
        accepted.cast(pl.Int64).alias("accepted"),
    )
    return merge_partials(rows, by, cluster)


def merge_partials(rows: FrameT, by: Sequence[str], cluster: str) -> FrameT:
    """Sum rows per (``by``, non-null ``cluster``); rows with a null cluster stay apart.

    Partials of several slices, stacked, merged into one row per cluster (what
    a sink holds between slices).

    Examples
    --------
    >>> p = pl.DataFrame({"task_id": ["t", "t", None], "decided": [2, 1, 1], "accepted": [1, 1, 0]})
    >>> merge_partials(p, [], "task_id").sort("task_id", nulls_last=True).rows()
    [('t', 3, 2), (None, 1, 0)]
    """
    keyed = (
        rows.filter(pl.col(cluster).is_not_null())
        .group_by(*by, cluster)
        .agg(pl.col("decided", "accepted").sum())
    )
    return pl.concat([keyed, rows.filter(pl.col(cluster).is_null())], how="vertical_relaxed")


def cluster_rates(partials: FrameT, by: Sequence[str], cluster: str, z: float = Z95) -> FrameT:
    """Accept rate per group of ``by`` with its cluster-robust (CR1) standard error and interval.

    With ``N`` decided runs in ``G`` clusters, ``n_g`` decided and ``A_g``
    accepted in cluster ``g``, and ``p = sum A_g / N``:
    ``se² = G/(G-1) · sum_g (A_g - n_g p)² / N²``; the interval is
    ``p ± z · se``, cut to [0, 1]. ``design_effect`` is ``se²`` over the
    binomial variance ``p (1 - p) / N``: how many times fewer independent
    runs the clustered runs are worth. ``cluster_se`` and the interval are
    null with fewer than two clusters; the design effect is null when
    ``p`` is 0 or 1.

    Parameters
    ----------
    partials
        Rows of :func:`cluster_partials`, from one slice or many stacked
        (rows of the same cluster in different slices are summed first).

    Returns
    -------
    DataFrame or LazyFrame
        One row per group: the ``by`` columns, then :data:`CLUSTER_COLUMNS`.

    Examples
    --------
    >>> runs = pl.DataFrame({"task_id": ["t1"] * 4 + ["t2"] * 4 + ["t3"] * 2,
    ...                      "outcome": ["accepted"] * 4 + ["rejected"] * 4 + ["accepted"] * 2})
    >>> row = cluster_rates(cluster_partials(runs, [], "task_id"), [], "task_id").row(0, named=True)
    >>> row["accept_rate"], round(row["cluster_se"], 4), round(row["design_effect"], 2)
    (0.6, 0.3666, 5.6)
    """
    per_cluster = merge_partials(partials, by, cluster)
    n_g, a_g = pl.col("decided").cast(pl.Float64), pl.col("accepted").cast(pl.Float64)
    sums = per_cluster.group_by(*by).agg(
        pl.col("decided").sum().cast(pl.Int64),
        pl.col("accepted").sum().cast(pl.Int64),
        pl.len().cast(pl.Int64).alias("clusters"),
        (a_g * a_g).sum().alias("_aa"),
        (a_g * n_g).sum().alias("_an"),
        (n_g * n_g).sum().alias("_nn"),
    )
    n, g = pl.col("decided").cast(pl.Float64), pl.col("clusters").cast(pl.Float64)
    p = pl.col("accepted").cast(pl.Float64) / n
    # sum_g (A_g - n_g p)² expanded, so that it comes from sums; never below 0
    scores = (pl.col("_aa") - 2 * p * pl.col("_an") + p * p * pl.col("_nn")).clip(lower_bound=0.0)
    var = pl.when(g > 1).then(g / (g - 1) * scores / (n * n))
    se = var.sqrt()
    binomial = p * (1 - p) / n
    return sums.select(
        *by,
        "decided",
        "accepted",
        "clusters",
        pl.when(n > 0).then(p).alias("accept_rate"),
        se.alias("cluster_se"),
        (p - z * se).clip(0.0, 1.0).alias("cluster_ci_low"),
        (p + z * se).clip(0.0, 1.0).alias("cluster_ci_high"),
        pl.when(binomial > 0).then(var / binomial).alias("design_effect"),
    )
