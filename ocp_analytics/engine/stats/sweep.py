"""Where to put the bar: the accept rate of a score rule as a function of its
target, for every observed value at once, from one sort per group.

A rule with a score has other parts too (required verdicts, excluded events).
Per run, what the rest of the rule says does not depend on the target; only
the score part does (docs/figures.md "outcome and reasons"):

=================  ====================  ====================  ==============
rest of the rule   score reaches target  score misses target   no score
=================  ====================  ====================  ==============
pass               accepted              rejected              unknown
unknown            unknown               rejected              unknown
fail               rejected              rejected              rejected
=================  ====================  ====================  ==============

A score reaches the target when ``value >= target`` (``better = "higher"``)
or ``value <= target`` (``"lower"``); NaN never does. So, with the values of
a group sorted once, the accepted and rejected counts at every candidate
target are cumulative sums, and the rate only changes at observed values:
the sweep over the distinct observed values is the whole curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from ocp_analytics.engine.features import FAIL, PASS, UNKNOWN
from ocp_analytics.engine.rates import Z95, wilson
from ocp_analytics.engine.stats._frames import FrameT, join_on, over
from ocp_analytics.exceptions import OcpAnalyticsError, hint

Better = Literal["higher", "lower"]

SWEEP_COLUMNS = (
    "target",
    "runs",
    "accepted",
    "rejected",
    "unknown",
    "decided",
    "accept_rate",
    "ci_low",
    "ci_high",
)


def sweep(
    runs: FrameT,
    better: Better,
    by: Sequence[str] = (),
    *,
    value: str = "value",
    rest: str = "rest",
    z: float = Z95,
) -> FrameT:
    """Accept rate (with its Wilson interval) at every distinct observed score value as target.

    Parameters
    ----------
    runs
        One row per run with the ``by`` columns, ``value`` (the run's latest
        numeric score, Float64, null when it has none) and ``rest`` (Int8:
        ``PASS``, ``UNKNOWN`` or ``FAIL`` of ``engine.features``, what the
        other parts of the rule and its excluded events say; ``PASS`` for a
        rule that is only a score).
    better
        ``"higher"``: a value at or above the target passes; ``"lower"``: at
        or below.
    by
        Group columns; each group has its own curve.
    z
        Normal quantile of the interval (1.96 for 95 %).

    Returns
    -------
    DataFrame or LazyFrame
        One row per group and distinct finite value: the ``by`` columns, then
        :data:`SWEEP_COLUMNS`, sorted by group and target; exactly the counts a
        rule with that target gives. Groups with no finite value have no row.

    Examples
    --------
    >>> runs = pl.DataFrame({"value": [3300.0, 3700.0, 3600.0, None, 1000.0],
    ...                      "rest": [2, 2, 2, 2, 0]}, schema_overrides={"rest": pl.Int8})
    >>> sweep(runs, "lower").select("target", "accepted", "rejected", "unknown").rows()
    [(1000.0, 0, 4, 1), (3300.0, 1, 3, 1), (3600.0, 2, 2, 1), (3700.0, 3, 1, 1)]
    """
    if better not in ("higher", "lower"):
        raise OcpAnalyticsError(
            hint(
                f"better must be 'higher' or 'lower', got {better!r}.",
                "use the rule's score.better.",
            )
        )
    passed, missed_pass, missed_unk = _tallies(better)
    accepted, decided = pl.col("accepted"), pl.col("decided")
    lo, hi = wilson(accepted, decided, z)
    return (
        _cumulative(runs, by, value, rest)
        .with_columns(
            passed.alias("accepted"),
            (pl.col("_fail") + pl.col("_nan") + missed_pass + missed_unk).alias("rejected"),
        )
        .with_columns((accepted + pl.col("rejected")).alias("decided"))
        .with_columns(
            (pl.col("runs") - decided).alias("unknown"),
            pl.when(decided > 0).then(accepted / decided).alias("accept_rate"),
            lo.alias("ci_low"),
            hi.alias("ci_high"),
        )
        .select(*by, *SWEEP_COLUMNS)
    )


def _cumulative(runs: FrameT, by: Sequence[str], value: str, rest: str) -> FrameT:
    """Per group and distinct finite value: counts at it and up to it, and the group's totals.

    The only sort of the sweep: values within each group, once.
    """
    v, r = pl.col(value).cast(pl.Float64), pl.col(rest)
    finite = v.is_not_null() & ~v.is_nan()
    totals = runs.group_by(*by).agg(
        pl.len().cast(pl.Int64).alias("runs"),
        (r == FAIL).sum().cast(pl.Int64).alias("_fail"),
        ((r != FAIL) & v.is_nan()).sum().cast(pl.Int64).alias("_nan"),  # NaN never passes
        (finite & (r == PASS)).sum().cast(pl.Int64).alias("_pass"),
        (finite & (r == UNKNOWN)).sum().cast(pl.Int64).alias("_unk"),
    )
    points = (
        runs.filter(finite)
        .group_by(*by, v.alias("target"))
        .agg(
            (r == PASS).sum().cast(pl.Int64).alias("_pass_at"),
            (r == UNKNOWN).sum().cast(pl.Int64).alias("_unk_at"),
        )
        .sort(*by, "target", nulls_last=True)
        .with_columns(
            over(pl.col("_pass_at").cum_sum(), by).alias("_pass_upto"),
            over(pl.col("_unk_at").cum_sum(), by).alias("_unk_upto"),
        )
    )
    return join_on(points, totals, by)


def _tallies(better: Better) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(accepted, PASS-rest runs missing, UNKNOWN-rest runs missing) at each target.

    ``_pass_upto`` counts the PASS-rest runs with a value at or below the
    target, the target included; ``_pass_at`` those exactly at it.
    """
    pass_upto, pass_at = pl.col("_pass_upto"), pl.col("_pass_at")
    unk_upto, unk_at = pl.col("_unk_upto"), pl.col("_unk_at")
    if better == "lower":  # value <= target passes
        return pass_upto, pl.col("_pass") - pass_upto, pl.col("_unk") - unk_upto
    below_pass, below_unk = pass_upto - pass_at, unk_upto - unk_at  # value < target misses
    return pl.col("_pass") - below_pass, below_pass, below_unk


