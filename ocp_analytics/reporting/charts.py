"""The report's charts: altair → Vega-Lite → static SVG (vl-convert), one per section.

The page holds no script and opens offline: every chart is rendered here to
inline SVG, its element ids prefixed so charts never clash. A chart function
returns ``None`` when its figure has nothing to draw (the page says so).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import polars as pl

from ocp_analytics.engine.stats.changes import IMPROVED, REGRESSED
from ocp_analytics.reporting.figures import TIERS, group_label, top_flips

MAX_GROUPS = 12  # groups drawn in the trend chart (all are in the data)
MAX_LINES = 6  # rules drawn as lines (trend, attempts, provisional): the first ones
MAX_ATTEMPTS = 15  # attempts drawn in the distribution chart (all are in the data)
MAX_SWEEP_POINTS = 200  # points drawn per sweep curve (all are in the data)
MAX_SWEEP_GROUPS = 4  # with groups, the sweep draws those with most runs (all are in the data)
LOG_SPREAD = (
    50  # a sweep's x axis is logarithmic when its largest target is this many times its least
)

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


def _share_axis(field: str = "accept_rate", title: str = "accept rate") -> Any:
    """A y axis for a share from 0 to 100 %."""
    import altair as alt

    return alt.Y(
        f"{field}:Q", title=title, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")
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
    """Accept rate per period with its interval band: a panel per group, a line per rule.

    A triangle marks a period called improved (up) or regressed (down)
    against the period before (the ``call`` of ``rates_by_period``).
    """
    import altair as alt

    if trend.is_empty() or "period" not in trend.columns:
        return None
    data = _drawn(trend, names).with_columns(group_label(by))
    data = data.filter(pl.col("accept_rate").is_not_null())
    if data.is_empty():
        return None
    top = (
        data.group_by("group")
        .agg(pl.col("runs").sum())
        .sort(["runs", "group"], descending=[True, False])
    )
    data = data.filter(pl.col("group").is_in(top.head(MAX_GROUPS)["group"].implode()))
    data = data.select(
        "period", "group", "rule", "accept_rate", "ci_low", "ci_high", "runs", "call"
    )
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
        y=_share_axis(), color=_rule_color(names).legend(alt.Legend(title="rule"))
    )
    width = (WIDTH + 40) // columns - 40
    # the line layer first: its legend (full colour) is the one drawn, not the bands'
    layers = [line, band]
    called = [IMPROVED, REGRESSED]
    if data["call"].is_in(called).any():
        shape = alt.Shape(
            "call:N",
            title="against the previous period",
            scale=alt.Scale(domain=called, range=["triangle-up", "triangle-down"]),
        )
        marks = base.mark_point(filled=True, size=70, opacity=1, strokeWidth=0.6, stroke="white")
        layers.append(
            marks.encode(
                y=alt.Y("accept_rate:Q"), shape=shape, color=_rule_color(names).legend(None)
            ).transform_filter(alt.FieldOneOfPredicate(field="call", oneOf=called))
        )
    layer = alt.layer(*layers, data=data).properties(width=width, height=130)
    title = " / ".join(by) or None
    return layer.facet(
        facet=alt.Facet("group:N", title=title, header=alt.Header(labelFontWeight="bold")),
        columns=columns,
    )


# A matrix cell is coloured only when at least this share of its runs was
# decided under the rule; below it the cell is grey (docs/report.md, "The matrix").
DECIDED_FLOOR = 0.2


def _heatmap_chart(long: pl.DataFrame, by: Sequence[str], names: Sequence[str]) -> Any:
    """The compare matrix: accept rate per group (rows) and rule (columns), "of n decided" below.

    A cell whose decided share is under :data:`DECIDED_FLOOR` is grey with
    "–": a rule a team records no verdict for is not a red 0 %.
    """
    import altair as alt

    if long.is_empty():
        return None
    shown = pl.col("accept_rate").is_not_null() & (
        pl.col("decided_share").fill_null(0.0) >= DECIDED_FLOOR
    )
    data = long.with_columns(
        group_label(by),
        pl.when(shown)
        .then((pl.col("accept_rate") * 100).round(0).cast(pl.Int64).cast(pl.String) + " %")
        .otherwise(pl.lit("–"))
        .alias("label"),
        ("of " + pl.col("decided").cast(pl.String) + " decided").alias("count_label"),
        pl.when(shown).then(pl.col("accept_rate")).alias("shown_rate"),
    )
    n_rules, n_groups = data["rule"].n_unique(), data["group"].n_unique()
    cell = max(70, min(90, (WIDTH - 140) // max(n_rules, 1)))
    x = alt.X("rule:N", title=None, sort=list(names), axis=alt.Axis(labelAngle=-35, orient="top"))
    y = alt.Y("group:N", title=None)
    base = alt.Chart(data).encode(x=x, y=y)
    empty = base.mark_rect(color="#f0f0f0")
    rect = (
        base.mark_rect()
        .encode(
            color=alt.Color(
                "shown_rate:Q",
                title="accept rate",
                scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"),
                legend=alt.Legend(format="%"),
            )
        )
        .transform_filter("isValid(datum.shown_rate)")
    )
    ink = alt.condition(
        "isValid(datum.shown_rate) && (datum.shown_rate < 0.2 || datum.shown_rate > 0.85)",
        alt.value("white"),
        alt.value("#222"),
    )
    rate = base.mark_text(fontSize=10, dy=-6).encode(text="label:N", color=ink)
    count = base.mark_text(fontSize=8, dy=7).encode(text="count_label:N", color=ink)
    return alt.layer(empty, rect, rate, count).properties(
        width=cell * n_rules, height=32 * n_groups
    )


def _flips_chart(flips: pl.DataFrame) -> Any:
    import altair as alt

    top = top_flips(flips)
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
            y=_share_axis("cumulative_share", "share of accepted runs by attempt k"),
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
            y=_share_axis("provisional_share", "provisional share of accepted runs"),
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


def thin(curve: pl.DataFrame, keys: Sequence[str], most: int = MAX_SWEEP_POINTS) -> pl.DataFrame:
    """At most ``most`` rows of each curve (``keys``), evenly spaced by rank, the ends kept.

    The sweep has a point per distinct score value, tens of thousands on a
    large window; a few hundred draw the same curve in a fraction of the SVG.

    Examples
    --------
    >>> df = pl.DataFrame({"k": ["a"] * 1000 + ["b"] * 3, "target": range(1003)})
    >>> out = thin(df, ["k"], 50)
    >>> out.group_by("k").len().sort("k").rows(), out["target"].max()
    ([('a', 50), ('b', 3)], 1002)
    """
    n = pl.len().over(keys).cast(pl.Int64)
    i = pl.int_range(pl.len()).over(keys).cast(pl.Int64)
    # ranks cut into ``most`` equal buckets (the last holds only the last row): a row a bucket
    bucket = (i * (most - 1)) // (n - 1)
    first = (i == 0) | (bucket > ((i - 1) * (most - 1)) // (n - 1))
    return curve.filter((n <= most) | first)


def _sweep_groups(sweep: pl.DataFrame, by: Sequence[str]) -> list[str]:
    """The groups the sweep draws: the :data:`MAX_SWEEP_GROUPS` with most runs."""
    runs = sweep.with_columns(group_label(by)).group_by("group").agg(pl.col("runs").max())
    top = runs.sort(["runs", "group"], descending=[True, False]).head(MAX_SWEEP_GROUPS)
    return top["group"].to_list()


def _sweep_chart(
    sweep: pl.DataFrame | None, marks: pl.DataFrame, by: Sequence[str], names: Sequence[str]
) -> Any:
    """Per rule with a score, its accept rate (95 % band) against the score target.

    A line per drawn group (one without groups); the dashed rule is the
    rule's own target and the dot its accept rate in the window there
    (``marks``: the headline's, or the matrix's per group).
    """
    import altair as alt

    if sweep is None or sweep.is_empty():
        return None
    data = sweep.filter(pl.col("accept_rate").is_not_null()).with_columns(group_label(by))
    groups = _sweep_groups(data, by)
    data = thin(data.filter(pl.col("group").is_in(groups)), ["rule", "group"])
    if data.is_empty():
        return None
    if by:
        color = alt.Color("group:N", title=" / ".join(by), scale=alt.Scale(domain=groups))
    else:
        color = _rule_color(names)
    scored = data.unique("rule", maintain_order=True).head(MAX_LINES)
    panels = [
        _sweep_panel(data.filter(pl.col("rule") == r["rule"]), marks, r, color, groups)
        for r in scored.iter_rows(named=True)
    ]
    return alt.vconcat(*panels, spacing=24).resolve_scale(x="independent")


def _sweep_panel(
    curve: pl.DataFrame, marks: pl.DataFrame, rule: dict[str, Any], color: Any, groups: list[str]
) -> Any:
    """One rule's sweep: band and line per group, its own target dashed, the rate there a dot."""
    import altair as alt

    lower = rule["better"] == "lower"
    # a row's rate holds from its target to the next one (lower is better) or up to it
    step: Literal["step-after", "step-before"] = "step-after" if lower else "step-before"
    lo, hi = curve["target"].min(), curve["target"].max()
    # scores spread over orders of magnitude (runtimes, costs) read better on a log axis
    log = isinstance(lo, float) and isinstance(hi, float) and lo > 0 and hi / lo >= LOG_SPREAD
    x = alt.X(
        "target:Q",
        title=f"{rule['score']} target ({rule['better']} is better)",
        scale=alt.Scale(type="log" if log else "linear", zero=False, nice=False),
    )
    curve = curve.select("rule", "group", "target", "accept_rate", "ci_low", "ci_high", "runs")
    base = alt.Chart(curve).encode(x=x, color=color, detail="group:N")
    band = base.mark_area(opacity=0.12, interpolate=step).encode(
        y=alt.Y("ci_low:Q", title="accept rate"), y2="ci_high:Q", color=color.legend(None)
    )
    # the line layer alone has the legend (a group's colour), and only with groups
    legend = None if groups == ["all"] else alt.Legend()
    line = base.mark_line(strokeWidth=1.4, interpolate=step).encode(
        y=_share_axis(), color=color.legend(legend)
    )
    at = marks.filter(
        (pl.col("rule") == rule["rule"]) & pl.col("group").is_in(groups)
    ).with_columns(pl.lit(rule["rule_target"]).alias("target"))
    target = f"{rule['rule_target']:g}"
    label = f"{rule['rule']}: target {target}"
    if at.height == 1 and at["accept_rate"][0] is not None:
        label += f", {100 * at['accept_rate'][0]:.1f} %"
    dashed = (
        alt.Chart(pl.DataFrame({"target": [rule["rule_target"]], "label": [label]}))
        .mark_rule(strokeDash=[4, 3], color="#555")
        .encode(x="target:Q")
    )
    text = dashed.mark_text(align="left", dx=4, dy=-6, fontSize=11, color="#333").encode(
        text="label:N", y=alt.value(0)
    )
    layers = [line, band, dashed, text]
    at = at.filter(pl.col("accept_rate").is_not_null())
    if not at.is_empty():
        point = alt.Chart(at).encode(x="target:Q", color=color.legend(None))
        layers.append(point.mark_rule(strokeWidth=2).encode(y="ci_low:Q", y2="ci_high:Q"))
        layers.append(
            point.mark_point(
                filled=True, size=55, opacity=1, stroke="white", strokeWidth=0.8
            ).encode(y="accept_rate:Q")
        )
    return alt.layer(*layers).properties(width=WIDTH - 200, height=170)


