"""``passk`` and ``cost``: repeated tries of a task, and what acceptance costs.

Both read the options ``rates`` reads (rules, groups, the window, filters,
``--as-of``, ``--snapshot``), run :func:`ocp_analytics.passk` (or
:func:`ocp_analytics.flaky_tasks`) and :func:`ocp_analytics.cost` (or
:func:`ocp_analytics.run_costs`) in this process, and write the result
(``cli.output``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer

from ocp_analytics.cli.evaluate import where_arg
from ocp_analytics.cli.options import (
    AsOfOpt,
    ByOpt,
    DatasetArg,
    Format,
    FormatOpt,
    OutOpt,
    Period,
    RuleOpt,
    RulesOpt,
    SinceOpt,
    SnapshotOpt,
    UntilOpt,
    WhereOpt,
    WideOpt,
    as_of_arg,
    dataset_arg,
    output_format,
    rules_arg,
)
from ocp_analytics.cli.output import emit, no_run_line, warnings_as_lines


class Measure(StrEnum):
    """What a run costs (``ocp_analytics.engine.stats.cost.MEASURES``)."""

    cost_usd = "cost_usd"
    input_tokens = "input_tokens"
    output_tokens = "output_tokens"
    reasoning_tokens = "reasoning_tokens"
    wall_s = "wall_s"


PeriodOpt = Annotated[
    Period | None,
    typer.Option("--period", help="Per UTC day, week (from Monday) or month (a column period)."),
]
TaskOpt = Annotated[
    str,
    typer.Option(
        "--task",
        metavar="COLUMN",
        help="What makes runs tries of one task: a runs column or label.KEY.",
    ),
]

# what a reader scans in ``cost``; every other column with --wide or another format
_COST_NARROW = ("rule", "runs_with_cost", "runs_without_cost", "cost_per_accepted")


def _window(
    by: list[str] | None,
    as_of: datetime,
    since: str | None,
    until: str | None,
    where: list[str] | None,
    period: Period | None = None,
) -> dict[str, Any]:
    """The API's keyword arguments every one of these commands shares."""
    kwargs: dict[str, Any] = {"by": by or [], "as_of": as_of, "since": since, "until": until}
    if period is not None:
        kwargs["period"] = period.value
    return kwargs | where_arg(where)


def _emit(
    frame: pl.DataFrame, fmt: Format, out: Path | None, kwargs: dict[str, Any], snapshot: int | None
) -> None:
    """Write ``frame``; when a window or ``--where`` selected no run, say so instead of a table."""
    since, until, where = kwargs.get("since"), kwargs.get("until"), kwargs.get("where", [])
    if frame.is_empty() and (since is not None or until is not None or where):
        typer.echo(no_run_line(since, until, kwargs["as_of"], where), err=True)
        if fmt is Format.table:
            return
    emit(frame, fmt, out, kwargs["as_of"], snapshot)


