"""``sweep`` and ``check``: where to put a score's bar, and the gate a CI job runs.

``sweep`` prints the accept rate at every target of a score (or the target
for a rate); ``check`` prints one verdict line (or a JSON document) and exits
0, 1 or 4 by the verdict, 5 on any error, so a nightly job or a pull request
fails on a real regression, not on noise and not on a broken invocation.
"""

from __future__ import annotations

import traceback
from enum import Enum
from typing import Annotated, Any

import polars as pl
import typer

from ocp_analytics.cli.evaluate import DecisionsOpt, decisions_said
from ocp_analytics.cli.options import (
    AsOfOpt,
    ByOpt,
    DatasetArg,
    Format,
    FormatOpt,
    OutOpt,
    SinceOpt,
    SnapshotOpt,
    UntilOpt,
    WhereOpt,
    as_of_arg,
    dataset_arg,
    output_format,
)
from ocp_analytics.cli.output import deliver, emit, json_text, no_run_line, warnings_as_lines
from ocp_analytics.exceptions import OcpAnalyticsError

#: ``check`` exits 5 on any error (a bad option value, a missing dataset, a
#: bug), so that 1 always means a regression. Wrong usage click catches
#: itself (an unknown option) exits 2.
EXIT_CHECK_ERROR = 5
#: Points of a curve a table shows per group (csv, json and parquet have all).
TABLE_POINTS = 21


class Better(Enum):
    """Which way a score is better (a plain Enum: a str one's ``lower`` would shadow str.lower)."""

    higher = "higher"
    lower = "lower"


def sweep(
    dataset: DatasetArg,
    rule: Annotated[
        str | None,
        typer.Option(
            "--rule",
            metavar="RULE",
            help="A rule with a score, e.g. 'tests+runtime_s<=3600' (its target is ignored).",
        ),
    ] = None,
    score: Annotated[
        str | None,
        typer.Option(
            "--score", metavar="NAME", help="The score whose target moves (with --better)."
        ),
    ] = None,
    better: Annotated[
        Better | None,
        typer.Option("--better", help="lower (a runtime, a cost) or higher (a benchmark score)."),
    ] = None,
    requires: Annotated[
        list[str] | None,
        typer.Option(
            "--requires", metavar="VERDICT", help="A verdict the rule also requires; repeatable."
        ),
    ] = None,
    for_rate: Annotated[
        float | None,
        typer.Option(
            "--for-rate",
            min=0.0,
            max=1.0,
            metavar="SHARE",
            help="Instead of the curve: per group, the strictest target accepting at least "
            "this share of the decided runs (0.8).",
        ),
    ] = None,
    by: ByOpt = None,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
    decisions: DecisionsOpt = True,
) -> None:
    """Where to put a score's bar: the accept rate at every observed value as the target.

    For a rule with a score (--rule 'tests+runtime_s<=3600', or --score
    runtime_s --better lower --requires tests), each row is what the rule
    gives with its target at that value: runs, accepted, rejected, unknown,
    decided and the accept rate with its 95 % Wilson interval, exactly as
    `rates` would count it. Runs without the score are unknown (or rejected,
    when a required verdict failed or an excluded event counts). The table
    shows up to 21 evenly spread targets per group; csv, json and parquet
    have every one. --for-rate 0.8 gives, per group, the strictest target
    that still accepts 80 % of the decided runs. Pick a target on one period
    and read its rate on the next: read on the same runs it flatters. After
    a refresh of the rule, the rest of the rule (its verdicts and excluded
    events) is read from its decisions store and only the scores from the
    signals.

    \b
    Examples:
      ocp-analytics sweep runs.dataset --rule 'tests+runtime_s<=3600'
      ocp-analytics sweep runs.dataset --score runtime_s --better lower --requires tests
      ocp-analytics sweep runs.dataset --score bench_score --better higher --for-rate 0.8
      ocp-analytics sweep runs.dataset --rule 'runtime_s<=3600' --by label.team -o curve.csv
      ocp-analytics sweep runs.dataset --rule 'runtime_s<=3600' --since 30d --where env=ci
    """
    from ocp_analytics.api.sweep import sweep as run_sweep

    fmt = output_format(format, out)
    when = as_of_arg(as_of)
    ds = dataset_arg(dataset, snapshot)
    with warnings_as_lines(), decisions_said():
        frame = run_sweep(
            ds,
            rule,
            score=score,
            better=None if better is None else better.value,
            requires=requires or (),
            by=by or [],
            for_rate=for_rate,
            as_of=when,
            since=since,
            until=until,
            where=where or (),
            use_decisions=decisions,
        )
    if frame.is_empty() and (since is not None or until is not None or where):
        typer.echo(no_run_line(since, until, when, where or ()), err=True)
        if fmt is Format.table:
            return
    shown = _curve_table(frame, for_rate is None) if fmt is Format.table else frame
    emit(shown, fmt, out, when, ds.snapshot)


