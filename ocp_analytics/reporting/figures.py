"""The data behind every figure of the report, as DataFrames named like their data files.

One pass of the package's evaluation loop over the runs of this window and
the previous one, a slice of runs at a time, into the same sinks
:func:`~ocp_analytics.rates`, :func:`~ocp_analytics.compare` and
:func:`~ocp_analytics.attempts_distribution` use (so memory stays that of
``rates`` and every number is theirs; ``tests/test_report.py`` holds them to
those functions), plus the dataset's ``quarantine`` and ``findings``, and
the threshold sweep of each rule with a score (:func:`~ocp_analytics.sweep`;
one more pass over the window for all of them).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics.engine.evaluate import Sink
from ocp_analytics.engine.rates import compare_matrix
from ocp_analytics.engine.stats.changes import change_call, newcombe_difference
from ocp_analytics.engine.timeaxis import PERIODS, check_period
from ocp_analytics.reporting.context import Context
from ocp_analytics.schemas import OUTCOME_TIERS as TIERS
from ocp_analytics.store.scan import Dataset

if TYPE_CHECKING:
    from ocp_analytics.api.stored import WindowCodes
    from ocp_analytics.engine.flips import FlipPartials
    from ocp_analytics.engine.rates import RatePartials

TOP_FLIPS = 10  # flips drawn and listed on the page (all are in the data)
SAMPLES = 5  # sample rows per code in the data-quality tables
NO_GROUP = "(none)"

_GROUPS = "a column per group key, named as --by spells it (label.team, agent)"
_CHANGE = (
    "change (new minus base rate) with change_low, change_high (Newcombe's 95 % interval) "
    "and call (improved, regressed, within noise, not enough data: under 30 decided a side)"
)

FIGURES = {
    "headline": "per rule: runs, accept rate with 95 % Wilson interval, decided share, "
    "provisional runs, the previous window's runs, accepted, rejected and rate, and its " + _CHANGE,
    "rates_by_period": f"oa.rates(by=..., period=...): accept rate per period, {_GROUPS}, and "
    "rule; against the previous period of the same group and rule (prev_accepted, "
    f"prev_rejected; null when it has no row): {_CHANGE}",
    "compare_matrix": f"oa.compare matrix: a row per group ({_GROUPS}; _all without groups); "
    "<rule>, <rule>__low, <rule>__high, <rule>__runs, <rule>__decided, <rule>__accepted",
    "rates_by_group": f"the compare matrix as rows: {_GROUPS}, rule, accept_rate, ci_low, "
    "ci_high, runs, decided, accepted, decided_share",
    "flips": "per ordered rule pair over every run of the window: runs accepted under rule_a, "
    "not rule_b (flip_share of the runs compared), sample run ids; paired table a, b, c, d "
    "over the n runs decided under both, difference of accept rates (rule_a minus rule_b) "
    "with Newcombe's paired interval, McNemar p_value (p_method), Holm-adjusted p_holm",
    "sweep": "written when a rule has a score: per rule with a score (its score, better and "
    f"rule_target, its own target) and group ({_GROUPS}), the accept rate at every observed "
    "score value as the target over the window, as oa.sweep gives it: target, runs, accepted, "
    "rejected, unknown, decided, accept_rate, ci_low, ci_high (95 % Wilson), as_of",
    "attempts_distribution": "accepted runs by the attempt at which they were accepted, per rule",
    "tier_mix": "decided runs per rule and evidence tier, and their share",
    "provisional": "accepted runs whose late-event window is still open, per period and rule",
    "quarantine_by_code": "quarantined documents and event records by code (whole dataset)",
    "quarantine_samples": f"the first {SAMPLES} quarantined records a code: file, line, reason",
    "findings_by_code": "findings by code (whole dataset)",
    "findings_samples": f"the first {SAMPLES} findings of each code: run, file, line, reason",
}
"""Every figure's data file, and what its rows are (written into the file and ``index.json``)."""