def target_for_rate(swept: FrameT, rate: float, better: Better, by: Sequence[str] = ()) -> FrameT:
    """The strictest target whose accept rate is at least ``rate``, per group.

    The accept rate only falls as the target gets stricter (higher for
    ``better = "higher"``, lower for ``"lower"``), so this is where the
    curve of :func:`sweep` crosses ``rate``. Null where no target reaches it
    (when rejections by the rest of the rule alone keep the rate below).

    Returns
    -------
    DataFrame or LazyFrame
        One row per group of ``swept``: the ``by`` columns and the
        :data:`SWEEP_COLUMNS` of the row at that target (all null without one).

    Examples
    --------
    >>> runs = pl.DataFrame({"value": [10.0, 20.0, 30.0, 40.0], "rest": [2, 2, 2, 2]},
    ...                     schema_overrides={"rest": pl.Int8})
    >>> target_for_rate(sweep(runs, "higher"), 0.5, "higher").select("target", "accept_rate").row(0)
    (30.0, 0.5)
    """
    t = pl.col("target")
    strictest = t.max() if better == "higher" else t.min()
    keys = list(by) or ["_one"]  # a constant key, so that a frame without groups has one
    frame = swept if by else swept.with_columns(pl.lit(1).alias("_one"))
    hits = frame.filter(pl.col("accept_rate") >= rate).filter(t == strictest.over(keys))
    groups = frame.select(keys).unique()
    return groups.join(hits, on=keys, how="left", nulls_equal=True).select(*by, *SWEEP_COLUMNS)
