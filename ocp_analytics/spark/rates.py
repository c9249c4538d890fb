"""Rates and comparisons as Spark tasks: per-task partials, combined on the driver.

Each task returns the package's rate partials for its ``doc_id`` range
(:func:`ocp_analytics.engine.rates.partials`, and for comparisons
:func:`ocp_analytics.engine.rates.flip_counts`), a few KB; the driver sums
them with the package's pure ``combine`` and ``combine_flips``. Medians come
from summed histograms, so they are exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics._typing import Period, RulesLike, StoreLike, Tier, When
from ocp_analytics.engine.groups import (
    compare_arguments,
    group_carry,
    named_rates,
    warn_missing_labels,
)
from ocp_analytics.engine.rates import RatePartials, check_tier, combine_flips, compare_matrix
from ocp_analytics.spark.evaluate import EvalJob, eval_job
from ocp_analytics.spark.tasks import run_tasks
from ocp_analytics.store.commits import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def rates(
    spark: SparkSession,
    dataset: StoreLike,
    rules: RulesLike = None,
    *,
    by: Sequence[str] | str = (),
    min_tier: Tier | None = None,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: Period | None = None,
    slice_runs: int | None = None,
    snapshot: Snapshot = None,
    where: Sequence[str] = (),
) -> pl.DataFrame:
    """Acceptance rates per group and rule, as :func:`ocp_analytics.rates` gives them.

    Each task returns the package's rate partials for its ``doc_id`` range;
    the driver sums them with the package's ``combine``. The result is small
    (groups × rules), so it is returned as a polars DataFrame.

    Parameters
    ----------
    spark
        The session (see :func:`~ocp_analytics.spark.session`).
    dataset
        The dataset folder (a path or URI every executor can read).
    rules, by, min_tier, as_of, recorded, since, until, period, snapshot, where
        As for :func:`ocp_analytics.rates` (the snapshot fixed on the driver).
    slice_runs
        Documents per task (default: about two tasks per core, at most 500,000).

    Returns
    -------
    polars.DataFrame
        The rows of :func:`ocp_analytics.rates`, collected.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from ocp_analytics import spark as osp
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> spark = osp.session("local[1]")
    >>> r = osp.rates(spark, ds, "tests+review", as_of="2027-01-01T00:00:00Z")
    >>> r.select("rule", "runs", "accepted").rows()
    [('recorded', 7, 7), ('tests+review', 7, 4)]
    """
    check_tier(min_tier)
    job = eval_job(
        spark, dataset, rules, as_of, recorded, since, until, slice_runs, snapshot, where
    )
    out, names, _ = _rates_long(spark, job, by=by, min_tier=min_tier, period=period)
    warn_missing_labels(out, names)
    return out


def compare(
    spark: SparkSession,
    dataset: StoreLike,
    rules: RulesLike,
    *,
    by: Sequence[str] | str = (),
    as_of: When = None,
    sample: int = 5,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int | None = None,
    snapshot: Snapshot = None,
    where: Sequence[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rate matrix and rule-versus-rule flips, as :func:`ocp_analytics.compare` gives them.

    Rates and flip counts are per-task partials combined by the package's
    ``combine`` and ``combine_flips``.

    Parameters
    ----------
    spark
        The session (see :func:`~ocp_analytics.spark.session`).
    dataset
        The dataset folder (a path or URI every executor can read).
    rules, by, as_of, sample, recorded, since, until, snapshot, where
        As for :func:`ocp_analytics.compare` (the snapshot fixed on the driver).
    slice_runs
        Documents per task (default: about two tasks per core, at most 500,000).

    Returns
    -------
    tuple[polars.DataFrame, polars.DataFrame]
        The matrix and the flips of :func:`ocp_analytics.compare`, collected.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from ocp_analytics import spark as osp
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> spark = osp.session("local[1]")
    >>> m, f = osp.compare(spark, ds, ["tests", "tests+review"], as_of="2027-01-01T00:00:00Z")
    >>> f.filter(rule_a="tests", rule_b="tests+review")["flips"].item()
    3
    """
    alt, names, cols = compare_arguments(rules, by, sample, recorded)
    job = eval_job(spark, dataset, alt, as_of, recorded, since, until, slice_runs, snapshot, where)
    long, gnames, flips = _rates_long(
        spark, job, by=cols, min_tier=None, period=None, flip_names=names, sample=sample
    )
    warn_missing_labels(long, gnames)
    named = dict(zip(job.keys, gnames, strict=True))
    summed = combine_flips(flips, sample, job.keys).rename(named).collect()
    return compare_matrix(long, names, gnames), summed


def _rates_long(
    spark: SparkSession,
    job: EvalJob,
    *,
    by: Sequence[str] | str,
    min_tier: Tier | None,
    period: Period | None,
    flip_names: list[str] | None = None,
    sample: int = 5,
) -> tuple[pl.DataFrame, list[str], list[pl.DataFrame]]:
    """Rates (group names restored) and flip partials, from per-task partials."""
    names, keys, carry = group_carry(by, period)

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        doc = [pl.col("doc_id").alias("_doc")] if flip_names is not None else []
        return [*carry(schema), *doc]

    job.carry, job.keys, job.min_tier = carry_all, keys, min_tier
    job.flip_names, job.sample = flip_names, sample
    parts = run_tasks(spark, job.tasks, job.partials)
    sink = RatePartials(keys, min_tier)
    counted = [p for p in parts if p.counts.height]
    sink.counts = [p.counts for p in counted]
    sink.hists = [p.hist for p in counted]
    flips = [p.flips for p in parts if p.flips is not None]
    return named_rates(sink, keys, names), names, flips