def _curve_table(frame: pl.DataFrame, thin: bool) -> pl.DataFrame:
    """The curve for reading: the rate with its interval and count as one cell, a few targets.

    Per group at most :data:`TABLE_POINTS` rows, evenly spread over its
    targets (the first and last kept).
    """
    from ocp_analytics.reporting.numbers import rate_text

    keys = frame.columns[: frame.columns.index("target")]  # the group columns
    if thin and frame.height:
        at = pl.int_range(pl.len()).over(keys) if keys else pl.int_range(pl.len())
        n = pl.len().over(keys) if keys else pl.len()
        step = ((n - 1) / (TABLE_POINTS - 1)).clip(lower_bound=1.0)
        # the rows nearest to TABLE_POINTS evenly spaced positions
        keep = (at == ((at / step).round() * step).round().cast(pl.Int64)) | (at == n - 1)
        frame = frame.filter(keep)
    cells = [
        rate_text(r["accept_rate"], r["ci_low"], r["ci_high"], r["decided"])
        for r in frame.iter_rows(named=True)
    ]
    return frame.select(
        *keys,
        "target",
        "runs",
        "accepted",
        "rejected",
        "unknown",
        pl.Series("accept_rate", cells, dtype=pl.String),
        "as_of",
    )


def check(
    dataset: DatasetArg,
    rule: Annotated[
        str | None,
        typer.Option(
            "--rule",
            metavar="RULE",
            help="The rule of a two-window check (default: each run's recorded rule).",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline", metavar="since=WHEN,until=WHEN", help="The runs the candidate is held to."
        ),
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option(
            "--candidate", metavar="since=WHEN,until=WHEN", help="The runs being checked."
        ),
    ] = None,
    baseline_rule: Annotated[
        str | None,
        typer.Option(
            "--baseline-rule",
            metavar="RULE",
            help="Paired: the rule held to, over the same runs (recorded: each run's own).",
        ),
    ] = None,
    candidate_rule: Annotated[
        str | None,
        typer.Option("--candidate-rule", metavar="RULE", help="Paired: the rule being checked."),
    ] = None,
    by: ByOpt = None,
    max_drop: Annotated[
        float,
        typer.Option(
            "--max-drop",
            metavar="SHARE",
            help="The drop tolerated, as a share (0.02: two points).",
        ),
    ] = 0.02,
    min_decided: Annotated[
        int,
        typer.Option(
            "--min-decided", metavar="N", help="Fewer decided runs a side: not enough data."
        ),
    ] = 30,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """The CI gate: exit 1 when the accept rate dropped by more than --max-drop, beyond noise.

    Two windows under one rule (--baseline, --candidate; --rule, default each
    run's recorded rule), or two rules over the same runs (--baseline-rule,
    --candidate-rule; --since, --until): a paired comparison. A group
    regressed when the whole 95 % interval of candidate − baseline
    (Newcombe's; paired for two rules) lies below −max_drop: the drop is
    significantly larger than the one tolerated. With --by, a call per group
    and the worst as the verdict; each interval is widened (Bonferroni over
    the groups with enough data) so that noise alone calls no group regressed
    in 95 % of nights. Prints one line (with --by, a line per group first);
    --format json prints the verdict document.

    \b
    Exit status:
      0  no significant drop beyond --max-drop (within noise, or improved)
      1  regressed
      4  not enough data (fewer than --min-decided decided runs on a side)
      5  error: the message says what and how to fix it (never a regression)
      2  wrong usage caught by the parser (an unknown option)

    \b
    Examples:
      ocp-analytics check runs.dataset --baseline since=60d,until=30d --candidate since=30d
      ocp-analytics check runs.dataset --rule tests+review \\
          --baseline since=2026-11-01,until=2026-12-01 --candidate since=2026-12-01 --by label.team
      ocp-analytics check runs.dataset --baseline-rule tests --candidate-rule tests+review \\
          --since 7d
      ocp-analytics check runs.dataset --baseline since=14d,until=7d --candidate since=7d \\
          --max-drop 0.05 --format json -o verdict.json
    """
    given = dict(locals())  # every option, read by _check
    code = EXIT_CHECK_ERROR
    try:
        code = _check(dataset, given)
    except OcpAnalyticsError as exc:
        typer.echo(f"error: {exc}", err=True)
    except Exception:  # a bug: its traceback, and the error status, never "regressed"
        traceback.print_exc()
    raise typer.Exit(code)


def _check(dataset: str, given: dict[str, Any]) -> int:
    """``check`` itself: its verdict written, its exit status returned."""
    from ocp_analytics.api.check import check as run_check
    from ocp_analytics.store.verify import damaged_parts

    fmt = output_format(given["format"], given["out"])
    when = as_of_arg(given["as_of"])
    with damaged_parts(dataset):
        ds = dataset_arg(dataset, given["snapshot"])
        with warnings_as_lines():
            result = run_check(
                ds,
                given["rule"],
                baseline=given["baseline"],
                candidate=given["candidate"],
                baseline_rule=given["baseline_rule"],
                candidate_rule=given["candidate_rule"],
                by=given["by"] or [],
                max_drop=given["max_drop"],
                min_decided=given["min_decided"],
                as_of=when,
                since=given["since"],
                until=given["until"],
                where=given["where"] or (),
            )
    if fmt is Format.json:
        deliver(json_text(result.to_dict()), given["out"])
    elif fmt is Format.table:
        deliver("\n".join(result.lines()), given["out"])
    else:
        emit(result.groups, fmt, given["out"], when, ds.snapshot)
    return result.exit_code
