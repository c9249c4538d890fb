"""Partials the public functions sum over the slices: rates, flips, clusters.

What :func:`~ocp_analytics.api.rates`, :func:`~ocp_analytics.api.compare`
and :func:`~ocp_analytics.api.attempts_distribution` hand the evaluation
loop, and the cluster-robust interval ``rates(..., cluster=...)`` adds
beside the Wilson interval (:mod:`ocp_analytics.engine.stats.cluster`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics._typing import DatasetLike, Tier
from ocp_analytics.engine.evaluate import Sink
from ocp_analytics.engine.features import TIER_RANK
from ocp_analytics.engine.flips import FlipPartials
from ocp_analytics.engine.groups import empty_decisions, group_carry
from ocp_analytics.engine.rates import By, RatePartials, check_tier, group_exprs
from ocp_analytics.engine.stats.cluster import (
    CLUSTER_COLUMNS,
    cluster_partials,
    cluster_rates,
    merge_partials,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint

if TYPE_CHECKING:
    from ocp_analytics.api.evaluation import _Scope
    from ocp_analytics.api.stored import WindowCodes

# runs counted at a time into flip partials by groups when read run-major (coded_flips)
FLIP_RUNS = 2_000_000
# the carried cluster column (carried group keys are _g0, _g1, …)
CLUSTER = "_cluster"
# what rates(..., cluster=) adds after ci_high: the decided and accepted counts are the rates' own
CLUSTER_FIGURES = tuple(
    c for c in CLUSTER_COLUMNS if c not in ("decided", "accepted", "accept_rate")
)


def tiered_outcome(min_tier: Tier | None) -> pl.Expr:
    """``outcome``, read as ``unknown`` when its tier is weaker than ``min_tier``.

    The same reading as the rates' counts (``engine.rates.partials``).

    Examples
    --------
    >>> acc = pl.DataFrame({"outcome": ["accepted", "rejected"], "tier": ["verified", "asserted"]})
    >>> acc.select(tiered_outcome("reported")).to_series().to_list()
    ['accepted', 'unknown']
    """
    if min_tier is None:
        return pl.col("outcome")
    rank = pl.col("tier").replace_strict(TIER_RANK, return_dtype=pl.Int8)
    return pl.when(rank <= TIER_RANK[min_tier]).then("outcome").otherwise(pl.lit("unknown"))


class ClusterPartials:
    """Collects decided and accepted runs per (group, rule, cluster), slice by slice.

    A sink of the evaluation loop: the decisions carry the group keys and the
    cluster (``_cluster``). The partials of each slice are merged into those
    held (one row per cluster and rule, and one per run whose cluster is
    null), so memory grows with the clusters, not the slices.
    """

    columns = ("rule", "outcome", "tier")

    def __init__(self, keys: Sequence[str], min_tier: Tier | None = None) -> None:
        self.by = [*keys, "rule"]
        self.min_tier = min_tier
        self.held: pl.DataFrame | None = None

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one frame of decisions (with the group keys and ``_cluster``)."""
        read = decisions.with_columns(tiered_outcome(self.min_tier).alias("outcome"))
        part = cluster_partials(read, self.by, CLUSTER)
        stacked = part if self.held is None else pl.concat([self.held, part])
        self.held = merge_partials(stacked, self.by, CLUSTER)

    def rates(self, empty: pl.DataFrame) -> pl.DataFrame:
        """The cluster-robust figures per (group, rule); ``empty`` gives the keys' types."""
        held = self.held
        if held is None:
            base = empty.select(
                *self.by[:-1], "rule", "outcome", pl.lit(None, pl.String).alias(CLUSTER)
            )
            held = cluster_partials(base, self.by, CLUSTER)
        return cluster_rates(held, self.by, CLUSTER)


