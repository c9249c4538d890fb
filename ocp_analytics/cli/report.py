"""``report``: the nightly HTML page (``ocp_analytics.reporting``) and its data files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from ocp_analytics.cli.evaluate import DecisionsOpt, decisions_said
from ocp_analytics.cli.options import (
    AsOfOpt,
    ByOpt,
    DatasetArg,
    RuleOpt,
    RulesOpt,
    SnapshotOpt,
    as_of_arg,
    check_parent,
    rules_arg,
)

if TYPE_CHECKING:
    from ocp_analytics._typing import Period
    from ocp_analytics.reporting.page import DataFormat


def report(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Window start: an instant, or a duration before --as-of (30d, 12h, 2w).",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="WHEN", help="Window end (excluded); as --since."),
    ] = None,
    period: Annotated[
        str | None,
        typer.Option(
            "--period",
            metavar="day|week|month",
            help="Trend buckets (UTC; default from the window: day up to 62 days, then week).",
        ),
    ] = None,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="FILE", help="The HTML page to write.")
    ] = Path("report.html"),
    data_out: Annotated[
        Path | None,
        typer.Option(
            "--data-out",
            metavar="DIR",
            help="Folder for every figure's data (default: FILE's name + '-data', beside it).",
        ),
    ] = None,
    data_format: Annotated[
        str, typer.Option("--data-format", metavar="json|parquet", help="Data file format.")
    ] = "json",
    sample: Annotated[int, typer.Option(min=0, help="Run ids kept per flip (0 or more).")] = 5,
    title: Annotated[str, typer.Option(help="The page title.")] = "Acceptance report",
    max_staleness: Annotated[
        str | None,
        typer.Option(
            "--max-staleness",
            metavar="DURATION",
            help="Exit 1 and write nothing when the newest run ended longer than this "
            "before --as-of (2d, 12h).",
        ),
    ] = None,
    decisions: DecisionsOpt = True,
) -> None:
    """The nightly report: one self-contained HTML page, and each figure's data beside it.

    Headline (runs, accept rate with its 95 % interval, decided share, change
    against the previous window of the same length with its 95 % interval and
    a call: improved, regressed, within noise, or not enough data under 30
    decided runs a side), accept rate per period and group (each period
    called against the one before), the group × rule matrix and the largest
    flips with the paired test of each pair of rules (the difference with its
    paired interval, McNemar's p and Holm's), for each rule with a score
    (runtime_s<=3600) the accept rate at every score target (the sweep, its
    own target marked), attempts to acceptance, evidence tiers, provisional
    acceptances and data quality.
    The header names the instant (as_of) and the commit read (snapshot: --snapshot,
    else the newest), as does every data file: with both, a rerun gives the
    same page. The headline says how fresh the data is: the newest run end and the last
    ingest, and how long before --as-of each was (also in headline.json);
    --max-staleness stops a stale page. A rule naming a verdict or score no
    run carries is a warning banner on the page. The rules' rows come from the
    dataset's decisions stores where they give the same rows (see refresh;
    stderr says: decisions: N reused, M decided); --no-decisions reads raw.
    The data folder is FILE's name + '-data'; a folder holding another page's
    data is refused.
    The page has no script and loads nothing: it opens offline. Needs the
    report extra: pip install 'ocp-analytics[report]'.

    \b
    Examples:
      ocp-analytics report runs.dataset --by label.team --since 30d -o report.html
      ocp-analytics report runs.dataset --rules team-bars.toml --by label.team \\
          --since 30d --as-of 2026-12-01T00:00:00Z -o report.html --data-out report-data
      ocp-analytics report runs.dataset --rule 'tests+runtime_s<=3600' --since 30d \\
          -o report.html   # with the sweep: where to put the runtime bar
      ocp-analytics report runs.dataset --since 30d --max-staleness 2d -o /srv/www/index.html
      ocp-analytics report runs.dataset --since 7d --as-of 2026-12-01T00:00:00Z \\
          --snapshot 41 -o last-week.html   # last week's page, whatever landed since
    """
    from ocp_analytics.reporting.page import report as run_report

    check_parent(out, "--out")
    # --period and --data-format stay free text (their help shows the choices);
    # the page checks both and says how to fix a wrong one
    with decisions_said():
        files = run_report(
            dataset,
            rules_arg(rules, rule),
            by=by or [],
            since=since,
            until=until,
            as_of=as_of_arg(as_of),
            snapshot=snapshot,
            period=cast("Period | None", period),
            out=out,
            data_out=data_out,
            data_format=cast("DataFormat", data_format),
            sample=sample,
            title=title,
            max_staleness=max_staleness,
            use_decisions=decisions,
        )
    typer.echo(f"wrote {files.html} and {len(files.data)} data files in {files.data_dir}", err=True)
