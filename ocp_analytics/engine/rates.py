"""Rates over decisions (docs/figures.md, "Per group: rates"); pure.

Everything here adds up across slices of runs: per slice, *partials*
(counts per group and rule, a histogram of attempts to acceptance); once, a
*combine* that turns the summed partials into rates. The sink at the end
collects partials for the evaluation loop. Rule-versus-rule flips and the
paired table live in :mod:`ocp_analytics.engine.flips` (their names are
also importable from here, where they used to be).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics._typing import Tier
from ocp_analytics.engine.features import TIER_RANK
from ocp_analytics.engine.flips import FLIP_COUNTS as FLIP_COUNTS
from ocp_analytics.engine.flips import FlipPartials as FlipPartials
from ocp_analytics.engine.flips import combine_flips as combine_flips
from ocp_analytics.engine.flips import flag_counts as flag_counts
from ocp_analytics.engine.flips import flip_counts as flip_counts
from ocp_analytics.engine.flips import flip_figures as flip_figures
from ocp_analytics.engine.flips import flips_from as flips_from
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.schemas import OUTCOME_TIERS

Z95 = 1.959963984540054
LABEL_PREFIX = "label."
ATT = "attempts_to_acceptance"
COUNTS = ("runs", "accepted", "rejected", "unknown", "provisional", "first_node_attempt")
TIER_COUNTS = tuple(f"tier_{t}" for t in OUTCOME_TIERS)
RATE_COLUMNS = (
    "runs",
    "accepted",
    "rejected",
    "unknown",
    "accept_rate",
    "ci_low",
    "ci_high",
    "decided_share",
    "attempts_mean",
    "attempts_median",
    "first_attempt_share",
    "first_node_attempt_share",
    "provisional",
    *TIER_COUNTS,
    "as_of",
)


def label(key: str) -> pl.Expr:
    """The value of one label of a run (``runs.labels``), null when absent.

    Its output name is ``label.KEY``, so it is also a group of
    :func:`ocp_analytics.rates` and :func:`ocp_analytics.compare`:
    ``by=oa.label("team")`` is ``by="label.team"``.

    Examples
    --------
    >>> df = pl.DataFrame({"labels": [[{"key": "team", "value": "a"}], []]},
    ...                   schema={"labels": pl.Map(pl.String, pl.String)})
    >>> df.select(label("team")).to_series().to_list()
    ['a', None]
    >>> label("team").meta.output_name()
    'label.team'
    """
    return pl.col("labels").map.get(key).alias(f"{LABEL_PREFIX}{key}")


# ``by`` of the public functions: names (a runs column, ``label.KEY``) or label expressions
By = str | pl.Expr | Sequence[str | pl.Expr]


def group_names(by: By) -> list[str]:
    """The names of the groups ``by``: a label expression (:func:`label`) by its name.

    Examples
    --------
    >>> group_names(label("team")), group_names(["repo", label("team")])
    (['label.team'], ['repo', 'label.team'])
    >>> group_names(pl.col("repo"))
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: cannot group by the expression col("repo").
    <BLANKLINE>
    Hint: give a runs column or label.KEY by name, or a label as oa.label("KEY").
    """
    items = [by] if isinstance(by, str | pl.Expr) else list(by)
    return [b if isinstance(b, str) else _label_name(b) for b in items]


def _label_name(expr: pl.Expr) -> str:
    """``label.KEY`` when ``expr`` is ``label(KEY)``; else an error."""
    name = expr.meta.output_name(raise_if_undetermined=False) or ""
    key = name[len(LABEL_PREFIX) :]
    if not (name.startswith(LABEL_PREFIX) and key and expr.meta.eq(label(key))):
        raise OcpAnalyticsError(
            hint(
                f"cannot group by the expression {expr}.",
                'give a runs column or label.KEY by name, or a label as oa.label("KEY").',
            )
        )
    return name


def wilson(successes: pl.Expr, n: pl.Expr, z: float = Z95) -> tuple[pl.Expr, pl.Expr]:
    """Lower and upper bounds of the 95 % Wilson score interval, in [0, 1] (null when n = 0).

    Examples
    --------
    >>> lo, hi = wilson(pl.lit(14), pl.lit(14))
    >>> [round(v, 4) for v in pl.select(lo.alias("lo"), hi.alias("hi")).row(0)]
    [0.7847, 1.0]
    """
    nn = n.cast(pl.Float64)
    p = successes.cast(pl.Float64) / nn
    denom = 1 + z * z / nn
    centre = (p + z * z / (2 * nn)) / denom
    half = z * ((p * (1 - p) / nn + z * z / (4 * nn * nn)).sqrt()) / denom
    ok = n > 0
    return (
        pl.when(ok).then((centre - half).clip(0.0, 1.0)),
        pl.when(ok).then((centre + half).clip(0.0, 1.0)),
    )


def _runs_expr(col: str, runs_schema: pl.Schema, doing: str) -> pl.Expr:
    """A runs column or ``label.KEY`` as an expression; else an error naming the columns."""
    if col.startswith(LABEL_PREFIX) and len(col) > len(LABEL_PREFIX):
        return label(col[len(LABEL_PREFIX) :])
    if col in runs_schema and col != "labels":
        return pl.col(col)
    columns = ", ".join(sorted(c for c in runs_schema if c != "labels"))
    raise OcpAnalyticsError(
        hint(
            f"cannot {doing} {col!r}: it is not a column of runs.",
            f"use a runs column ({columns}) or label.KEY.",
        )
    )


def group_exprs(by: Sequence[str], runs_schema: pl.Schema) -> list[pl.Expr]:
    """Expressions over ``runs`` for group names: a runs column, or ``label.KEY``."""
    return [_runs_expr(col, runs_schema, "group by") for col in by]


def where_conditions(where: Sequence[str], runs_schema: pl.Schema) -> list[pl.Expr]:
    """Conditions over ``runs`` for filters ``label.KEY=VALUE`` or ``COLUMN=VALUE``.

    A column's value is compared as text (a run with no such label, or a
    null column, is left out). Several filters are ANDed by the caller.

    Examples
    --------
    >>> runs = pl.DataFrame({"repo": ["a", "b"], "labels": [[{"key": "team", "value": "x"}], []]},
    ...                     schema={"repo": pl.String, "labels": pl.Map(pl.String, pl.String)})
    >>> [runs.filter(c).height for c in where_conditions(["repo=a", "label.team=x"], runs.schema)]
    [1, 1]
    >>> where_conditions(["team=x"], runs.schema)
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: cannot filter on 'team': it is not a column of runs.
    <BLANKLINE>
    Hint: use a runs column (repo) or label.KEY.
    """
    conds = []
    for text in [where] if isinstance(where, str) else where:
        col, eq, value = text.partition("=")
        if not eq or not col.strip():
            raise OcpAnalyticsError(
                hint(
                    f"cannot read the filter {text!r}.",
                    "write label.KEY=VALUE or COLUMN=VALUE, e.g. label.team=payments.",
                )
            )
        expr = _runs_expr(col.strip(), runs_schema, "filter on")
        conds.append(expr.cast(pl.String) == value)
    return conds


def check_tier(tier: str | None) -> Tier | None:
    """``tier`` itself when it is a tier word or ``None``; else an error naming the words.

    Examples
    --------
    >>> check_tier("reported")
    'reported'
    >>> check_tier("gold")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: unknown tier 'gold'.
    <BLANKLINE>
    Hint: use one of verified, reported, heuristic, asserted.
    """
    if tier is None:
        return None
    for word in OUTCOME_TIERS:
        if tier == word:
            return word
    raise OcpAnalyticsError(hint(f"unknown tier {tier!r}.", f"use one of {', '.join(TIER_RANK)}."))


def partials(
    acc: pl.LazyFrame, keys: Sequence[str], min_tier: Tier | None, weight: str | None = None
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Counts per (keys, rule), and the histogram of attempts to acceptance.

    Both add up across slices of runs, so rates of any number of runs are
    exact (the median comes from the histogram). ``weight``: a column of
    how many runs each row stands for (rows of distinct decisions, counted
    once: :mod:`ocp_analytics.engine.run_codes`); each row is one run
    without it.
    """
    outcome = pl.col("outcome")
    rank = pl.col("tier").replace_strict(TIER_RANK, return_dtype=pl.Int8)
    if min_tier is not None:
        outcome = pl.when(rank <= TIER_RANK[min_tier]).then(outcome).otherwise(pl.lit("unknown"))
    acc = acc.with_columns(outcome.alias("_o"))
    accepted = pl.col("_o") == "accepted"
    decided = accepted | (pl.col("_o") == "rejected")
    group = [*keys, "rule"]

    def count(flag: pl.Expr) -> pl.Expr:
        n = flag.sum() if weight is None else pl.col(weight).filter(flag).sum()
        return n.cast(pl.Int64)

    runs = pl.len() if weight is None else pl.col(weight).sum()
    counts = acc.group_by(group).agg(
        runs.cast(pl.Int64).alias("runs"),
        count(accepted).alias("accepted"),
        count(pl.col("_o") == "rejected").alias("rejected"),
        count(pl.col("_o") == "unknown").alias("unknown"),
        count(accepted & pl.col("window_open")).alias("provisional"),
        count(accepted & (pl.col("accepted_attempt_n") == 1)).alias("first_node_attempt"),
        *(count(decided & (pl.col("tier") == t)).alias(f"tier_{t}") for t in OUTCOME_TIERS),
        pl.col("as_of").first(),
    )
    hist = (
        acc.filter(accepted & pl.col(ATT).is_not_null())
        .group_by(*group, ATT)
        .agg(runs.cast(pl.Int64).alias("count"))
    )
    return counts, hist


