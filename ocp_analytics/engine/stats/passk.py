"""Repeated tries of one task: pass@k and pass^k per task and averaged per group.

A task tried in ``n`` decided runs, ``c`` of them accepted. Draw ``k`` of
those runs without replacement:

- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of
  the ``k`` was accepted (Chen et al. 2021, "Evaluating large language models
  trained on code", the unbiased estimator);
- ``pass^k = C(c, k) / C(n, k)``: the chance that all ``k`` were accepted
  (Yao et al. 2024, "τ-bench", the estimator of reliability over k tries).

Both ratios are computed as products of ``k`` factors below 1, never from
the binomial coefficients themselves (which overflow from n ≈ 1,030), so
they hold for any ``n``. They are defined only for ``n >= k``.

These count whole runs of one task. They are not attempts to acceptance,
which count attempts inside one run (``engine.rates``).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics.engine.stats._frames import OUTCOME, FrameT, outcome_flags
from ocp_analytics.exceptions import OcpAnalyticsError, hint

PASSK_COLUMNS = ("k", "tasks", "pass_at_k", "pass_hat_k", "decided_without_task")


def task_counts(
    runs: FrameT, by: Sequence[str], task: str = "task_id", outcome: str = OUTCOME
) -> FrameT:
    """Decided and accepted runs per task (and group).

    Runs whose ``task`` is null keep one row per group with a null task;
    :func:`pass_at_k_by` leaves that row out of the averages and counts its
    runs in ``decided_without_task``.

    Examples
    --------
    >>> runs = pl.DataFrame({"task_id": ["t1", "t1", "t1", "t2"],
    ...                      "outcome": ["accepted", "rejected", "unknown", "accepted"]})
    >>> task_counts(runs, []).sort("task_id").rows()
    [('t1', 2, 1), ('t2', 1, 1)]
    """
    accepted, decided = outcome_flags(outcome)
    return (
        runs.filter(decided)
        .group_by(*by, task)
        .agg(
            pl.len().cast(pl.Int64).alias("decided"),
            accepted.sum().cast(pl.Int64).alias("accepted"),
        )
    )


def pass_at_k(tasks: FrameT, k_max: int) -> FrameT:
    """pass@k and pass^k of every task for ``k = 1 .. k_max``: one row per task and ``k``.

    Parameters
    ----------
    tasks
        One row per task with ``decided`` (``n``) and ``accepted`` (``c``),
        as from :func:`task_counts`; other columns are kept.
    k_max
        The largest ``k``, at least 1.

    Returns
    -------
    DataFrame or LazyFrame
        The input columns, then ``k``, ``pass_at_k`` and ``pass_hat_k``
        (null when ``decided < k``).

    Examples
    --------
    A task tried 5 times, accepted twice:

    >>> tasks = pl.DataFrame({"task_id": ["t1"], "decided": [5], "accepted": [2]})
    >>> pass_at_k(tasks, 3).select("k", "pass_at_k", "pass_hat_k").rows()
    [(1, 0.4, 0.4), (2, 0.7, 0.1), (3, 0.9, 0.0)]
    """
    if k_max < 1:
        raise OcpAnalyticsError(
            hint(f"k_max must be at least 1, got {k_max}.", "pass a whole number of tries.")
        )
    n, c = pl.col("decided").cast(pl.Int64), pl.col("accepted").cast(pl.Int64)
    # factor i (0-based) of C(m, k) / C(n, k) = prod_i (m - i) / (n - i), for m = n - c and m = c;
    # a factor at or below 0 makes the product 0 from there on (m < k)
    steps = pl.int_ranges(n, n - k_max, -1).cast(pl.List(pl.Float64))

    def ratios(m: pl.Expr) -> pl.Expr:
        factors = pl.int_ranges(m, m - k_max, -1).cast(pl.List(pl.Float64)) / steps
        return factors.list.eval(pl.element().clip(lower_bound=0.0).cum_prod())

    k = pl.col("k")
    return (
        tasks.with_columns(
            pl.int_ranges(1, k_max + 1, dtype=pl.Int64).alias("k"),
            ratios(n - c).alias("_fail"),
            ratios(c).alias("_all"),
        )
        .explode("k", "_fail", "_all")
        .with_columns(
            pl.when(n >= k).then(1.0 - pl.col("_fail")).alias("pass_at_k"),
            pl.when(n >= k).then(pl.col("_all")).alias("pass_hat_k"),
        )
        .drop("_fail", "_all")
    )


def pass_at_k_by(per_task: FrameT, by: Sequence[str], task: str = "task_id") -> FrameT:
    """pass@k and pass^k averaged over the tasks of each group that have ``n >= k``.

    Each task weighs the same, however many runs it has. ``tasks`` is the
    number of tasks averaged; ``decided_without_task`` the decided runs of
    the group left out because their task is null.

    Parameters
    ----------
    per_task
        Rows of :func:`pass_at_k`.

    Returns
    -------
    DataFrame or LazyFrame
        One row per group and ``k``: the ``by`` columns, then :data:`PASSK_COLUMNS`.

    Examples
    --------
    >>> tasks = pl.DataFrame({"task_id": ["t1", "t2", "t3"],
    ...                       "decided": [5, 2, 1], "accepted": [2, 2, 0]})
    >>> pass_at_k_by(pass_at_k(tasks, 2), []).sort("k").rows()
    [(1, 3, 0.4666666666666666, 0.4666666666666666, 0), (2, 2, 0.85, 0.55, 0)]
    """
    has_task = pl.col(task).is_not_null()
    return (
        per_task.group_by(*by, "k")
        .agg(
            (has_task & pl.col("pass_at_k").is_not_null()).sum().cast(pl.Int64).alias("tasks"),
            pl.col("pass_at_k").filter(has_task).mean(),
            pl.col("pass_hat_k").filter(has_task).mean(),
            pl.col("decided").filter(~has_task).sum().cast(pl.Int64).alias("decided_without_task"),
        )
        .select(*by, *PASSK_COLUMNS)
    )
