"""Two rules over the same runs: the paired difference of accept rates, its
interval, McNemar's test, and Holm's adjustment across many such tests.

Every run decided under both rules falls in one cell of the paired 2x2 table:

============================  ====================  ====================
\\                             accepted under B      rejected under B
============================  ====================  ====================
accepted under A              ``a``                 ``b``
rejected under A              ``c``                 ``d``
============================  ====================  ====================

``n = a + b + c + d``. The accept rates are ``(a + b) / n`` under A and
``(a + c) / n`` under B, so their difference is ``(b - c) / n``: only the
discordant runs (``b`` and ``c``) move it.

References: R. G. Newcombe (1998), "Improved confidence intervals for the
difference between binomial proportions based on paired data", Statistics in
Medicine 17:2635-2650 (method 10); Q. McNemar (1947), Psychometrika 12:153-157;
S. Holm (1979), "A simple sequentially rejective multiple test procedure",
Scandinavian Journal of Statistics 6:65-70. docs/statistics.md has the formulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import polars as pl

from ocp_analytics.engine.rates import Z95, wilson

#: McNemar's test is the exact binomial test while ``b + c`` is below this
#: count, the continuity-corrected chi-square test from it on. At 25
#: discordant runs the two agree to 0.003 (7 against 18: 0.0433 exact, 0.0455
#: chi-square); with fewer, the chi-square approximation is the weaker of the two.
MCNEMAR_EXACT_BELOW = 25


class Interval(NamedTuple):
    """An estimate and the bounds of its interval, as polars expressions (not aliased)."""

    estimate: pl.Expr
    low: pl.Expr
    high: pl.Expr


def paired_difference(a: pl.Expr, b: pl.Expr, c: pl.Expr, d: pl.Expr, z: float = Z95) -> Interval:
    """Difference of accept rates of rules A and B over the same runs, with a paired interval.

    The estimate is ``(b - c) / n``, the accept rate under A minus that under
    B. The interval is Newcombe's (1998) method 10: the Wilson intervals of
    the two rates, combined with the correlation ``phi`` of the paired table,
    continuity-corrected as Newcombe does (``a·d - b·c`` is lowered by
    ``n / 2`` when positive, to no less than 0; left as it is when negative;
    ``phi = 0`` when a margin of the table is empty). Null when ``n = 0``.

    Parameters
    ----------
    a, b, c, d
        Counts of runs: accepted under both; accepted under A and rejected
        under B; rejected under A and accepted under B; rejected under both.
    z
        Normal quantile of the interval (1.96 for 95 %).

    Returns
    -------
    Interval
        ``estimate``, ``low``, ``high`` as Float64 expressions.

    Examples
    --------
    Newcombe (1998), table III, example (a): 36, 12, 2, 0.

    >>> d = paired_difference(pl.lit(36), pl.lit(12), pl.lit(2), pl.lit(0))
    >>> [round(v, 4) for v in pl.select(d.estimate, d.low.alias("lo"), d.high.alias("hi")).row(0)]
    [0.2, 0.0569, 0.3404]
    """
    # signed arithmetic whatever the counts' type: b - c on unsigned counts would wrap
    a, b, c, d = (x.cast(pl.Int64) for x in (a, b, c, d))
    n = (a + b + c + d).cast(pl.Float64)
    p1, p2 = (a + b).cast(pl.Float64) / n, (a + c).cast(pl.Float64) / n
    l1, u1 = wilson(a + b, a + b + c + d, z)
    l2, u2 = wilson(a + c, a + b + c + d, z)
    phi = _corrected_phi(a, b, c, d)
    below, above = p1 - l1, u1 - p1  # distances of rate A to its Wilson bounds
    under, over = p2 - l2, u2 - p2  # the same for rate B
    # |phi| < 1, so both sums are >= (x - y)² >= 0; the clip only absorbs rounding
    low_half = (below**2 - 2 * phi * below * over + over**2).clip(lower_bound=0.0).sqrt()
    high_half = (above**2 - 2 * phi * above * under + under**2).clip(lower_bound=0.0).sqrt()
    estimate = (b - c).cast(pl.Float64) / n
    ok = n > 0
    return Interval(
        pl.when(ok).then(estimate),
        pl.when(ok).then(estimate - low_half),
        pl.when(ok).then(estimate + high_half),
    )


def _corrected_phi(a: pl.Expr, b: pl.Expr, c: pl.Expr, d: pl.Expr) -> pl.Expr:
    """Newcombe's continuity-corrected phi of the paired table (0 with an empty margin)."""
    af, bf, cf, df = (x.cast(pl.Float64) for x in (a, b, c, d))
    margins = (af + bf) * (cf + df) * (af + cf) * (bf + df)
    cross = af * df - bf * cf
    half_n = (af + bf + cf + df) / 2
    corrected = pl.when(cross > 0).then((cross - half_n).clip(lower_bound=0.0)).otherwise(cross)
    return pl.when(margins > 0).then(corrected / margins.sqrt()).otherwise(0.0)


