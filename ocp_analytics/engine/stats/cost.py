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

A run's cost comes from its attempts (:func:`attempt_costs`): the sum over
all of them, and over those up to and including the attempt at acceptance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

import polars as pl

from ocp_analytics.engine.rates import Z95
from ocp_analytics.engine.stats._frames import ACCEPTED, OUTCOME, FrameT, outcome_flags
from ocp_analytics.exceptions import OcpAnalyticsError, hint

Measure: TypeAlias = Literal[
    "cost_usd", "input_tokens", "output_tokens", "reasoning_tokens", "wall_s"
]
"""What a run costs: an attempt column, or ``wall_s`` (its ``ended_at - started_at``)."""
MEASURES: tuple[Measure, ...] = get_args(Measure)

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


def attempt_measure(measure: str) -> pl.Expr:
    """One attempt's ``measure`` as a Float64 expression over ``attempts``; null when not recorded.

    ``wall_s`` is ``ended_at - started_at`` in seconds: null when either is
    unknown or the attempt ends before it starts (a clock error is not a cost).

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> t = [datetime(2026, 1, 1, 0, m, tzinfo=UTC) for m in (0, 2)]
    >>> att = pl.DataFrame({"started_at": [t[0], t[1], None], "ended_at": [t[1], t[0], t[1]]})
    >>> att.select(attempt_measure("wall_s")).to_series().to_list()
    [120.0, None, None]
    """
    if measure not in MEASURES:
        raise OcpAnalyticsError(
            hint(f"cannot measure cost as {measure!r}.", f"use one of {', '.join(MEASURES)}.")
        )
    if measure == "wall_s":
        seconds = (pl.col("ended_at") - pl.col("started_at")).dt.total_microseconds() / 1e6
        return pl.when(seconds >= 0).then(seconds)
    value = pl.col(measure).cast(pl.Float64)
    return pl.when(~value.is_nan()).then(value)


def attempt_costs(attempts: FrameT, measure: str) -> FrameT:
    """Each attempt's place in its run and the run's cost up to it, and in all.

    Attempts are ordered as for the attempt at acceptance (docs/figures.md):
    by ``started_at`` (unknown last), then by their position ``att_idx``;
    ``pos`` is the 1-based place. ``cost_through`` sums the ``measure`` of
    the attempts up to and including ``pos`` that record it, ``cost`` that of
    all the run's attempts: null when none of them records it (never 0).

    Parameters
    ----------
    attempts
        ``doc_id``, ``att_idx``, ``started_at`` and the measure's columns
        (:func:`attempt_measure`).
    measure
        One of :data:`MEASURES`.

    Returns
    -------
    DataFrame or LazyFrame
        ``doc_id, pos, cost_through, cost``: one row per attempt.

    Examples
    --------
    >>> att = pl.DataFrame({"doc_id": [1, 1, 1, 2], "att_idx": [0, 1, 2, 0],
    ...                     "started_at": [None, 5, 6, 1], "cost_usd": [1.0, None, 2.0, None]})
    >>> attempt_costs(att, "cost_usd").rows()
    [(1, 1, None, 3.0), (1, 2, 2.0, 3.0), (1, 3, 3.0, 3.0), (2, 1, None, None)]
    """
    x = attempt_measure(measure)
    known = x.is_not_null().cast(pl.Int64)
    doc = "doc_id"
    return (
        attempts.with_columns(x.alias("_x"), known.alias("_k"))
        .sort([doc, "started_at", "att_idx"], nulls_last=[False, True, False])
        .select(
            doc,
            (pl.int_range(pl.len(), dtype=pl.Int64).over(doc) + 1).alias("pos"),
            pl.when(pl.col("_k").cum_sum().over(doc) > 0)
            .then(pl.col("_x").fill_null(0.0).cum_sum().over(doc))
            .alias("cost_through"),
            pl.when(pl.col("_k").sum().over(doc) > 0)
            .then(pl.col("_x").sum().over(doc))
            .alias("cost"),
        )
    )


def with_run_costs(decisions: FrameT, attempts: FrameT, doc: str = "doc_id") -> FrameT:
    """``decisions`` with each run's ``cost`` and ``cost_to_acceptance``.

    ``cost`` is the run's cost over all its attempts; ``cost_to_acceptance``
    over the attempts up to and including the attempt at acceptance (its
    place ``attempts_to_acceptance``): null unless the run was accepted at a
    known attempt, or when none of those attempts records the measure.

    Parameters
    ----------
    decisions
        Acceptance rows with ``outcome``, ``attempts_to_acceptance`` and the
        run's ``doc_id`` in the column ``doc``.
    attempts
        Rows of :func:`attempt_costs` for (at least) those runs.

    Examples
    --------
    >>> att = attempt_costs(pl.DataFrame({"doc_id": [1, 1], "att_idx": [0, 1],
    ...     "started_at": [1, 2], "cost_usd": [1.5, 2.0]}), "cost_usd")
    >>> acc = pl.DataFrame({"doc_id": [1, 1], "outcome": ["accepted", "rejected"],
    ...                     "attempts_to_acceptance": [1, None]})
    >>> with_run_costs(acc, att).select("cost", "cost_to_acceptance").rows()
    [(3.5, 1.5), (3.5, None)]
    """
    totals = attempts.filter(pl.col("pos") == 1).select(pl.col("doc_id").alias(doc), "cost")
    through = attempts.select(
        pl.col("doc_id").alias(doc),
        pl.col("pos").alias("_pos"),
        pl.col("cost_through").alias("cost_to_acceptance"),
    )
    accepted_at = pl.when(pl.col(OUTCOME) == ACCEPTED).then(pl.col("attempts_to_acceptance"))
    return (
        decisions.with_columns(accepted_at.cast(pl.Int64).alias("_pos"))
        .join(totals, on=doc, how="left", maintain_order="left")
        .join(through, on=[doc, "_pos"], how="left", maintain_order="left")
        .drop("_pos")
    )
