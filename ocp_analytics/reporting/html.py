"""The page: the jinja2 template ``templates/report.html.j2`` around the charts and tables.

What the template is given is built here from the figures: the headline
cards, the tables (cells as text: rates with their interval, shares, counts)
and the notes on what a chart leaves out. The page holds no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

import polars as pl

from ocp_analytics.engine.stats.changes import CALLS, IMPROVED, MIN_DECIDED, REGRESSED
from ocp_analytics.reporting.charts import (
    DECIDED_FLOOR,
    MAX_ATTEMPTS,
    MAX_GROUPS,
    MAX_LINES,
    MAX_SWEEP_GROUPS,
    MAX_SWEEP_POINTS,
    svg_charts,
)
from ocp_analytics.reporting.context import Context
from ocp_analytics.reporting.figures import TOP_FLIPS, group_label, top_flips
from ocp_analytics.reporting.numbers import change_text, interval_text, pct, rate_text

MAX_CALLED = 15  # period changes called improved or regressed listed on the page (all in data)
HOLM_ALPHA = 0.05  # a rule pair whose Holm-adjusted p is below it reads "real difference"
# a call's class on the page: a subtle colour (templates/report.html.j2)
_CALL_CLASS = dict(zip(CALLS, ("improved", "regressed", "noise", "nodata"), strict=True))


def _pct(v: Any, digits: int = 1) -> str:
    return pct(v, digits)


def _rate(row: dict[str, Any], prefix: str = "") -> str:
    """The rate with its interval and decided runs (``66.0 % [65.7–66.3] of 1,234 decided``)."""
    decided = None
    if f"{prefix}accepted" in row and f"{prefix}rejected" in row:
        decided = (row[f"{prefix}accepted"] or 0) + (row[f"{prefix}rejected"] or 0)
    return rate_text(
        row[f"{prefix}accept_rate"], row[f"{prefix}ci_low"], row[f"{prefix}ci_high"], decided
    )


def _change(row: dict[str, Any]) -> str:
    return change_text(row["change"], row["change_low"], row["change_high"], row["call"])


def _row(cells: list[str], classes: dict[int, str] | None = None) -> dict[str, Any]:
    """A table row: its cells' text, and a class for some cells (by position)."""
    marks = classes or {}
    return {"cells": cells, "classes": [marks.get(i, "") for i in range(len(cells))]}


def _headline_table(head: pl.DataFrame) -> dict[str, Any]:
    columns = ["rule", "runs", "accept rate [95 %]", "decided", "provisional"]
    columns += ["previous window", "change [95 %] and call"]
    rows = [
        _row(
            [
                r["rule"],
                f"{r['runs']:,}",
                _rate(r),
                _pct(r["decided_share"]),
                f"{r['provisional']:,}",
                _rate(r, "prev_"),
                _change(r),
            ],
            {6: _CALL_CLASS.get(r["call"], "")},
        )
        for r in head.iter_rows(named=True)
    ]
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

    rows = [_row([cell(r[c], c) for c in columns]) for r in frame.iter_rows(named=True)]
    return {"columns": list(columns), "rows": rows}


def _flips_table(flips: pl.DataFrame) -> dict[str, Any]:
    """The largest flips beside the paired test of their pair of rules.

    A pair whose Holm-adjusted p is below :data:`HOLM_ALPHA` reads "real
    difference", its difference and p marked.
    """
    from ocp_analytics.engine.flips import format_difference, format_p

    columns = ["rule_a", "rule_b", "runs compared", "flips", "decided under both"]
    columns += ["difference [95 %]", "p (McNemar)", "p (Holm)", "sample run ids"]
    rows = []
    for r in flips.iter_rows(named=True):
        real = r["p_holm"] is not None and r["p_holm"] < HOLM_ALPHA
        holm = format_p(r["p_holm"]) + (" real difference" if real else "")
        cells = [
            r["rule_a"],
            r["rule_b"],
            f"{r['runs_compared']:,}",
            f"{r['flips']:,}",
            f"{r['n']:,}",
            format_difference(r["difference"], r["difference_low"], r["difference_high"]),
            format_p(r["p_value"], r["p_method"]),
            holm,
            ", ".join(r["sample_run_ids"]),
        ]
        rows.append(_row(cells, {5: "real", 6: "num", 7: "real"} if real else {5: "num", 6: "num"}))
    return {"columns": columns, "rows": rows}