def mcnemar_pvalues(
    b: np.ndarray, c: np.ndarray, exact_below: int = MCNEMAR_EXACT_BELOW
) -> np.ndarray:
    """Two-sided p-values of McNemar's test from the discordant counts, element-wise.

    Exact binomial (``b`` out of ``b + c`` at p = 0.5, doubled tail, at most
    1) while ``b + c < exact_below``; above, chi-square with one degree of
    freedom of ``max(|b - c| - 1, 0)² / (b + c)`` (Edwards' continuity
    correction, floored at 0 so that ``b = c`` gives p = 1). ``b + c = 0``
    gives p = 1. NaN in either input gives NaN.

    Examples
    --------
    >>> mcnemar_pvalues(np.array([12, 0, 40]), np.array([2, 0, 20])).round(5).tolist()
    [0.01294, 1.0, 0.01417]
    """
    from scipy import stats  # imported here: a third of a second the CLI only pays when asked

    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    m = b + c
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(b, c), m, 0.5))
        statistic = np.maximum(np.abs(b - c) - 1.0, 0.0) ** 2 / m
        chi2 = stats.chi2.sf(statistic, 1)
    p = np.where(m < exact_below, exact, chi2)
    return np.where(m == 0, 1.0, p)


def mcnemar(b: pl.Expr, c: pl.Expr, exact_below: int = MCNEMAR_EXACT_BELOW) -> pl.Expr:
    """McNemar's two-sided p-value as a polars expression (see :func:`mcnemar_pvalues`).

    Null where ``b`` or ``c`` is null.

    Examples
    --------
    >>> df = pl.DataFrame({"b": [12, 0, 40, None], "c": [2, 0, 20, 1]})
    >>> df.select(mcnemar(pl.col("b"), pl.col("c")).round(5)).to_series().to_list()
    [0.01294, 1.0, 0.01417, None]
    """

    def compute(s: Sequence[pl.Series]) -> pl.Series:
        bb, cc = (x.cast(pl.Float64).to_numpy() for x in s)
        return pl.Series(mcnemar_pvalues(bb, cc, exact_below), nan_to_null=True)

    return pl.map_batches([b, c], compute, return_dtype=pl.Float64, is_elementwise=True)


def mcnemar_method(b: pl.Expr, c: pl.Expr, exact_below: int = MCNEMAR_EXACT_BELOW) -> pl.Expr:
    """Which form of McNemar's test :func:`mcnemar` used: ``exact`` or ``chi2-cc``.

    Null where ``b`` or ``c`` is null.

    Examples
    --------
    >>> df = pl.DataFrame({"b": [12, 40], "c": [2, 20]})
    >>> df.select(mcnemar_method(pl.col("b"), pl.col("c"))).to_series().to_list()
    ['exact', 'chi2-cc']
    """
    m = b + c
    return (
        pl.when(m < exact_below)
        .then(pl.lit("exact"))
        .when(m >= exact_below)
        .then(pl.lit("chi2-cc"))
    )


def holm(p: pl.Expr) -> pl.Expr:
    """Holm's step-down adjustment of the p-values of one family (a column, or ``.over`` a key).

    With the ``m`` non-null p-values sorted, ``p(1) <= … <= p(m)``, the
    adjusted ``p(i)`` is ``min(1, max over j <= i of (m - j + 1) p(j))``.
    Rejecting where the adjusted value is below ``alpha`` keeps the chance of
    any false rejection in the family at most ``alpha``, whatever the
    dependence between the tests. Nulls stay null and do not count in ``m``.
    Keep the raw column beside it: both are reported.

    Examples
    --------
    >>> df = pl.DataFrame({"family": [1, 1, 1, 2], "p": [0.01, 0.04, 0.03, 0.2]})
    >>> df.with_columns(holm(pl.col("p")).over("family").alias("p_holm"))["p_holm"].to_list()
    [0.03, 0.06, 0.06, 0.2]
    """
    m = p.count()
    ranked = ((m - pl.int_range(p.len())) * p.sort(nulls_last=True)).cum_max()
    order = p.rank("ordinal").cast(pl.Int64) - 1
    return ranked.clip(upper_bound=1.0).gather(order)