def rate_partials(
    dataset: DatasetLike,
    scope: _Scope,
    by: By,
    period: str | None = None,
    min_tier: str | None = None,
    flips: FlipPartials | None = None,
    cluster: str | None = None,
) -> tuple[RatePartials, list[str], list[str], ClusterPartials | None]:
    """Run the loop into rate partials (and flip or cluster partials); group names and keys."""
    tier = check_tier(min_tier)
    names, keys, carry = group_carry(by, period)
    if cluster is not None and cluster in names:
        raise OcpAnalyticsError(
            hint(
                f"{cluster!r} is both a group and the cluster.",
                "cluster by a column you do not group by (runs of one task within a team).",
            )
        )
    sink = RatePartials(keys, tier)
    clusters = ClusterPartials(keys, tier) if cluster is not None else None

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        doc = [pl.col("doc_id").alias(flips.doc)] if flips is not None else []
        cl = [group_exprs([cluster], schema)[0].alias(CLUSTER)] if cluster is not None else []
        return [*carry(schema), *doc, *cl]

    if clusters is None:
        # every rule stored: the window run-major, a byte per run and rule (no slice joined)
        codes = scope.codes(dataset, carry, stacklevel=4, run_ids=flips is not None)
        if codes is not None:
            outcomes: list[pl.Series] = []
            coded_rates(codes, sink, scope.as_of, None if flips is None else outcomes.append)
            if flips is not None:
                coded_flips(codes.runs, flips, outcomes)
            return sink, names, keys, None
    sinks: list[Sink] = [sink]
    sinks += [] if flips is None else [flips]
    sinks += [] if clusters is None else [clusters]
    scope.run(dataset, sinks, carry_all, stacklevel=4)
    return sink, names, keys, clusters


def coded_rates(
    codes: WindowCodes,
    sink: RatePartials,
    when: datetime,
    each: Callable[[pl.Series], None] | None = None,
) -> None:
    """Add every rule's rate partials from the window's codes to ``sink`` (its keys carried).

    The partials the evaluation loop's slices would give
    (:func:`~ocp_analytics.engine.run_codes.coded_partials`), a rule at a
    time; ``each`` is handed each rule's outcome codes of the window's
    runs too (the flips', :func:`coded_flips`).
    """
    from ocp_analytics.engine.run_codes import CELL, coded_partials, group_index, outcome_codes

    index = group_index(codes.runs, sink.keys)  # every rule's runs share their groups
    for name, cells in codes.rules():
        c, h = pl.collect_all(
            coded_partials(codes.runs, cells, name, when, sink.keys, index, sink.min_tier)
        )
        sink.counts.append(c)
        sink.hists.append(h)
        if each is not None:
            each(outcome_codes(cells.get_column(CELL)))


def coded_flips(runs: pl.DataFrame, flips: FlipPartials, outcomes: Sequence[pl.Series]) -> None:
    """Add the flip partials of ``runs`` (``run_id`` and the sink's keys) to ``flips``.

    ``outcomes``: each rule's outcome codes of those runs, in the rules'
    order (:func:`coded_rates`' ``each``), counted as outcome vectors.
    """
    from ocp_analytics.engine.flips import vector_counts, vector_words

    # with groups, a few million runs at a time (the partials add up): grouping every run by
    # group and vector at once held GBs; without, one pass is the faster (RESULTS.md, "Compare
    # run-major")
    step = FLIP_RUNS if flips.keys else max(runs.height, 1)
    for lo in range(0, runs.height, step):
        part = runs.slice(lo, step).select("run_id", *flips.keys)
        words = vector_words([o.slice(lo, step) for o in outcomes])
        vectors = part.with_columns(words)
        flips.parts.append(vector_counts(vectors, flips.names, flips.sample, flips.keys))


def with_cluster(
    rates: pl.DataFrame, clusters: ClusterPartials, keys: Sequence[str], names: Sequence[str]
) -> pl.DataFrame:
    """``rates`` with the cluster-robust figures after ``ci_high`` (:data:`CLUSTER_FIGURES`)."""
    figures = clusters.rates(empty_decisions(keys)).rename(dict(zip(keys, names, strict=True)))
    on = [*names, "rule"]
    joined = rates.join(
        figures.select(*on, *CLUSTER_FIGURES),
        on=on,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    cols = list(rates.columns)
    at = cols.index("ci_high") + 1
    return joined.select(*cols[:at], *CLUSTER_FIGURES, *cols[at:])