def _day(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d")


def _period_changes(trend: pl.DataFrame, by: Sequence[str], period: str) -> dict[str, Any]:
    """The calls against the previous period: how many of each, and the latest called ones.

    Lists at most :data:`MAX_CALLED` cells called ``improved`` or
    ``regressed``, newest period first; every cell is in the data.
    """
    if "call" not in trend.columns or trend.is_empty():
        return {"summary": "", "table": {"columns": [], "rows": []}, "more": 0}
    counts = dict(trend.group_by("call").len().iter_rows())
    parts = [f"{counts.get(c, 0):,} {c}" for c in CALLS]
    summary = (
        f"Against the previous {period}, per group and rule: {', '.join(parts)} "
        f"(fewer than {MIN_DECIDED} decided runs on a side)."
    )
    called = trend.filter(pl.col("call").is_in([IMPROVED, REGRESSED])).sort(
        "period", descending=True, maintain_order=True
    )
    columns = ["period", *(["group"] if by else []), "rule", "accept rate [95 %]"]
    columns += [f"previous {period}", "change [95 %] and call"]
    rows = []
    for r in called.head(MAX_CALLED).with_columns(group_label(by)).iter_rows(named=True):
        base = (r["prev_accepted"] or 0) + (r["prev_rejected"] or 0)
        prev = f"{pct(r['prev_accepted'] / base if base else None)} of {base:,} decided"
        cells = [_day(r["period"]), *([r["group"]] if by else []), r["rule"]]
        cells += [_rate(r), prev, _change(r)]
        rows.append(_row(cells, {len(cells) - 1: _CALL_CLASS[r["call"]]}))
    table = {"columns": columns, "rows": rows}
    return {"summary": summary, "table": table, "more": max(0, called.height - MAX_CALLED)}


def _cards(head: pl.DataFrame, previous: bool) -> list[dict[str, str]]:
    """The headline of the first rule (the recorded rules, by default)."""
    if head.is_empty():
        return []
    r = head.row(0, named=True)
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
            + interval_text(r["ci_low"], r["ci_high"])
            + f" of {r['accepted'] + r['rejected']:,} decided",
        },
        {
            "label": "decided share",
            "value": _pct(r["decided_share"]),
            "note": f"{r['accepted']:,} accepted, {r['rejected']:,} rejected, "
            f"{r['unknown']:,} unknown",
        },
        _change_card(r, previous),
    ]


def _change_card(r: dict[str, Any], previous: bool) -> dict[str, str]:
    """The headline's change card: the change in points, its interval and call below."""
    value = "–" if r["change"] is None else f"{100 * r['change']:+.1f} pts"
    if not previous:
        note = "no previous window"
    elif r["change"] is None:
        note = r["call"]
    else:
        bounds = f"[{100 * r['change_low']:+.1f}, {100 * r['change_high']:+.1f}]"
        note = f"95 % interval {bounds}: {r['call']}"
    return {
        "label": "change vs previous window",
        "value": value,
        "note": note,
        "flag": _CALL_CLASS.get(r["call"], "") if previous else "",
    }


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _window_text(ctx: Context) -> str:
    if ctx.since is None and ctx.until is None:
        return "all runs"
    if ctx.until is None:
        return f"since {_iso(ctx.since)}"
    return f"{_iso(ctx.since) or 'the first run'} → {_iso(ctx.until)}"


def _about(ctx: Context) -> dict[str, Any]:
    """The page's header: the instant, this window and the previous one, the groups, the rules."""
    prev = ctx.previous()
    return {
        "as_of": _iso(ctx.as_of),
        "snapshot": "none" if ctx.snapshot is None else ctx.snapshot,
        "window": _window_text(ctx),
        "previous": f"{_iso(prev[0])} → {_iso(prev[1])}"
        if prev
        else "none: the window has no start",
        "period": ctx.period,
        "by": ", ".join(ctx.by) or "nothing (all runs)",
        "rules": ", ".join(ctx.names),
    }