_ID = re.compile(r'\bid="([^"]+)"')


def to_svg(chart: Any, prefix: str) -> str:
    """Render an altair chart to inline SVG, its element ids prefixed so charts never clash.

    Several SVG documents in one page share one id space: without the prefix
    a chart's ``url(#clip1)`` could point at another chart's clip path.
    """
    return _svg(_spec(chart), prefix)


def _spec(chart: Any) -> dict[str, Any]:
    """A chart's Vega-Lite spec, the page's configuration applied."""
    import altair as alt

    with alt.data_transformers.disable_max_rows():  # the data is aggregated already
        spec: dict[str, Any] = _config(chart).to_dict()
    return spec


def _svg(spec: dict[str, Any], prefix: str) -> str:
    """A Vega-Lite spec as inline SVG, its element ids prefixed (:func:`to_svg`)."""
    import vl_convert as vlc

    svg: str = vlc.vegalite_to_svg(spec)
    for name in set(_ID.findall(svg)):
        new = f"{prefix}-{name}"
        svg = svg.replace(f'id="{name}"', f'id="{new}"')
        svg = svg.replace(f"url(#{name})", f"url(#{new})").replace(
            f'href="#{name}"', f'href="#{new}"'
        )
    return svg


def sweep_marks(figs: dict[str, pl.DataFrame], by: Sequence[str]) -> pl.DataFrame:
    """Each rule's accept rate in the window at its own target: ``rule``, ``group``, the rate.

    The headline's without groups, the matrix's (``rates_by_group``) per
    group: the rate the sweep's curve gives at the rule's target.
    """
    rates = figs["rates_by_group"] if by else figs["headline"]
    return rates.select("rule", group_label(by), "accept_rate", "ci_low", "ci_high")