def combine(counts: pl.LazyFrame, hist: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """Rates from (possibly many slices' worth of) counts and histograms.

    ``first_attempt_share``: among accepted runs whose attempt at acceptance
    is known, the share accepted at the first attempt of the whole run;
    ``first_node_attempt_share``: the share accepted at their node's first
    attempt (``accepted_attempt_n == 1``), over the same runs.
    """
    group = [*keys, "rule"]
    counts = counts.group_by(group).agg(
        pl.col(*COUNTS, *TIER_COUNTS).sum(), pl.col("as_of").first()
    )
    hist = hist.group_by(*group, ATT).agg(pl.col("count").sum())
    att, count = pl.col(ATT).sort_by(ATT), pl.col("count").sort_by(ATT)
    total, cum = pl.col("count").sum(), count.cum_sum()

    def middle(position: pl.Expr) -> pl.Expr:
        return att.filter(cum >= position).first()

    stats = hist.group_by(group).agg(
        ((pl.col(ATT) * pl.col("count")).sum() / total).alias("attempts_mean"),
        # the middle value(s) of the sorted attempts: positions ⌈t/2⌉ and ⌊t/2⌋ + 1
        ((middle((total + 1) // 2) + middle(total // 2 + 1)) / 2).alias("attempts_median"),
        (pl.col("count").filter(pl.col(ATT) == 1).sum() / total).alias("first_attempt_share"),
        total.alias("_placed"),
    )
    decided = pl.col("accepted") + pl.col("rejected")
    lo, hi = wilson(pl.col("accepted"), decided)
    return (
        counts.join(stats, on=group, how="left", nulls_equal=True)
        .with_columns(
            pl.when(decided > 0).then(pl.col("accepted") / decided).alias("accept_rate"),
            lo.alias("ci_low"),
            hi.alias("ci_high"),
            (decided / pl.col("runs")).alias("decided_share"),
            (pl.col("first_node_attempt") / pl.col("_placed")).alias("first_node_attempt_share"),
        )
        .select(*keys, "rule", *RATE_COLUMNS)
        .sort(group, nulls_last=True)
    )


def rates_from(
    acc: pl.LazyFrame, by: Sequence[str] = (), min_tier: Tier | None = None
) -> pl.LazyFrame:
    """Aggregate acceptance rows (with group columns ``by``) into rates."""
    return combine(*partials(acc, by, min_tier), by)


def distribution(hist: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """Accepted runs by the attempt at which they were accepted, with shares.

    Returns ``*keys, rule, attempts_to_acceptance, accepted, share,
    cumulative_share`` (share of the accepted runs whose attempt is known).
    """
    group = [*keys, "rule"]
    total = pl.col("accepted").sum().over(group)
    return (
        hist.group_by(*group, ATT)
        .agg(pl.col("count").sum().alias("accepted"))
        .sort(*group, ATT, nulls_last=True)
        .with_columns(
            (pl.col("accepted") / total).alias("share"),
            (pl.col("accepted").cum_sum().over(group) / total).alias("cumulative_share"),
        )
    )


# per (group, rule) cell of the comparison matrix: the rate, its bounds, its counts
MATRIX_CELL = {
    "accept_rate": "",
    "ci_low": "__low",
    "ci_high": "__high",
    "runs": "__runs",
    "decided": "__decided",
    "accepted": "__accepted",
}


def compare_matrix(long: pl.DataFrame, names: list[str], groups: list[str]) -> pl.DataFrame:
    """Rates (one row per group and rule) as the comparison matrix.

    One row per group (a single row ``_all = "all"`` without groups) and, per
    rule in ``names`` order, its accept rate ``<rule>``, bounds
    ``<rule>__low``, ``<rule>__high`` and the counts beside the rate:
    ``<rule>__runs``, ``<rule>__decided``, ``<rule>__accepted``.

    Examples
    --------
    >>> long = pl.DataFrame({"rule": ["x"], "runs": [5], "accepted": [2], "rejected": [1],
    ...                      "accept_rate": [2 / 3], "ci_low": [0.2], "ci_high": [0.9]})
    >>> compare_matrix(long, ["x"], []).row(0)
    ('all', 0.6666666666666666, 0.2, 0.9, 5, 3, 2)
    """
    keys = groups or ["_all"]
    if not groups:
        long = long.with_columns(pl.lit("all").alias("_all"))
    long = long.with_columns((pl.col("accepted") + pl.col("rejected")).alias("decided"))
    matrix = long.pivot(
        on="rule",
        on_columns=names,
        index=keys,
        values=list(MATRIX_CELL),
        aggregate_function="first",
    )
    ren = {f"{v}_{n}": f"{n}{suffix}" for n in names for v, suffix in MATRIX_CELL.items()}
    matrix = matrix.rename({k: v for k, v in ren.items() if k in matrix.columns})
    ordered = [f"{n}{suffix}" for n in names for suffix in MATRIX_CELL.values()]
    return matrix.select(*keys, *(c for c in ordered if c in matrix.columns))


class RatePartials:
    """Collects rate partials (counts and attempt histograms) slice by slice."""

    columns = ("rule", "outcome", "tier", "window_open", ATT, "accepted_attempt_n", "as_of")

    def __init__(self, keys: Sequence[str], min_tier: Tier | None) -> None:
        self.keys = list(keys)
        self.min_tier = min_tier
        self.counts: list[pl.DataFrame] = []
        self.hists: list[pl.DataFrame] = []

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one frame of decisions (with the group columns ``keys``)."""
        c, h = pl.collect_all(partials(decisions.lazy(), self.keys, self.min_tier))
        self.counts.append(c)
        self.hists.append(h)

    def rates(self, empty: pl.DataFrame) -> pl.LazyFrame:
        """The combined rates; ``empty`` gives the schema when no slice had rows."""
        counts, hists = self._pair(empty)
        return combine(counts, hists, self.keys)

    def distribution(self, empty: pl.DataFrame) -> pl.LazyFrame:
        """Accepted runs by attempt at acceptance (see :func:`distribution`)."""
        return distribution(self._pair(empty)[1], self.keys)

    def regrouped(self, keys: Sequence[str], where: pl.Expr | None = None) -> RatePartials:
        """These partials summed over coarser ``keys`` (a subset of this sink's), of rows ``where``.

        Counts and histograms add up, so one sink grouped by the finest keys
        gives every coarser grouping exactly (:func:`combine` sums by the keys
        it is given): one group_by a frame instead of one per grouping.
        """
        out = RatePartials(keys, self.min_tier)
        for c, h in zip(self.counts, self.hists, strict=True):
            out.counts.append(c if where is None else c.filter(where))
            out.hists.append(h if where is None else h.filter(where))
        return out

    def _pair(self, empty: pl.DataFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        if self.counts:
            return pl.concat(self.counts).lazy(), pl.concat(self.hists).lazy()
        c, h = pl.collect_all(partials(empty.lazy(), self.keys, self.min_tier))
        return c.lazy(), h.lazy()