def _notes(figs: dict[str, pl.DataFrame], ctx: Context) -> dict[str, Any]:
    """What the charts leave out (every figure's data has it all): groups, rules, attempts."""
    groups = figs["rates_by_period"].select(group_label(ctx.by)).n_unique() if ctx.by else 0
    max_k = figs["attempts_distribution"].get_column("attempts_to_acceptance").max()
    names = ctx.names
    return {
        "trend_note": f"The {MAX_GROUPS} groups with most runs are drawn; all are in the data."
        if groups > MAX_GROUPS
        else "",
        "lines_note": f"Lines are drawn for the first {MAX_LINES} of the {len(names)} rules "
        f"({', '.join(names[:MAX_LINES])}); every rule is in the data."
        if len(names) > MAX_LINES
        else "",
        "attempts_cut": MAX_ATTEMPTS if isinstance(max_k, int) and max_k > MAX_ATTEMPTS else None,
        "sweep_note": _sweep_note(figs.get("sweep"), ctx.by),
    }


def _sweep_note(sweep: pl.DataFrame | None, by: Sequence[str]) -> str:
    """What the sweep chart leaves out: points past a few hundred, groups, rules past six."""
    if sweep is None:
        return ""
    parts = [f"Each curve draws at most {MAX_SWEEP_POINTS} of its points"]
    groups = sweep.select(group_label(by)).n_unique() if by else 0
    if groups > MAX_SWEEP_GROUPS:
        parts.append(f"a line for each of the {MAX_SWEEP_GROUPS} groups with most runs")
    rules = sweep["rule"].unique(maintain_order=True).to_list()
    if len(rules) > MAX_LINES:
        parts.append(f"a panel for the first {MAX_LINES} of the {len(rules)} rules with a score")
    return "; ".join(parts) + ": every point of every group and rule is in the data."


def _tables(figs: dict[str, pl.DataFrame], ctx: Context) -> dict[str, Any]:
    """The page's tables: headline, period calls, largest flips, data-quality samples."""
    flips = top_flips(figs["flips"])
    quarantine = ["code", "source_path", "source_line", "message"]
    findings = ["code", "run_id", "source_path", "source_line", "message"]
    return {
        "headline": _headline_table(figs["headline"]),
        "period_changes": _period_changes(figs["rates_by_period"], ctx.by, ctx.period),
        "top_flips": TOP_FLIPS,
        "flips": _flips_table(flips),
        "quarantine": _table(figs["quarantine_samples"], quarantine),
        "findings": _table(figs["findings_samples"], findings),
    }


class PageExtras(TypedDict):
    """What the page says beside its figures: the data's freshness and the warnings."""

    freshness: dict[str, Any]
    banners: list[str]


def _freshness_text(fresh: dict[str, Any]) -> str:
    """The headline's freshness line: newest run end and last ingest, before as_of."""
    if not fresh:
        return ""
    run = fresh.get("newest_run_end")
    ingest = fresh.get("last_ingest")
    parts = [
        "no run has ended"
        if run is None
        else f"newest run ended {_iso(run)} ({fresh['newest_run_end_age']} before as_of)",
        "no ingest recorded"
        if ingest is None
        else f"last ingest {_iso(ingest)} ({fresh['last_ingest_age']} before as_of)",
    ]
    return "; ".join(parts)


class PageMeta(TypedDict):
    """What the page says of its files: its title, the dataset, the data folder and format."""

    title: str
    dataset: str
    data_dir: str
    data_format: str


def render_html(
    figs: dict[str, pl.DataFrame],
    ctx: Context,
    links: dict[str, str],
    meta: PageMeta,
    extras: PageExtras,
) -> str:
    """The page: jinja2 template ``report.html.j2`` around the SVG charts and tables.

    ``links`` names each figure's data file, relative to the page.
    """
    import jinja2

    from ocp_analytics._version import __version__

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ocp_analytics.reporting", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    head = figs["headline"]
    return env.get_template("report.html.j2").render(
        **meta,
        version=__version__,
        generated=_iso(datetime.now(UTC).replace(microsecond=0)),
        **_about(ctx),
        cards=_cards(head, ctx.previous() is not None),
        no_runs=int(head["runs"].sum()) == 0,
        charts=svg_charts(figs, ctx.by),
        **_notes(figs, ctx),
        **_tables(figs, ctx),
        holm_alpha=HOLM_ALPHA,
        min_decided=MIN_DECIDED,
        links=links,
        freshness=_freshness_text(extras["freshness"]),
        banners=extras["banners"],
        decided_floor=pct(DECIDED_FLOOR, 0),
    )