def svg_charts(figs: dict[str, pl.DataFrame], by: Sequence[str]) -> dict[str, str | None]:
    """Every section's chart as inline SVG (``None`` where there is nothing to draw)."""
    names = figs["headline"]["rule"].to_list()
    charts = {
        "headline": _headline_chart(figs["headline"]),
        "rates_by_period": _trend_chart(figs["rates_by_period"], by, names),
        "rates_by_group": _heatmap_chart(figs["rates_by_group"], by, names),
        "flips": _flips_chart(figs["flips"]),
        "sweep": _sweep_chart(figs.get("sweep"), sweep_marks(figs, by), by, names),
        "attempts_distribution": _attempts_chart(figs["attempts_distribution"], names),
        "tier_mix": _tier_chart(figs["tier_mix"], names),
        "provisional": _provisional_chart(figs["provisional"], names),
        "quality": _quality_chart(figs),
    }
    specs = [
        (k, f"c{i}", None if c is None else _spec(c)) for i, (k, c) in enumerate(charts.items())
    ]
    # the specs are converted two at a time: the converter lets go of the GIL for part of it
    with ThreadPoolExecutor(2, thread_name_prefix="ocp-svg") as pool:
        svgs = pool.map(lambda t: None if t[2] is None else _svg(t[2], t[1]), specs)
        return {k: svg for (k, _, _), svg in zip(specs, svgs, strict=True)}
