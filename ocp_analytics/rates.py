"""Rates by group and rule, and rule-versus-rule comparisons (SEMANTICS §10).

LazyFrame in, LazyFrame out; only the CLI collects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import polars as pl

from ocp_analytics.acceptance import (
    SLICE_RUNS,
    TIER_RANK,
    evaluate,
    resolve_as_of,
    slices,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.rules import RECORDED, resolve_rules

Z95 = 1.959963984540054
LABEL_PREFIX = "label."


def label(key: str) -> pl.Expr:
    """The value of one label of a run (``runs.labels``), null when absent.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"labels": [[{"key": "team", "value": "a"}], []]},
    ...                   schema={"labels": pl.Map(pl.String, pl.String)})
    >>> df.select(label("team")).to_series().to_list()
    ['a', None]
    """
    return pl.col("labels").map.get(key).alias(f"{LABEL_PREFIX}{key}")


def wilson(successes: pl.Expr, n: pl.Expr, z: float = Z95) -> tuple[pl.Expr, pl.Expr]:
    """Lower and upper bounds of the Wilson score interval (null when n = 0)."""
    nn = n.cast(pl.Float64)
    p = successes.cast(pl.Float64) / nn
    denom = 1 + z * z / nn
    centre = (p + z * z / (2 * nn)) / denom
    half = z * ((p * (1 - p) / nn + z * z / (4 * nn * nn)).sqrt()) / denom
    ok = n > 0
    return pl.when(ok).then(centre - half), pl.when(ok).then(centre + half)


def _group_exprs(by: Sequence[str], runs_schema: pl.Schema) -> list[pl.Expr]:
    exprs = []
    for col in by:
        if col.startswith(LABEL_PREFIX):
            exprs.append(label(col[len(LABEL_PREFIX) :]))
        elif col in runs_schema:
            exprs.append(pl.col(col))
        else:
            raise OcpAnalyticsError(
                hint(
                    f"cannot group by {col!r}: it is not a column of runs.",
                    f"use a runs column ({', '.join(sorted(runs_schema))}) or label.KEY.",
                )
            )
    return exprs


_ATT = "attempts_to_acceptance"


def _partials(
    acc: pl.LazyFrame, keys: Sequence[str], min_tier: str | None
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Counts per (keys, rule), and the histogram of attempts to acceptance.

    Both add up across slices of runs, so rates of any number of runs are
    exact (the median comes from the histogram).
    """
    outcome = pl.col("outcome")
    if min_tier is not None:
        limit = TIER_RANK[min_tier]
        strong = pl.col("tier").replace_strict(TIER_RANK, return_dtype=pl.Int8) <= limit
        outcome = pl.when(strong).then(outcome).otherwise(pl.lit("unknown"))
    acc = acc.with_columns(outcome.alias("_o"))
    accepted = pl.col("_o") == "accepted"
    group = [*keys, "rule"]
    counts = acc.group_by(group).agg(
        pl.len().cast(pl.Int64).alias("runs"),
        accepted.sum().cast(pl.Int64).alias("accepted"),
        (pl.col("_o") == "rejected").sum().cast(pl.Int64).alias("rejected"),
        (pl.col("_o") == "unknown").sum().cast(pl.Int64).alias("unknown"),
        (accepted & pl.col("window_open")).sum().cast(pl.Int64).alias("provisional"),
        pl.col("as_of").first(),
    )
    hist = (
        acc.filter(accepted & pl.col(_ATT).is_not_null())
        .group_by(*group, _ATT)
        .agg(pl.len().cast(pl.Int64).alias("count"))
    )
    return counts, hist