def passk(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    k: Annotated[int, typer.Option("--k", min=1, help="pass@k and pass^k for k = 1 .. K.")] = 1,
    task: TaskOpt = "task_id",
    by: ByOpt = None,
    flaky: Annotated[
        bool,
        typer.Option(
            "--flaky",
            help="List the flaky tasks instead: some runs accepted, some rejected under a rule.",
        ),
    ] = False,
    sample: Annotated[
        int, typer.Option(min=0, help="--flaky: run ids shown per task, accepted and rejected.")
    ] = 5,
    recorded: Annotated[bool, typer.Option(help="Include each run's recorded rule.")] = True,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    period: PeriodOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """Repeated tries of a task: pass@k and pass^k per group and rule, or the flaky tasks.

    For a task with n decided runs under a rule, c of them accepted:
    pass@k = 1 - C(n-c, k)/C(n, k), the chance that k of its runs drawn
    without replacement hold at least one accepted run; pass^k =
    C(c, k)/C(n, k), that all k were accepted. Each is averaged over the
    tasks with n >= k (tasks: how many), every task weighing the same. Runs
    of one task are whole runs, not the attempts inside a run (those are
    attempts to acceptance, in rates). The recorded rule is each run's own.

    --flaky lists the tasks with both accepted and rejected runs under a
    rule, most decided runs first, with sample run ids of each side.

    \b
    Examples:
      ocp-analytics passk runs.dataset --k 5
      ocp-analytics passk runs.dataset --k 3 --rule tests+review --by label.team
      ocp-analytics passk runs.dataset --k 10 --task label.benchmark_item -o passk.csv
      ocp-analytics passk runs.dataset --flaky --rule tests --since 30d
      ocp-analytics passk runs.dataset --k 3 --as-of 2026-12-01T00:00:00Z --snapshot 41
    """
    from ocp_analytics.api import flaky_tasks
    from ocp_analytics.api import passk as run_passk

    fmt = output_format(format, out)
    items = rules_arg(rules, rule)
    ds = dataset_arg(dataset, snapshot)
    kwargs = _window(by, as_of_arg(as_of), since, until, where, period)
    common = {**kwargs, "task": task, "recorded": recorded}
    with warnings_as_lines():
        if flaky:
            frame = flaky_tasks(ds, items, sample=sample, **common)
        else:
            frame = run_passk(ds, items, k=k, **common)
    if flaky and frame.is_empty() and fmt is Format.table:
        # an empty box reads as a failure; no flaky task is an answer
        typer.echo(f"flaky tasks: none: no {task} has both accepted and rejected runs")
        return
    _emit(frame, fmt, out, kwargs, ds.snapshot)


def cost(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    measure: Annotated[
        Measure,
        typer.Option(
            "--measure",
            help="What a run costs: its attempts' cost_usd or tokens, or wall_s "
            "(each attempt's ended_at - started_at, summed).",
        ),
    ] = Measure.cost_usd,
    by: ByOpt = None,
    per_run: Annotated[
        bool,
        typer.Option("--per-run", help="One row per (run, rule): its cost and cost to acceptance."),
    ] = False,
    recorded: Annotated[bool, typer.Option(help="Include each run's recorded rule.")] = True,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    period: PeriodOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
    wide: WideOpt = False,
) -> None:
    """What acceptance costs: cost per accepted run, and the cost to acceptance.

    A run's cost sums its attempts' measure (those that record it; a run
    none of whose attempts does is counted apart in runs_without_cost, never
    as 0). cost_per_accepted = the decided runs' total cost / the accepted
    ones, with a 95 % delta-method interval: what it costs to get one run
    accepted, the rejected runs' cost included. Runs with an unknown outcome
    are left out. cost_to_acceptance: over accepted runs, the cost of the
    attempts up to and including the attempt at acceptance (its median and
    mean). The table shows the rule, groups, runs with and without a cost,
    cost_per_accepted with its interval and the median cost to acceptance;
    --wide, csv, json and parquet have every column.

    \b
    Examples:
      ocp-analytics cost runs.dataset
      ocp-analytics cost runs.dataset --rule tests+review --by label.team
      ocp-analytics cost runs.dataset --measure output_tokens --since 30d --period week
      ocp-analytics cost runs.dataset --measure wall_s --where label.team=payments
      ocp-analytics cost runs.dataset --per-run -o run-costs.parquet
    """
    from ocp_analytics.api import cost as run_cost
    from ocp_analytics.api import run_costs

    fmt = output_format(format, out)
    items = rules_arg(rules, rule)
    ds = dataset_arg(dataset, snapshot)
    kwargs = _window(by, as_of_arg(as_of), since, until, where, None if per_run else period)
    common = {**kwargs, "measure": measure.value, "recorded": recorded}
    with warnings_as_lines():
        frame = run_costs(ds, items, **common) if per_run else run_cost(ds, items, **common)
    if fmt is Format.table and not per_run:
        keys = [*(["period"] if period else []), *(by or [])]
        frame = cost_table(frame, [k for k in keys if k in frame.columns], wide)
    _emit(frame, fmt, out, kwargs, ds.snapshot)


def _amount(value: float | None) -> str:
    """A cost as read: 2 decimals below 1,000, thousands separated above.

    Examples
    --------
    >>> _amount(3.296), _amount(123456.7), _amount(None)
    ('3.30', '123,457', '–')
    """
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}"


def cost_table(frame: pl.DataFrame, keys: list[str], wide: bool = False) -> pl.DataFrame:
    """``cost`` for reading: ``cost_per_accepted`` as one text column with its interval.

    Examples
    --------
    >>> f = pl.DataFrame({"rule": ["tests"], "runs_with_cost": [4], "runs_without_cost": [1],
    ...     "accepted_with_cost": [4], "cost_per_accepted": [3.296], "cost_ci_low": [2.93],
    ...     "cost_ci_high": [3.66], "cost_to_acceptance_median": [3.455]})
    >>> cost_table(f, []).row(0)
    ('tests', 4, 1, '3.30 [2.93–3.66] per accepted (4)', 3.455)
    """
    cells = [
        f"{_amount(r['cost_per_accepted'])} [{_amount(r['cost_ci_low'])}–"
        f"{_amount(r['cost_ci_high'])}] per accepted ({r['accepted_with_cost']:,})"
        for r in frame.iter_rows(named=True)
    ]
    shown = frame.with_columns(pl.Series("cost_per_accepted", cells, dtype=pl.String))
    narrow = [*keys, *_COST_NARROW, "cost_to_acceptance_median"]
    if wide:
        rest = [
            c for c in shown.columns if c not in narrow and c not in ("cost_ci_low", "cost_ci_high")
        ]
        return shown.select(*narrow, *rest)
    return shown.select(*narrow)
