"""Rates and rule-versus-rule flips over decisions (SEMANTICS §10); pure.

Everything here adds up across slices of runs: per slice, *partials*
(counts per group and rule, a histogram of attempts to acceptance, flip
counts per rule pair); once, a *combine* that turns the summed partials into
rates. The sinks at the end collect partials for the evaluation loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from ocp_analytics._typing import Tier
from ocp_analytics.engine.features import TIER_RANK
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.schemas import FLIP_SCHEMA, OUTCOME_TIERS

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

    Examples
    --------
    >>> df = pl.DataFrame({"labels": [[{"key": "team", "value": "a"}], []]},
    ...                   schema={"labels": pl.Map(pl.String, pl.String)})
    >>> df.select(label("team")).to_series().to_list()
    ['a', None]
    """
    return pl.col("labels").map.get(key).alias(f"{LABEL_PREFIX}{key}")


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


def group_exprs(by: Sequence[str], runs_schema: pl.Schema) -> list[pl.Expr]:
    """Expressions over ``runs`` for group names: a runs column, or ``label.KEY``."""
    exprs = []
    for col in by:
        if col.startswith(LABEL_PREFIX) and len(col) > len(LABEL_PREFIX):
            exprs.append(label(col[len(LABEL_PREFIX) :]))
        elif col in runs_schema and col != "labels":
            exprs.append(pl.col(col))
        else:
            columns = ", ".join(sorted(c for c in runs_schema if c != "labels"))
            raise OcpAnalyticsError(
                hint(
                    f"cannot group by {col!r}: it is not a column of runs.",
                    f"use a runs column ({columns}) or label.KEY.",
                )
            )
    return exprs


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
    acc: pl.LazyFrame, keys: Sequence[str], min_tier: Tier | None
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Counts per (keys, rule), and the histogram of attempts to acceptance.

    Both add up across slices of runs, so rates of any number of runs are
    exact (the median comes from the histogram).
    """
    outcome = pl.col("outcome")
    rank = pl.col("tier").replace_strict(TIER_RANK, return_dtype=pl.Int8)
    if min_tier is not None:
        outcome = pl.when(rank <= TIER_RANK[min_tier]).then(outcome).otherwise(pl.lit("unknown"))
    acc = acc.with_columns(outcome.alias("_o"))
    accepted = pl.col("_o") == "accepted"
    decided = accepted | (pl.col("_o") == "rejected")
    group = [*keys, "rule"]
    counts = acc.group_by(group).agg(
        pl.len().cast(pl.Int64).alias("runs"),
        accepted.sum().cast(pl.Int64).alias("accepted"),
        (pl.col("_o") == "rejected").sum().cast(pl.Int64).alias("rejected"),
        (pl.col("_o") == "unknown").sum().cast(pl.Int64).alias("unknown"),
        (accepted & pl.col("window_open")).sum().cast(pl.Int64).alias("provisional"),
        (accepted & (pl.col("accepted_attempt_n") == 1))
        .sum()
        .cast(pl.Int64)
        .alias("first_node_attempt"),
        *(
            (decided & (pl.col("tier") == t)).sum().cast(pl.Int64).alias(f"tier_{t}")
            for t in OUTCOME_TIERS
        ),
        pl.col("as_of").first(),
    )
    hist = (
        acc.filter(accepted & pl.col(ATT).is_not_null())
        .group_by(*group, ATT)
        .agg(pl.len().cast(pl.Int64).alias("count"))
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


def compare_matrix(long: pl.DataFrame, names: list[str], groups: list[str]) -> pl.DataFrame:
    """Rates (one row per group and rule) as the comparison matrix.

    One row per group (a single row ``_all = "all"`` without groups) and, per
    rule in ``names`` order, its accept rate ``<rule>`` and bounds
    ``<rule>__low``, ``<rule>__high``.
    """
    keys = groups or ["_all"]
    if not groups:
        long = long.with_columns(pl.lit("all").alias("_all"))
    matrix = long.pivot(
        on="rule",
        on_columns=names,
        index=keys,
        values=["accept_rate", "ci_low", "ci_high"],
        aggregate_function="first",
    )
    ren = {}
    for n in names:
        ren[f"accept_rate_{n}"] = n
        ren[f"ci_low_{n}"] = f"{n}__low"
        ren[f"ci_high_{n}"] = f"{n}__high"
    matrix = matrix.rename({k: v for k, v in ren.items() if k in matrix.columns})
    ordered = [c for n in names for c in (n, f"{n}__low", f"{n}__high") if c in matrix.columns]
    return matrix.select(*keys, *ordered)


# --- flips (their columns: schemas.FLIPS) ---------------------------------------


def flip_counts(acc: pl.DataFrame, names: list[str], sample: int) -> pl.DataFrame:
    """Per ordered rule pair: runs, flips and the first run ids flipped, for one slice.

    ``acc`` has ``_doc`` (the run's ``doc_id``), ``run_id``, ``rule`` and
    ``outcome``; see :func:`flag_counts`.
    """
    number = {n: i for i, n in enumerate(names)}
    flags = acc.select(
        "_doc",
        pl.col("rule").replace_strict(number, return_dtype=pl.UInt16).alias("r"),
        (pl.col("outcome") == "accepted").alias("a"),
    )
    return flag_counts(flags, acc.select("_doc", "run_id").unique("_doc"), names, sample)


def flag_counts(
    flags: pl.DataFrame, ids: pl.DataFrame, names: list[str], sample: int
) -> pl.DataFrame:
    """Flip counts from accepted flags: ``flags`` (``_doc``, rule number ``r``, ``a``).

    ``ids`` maps ``_doc`` to ``run_id``. One row per run document and one
    column of flags per rule (numbered, so no name can clash), then a sum and
    a ``bottom_k`` per pair: no runs × rules² join, and no text per (run,
    rule) held while a slice's rules arrive.
    """
    wide = flags.pivot(on="r", on_columns=list(range(len(names))), index="_doc", values="a")
    wide = wide.rename({str(i): f"r{i}" for i in range(len(names)) if str(i) in wide.columns})
    wide = wide.with_columns(
        pl.lit(None, pl.Boolean).alias(f"r{i}")
        for i in range(len(names))
        if f"r{i}" not in wide.columns
    ).join(ids, on="_doc", how="left")
    number = {n: f"r{i}" for i, n in enumerate(names)}
    pairs = [(a, b) for a in names for b in names if a != b]
    exprs = [pl.len().alias("runs")]
    for k, (a, b) in enumerate(pairs):
        flip = pl.col(number[a]).fill_null(False) & ~pl.col(number[b]).fill_null(True)
        exprs += [
            flip.sum().alias(f"f{k}"),
            pl.col("run_id").filter(flip).bottom_k(sample).implode().alias(f"s{k}"),
        ]
    row = wide.select(exprs).row(0, named=True)
    return pl.DataFrame(
        {
            "rule_a": [a for a, _ in pairs],
            "rule_b": [b for _, b in pairs],
            "runs_compared": [row["runs"]] * len(pairs),
            "flips": [row[f"f{k}"] for k in range(len(pairs))],
            "sample_run_ids": [row[f"s{k}"] for k in range(len(pairs))],
        },
        schema=FLIP_SCHEMA,
    )


def combine_flips(parts: list[pl.DataFrame], sample: int) -> pl.LazyFrame:
    """Flip counts of every slice, summed; the first ``sample`` run ids of each pair."""
    if not parts:
        return pl.LazyFrame(schema=FLIP_SCHEMA)
    return (
        pl.concat(parts)
        .lazy()
        .group_by("rule_a", "rule_b")
        .agg(
            pl.col("runs_compared").sum(),
            pl.col("flips").sum(),
            pl.col("sample_run_ids")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .sort()
            .head(sample),
        )
        .sort("rule_a", "rule_b")
    )


def flips_from(acc: pl.LazyFrame, sample: int = 5) -> pl.LazyFrame:
    """For every ordered pair of rules, the runs accepted under one and not the other.

    Returns ``rule_a, rule_b, runs_compared, flips, sample_run_ids`` where
    ``flips`` counts runs accepted under ``rule_a`` but not under ``rule_b``.
    """
    a = acc.select(
        "run_id", pl.col("rule").alias("rule_a"), (pl.col("outcome") == "accepted").alias("acc_a")
    )
    b = acc.select(
        "run_id", pl.col("rule").alias("rule_b"), (pl.col("outcome") == "accepted").alias("acc_b")
    )
    pairs = a.join(b, on="run_id").filter(pl.col("rule_a") != pl.col("rule_b"))
    flip = pl.col("acc_a") & ~pl.col("acc_b")
    return (
        pairs.group_by("rule_a", "rule_b")
        .agg(
            pl.len().alias("runs_compared"),
            flip.sum().alias("flips"),
            pl.col("run_id").filter(flip).sort().head(sample).alias("sample_run_ids"),
        )
        .sort("rule_a", "rule_b")
    )


def format_rate(rate: float | None, low: float | None, high: float | None) -> str:
    """``"72.4% [68.1–76.3]"``, or ``"–"`` when undecided."""
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return "–"
    return f"{100 * rate:.1f}% [{100 * (low or 0):.1f}–{100 * (high or 0):.1f}]"


# --- sinks for the evaluation loop ------------------------------------------------


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

    def _pair(self, empty: pl.DataFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        if self.counts:
            return pl.concat(self.counts).lazy(), pl.concat(self.hists).lazy()
        c, h = pl.collect_all(partials(empty.lazy(), self.keys, self.min_tier))
        return c.lazy(), h.lazy()


class FlipPartials:
    """Collects flip counts per rule pair, one run document at a time per slice.

    A slice's rules arrive one frame at a time; the frames of a slice are
    held until the slice's last rule (``len(names)`` frames), then counted.
    """

    columns = ("run_id", "rule", "outcome")

    def __init__(self, names: list[str], sample: int, doc: str = "_doc") -> None:
        self.names = names
        self.sample = sample
        self.doc = doc
        self.held: list[pl.DataFrame] = []
        self.ids = pl.DataFrame()
        self.parts: list[pl.DataFrame] = []

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one rule's decisions of a slice (with the document column ``_doc``).

        Only a flag per run is held (the run ids once a slice), so a slice of
        K rules holds about 11 bytes per (run, rule).
        """
        k = len(self.held)
        if decisions.height and decisions["rule"][0] != self.names[k]:
            raise AssertionError(f"rule {decisions['rule'][0]!r} arrived for {self.names[k]!r}")
        if k == 0:
            self.ids = decisions.select(pl.col(self.doc).alias("_doc"), "run_id")
        self.held.append(
            decisions.select(
                pl.col(self.doc).alias("_doc"),
                pl.lit(k, pl.UInt16).alias("r"),
                (pl.col("outcome") == "accepted").alias("a"),
            )
        )
        if len(self.held) == len(self.names):
            flags = pl.concat(self.held)
            self.held = []
            if flags.height:
                self.parts.append(flag_counts(flags, self.ids, self.names, self.sample))

    def flips(self) -> pl.LazyFrame:
        """The summed flips of every slice."""
        return combine_flips(self.parts, self.sample)