def group_label(by: Sequence[str]) -> pl.Expr:
    """One text column naming the group (``all`` without grouping), for the page only.

    The data files carry a column per group key, as :func:`~ocp_analytics.rates`
    does; the page joins them for its charts and tables.

    Examples
    --------
    >>> df = pl.DataFrame({"team": ["a", None], "size": [1, 2]})
    >>> df.select(group_label(["team", "size"]))["group"].to_list()
    ['a / 1', '(none) / 2']
    """
    if not by:
        return pl.lit("all").alias("group")
    parts = [pl.col(c).cast(pl.String).fill_null(NO_GROUP) for c in by]
    return pl.concat_str(parts, separator=" / ").alias("group")


def top_flips(flips: pl.DataFrame) -> pl.DataFrame:
    """The largest :data:`TOP_FLIPS` flips, those the page draws and lists."""
    return flips.filter(pl.col("flips") > 0).head(TOP_FLIPS)


def _provisional_share() -> pl.Expr:
    """Provisional runs as a share of the accepted ones (none when nothing was accepted)."""
    accepted = pl.col("accepted")
    return pl.when(accepted > 0).then(pl.col("provisional") / accepted).alias("provisional_share")


# --- one pass of the evaluation loop ------------------------------------------------


class _Current:
    """A sink that passes on the decisions of runs in the current window only (``_w``)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.columns: Sequence[str] = sink.columns

    def add(self, decisions: pl.DataFrame) -> None:
        self.sink.add(decisions.filter(pl.col("_w")))


def _from_codes(
    codes: WindowCodes, fine: RatePartials, flips: FlipPartials, when: datetime
) -> None:
    """Fill the sinks of :func:`_evaluate` from the window's codes: the partials they would collect.

    The rates' counts and histograms per rule (of every run); the flips'
    outcome vectors of the current window's runs, all rules at once.
    """
    from ocp_analytics.api._partials import coded_flips, coded_rates

    current = codes.runs.get_column("_w")
    outcomes: list[pl.Series] = []
    coded_rates(codes, fine, when, lambda o: outcomes.append(o.filter(current)))
    coded_flips(codes.runs.filter(current), flips, outcomes)


def _evaluate(ctx: Context) -> tuple[dict[str, pl.DataFrame], WindowCodes | None]:
    """One pass over the runs of this window and the previous one, a slice at a time.

    The evaluation loop hands every slice's decisions to the same sinks the
    public functions use, grouped as they group (``engine.groups.group_carry``): rates by
    window (headline, attempts), by period and group (trend), by group
    (matrix) and the flips, so each number is the one those functions give.
    """
    from ocp_analytics.api._scope import _Scope
    from ocp_analytics.engine.flips import FlipPartials
    from ocp_analytics.engine.groups import empty_decisions, group_carry
    from ocp_analytics.engine.rates import RatePartials
    from ocp_analytics.engine.timeaxis import run_time

    names, keys, carry = group_carry(ctx.by, ctx.period)  # keys: the period's, then the groups'
    # one rates sink by window, period and groups: the coarser groupings are its sums
    fine, flips = RatePartials(["_w", *keys], None), FlipPartials(ctx.names, ctx.sample)
    since = ctx.since
    current = pl.lit(True) if since is None else run_time() >= pl.lit(since).dt.cast_time_unit("us")

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        return [current.alias("_w"), *carry(schema), pl.col("doc_id").alias(flips.doc)]

    sinks: list[Sink] = [fine, _Current(flips)]
    previous = ctx.previous()
    lo = previous[0] if previous else since
    # the loop the public functions run: from the decisions stores where they give the
    # rows a full evaluation gives, else raw; the names no run carries are warnings,
    # which the page shows as banners (page.report)
    scope = _Scope(ctx.rules, ctx.as_of, lo, ctx.until, recorded=True, decisions=ctx.decisions)
    # from the stores, the window run-major (a byte per run and rule) when every rule has
    # one; its runs need no carried doc_id (they keep their own, in doc_id order)
    codes = scope.codes(ctx.dataset, lambda schema: [current.alias("_w"), *carry(schema)])
    if codes is None:
        scope.run(ctx.dataset, sinks, carry_all)
    else:
        _from_codes(codes, fine, flips, ctx.as_of)
    empty = empty_decisions(["_w", *keys], {"_w": pl.Boolean(), keys[0]: pl.Datetime("us", "UTC")})
    head = fine.regrouped(["_w"])
    trend, by_group = fine.regrouped(keys, pl.col("_w")), fine.regrouped(keys[1:], pl.col("_w"))

    def frame(lazy: pl.LazyFrame) -> pl.DataFrame:
        return lazy.rename(dict(zip(keys, names, strict=True)), strict=False).collect()

    window = frame(head.rates(empty))
    figures = {
        "current": window.filter(pl.col("_w")).drop("_w"),
        "previous": window.filter(~pl.col("_w")).drop("_w"),
        "trend": frame(trend.rates(empty)),
        "by_group": frame(by_group.rates(empty)),
        "attempts": frame(head.distribution(empty)).filter(pl.col("_w")).drop("_w"),
        "flips": flips.flips().collect(),
    }
    return figures, codes


# --- the figures from the pass ------------------------------------------------------


def _change(
    base_accepted: pl.Expr, base_decided: pl.Expr, accepted: pl.Expr, decided: pl.Expr
) -> list[pl.Expr]:
    """``change``, its 95 % interval and the ``call``: new counts against base counts.

    Newcombe's hybrid score interval of the difference of two independent
    accept rates, and its call (``engine.stats.changes``; docs/statistics.md).
    """
    d = newcombe_difference(base_accepted, base_decided, accepted, decided)
    return [
        d.estimate.alias("change"),
        d.low.alias("change_low"),
        d.high.alias("change_high"),
        change_call(d.low, d.high, base_decided, decided).alias("call"),
    ]


def _decided(prefix: str = "") -> pl.Expr:
    return (pl.col(f"{prefix}accepted") + pl.col(f"{prefix}rejected")).fill_null(0)


def _headline(names: Sequence[str], cur: pl.DataFrame, prev: pl.DataFrame) -> pl.DataFrame:
    """Per rule: this window, the previous one, and the change between them with its call."""
    base = pl.DataFrame({"rule": list(names)}, schema={"rule": pl.String})
    keep = ["rule", "runs", "accepted", "rejected", "unknown", "accept_rate", "ci_low", "ci_high"]
    keep += ["decided_share", "provisional", *(f"tier_{t}" for t in TIERS)]
    out = base.join(cur.select(keep), on="rule", how="left")
    prev_cols = ["runs", "accepted", "rejected", "accept_rate", "ci_low", "ci_high"]
    prev = prev.select("rule", *prev_cols).rename({c: f"prev_{c}" for c in prev_cols})
    out = out.join(prev, on="rule", how="left")
    counts = ["runs", "accepted", "rejected", "unknown", "provisional"]
    counts += ["prev_runs", "prev_accepted", "prev_rejected", *(f"tier_{t}" for t in TIERS)]
    out = out.with_columns(pl.col(counts).cast(pl.Int64).fill_null(0))
    return out.with_columns(
        _provisional_share(),
        *_change(pl.col("prev_accepted"), _decided("prev_"), pl.col("accepted"), _decided()),
    )


def _period_changes(trend: pl.DataFrame, by: Sequence[str], period: str) -> pl.DataFrame:
    """Each period's rates with the change against the period before, per group and rule.

    The base is the calendar period just before (not the last one with runs):
    ``prev_accepted`` and ``prev_rejected`` are null when the group had no
    run then or that period lies before the window, and the call is then
    ``not enough data``.
    """
    if "period" not in trend.columns:
        return trend
    keys = [*by, "rule", "period"]
    step = PERIODS[check_period(period) or "day"]
    prev = trend.select(
        *by,
        "rule",
        pl.col("period").dt.offset_by(step),
        pl.col("accepted").alias("prev_accepted"),
        pl.col("rejected").alias("prev_rejected"),
    )
    out = trend.join(prev, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return out.with_columns(
        *_change(pl.col("prev_accepted"), _decided("prev_"), pl.col("accepted"), _decided())
    )


def _matrix_long(matrix: pl.DataFrame, by: Sequence[str], names: Sequence[str]) -> pl.DataFrame:
    """The compare matrix as rows: the group columns ``by``, ``rule``, the rate and bounds."""
    present = [n for n in names if n in matrix.columns]
    parts = [
        matrix.select(
            *by,
            pl.lit(n).alias("rule"),
            pl.col(n).cast(pl.Float64).alias("accept_rate"),
            pl.col(f"{n}__low").cast(pl.Float64).alias("ci_low"),
            pl.col(f"{n}__high").cast(pl.Float64).alias("ci_high"),
        )
        for n in present
    ]
    schema: dict[str, pl.DataType] = {k: matrix.schema.get(k, pl.String()) for k in by}
    schema |= {"rule": pl.String()}
    schema |= dict.fromkeys(("accept_rate", "ci_low", "ci_high"), pl.Float64())
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).cast(schema)  # type: ignore[arg-type]


def _with_counts(long: pl.DataFrame, by_group: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """The matrix rows with the counts each rate rests on (runs, decided, accepted, share)."""
    decided = (pl.col("accepted") + pl.col("rejected")).cast(pl.Int64)
    counts = by_group.select(
        *by,
        "rule",
        pl.col("runs").cast(pl.Int64),
        decided.alias("decided"),
        pl.col("accepted").cast(pl.Int64),
    )
    out = long.join(counts, on=[*by, "rule"], how="left", nulls_equal=True, maintain_order="left")
    share = pl.when(pl.col("runs") > 0).then(pl.col("decided") / pl.col("runs"))
    return out.with_columns(
        pl.col("runs", "decided", "accepted").fill_null(0), share.alias("decided_share")
    )


def _flips(flips: pl.DataFrame) -> pl.DataFrame:
    """Flips with their share of the runs compared, largest first."""
    share = pl.col("flips") / pl.col("runs_compared")
    return flips.with_columns(
        pl.when(pl.col("runs_compared") > 0).then(share).alias("flip_share")
    ).sort(["flips", "rule_a", "rule_b"], descending=[True, False, False])


def _tier_mix(head: pl.DataFrame) -> pl.DataFrame:
    """Decided runs per rule and evidence tier, with their share of the decided runs."""
    long = head.select("rule", *(pl.col(f"tier_{t}").alias(t) for t in TIERS)).unpivot(
        index="rule", variable_name="tier", value_name="runs"
    )
    total = pl.col("runs").sum().over("rule")
    return long.with_columns(pl.when(total > 0).then(pl.col("runs") / total).alias("share")).sort(
        "rule", pl.col("tier").replace_strict({t: i for i, t in enumerate(TIERS)})
    )


def _provisional(trend: pl.DataFrame) -> pl.DataFrame:
    """Accepted runs whose window is still open, per period and rule (groups added up)."""
    if "period" not in trend.columns or trend.is_empty():
        return pl.DataFrame(
            schema={
                "period": pl.Datetime("us", "UTC"),
                "rule": pl.String,
                "accepted": pl.Int64,
                "provisional": pl.Int64,
                "provisional_share": pl.Float64,
            }
        )
    summed = trend.group_by("period", "rule").agg(pl.col("accepted", "provisional").sum())
    return summed.with_columns(_provisional_share()).sort("period", "rule")


def _quality(ds: Dataset) -> dict[str, pl.DataFrame]:
    """Quarantined documents and findings by code, and samples of each (file, line, reason)."""
    out = {}
    for name in ("quarantine", "findings"):
        table = ds.current(name)  # the replaced versions the report's passes read already
        counts = table.group_by("code").agg(pl.len().cast(pl.Int64).alias("count"))
        cols = ["code", "source_path", "source_line", "message", "json_path"]
        if name == "findings":
            cols.insert(1, "run_id")
        samples = (
            table.select(cols)
            .sort("code", "source_path", "source_line", nulls_last=True)
            .filter(pl.int_range(pl.len()).over("code") < SAMPLES)
        )
        c, s = pl.collect_all([counts.sort(["count", "code"], descending=[True, False]), samples])
        out[f"{name}_by_code"], out[f"{name}_samples"] = c, s
    return out


def _sweep(ctx: Context, shared: WindowCodes | None = None) -> dict[str, pl.DataFrame]:
    """``sweep``: :func:`~ocp_analytics.sweep` of each rule with a score, over the window.

    Empty (no figure, no section) when no rule of the report has a score;
    the recorded rules vary from run to run, so only the named rules are
    swept. Every rule's curve comes from one pass over the window's slices
    (:func:`~ocp_analytics.api.sweep.curves`; its cost: docs/report.md, "Cost"),
    each rule's rest read from its decisions store when the report reads the
    stores. ``shared``: the evaluation's window read run-major, narrowed to
    the sweep's (:func:`_sweep_window`): its runs are not read once more.
    """
    from ocp_analytics.api.sweep import curves

    scored = [rule for rule in ctx.rules if rule.score is not None]
    if not scored:
        return {}
    with warnings.catch_warnings():
        # the evaluation loop has warned of these rules' unknown names already
        warnings.simplefilter("ignore")
        found = curves(
            ctx.dataset,
            scored,
            by=ctx.by,
            as_of=ctx.as_of,
            since=ctx.since,
            until=ctx.until,
            decisions=ctx.decisions,
            names=False,
            window=shared,
        )
    parts = []
    for rule, curve in zip(scored, found, strict=True):
        assert rule.score is not None
        about = {"rule": rule.name, "score": rule.score.name, "better": rule.score.better}
        parts.append(
            curve.select(
                *(pl.lit(v, pl.String).alias(k) for k, v in about.items()),
                pl.lit(rule.score.target, pl.Float64).alias("rule_target"),
                pl.all(),
            )
        )
    return {"sweep": pl.concat(parts, how="vertical_relaxed")} if parts else {}


def _sweep_window(codes: WindowCodes | None, ctx: Context) -> WindowCodes | None:
    """The evaluation's window for the sweep: its current runs, their groups, the scored rules.

    The evaluation carries the period first (``_g0``), the sweep the groups
    only: the group columns are renamed to the sweep's keys. None without
    ``codes``, a rule with a score, or when a rule's name is not one plan's.
    A new frame of the runs' ``doc_id`` and groups: the evaluation's runs
    (and their ids) can go.
    """
    from ocp_analytics.api.stored import WindowCodes
    from ocp_analytics.engine.groups import group_carry

    scored = [rule for rule in ctx.rules if rule.score is not None]
    if codes is None or not scored:
        return None
    plans = {p.label: p for p in codes.plans}
    if len(plans) != len(codes.plans) or any(r.name not in plans for r in scored):
        return None
    _, evaluated, _ = group_carry(ctx.by, ctx.period)
    _, swept, _ = group_carry(ctx.by, None)
    runs = codes.runs.filter(pl.col("_w")).select(
        "doc_id", *(pl.col(e).alias(k) for e, k in zip(evaluated[1:], swept, strict=True))
    )
    return WindowCodes(
        runs,
        [plans[r.name] for r in scored],
        codes.again,
        codes.as_of,
        codes.snapshot,
        codes.table,
    )


def build_figures(ctx: Context) -> dict[str, pl.DataFrame]:
    """Every figure of the page, as DataFrames named like their data files (:data:`FIGURES`)."""
    from ocp_analytics.store.scan import scan_dataset

    ev, codes = _evaluate(ctx)
    shared = _sweep_window(codes, ctx)
    del codes  # the run ids the flips read: not held through the sweep
    head = _headline(ctx.names, ev["current"], ev["previous"])
    matrix = compare_matrix(ev["by_group"], list(ctx.names), list(ctx.by))
    ds = ctx.dataset if isinstance(ctx.dataset, Dataset) else scan_dataset(ctx.dataset)
    return {
        "headline": head,
        "rates_by_period": _period_changes(ev["trend"], ctx.by, ctx.period),
        "compare_matrix": matrix,
        "rates_by_group": _with_counts(
            _matrix_long(matrix, ctx.by, ctx.names), ev["by_group"], ctx.by
        ),
        "flips": _flips(ev["flips"]),
        **_sweep(ctx, shared),
        "attempts_distribution": ev["attempts"],
        "tier_mix": _tier_mix(head),
        "provisional": _provisional(ev["trend"]),
        **_quality(ds),
    }
