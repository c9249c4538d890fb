"""The nightly report: one self-contained HTML page, and the data of every figure beside it.

The figures come from one pass of the package's evaluation loop over the
runs of this window and the previous one, a slice of runs at a time, into the
same sinks :func:`~ocp_analytics.engine.rates`, :func:`~ocp_analytics.compare` and
:func:`~ocp_analytics.attempts_distribution` use (so memory stays that of
``rates`` and every number is theirs; ``tests/test_report.py`` holds them to
those functions), plus the dataset's ``quarantine`` and ``findings``. Charts
are Vega-Lite specifications made with altair and rendered to static SVG by
vl-convert: the page holds no script and opens offline.
The template is ``templates/report.html.j2`` (jinja2).

Every figure is also written as data (JSON or Parquet) into ``data_out``, with
an ``index.json`` naming each file, so a scheduler can alert on a figure
without reading the page.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import orjson
import polars as pl

from ocp_analytics.exceptions import MissingExtraError, OcpAnalyticsError, hint

EXTRA = "pip install 'ocp-analytics[report]'"
_MODULES = {"altair": "altair", "vl_convert": "vl-convert-python", "jinja2": "jinja2"}
PERIODS = ("day", "week", "month")
TIERS = ("verified", "reported", "heuristic", "asserted")
TOP_FLIPS = 10
MAX_GROUPS = 12  # groups drawn in the trend chart (all are in the data)
MAX_LINES = 6  # rules drawn as lines (trend, attempts, provisional): the first ones
MAX_ATTEMPTS = 15  # attempts drawn in the distribution chart (all are in the data)
SAMPLES = 5  # sample rows per code in the data-quality tables
NO_GROUP = "(none)"


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`report` wrote: the page and one data file per figure."""

    html: Path
    data_dir: Path
    data: dict[str, Path] = field(default_factory=dict)


@dataclass
class _Context:
    """The inputs every figure shares, resolved once."""

    dataset: Any
    rules: list[Any]
    names: list[str]
    by: list[str]
    as_of: datetime
    since: datetime | None
    until: datetime | None
    period: str
    sample: int

    def previous(self) -> tuple[datetime, datetime] | None:
        """The window of the same length just before this one (none without ``since``)."""
        if self.since is None:
            return None
        end = self.until or self.as_of
        return self.since - (end - self.since), self.since