def _combine(counts: pl.LazyFrame, hist: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """Rates from (possibly many slices' worth of) counts and histograms."""
    group = [*keys, "rule"]
    counts = counts.group_by(group).agg(
        pl.col("runs", "accepted", "rejected", "unknown", "provisional").sum(),
        pl.col("as_of").first(),
    )
    hist = hist.group_by(*group, _ATT).agg(pl.col("count").sum())
    att, count = pl.col(_ATT).sort_by(_ATT), pl.col("count").sort_by(_ATT)
    total, cum = pl.col("count").sum(), count.cum_sum()

    def middle(position: pl.Expr) -> pl.Expr:
        return att.filter(cum >= position).first()

    stats = hist.group_by(group).agg(
        ((pl.col(_ATT) * pl.col("count")).sum() / total).alias("attempts_mean"),
        # the middle value(s) of the sorted attempts: positions ⌈t/2⌉ and ⌊t/2⌋ + 1
        ((middle((total + 1) // 2) + middle(total // 2 + 1)) / 2).alias("attempts_median"),
        (pl.col("count").filter(pl.col(_ATT) == 1).sum() / total).alias("first_attempt_share"),
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
        )
        .select(
            *keys,
            "rule",
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
            "provisional",
            "as_of",
        )
        .sort(group, nulls_last=True)
    )


def rates_from(
    acc: pl.LazyFrame, by: Sequence[str] = (), min_tier: str | None = None
) -> pl.LazyFrame:
    """Aggregate acceptance rows (with group columns ``by``) into rates."""
    return _combine(*_partials(acc, by, min_tier), by)


def _sliced(
    dataset: object,
    rules: object,
    cols: list[str],
    min_tier: str | None,
    as_of: datetime | str | None,
    recorded: bool,
    slice_runs: int,
    sample: int | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """Rates (and, given ``sample``, flips), evaluating a slice of runs at a time."""
    alt = resolve_rules(rules)  # type: ignore[arg-type]
    when = resolve_as_of(as_of)
    names = ([RECORDED] if recorded else []) + [r.name for r in alt]
    keys = [f"_g{i}" for i in range(len(cols))]
    counts, hists, flips = [], [], []
    for frames in slices(dataset, slice_runs):
        exprs = _group_exprs(cols, frames["runs"].collect_schema())
        carry = [e.alias(k) for e, k in zip(exprs, keys, strict=True)]
        if sample is not None:
            carry.append(pl.col("doc_id").alias("_doc"))
        acc = evaluate(frames, alt, when, recorded=recorded, carry=carry)
        needed = ["rule", "outcome", "tier", "window_open", _ATT, "as_of", *keys]
        lean = acc.select(needed)
        if sample is not None:
            held = acc.select("run_id", "_doc", *needed).collect()
            if held.height:
                flips.append(_flip_counts(held, names, sample))
            lean = held.lazy()
        c, h = pl.collect_all(_partials(lean, keys, min_tier))
        counts.append(c)
        hists.append(h)
    out = _combine(pl.concat(counts).lazy(), pl.concat(hists).lazy(), keys)
    out = out.rename(dict(zip(keys, cols, strict=True)))
    if sample is None:
        return out, None
    return out, _combine_flips(flips, sample)


def _flip_counts(acc: pl.DataFrame, names: list[str], sample: int) -> pl.DataFrame:
    """Per ordered rule pair: runs, flips and the first run ids flipped, for one slice.

    One row per run document (``_doc``, its ``doc_id``) and one column of
    accepted flags per rule (rules are numbered, so no name can clash with
    ``run_id``), then a sum and a ``bottom_k`` per pair: no runs × rules²
    join.
    """
    number = {n: f"r{i}" for i, n in enumerate(names)}
    wide = acc.select(
        "_doc",
        "run_id",
        pl.col("rule").replace_strict(number, return_dtype=pl.String),
        (pl.col("outcome") == "accepted").alias("accepted"),
    ).pivot(on="rule", index=["_doc", "run_id"], values="accepted")
    wide = wide.with_columns(
        pl.lit(None, pl.Boolean).alias(c) for c in number.values() if c not in wide.columns
    )
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
        schema=_FLIP_SCHEMA,
    )


_FLIP_SCHEMA = pl.Schema(
    {
        "rule_a": pl.String(),
        "rule_b": pl.String(),
        "runs_compared": pl.UInt32(),
        "flips": pl.UInt32(),
        "sample_run_ids": pl.List(pl.String()),
    }
)


def _combine_flips(parts: list[pl.DataFrame], sample: int) -> pl.LazyFrame:
    if not parts:
        return pl.LazyFrame(schema=_FLIP_SCHEMA)
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


def rates(
    dataset: object,
    rules: object = None,
    *,
    by: Sequence[str] | str = (),
    min_tier: str | None = None,
    as_of: datetime | str | None = None,
    recorded: bool = True,
    slice_runs: int = SLICE_RUNS,
) -> pl.LazyFrame:
    """Acceptance rates per group and rule (SEMANTICS §10).

    Parameters
    ----------
    dataset, rules, as_of, recorded
        As for :func:`~ocp_analytics.acceptance`.
    by
        Group columns: any ``runs`` column, or ``label.KEY`` for a label.
    min_tier
        Count an outcome as decided only when its tier is at least this strong
        (``verified``, ``reported``, ``heuristic``, ``asserted``).
    slice_runs
        Runs evaluated at a time: memory is bounded by it, not by the
        dataset's size (see :func:`~ocp_analytics.acceptance.slices`).

    Returns
    -------
    polars.LazyFrame
        ``*by, rule, runs, accepted, rejected, unknown, accept_rate, ci_low,
        ci_high, decided_share, attempts_mean, attempts_median,
        first_attempt_share, provisional, as_of``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> r = oa.rates(ds, "tests+review", as_of="2027-01-01T00:00:00Z").collect()
    >>> r.select("rule", "runs", "accepted", "unknown").rows()
    [('recorded', 7, 7, 0), ('tests+review', 7, 4, 3)]
    """
    if min_tier is not None and min_tier not in TIER_RANK:
        raise OcpAnalyticsError(
            hint(f"unknown tier {min_tier!r}.", f"use one of {', '.join(TIER_RANK)}.")
        )
    cols = [by] if isinstance(by, str) else list(by)
    return _sliced(dataset, rules, cols, min_tier, as_of, recorded, slice_runs)[0]


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


def compare(
    dataset: object,
    rules: object,
    *,
    by: Sequence[str] | str = (),
    as_of: datetime | str | None = None,
    sample: int = 5,
    recorded: bool = True,
    slice_runs: int = SLICE_RUNS,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Teams' bars side by side: a rate matrix and rule-versus-rule flips.

    Returns ``(matrix, flips)``: ``matrix`` has one row per group and a column
    per rule (``accept_rate`` formatted with its interval is left to the
    caller; the numeric columns are ``<rule>``, ``<rule>__low``,
    ``<rule>__high``), ``flips`` is what :func:`flips_from` gives over the
    same rows, computed a slice of ``slice_runs`` runs at a time.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> m, f = oa.compare(ds, ["tests", "tests+review"], as_of="2027-01-01T00:00:00Z")
    >>> f.filter(rule_a="tests", rule_b="tests+review").collect()["flips"].item()
    3
    """
    cols = [by] if isinstance(by, str) else list(by)
    rated, flips = _sliced(dataset, rules, cols, None, as_of, recorded, slice_runs, sample)
    assert flips is not None
    long = rated.collect()
    names = long.get_column("rule").unique(maintain_order=True).to_list()
    keys = cols or ["_all"]
    long = long.with_columns(pl.lit("all").alias("_all")) if not cols else long
    matrix = long.pivot(
        on="rule",
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
    return matrix.select(*keys, *ordered).lazy(), flips


def format_rate(rate: float | None, low: float | None, high: float | None) -> str:
    """``"72.4% [68.1–76.3]"``, or ``"–"`` when undecided."""
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return "–"
    return f"{100 * rate:.1f}% [{100 * (low or 0):.1f}–{100 * (high or 0):.1f}]"
