"""Unpaired changes: the difference of two accept rates over different runs (two
periods, two groups), Newcombe's hybrid score interval, and a call per cell.

Reference: R. G. Newcombe (1998), "Interval estimation for the difference
between independent proportions: comparison of eleven methods", Statistics in
Medicine 17:873-890 (method 10). docs/statistics.md has the formulas.
"""

from __future__ import annotations

import polars as pl

from ocp_analytics.engine.rates import Z95, wilson
from ocp_analytics.engine.stats.paired import Interval

#: Fewer decided runs than this on either side: the call is ``not enough data``.
#: With 30 runs a side, the 95 % interval of a difference is ±0.24 wide at
#: rates near 50 % (±0.20 near 80 %); with fewer it rarely calls anything.
MIN_DECIDED = 30

IMPROVED, REGRESSED, WITHIN_NOISE, NOT_ENOUGH = (
    "improved",
    "regressed",
    "within noise",
    "not enough data",
)
CALLS = (IMPROVED, REGRESSED, WITHIN_NOISE, NOT_ENOUGH)


def newcombe_difference(
    base_accepted: pl.Expr,
    base_decided: pl.Expr,
    new_accepted: pl.Expr,
    new_decided: pl.Expr,
    z: float = Z95,
) -> Interval:
    """Difference of two independent accept rates, ``new - base``, with Newcombe's interval.

    Method 10 of Newcombe (1998): with ``p`` the new rate and ``q`` the base
    one, and ``(l, u)`` their Wilson intervals,
    ``low = p - q - sqrt((p - l_p)² + (u_q - q)²)`` and
    ``high = p - q + sqrt((u_p - p)² + (q - l_q)²)``. It stays within
    [-1, 1] and behaves at rates of 0 and 1, where the normal interval
    collapses. Null when either side has no decided run.

    Parameters
    ----------
    base_accepted, base_decided
        Accepted and decided runs of the base (the earlier period, the
        reference group).
    new_accepted, new_decided
        The same for the side compared to it.
    z
        Normal quantile of the interval (1.96 for 95 %).

    Examples
    --------
    Newcombe (1998), table II, example (a): 56/70 against 48/80.

    >>> d = newcombe_difference(pl.lit(48), pl.lit(80), pl.lit(56), pl.lit(70))
    >>> [round(v, 4) for v in pl.select(d.estimate, d.low.alias("lo"), d.high.alias("hi")).row(0)]
    [0.2, 0.0524, 0.3339]
    """
    p = new_accepted.cast(pl.Float64) / new_decided.cast(pl.Float64)
    q = base_accepted.cast(pl.Float64) / base_decided.cast(pl.Float64)
    lp, up = wilson(new_accepted, new_decided, z)
    lq, uq = wilson(base_accepted, base_decided, z)
    ok = (new_decided > 0) & (base_decided > 0)
    return Interval(
        pl.when(ok).then(p - q),
        pl.when(ok).then(p - q - ((p - lp) ** 2 + (uq - q) ** 2).sqrt()),
        pl.when(ok).then(p - q + ((up - p) ** 2 + (q - lq) ** 2).sqrt()),
    )


def change_call(
    low: pl.Expr,
    high: pl.Expr,
    base_decided: pl.Expr,
    new_decided: pl.Expr,
    *,
    min_decided: int = MIN_DECIDED,
    margin: float = 0.0,
) -> pl.Expr:
    """One word for a change: ``improved``, ``regressed``, ``within noise`` or ``not enough data``.

    ``low`` and ``high`` bound the change ``new - base`` (from
    :func:`newcombe_difference`, or :func:`paired_difference` for two rules
    over the same runs). Fewer than ``min_decided`` decided runs on either
    side: ``not enough data``. Otherwise the whole interval above ``margin``:
    ``improved``; below ``-margin``: ``regressed``; else ``within noise``.
    With ``margin = 0`` that is "the 95 % interval excludes no change";
    a positive margin ignores changes known to be smaller than it (a gate
    that tolerates a drop of up to 0.02 fails only when the drop is
    significantly more than 0.02).

    Examples
    --------
    >>> df = pl.DataFrame({"n1": [80, 80, 80, 10], "x1": [48, 48, 60, 5],
    ...                    "n2": [70, 70, 70, 70], "x2": [56, 35, 30, 60]})
    >>> d = newcombe_difference(pl.col("x1"), pl.col("n1"), pl.col("x2"), pl.col("n2"))
    >>> call = change_call(d.low, d.high, pl.col("n1"), pl.col("n2"))
    >>> df.select(call).to_series().to_list()
    ['improved', 'within noise', 'regressed', 'not enough data']
    """
    enough = (base_decided >= min_decided) & (new_decided >= min_decided)
    return (
        pl.when(~enough | low.is_null() | high.is_null())
        .then(pl.lit(NOT_ENOUGH))
        .when(low > margin)
        .then(pl.lit(IMPROVED))
        .when(high < -margin)
        .then(pl.lit(REGRESSED))
        .otherwise(pl.lit(WITHIN_NOISE))
    )