def require_extra() -> None:
    """Raise :class:`MissingExtraError` unless the ``report`` extra is installed.

    Examples
    --------
    >>> require_extra()  # the test extra installs it
    """
    missing = [pkg for mod, pkg in _MODULES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        raise MissingExtraError(
            f"the report needs {', '.join(missing)}, not installed. Hint: {EXTRA}"
        )


# --- figures ----------------------------------------------------------------------


def _group_label(by: Sequence[str]) -> pl.Expr:
    """One text column naming the group (``all`` without grouping)."""
    if not by:
        return pl.lit("all").alias("group")
    parts = [pl.col(c).cast(pl.String).fill_null(NO_GROUP) for c in by]
    return pl.concat_str(parts, separator=" / ").alias("group")


class _Current:
    """A sink that passes on the decisions of runs in the current window only (``_w``)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.columns: Sequence[str] = sink.columns

    def add(self, decisions: pl.DataFrame) -> None:
        self.sink.add(decisions.filter(pl.col("_w")))


def _evaluate(ctx: _Context) -> dict[str, pl.DataFrame]:
    """One pass over the runs of this window and the previous one, a slice at a time.

    The evaluation loop of :func:`~ocp_analytics.engine.rates` hands every slice's
    decisions to the same sinks the public functions use: rates by window
    (headline, attempts), by period and group (trend), by group (matrix) and
    the flips, so each number is the one those functions give, in one pass.
    """
    from ocp_analytics.engine.evaluate import Sink, run
    from ocp_analytics.engine.rates import FlipPartials, RatePartials, group_exprs
    from ocp_analytics.engine.timeaxis import period_start, run_time

    groups = [f"_g{i}" for i in range(len(ctx.by))]
    previous = ctx.previous()

    def carry(schema: pl.Schema) -> list[pl.Expr]:
        since = ctx.since
        current = (
            pl.lit(True) if since is None else run_time() >= pl.lit(since).dt.cast_time_unit("us")
        )
        exprs = group_exprs(ctx.by, schema)
        return [
            current.alias("_w"),
            period_start(ctx.period).alias("_p"),
            *(e.alias(k) for e, k in zip(exprs, groups, strict=True)),
            pl.col("doc_id").alias("_doc"),
        ]

    head, trend = RatePartials(["_w"], None), RatePartials(["_p", *groups], None)
    by_group, flips = RatePartials(groups, None), FlipPartials(ctx.names, ctx.sample)
    sinks: list[Sink] = [head, _Current(trend), _Current(by_group), _Current(flips)]
    lo = previous[0] if previous else ctx.since
    run(ctx.dataset, ctx.rules, ctx.as_of, sinks, since=lo, until=ctx.until, carry=carry)
    names = {"_p": "period", **dict(zip(groups, ctx.by, strict=True))}

    def frame(lazy: pl.LazyFrame) -> pl.DataFrame:
        return lazy.rename(names, strict=False).collect()

    window = frame(head.rates(_empty(["_w"], groups)))
    return {
        "current": window.filter(pl.col("_w")).drop("_w"),
        "previous": window.filter(~pl.col("_w")).drop("_w"),
        "trend": frame(trend.rates(_empty(["_p", *groups], groups))),
        "by_group": frame(by_group.rates(_empty(groups, groups))),
        "attempts": frame(head.distribution(_empty(["_w"], groups)))
        .filter(pl.col("_w"))
        .drop("_w"),
        "flips": flips.flips().collect(),
    }


def _empty(keys: Sequence[str], groups: Sequence[str]) -> pl.DataFrame:
    """No decisions, with the key columns: the schema of a result when no run was read."""
    from ocp_analytics.engine.acceptance import OUTPUT_SCHEMA

    dtypes = {
        "_w": pl.Boolean(),
        "_p": pl.Datetime("us", "UTC"),
        **dict.fromkeys(groups, pl.String()),
    }
    return pl.DataFrame(schema={**OUTPUT_SCHEMA, **{k: dtypes[k] for k in keys}})


def _headline(ctx: _Context, cur: pl.DataFrame, prev: pl.DataFrame) -> pl.DataFrame:
    """Per rule: this window, the previous one, the change and whether intervals part."""
    base = pl.DataFrame({"rule": ctx.names}, schema={"rule": pl.String})
    keep = ["rule", "runs", "accepted", "rejected", "unknown", "accept_rate", "ci_low", "ci_high"]
    keep += ["decided_share", "provisional", *(f"tier_{t}" for t in TIERS)]
    out = base.join(cur.select(keep), on="rule", how="left")
    prev_cols = ["runs", "accept_rate", "ci_low", "ci_high"]
    prev = prev.select("rule", *prev_cols).rename({c: f"prev_{c}" for c in prev_cols})
    out = out.join(prev, on="rule", how="left")
    counts = ["runs", "accepted", "rejected", "unknown", "provisional", "prev_runs"]
    counts += [f"tier_{t}" for t in TIERS]
    apart = (pl.col("ci_low") > pl.col("prev_ci_high")) | (
        pl.col("ci_high") < pl.col("prev_ci_low")
    )
    change = pl.col("accept_rate") - pl.col("prev_accept_rate")
    return out.with_columns(pl.col(counts).cast(pl.Int64).fill_null(0)).with_columns(
        pl.when(pl.col("accepted") > 0)
        .then(pl.col("provisional") / pl.col("accepted"))
        .alias("provisional_share"),
        change.alias("change"),
        apart.fill_null(False).alias("significant"),
        pl.when(apart.fill_null(False))
        .then(pl.when(change > 0).then(pl.lit("up")).otherwise(pl.lit("down")))
        .alias("direction"),
    )


def _matrix(long: pl.DataFrame, by: Sequence[str], names: Sequence[str]) -> pl.DataFrame:
    """Rates by group as the compare matrix: a row per group; ``<rule>``, ``__low``, ``__high``."""
    keys = list(by) or ["_all"]
    if not by:
        long = long.with_columns(pl.lit("all").alias("_all"))
    matrix = long.pivot(
        on="rule",
        on_columns=list(names),
        index=keys,
        values=["accept_rate", "ci_low", "ci_high"],
        aggregate_function="first",
    )
    ren: dict[str, str] = {}
    for n in names:
        ren |= {f"accept_rate_{n}": n, f"ci_low_{n}": f"{n}__low", f"ci_high_{n}": f"{n}__high"}
    matrix = matrix.rename({k: v for k, v in ren.items() if k in matrix.columns})
    ordered = [c for n in names for c in (n, f"{n}__low", f"{n}__high") if c in matrix.columns]
    return matrix.select(*keys, *ordered)


def _flips(flips: pl.DataFrame) -> pl.DataFrame:
    """Flips with their share of the runs compared, largest first."""
    share = pl.col("flips") / pl.col("runs_compared")
    return flips.with_columns(
        pl.when(pl.col("runs_compared") > 0).then(share).alias("flip_share")
    ).sort(["flips", "rule_a", "rule_b"], descending=[True, False, False])


def _matrix_long(matrix: pl.DataFrame, by: Sequence[str], names: Sequence[str]) -> pl.DataFrame:
    """The compare matrix as rows ``group, rule, accept_rate, ci_low, ci_high``."""
    keys = list(by) or ["_all"]
    present = [n for n in names if n in matrix.columns]
    parts = [
        matrix.select(
            *keys,
            pl.lit(n).alias("rule"),
            pl.col(n).cast(pl.Float64).alias("accept_rate"),
            pl.col(f"{n}__low").cast(pl.Float64).alias("ci_low"),
            pl.col(f"{n}__high").cast(pl.Float64).alias("ci_high"),
        )
        for n in present
    ]
    schema: dict[str, pl.DataType] = {"group": pl.String(), "rule": pl.String()}
    schema |= dict.fromkeys(("accept_rate", "ci_low", "ci_high"), pl.Float64())
    if not parts:
        return pl.DataFrame(schema=schema)
    long = pl.concat(parts)
    return long.select(_group_label(by), pl.all().exclude(keys)).cast(schema)  # type: ignore[arg-type]


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
    return summed.with_columns(
        pl.when(pl.col("accepted") > 0)
        .then(pl.col("provisional") / pl.col("accepted"))
        .alias("provisional_share")
    ).sort("period", "rule")


def _quality(ds: Any) -> dict[str, pl.DataFrame]:
    """Quarantined documents and findings by code, and samples of each (file, line, reason)."""
    out = {}
    for name in ("quarantine", "findings"):
        table: pl.LazyFrame = ds[name]
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


def build_figures(ctx: _Context) -> dict[str, pl.DataFrame]:
    """Every figure of the page, as DataFrames named like their data files."""
    from ocp_analytics.store.dataset import Dataset, scan_dataset

    ev = _evaluate(ctx)
    head = _headline(ctx, ev["current"], ev["previous"])
    matrix = _matrix(ev["by_group"], ctx.by, ctx.names)
    ds = ctx.dataset if isinstance(ctx.dataset, Dataset) else scan_dataset(ctx.dataset)
    return {
        "headline": head,
        "rates_by_period": ev["trend"],
        "compare_matrix": matrix,
        "rates_by_group": _matrix_long(matrix, ctx.by, ctx.names),
        "flips": _flips(ev["flips"]),
        "attempts_distribution": ev["attempts"],
        "tier_mix": _tier_mix(head),
        "provisional": _provisional(ev["trend"]),
        **_quality(ds),
    }


# --- charts (altair → Vega-Lite → static SVG) --------------------------------------

WIDTH = 640
TIER_COLORS = ["#1b7837", "#7fbf7b", "#f1a340", "#bababa"]
_FONT = "Helvetica, Arial, sans-serif"


def _config(chart: Any) -> Any:
    return (
        chart.configure(font=_FONT)
        .configure_view(stroke=None)
        .configure_axis(labelFontSize=11, titleFontSize=11, gridColor="#eee")
    )


def _rule_color(names: Sequence[str]) -> Any:
    """One colour per drawn rule (the first ``MAX_LINES``), the same in every line chart."""
    import altair as alt

    scheme: Literal["tableau10", "tableau20"] = "tableau10" if len(names) <= 10 else "tableau20"
    scale = alt.Scale(domain=list(names[:MAX_LINES]), scheme=scheme)
    return alt.Color("rule:N", title="rule", scale=scale)


def _rate_axis(title: str = "accept rate") -> Any:
    import altair as alt

    return alt.Y(
        "accept_rate:Q", title=title, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")
    )


def _drawn(frame: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """The rows of the rules drawn as lines: the first ``MAX_LINES`` in rule order."""
    return frame.filter(pl.col("rule").is_in(list(names[:MAX_LINES])))


def _headline_chart(head: pl.DataFrame) -> Any:
    """Accept rate with its interval, this window against the previous one, per rule."""
    import altair as alt

    rates = ["accept_rate", "ci_low", "ci_high"]
    this = head.select("rule", *rates, pl.lit("this window").alias("window"))
    prev = head.select(
        "rule",
        *(pl.col(f"prev_{c}").alias(c) for c in rates),
        pl.lit("previous window").alias("window"),
    )
    data = pl.concat([prev.cast(dict.fromkeys(rates, pl.Float64)), this], how="vertical_relaxed")
    data = data.filter(pl.col("accept_rate").is_not_null())
    if data.is_empty():
        return None
    order = ["previous window", "this window"]
    scale = alt.Scale(domain=[0, 1])
    base = alt.Chart(data).encode(
        y=alt.Y("rule:N", title=None, sort=head["rule"].to_list()),
        yOffset=alt.YOffset("window:N", sort=order),
        color=alt.Color(
            "window:N", title=None, sort=order, scale=alt.Scale(range=["#9e9ac8", "#3f007d"])
        ),
    )
    title = "accept rate and 95 % interval"
    ci = base.mark_rule(strokeWidth=3).encode(
        x=alt.X("ci_low:Q", title=title, scale=scale, axis=alt.Axis(format="%")), x2="ci_high:Q"
    )
    dot = base.mark_point(filled=True, size=60, opacity=1).encode(x=alt.X("accept_rate:Q"))
    rows = data["rule"].n_unique()
    return alt.layer(ci, dot).properties(width=WIDTH - 200, height=36 * rows)


def _trend_chart(trend: pl.DataFrame, by: Sequence[str], names: Sequence[str]) -> Any:
    """Accept rate per period with its interval band: a panel per group, a line per rule."""
    import altair as alt

    if trend.is_empty() or "period" not in trend.columns:
        return None
    data = _drawn(trend, names).with_columns(_group_label(by))
    data = data.filter(pl.col("accept_rate").is_not_null())
    if data.is_empty():
        return None
    top = (
        data.group_by("group")
        .agg(pl.col("runs").sum())
        .sort(["runs", "group"], descending=[True, False])
    )
    data = data.filter(pl.col("group").is_in(top.head(MAX_GROUPS)["group"].implode()))
    data = data.select("period", "group", "rule", "accept_rate", "ci_low", "ci_high", "runs")
    columns = min(4, data["group"].n_unique())
    x = alt.X(
        "period:T",
        title=None,
        scale=alt.Scale(type="utc"),
        axis=alt.Axis(format="%b %d", labelAngle=-40, tickCount=4),
    )
    base = alt.Chart().encode(x=x, color=_rule_color(names))
    band = base.mark_area(opacity=0.12).encode(
        y=alt.Y("ci_low:Q", title="accept rate"),
        y2="ci_high:Q",
        color=_rule_color(names).legend(None),
    )
    line = base.mark_line(strokeWidth=1.6, point=alt.OverlayMarkDef(size=14)).encode(
        y=_rate_axis(), color=_rule_color(names).legend(alt.Legend(title="rule"))
    )
    width = (WIDTH + 40) // columns - 40
    # the line layer first: its legend (full colour) is the one drawn, not the bands'
    layer = alt.layer(line, band, data=data).properties(width=width, height=130)
    title = " / ".join(by) or None
    return layer.facet(
        facet=alt.Facet("group:N", title=title, header=alt.Header(labelFontWeight="bold")),
        columns=columns,
    )


def _heatmap_chart(long: pl.DataFrame, names: Sequence[str]) -> Any:
    """The compare matrix: accept rate per group (rows) and rule (columns)."""
    import altair as alt

    if long.is_empty():
        return None
    data = long.with_columns(
        pl.when(pl.col("accept_rate").is_null())
        .then(pl.lit("–"))
        .otherwise((pl.col("accept_rate") * 100).round(0).cast(pl.Int64).cast(pl.String) + "%")
        .alias("label"),
    )
    n_rules, n_groups = data["rule"].n_unique(), data["group"].n_unique()
    cell = max(28, min(60, (WIDTH - 140) // max(n_rules, 1)))
    x = alt.X("rule:N", title=None, sort=list(names), axis=alt.Axis(labelAngle=-35, orient="top"))
    y = alt.Y("group:N", title=None)
    base = alt.Chart(data).encode(x=x, y=y)
    empty = base.mark_rect(color="#f0f0f0")
    rect = (
        base.mark_rect()
        .encode(
            color=alt.Color(
                "accept_rate:Q",
                title="accept rate",
                scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"),
                legend=alt.Legend(format="%"),
            )
        )
        .transform_filter("isValid(datum.accept_rate)")
    )
    text = base.mark_text(fontSize=10).encode(
        text="label:N",
        color=alt.condition(
            "isValid(datum.accept_rate) && (datum.accept_rate < 0.2 || datum.accept_rate > 0.85)",
            alt.value("white"),
            alt.value("#222"),
        ),
    )
    return alt.layer(empty, rect, text).properties(width=cell * n_rules, height=22 * n_groups)


def _flips_chart(flips: pl.DataFrame) -> Any:
    import altair as alt

    top = flips.filter(pl.col("flips") > 0).head(TOP_FLIPS)
    if top.is_empty():
        return None
    data = top.select(
        (pl.col("rule_a") + " → not " + pl.col("rule_b")).alias("pair"), "flips", "flip_share"
    )
    bar = (
        alt.Chart(data)
        .mark_bar(color="#6a51a3")
        .encode(
            x=alt.X("flips:Q", title="runs accepted under the first rule, not the second"),
            y=alt.Y("pair:N", title=None, sort="-x"),
        )
    )
    return bar.properties(width=WIDTH - 260, height=20 * data.height)


def _attempts_chart(dist: pl.DataFrame, names: Sequence[str]) -> Any:
    import altair as alt

    data = _drawn(dist, names).filter(pl.col("attempts_to_acceptance") <= MAX_ATTEMPTS)
    if data.is_empty():
        return None
    data = data.select("rule", "attempts_to_acceptance", "cumulative_share", "accepted")
    line = (
        alt.Chart(data)
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X("attempts_to_acceptance:Q", title="attempt k", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y(
                "cumulative_share:Q",
                title="share of accepted runs by attempt k",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            color=_rule_color(names),
        )
    )
    return line.properties(width=WIDTH - 160, height=220)


def _tier_chart(mix: pl.DataFrame, names: Sequence[str]) -> Any:
    import altair as alt

    data = mix.filter(pl.col("runs") > 0)
    if data.is_empty():
        return None
    data = data.with_columns(
        pl.col("tier").replace_strict({t: i for i, t in enumerate(TIERS)}).alias("order")
    )
    bar = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "runs:Q",
                stack="normalize",
                title="share of decided runs",
                axis=alt.Axis(format="%"),
            ),
            y=alt.Y("rule:N", title=None, sort=list(names)),
            color=alt.Color(
                "tier:N",
                title="evidence tier",
                scale=alt.Scale(domain=list(TIERS), range=TIER_COLORS),
            ),
            order=alt.Order("order:Q"),
        )
    )
    return bar.properties(width=WIDTH - 200, height=22 * data["rule"].n_unique())


def _provisional_chart(prov: pl.DataFrame, names: Sequence[str]) -> Any:
    import altair as alt

    data = _drawn(prov, names).filter(pl.col("provisional_share").is_not_null())
    if data.is_empty():
        return None
    line = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=25))
        .encode(
            x=alt.X(
                "period:T", title=None, scale=alt.Scale(type="utc"), axis=alt.Axis(format="%b %d")
            ),
            y=alt.Y(
                "provisional_share:Q",
                title="provisional share of accepted runs",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            color=_rule_color(names),
        )
    )
    return line.properties(width=WIDTH - 160, height=200)


def _quality_chart(figs: dict[str, pl.DataFrame]) -> Any:
    """Quarantined documents and findings by code, side by side (each only when present)."""
    import altair as alt

    charts = []
    for table, title, colour in (
        ("quarantine", "quarantined documents and event records", "#b2182b"),
        ("findings", "findings on ingested runs", "#ef8a62"),
    ):
        data = figs[f"{table}_by_code"]
        if data.is_empty():
            continue
        bar = (
            alt.Chart(data, title=alt.Title(title, anchor="start", fontSize=12))
            .mark_bar(color=colour)
            .encode(
                x=alt.X("count:Q", title="count", axis=alt.Axis(tickMinStep=1, format="d")),
                y=alt.Y("code:N", title=None, sort="-x"),
            )
        )
        charts.append(bar.properties(width=WIDTH // 2 - 170, height=20 * data.height))
    if not charts:
        return None
    return alt.hconcat(*charts, spacing=60)


_ID = re.compile(r'\bid="([^"]+)"')


def to_svg(chart: Any, prefix: str) -> str:
    """Render an altair chart to inline SVG, its element ids prefixed so charts never clash.

    Several SVG documents in one page share one id space: without the prefix
    a chart's ``url(#clip1)`` could point at another chart's clip path.
    """
    import altair as alt
    import vl_convert as vlc

    with alt.data_transformers.disable_max_rows():  # the data is aggregated already
        spec = _config(chart).to_dict()
    svg: str = vlc.vegalite_to_svg(spec)
    for name in set(_ID.findall(svg)):
        new = f"{prefix}-{name}"
        svg = svg.replace(f'id="{name}"', f'id="{new}"')
        svg = svg.replace(f"url(#{name})", f"url(#{new})").replace(
            f'href="#{name}"', f'href="#{new}"'
        )
    return svg


# --- the page ---------------------------------------------------------------------

FIGURES = {
    "headline": "per rule: runs, accept rate with 95 % Wilson interval, decided share, "
    "provisional runs, the previous window's rate, the change and whether the intervals part",
    "rates_by_period": "oa.rates(by=..., period=...): accept rate per period, group and rule",
    "compare_matrix": "oa.compare matrix: a row per group; <rule>, <rule>__low, <rule>__high",
    "rates_by_group": "the compare matrix as rows: group, rule, accept_rate, ci_low, ci_high",
    "flips": "per ordered rule pair: runs accepted under rule_a, not rule_b; sample run ids",
    "attempts_distribution": "accepted runs by the attempt at which they were accepted, per rule",
    "tier_mix": "decided runs per rule and evidence tier, and their share",
    "provisional": "accepted runs whose late-event window is still open, per period and rule",
    "quarantine_by_code": "quarantined documents and event records by code (whole dataset)",
    "quarantine_samples": f"the first {SAMPLES} quarantined records a code: file, line, reason",
    "findings_by_code": "findings by code (whole dataset)",
    "findings_samples": f"the first {SAMPLES} findings of each code: run, file, line, reason",
}


def _pct(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{100 * v:.{digits}f}%"


def _rate(row: dict[str, Any], prefix: str = "") -> str:
    from ocp_analytics.engine.rates import format_rate

    return format_rate(row[f"{prefix}accept_rate"], row[f"{prefix}ci_low"], row[f"{prefix}ci_high"])


def _change(row: dict[str, Any]) -> str:
    if row["change"] is None:
        return "–"
    text = f"{100 * row['change']:+.1f} pts"
    if row["significant"]:
        text += " ▲" if row["direction"] == "up" else " ▼"
    return text


def _headline_table(head: pl.DataFrame) -> dict[str, Any]:
    columns = [
        "rule",
        "runs",
        "accept rate [95 %]",
        "decided",
        "provisional",
        "previous window",
        "change",
    ]
    rows = []
    for r in head.iter_rows(named=True):
        flag = "up" if r["direction"] == "up" else "down" if r["direction"] == "down" else ""
        rows.append(
            {
                "cells": [
                    r["rule"],
                    f"{r['runs']:,}",
                    _rate(r),
                    _pct(r["decided_share"]),
                    f"{r['provisional']:,}",
                    _rate(r, "prev_"),
                    _change(r),
                ],
                "flag": flag,
            }
        )
    return {"columns": columns, "rows": rows}


def _table(frame: pl.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    def cell(v: Any, c: str) -> str:
        if v is None:
            return "–"
        if isinstance(v, list):
            return ", ".join(map(str, v))
        if isinstance(v, float):
            return f"{v:.3f}"
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v) if c == "source_line" else f"{v:,}"
        return str(v)

    rows = [
        {"cells": [cell(r[c], c) for c in columns], "flag": ""} for r in frame.iter_rows(named=True)
    ]
    return {"columns": list(columns), "rows": rows}


def _cards(head: pl.DataFrame, previous: bool) -> list[dict[str, str]]:
    """The headline of the first rule (the recorded rules, by default)."""
    if head.is_empty():
        return []
    r = head.row(0, named=True)
    change = _change(r)
    return [
        {
            "label": f"runs ({r['rule']})",
            "value": f"{r['runs']:,}",
            "note": f"previous window {r['prev_runs']:,}" if previous else "no previous window",
        },
        {
            "label": "accept rate",
            "value": _pct(r["accept_rate"]),
            "note": "95 % interval "
            + (_rate(r).split(" ", 1)[1] if r["accept_rate"] is not None else "–"),
        },
        {
            "label": "decided share",
            "value": _pct(r["decided_share"]),
            "note": f"{r['accepted']:,} accepted, {r['rejected']:,} rejected, "
            f"{r['unknown']:,} unknown",
        },
        {
            "label": "change vs previous window",
            "value": change,
            "note": "intervals do not overlap"
            if r["significant"]
            else "intervals overlap (or no data)",
            "flag": r["direction"] or "",
        },
    ]


def _section_charts(figs: dict[str, pl.DataFrame], by: Sequence[str]) -> dict[str, str | None]:
    names = figs["headline"]["rule"].to_list()
    charts = {
        "headline": _headline_chart(figs["headline"]),
        "rates_by_period": _trend_chart(figs["rates_by_period"], by, names),
        "rates_by_group": _heatmap_chart(figs["rates_by_group"], names),
        "flips": _flips_chart(figs["flips"]),
        "attempts_distribution": _attempts_chart(figs["attempts_distribution"], names),
        "tier_mix": _tier_chart(figs["tier_mix"], names),
        "provisional": _provisional_chart(figs["provisional"], names),
        "quality": _quality_chart(figs),
    }
    return {k: None if c is None else to_svg(c, f"c{i}") for i, (k, c) in enumerate(charts.items())}


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _window_text(ctx: _Context) -> str:
    if ctx.since is None and ctx.until is None:
        return "all runs"
    if ctx.until is None:
        return f"since {_iso(ctx.since)}"
    return f"{_iso(ctx.since) or 'the first run'} → {_iso(ctx.until)}"


def render_html(
    figs: dict[str, pl.DataFrame], ctx: _Context, links: dict[str, str], meta: dict[str, Any]
) -> str:
    """The page: jinja2 template ``report.html.j2`` around the SVG charts and tables."""
    import jinja2

    from ocp_analytics._version import __version__

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ocp_analytics.reporting", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    head = figs["headline"]
    prev = ctx.previous()
    flips = figs["flips"].filter(pl.col("flips") > 0).head(TOP_FLIPS)
    groups = figs["rates_by_period"].select(_group_label(ctx.by)).n_unique() if ctx.by else 0
    max_k = figs["attempts_distribution"].get_column("attempts_to_acceptance").max()
    page = env.get_template("report.html.j2").render(
        title=meta["title"],
        version=__version__,
        generated=_iso(datetime.now(UTC).replace(microsecond=0)),
        dataset=meta["dataset"],
        data_dir=meta["data_dir"],
        data_format=meta["data_format"],
        as_of=_iso(ctx.as_of),
        window=_window_text(ctx),
        previous=f"{_iso(prev[0])} → {_iso(prev[1])}" if prev else "none: the window has no start",
        period=ctx.period,
        by=", ".join(ctx.by) or "nothing (all runs)",
        rules=", ".join(ctx.names),
        cards=_cards(head, prev is not None),
        no_runs=int(head["runs"].sum()) == 0,
        headline=_headline_table(head),
        charts=_section_charts(figs, ctx.by),
        trend_note=f"The {MAX_GROUPS} groups with most runs are drawn; all are in the data."
        if groups > MAX_GROUPS
        else "",
        lines_note=f"Lines are drawn for the first {MAX_LINES} of the {len(ctx.names)} rules "
        f"({', '.join(ctx.names[:MAX_LINES])}); every rule is in the data."
        if len(ctx.names) > MAX_LINES
        else "",
        top_flips=TOP_FLIPS,
        flips=_table(flips, ["rule_a", "rule_b", "runs_compared", "flips", "sample_run_ids"]),
        attempts_cut=MAX_ATTEMPTS if isinstance(max_k, int) and max_k > MAX_ATTEMPTS else None,
        quarantine=_table(
            figs["quarantine_samples"], ["code", "source_path", "source_line", "message"]
        ),
        findings=_table(
            figs["findings_samples"], ["code", "run_id", "source_path", "source_line", "message"]
        ),
        links=links,
    )
    return page


def write_data(
    figs: dict[str, pl.DataFrame],
    folder: Path,
    fmt: Literal["json", "parquet"],
    meta: dict[str, Any],
) -> dict[str, Path]:
    """Write every figure as ``<name>.json`` (header, rows) or ``<name>.parquet``; index.json."""
    folder.mkdir(parents=True, exist_ok=True)
    opts = orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC
    written, index = {}, {}
    for name, frame in figs.items():
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(path)
        else:
            doc = {"figure": name, "description": FIGURES[name], **meta, "rows": frame.to_dicts()}
            path.write_bytes(orjson.dumps(doc, option=opts, default=str))
        written[name] = path
        index[name] = {"file": path.name, "rows": frame.height, "description": FIGURES[name]}
    (folder / "index.json").write_bytes(
        orjson.dumps({**meta, "format": fmt, "figures": index}, option=opts, default=str)
    )
    return written


def _default_period(since: datetime | None, end: datetime) -> str:
    """``day`` for windows up to 62 days, ``week`` up to a year or without a start, else ``month``.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> end = datetime(2026, 12, 1, tzinfo=UTC)
    >>> starts = [datetime(y, m, 1, tzinfo=UTC) for y, m in [(2026, 11), (2026, 6), (2024, 1)]]
    >>> [_default_period(s, end) for s in starts]
    ['day', 'week', 'month']
    >>> _default_period(None, end)
    'week'
    """
    if since is None:
        return "week"
    span = end - since
    if span <= timedelta(days=62):
        return "day"
    return "week" if span <= timedelta(days=366) else "month"


def _context(
    dataset: object,
    rules: object,
    by: Sequence[str] | str,
    since: datetime | str | None,
    until: datetime | str | None,
    as_of: datetime | str | None,
    period: str | None,
    sample: int,
) -> _Context:
    from ocp_analytics.engine.timeaxis import resolve_as_of, resolve_window
    from ocp_analytics.model.rules import RECORDED, resolve_rules

    when = resolve_as_of(as_of)
    lo, hi = resolve_window(since, until, when)
    alt = resolve_rules(rules)  # type: ignore[arg-type]
    names = [RECORDED, *(r.name for r in alt)]
    cols = [by] if isinstance(by, str) else list(by)
    if period is None:
        period = _default_period(lo, hi or when)
    if period not in PERIODS:
        raise OcpAnalyticsError(
            hint(f"unknown period {period!r}.", f"use one of {', '.join(PERIODS)}.")
        )
    return _Context(dataset, alt, names, cols, when, lo, hi, period, sample)


def report(
    dataset: object,
    rules: object = None,
    *,
    by: Sequence[str] | str = (),
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    as_of: datetime | str | None = None,
    period: str | None = None,
    out: str | Path = "report.html",
    data_out: str | Path | None = None,
    data_format: Literal["json", "parquet"] = "json",
    sample: int = 5,
    title: str = "Acceptance report",
) -> ReportFiles:
    """Write the nightly report: one self-contained HTML page and the data of every figure.

    Sections: headline (runs, accept rate with its Wilson interval, decided
    share, change against the previous window with a flag where the intervals
    do not overlap), accept rate per period and group with interval bands,
    the group × rule matrix and the largest flips, attempts to acceptance,
    evidence tier mix, provisional acceptances and data quality. See
    ``docs/report.md``.

    Parameters
    ----------
    dataset, rules, as_of
        As for :func:`~ocp_analytics.engine.rates`; the recorded rules always come first.
    by
        Group columns: a ``runs`` column or ``label.KEY``.
    since, until
        The window (``since <= time < until`` on ``ended_at``, else
        ``started_at``): datetimes, ISO text, or durations such as ``30d``
        meaning ``as_of`` minus that (see ``docs/time.md``). The previous
        window is the one of the same length just before ``since``.
    period
        ``day``, ``week`` or ``month`` for the trend; by default ``day`` for
        windows up to 62 days, ``week`` up to a year (or without ``since``),
        ``month`` beyond.
    out
        The HTML file to write.
    data_out
        Folder for the data files (default: ``<out stem>-data`` beside the page).
    data_format
        ``json`` (a header with the window and ``rows``) or ``parquet``.
    sample
        Run ids kept per flip.
    title
        The page title.

    Returns
    -------
    ReportFiles
        The page's path, the data folder and each figure's data file.

    Raises
    ------
    MissingExtraError
        When altair, vl-convert-python or jinja2 is missing
        (``pip install 'ocp-analytics[report]'``).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> tmp = tempfile.mkdtemp()
    >>> _ = oa.ingest("tests/data/examples/v0.3", tmp + "/ds")
    >>> files = oa.report(tmp + "/ds", "tests+review", by="task_type",
    ...                   as_of="2027-01-01T00:00:00Z", out=tmp + "/report.html")
    >>> files.html.name, sorted(files.data)[:3]
    ('report.html', ['attempts_distribution', 'compare_matrix', 'findings_by_code'])
    """
    require_extra()
    if data_format not in ("json", "parquet"):
        raise OcpAnalyticsError(
            hint(f"unknown data format {data_format!r}.", "use json or parquet.")
        )
    ctx = _context(dataset, rules, by, since, until, as_of, period, sample)
    html = Path(out)
    folder = Path(data_out) if data_out is not None else html.with_name(f"{html.stem}-data")
    figs = build_figures(ctx)
    meta = {
        "as_of": ctx.as_of,
        "since": ctx.since,
        "until": ctx.until,
        "period": ctx.period,
        "by": ctx.by,
        "rules": ctx.names,
    }
    written = write_data(figs, folder, data_format, meta)
    base = html.resolve().parent
    links = {n: os.path.relpath(p.resolve(), base) for n, p in written.items()}
    page_meta = {
        "title": title,
        "dataset": str(getattr(dataset, "path", dataset)),
        "data_dir": os.path.relpath(folder.resolve(), base),
        "data_format": data_format,
    }
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(render_html(figs, ctx, links, page_meta), encoding="utf-8")
    return ReportFiles(html, folder, written)
