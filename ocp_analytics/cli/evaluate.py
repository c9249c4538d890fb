"""``accept``, ``rates`` and ``compare``: the evaluation commands.

Each reads its options (``cli.options``), runs the API on this process or
``ocp_analytics.spark`` on a cluster (``--engine``), and writes the result
(``cli.output``); warnings of the API come out as ``warning: …`` lines.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import polars as pl
import typer

from ocp_analytics.cli.options import (
    AsOfOpt,
    ByOpt,
    DatasetArg,
    Engine,
    EngineOpt,
    Format,
    FormatOpt,
    OutOpt,
    Period,
    RuleOpt,
    RulesOpt,
    SinceOpt,
    SnapshotOpt,
    SparkConfOpt,
    SparkMasterOpt,
    Tier,
    UntilOpt,
    WhereOpt,
    WideOpt,
    as_of_arg,
    dataset_arg,
    output_format,
    rules_arg,
    spark_session,
)
from ocp_analytics.cli.output import (
    deliver,
    emit,
    flips_table,
    json_text,
    matrix_table,
    no_run_line,
    rates_table,
    render,
    sort_flips,
    stamp,
    warnings_as_lines,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ocp_analytics.model.rules import Rule
    from ocp_analytics.store.scan import Dataset

DecisionsOpt = Annotated[
    bool,
    typer.Option(
        "--decisions/--no-decisions",
        help="Read the rules' rows from the dataset's decisions store where it gives the "
        "same rows (see refresh; stderr says: decisions: N reused, M decided); "
        "--no-decisions evaluates every run from raw.",
    ),
]


@contextmanager
def decisions_said() -> Iterator[None]:
    """Each read of the decisions stores within the block as one line on standard error."""
    from ocp_analytics.api.stored import observing

    with observing() as seen:
        try:
            yield
        finally:
            for summary in seen:
                typer.echo(str(summary), err=True)


def accept(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
    recorded: Annotated[bool, typer.Option(help="Include each run's recorded rule.")] = True,
    late_only: Annotated[
        bool,
        typer.Option(
            "--late-only",
            help="Only rows a late event turned to rejected (reason late:NAME, no failing part).",
        ),
    ] = False,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
    decisions: DecisionsOpt = True,
) -> None:
    """Per-run acceptance under each run's own rule and alternative rules.

    One row per (run, rule): outcome, reasons, tier, q, the attempt at
    acceptance, window_open and as_of. The rule named recorded is each run's
    own rule. Written as Parquet, runs are evaluated a slice at a time, so
    memory stays bounded on datasets of any size (rows then come slice by
    slice and rule by rule; other formats are sorted by run_id and rule).

    \b
    Examples:
      ocp-analytics accept runs.dataset
      ocp-analytics accept runs.dataset --rule tests+review --rule 'runtime_s<=3600'
      ocp-analytics accept runs.dataset --rules team-bars.toml -o acceptance.parquet
      ocp-analytics accept runs.dataset --as-of 2026-12-01T00:00:00Z -f csv -o acc.csv
      ocp-analytics accept runs.dataset --since 7d -o last-week.csv
      ocp-analytics accept runs.dataset --where label.team=payments --since 30d
      ocp-analytics accept runs.dataset --late-only   # accepted yesterday, reverted today
      ocp-analytics accept runs.dataset --as-of 2026-12-01T00:00:00Z --snapshot 41  # as then
      ocp-analytics accept runs.dataset --engine spark -o acceptance.parquet  # a folder of parts
      ocp-analytics refresh runs.dataset --rules team-bars.toml   # then accept reuses its rows
      ocp-analytics accept runs.dataset --rules team-bars.toml --no-decisions  # all from raw
    """
    fmt = output_format(format, out)
    when = as_of_arg(as_of)
    alt = rules_arg(rules, rule)
    window: dict[str, Any] = {"recorded": recorded, "since": since, "until": until}
    window |= where_arg(where)
    ds = dataset_arg(dataset, snapshot)
    if engine is Engine.polars:
        flags = {**window, "late_only": late_only, "use_decisions": decisions}
        _accept_polars(ds, alt, when, flags, fmt, out)
        return
    if late_only:
        raise OcpAnalyticsError(
            hint(
                "--late-only is not available with --engine spark yet.",
                "run it with --engine polars (the default).",
            )
        )
    window["snapshot"] = ds.snapshot
    _accept_spark(dataset, alt, when, window, fmt, out, spark_master, spark_conf)


def _accept_polars(
    dataset: Dataset,
    alt: list[Rule | str],
    when: datetime,
    window: dict[str, Any],
    fmt: Format,
    out: Path | None,
) -> None:
    """``accept`` in this process: Parquet written a slice at a time, else sorted rows."""
    from ocp_analytics.api import acceptance, write_acceptance

    with warnings_as_lines(), decisions_said():
        if fmt is Format.parquet and out is not None:
            rows = write_acceptance(dataset, out, alt, as_of=when, **window)
            typer.echo(f"wrote {rows:,} rows to {out} ({_stamp(when, dataset.snapshot)})", err=True)
            return
        frame = acceptance(dataset, alt, as_of=when, **window).sort("run_id", "rule")
    _emit_or_say_empty(frame, fmt, out, when, {**window, "snapshot": dataset.snapshot})


def _accept_spark(
    dataset: str,
    alt: list[Rule | str],
    when: datetime,
    window: dict[str, Any],
    fmt: Format,
    out: Path | None,
    master: str | None,
    conf: list[str] | None,
) -> None:
    """``accept --engine spark``: Parquet as a folder of parts written by the tasks."""
    from ocp_analytics import spark

    with spark_session(master, conf) as session, warnings_as_lines():
        if fmt is Format.parquet and out is not None:
            rows = spark.write_acceptance(session, dataset, out, alt, when, **window)
            said = _stamp(when, window["snapshot"])
            typer.echo(f"wrote {rows:,} rows to the folder {out} ({said})", err=True)
            return
        frame = spark.to_polars(spark.acceptance(session, dataset, alt, when, **window))
    _emit_or_say_empty(frame.sort("run_id", "rule"), fmt, out, when, window)


def rates(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    min_tier: Annotated[
        Tier | None,
        typer.Option("--min-tier", help="Count only outcomes at least this strong as decided."),
    ] = None,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    period: Annotated[
        Period | None,
        typer.Option(
            "--period", help="Rates per UTC day, week (from Monday) or month (a column period)."
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="COLUMN",
            help="Runs of one COLUMN (task_id, or label.KEY) are not independent: add the "
            "cluster-robust (CR1) 95 % interval beside the Wilson one.",
        ),
    ] = None,
    out: OutOpt = None,
    format: FormatOpt = None,
    wide: WideOpt = False,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
    decisions: DecisionsOpt = True,
) -> None:
    """Acceptance rates per group and rule, with 95 % Wilson intervals.

    accept_rate = accepted / (accepted + rejected): runs whose outcome is
    unknown are left out, so read it beside the decided runs. The table shows
    rule, groups, runs, decided, the rate with its interval and count in one
    cell (e.g. '66.0 % [65.7–66.3] of 1,234 decided') and attempts_median;
    --wide adds every other column; csv, json and parquet keep every column,
    accept_rate, ci_low, ci_high and decided_share as numbers. as_of is the
    table's last line, with the snapshot read (--snapshot, else the newest
    commit's seq). Past 40 rows the table keeps the newest periods and
    says how many rows it left out. --cluster task_id adds the interval that
    takes runs of one task as one cluster (clusters, cluster_se,
    cluster_ci_low, cluster_ci_high, design_effect; the table's
    cluster_interval column).

    \b
    Examples:
      ocp-analytics rates runs.dataset
      ocp-analytics rates runs.dataset --rules team-bars.toml --by label.team --by task_type
      ocp-analytics rates runs.dataset --min-tier verified        # verified-only rate
      ocp-analytics rates runs.dataset --rule tests+review -o rates.csv
      ocp-analytics rates runs.dataset --since 30d --period week --by label.team
      ocp-analytics rates runs.dataset --since 3mo --period month --wide
      ocp-analytics rates runs.dataset --where label.team=payments --by task_type
      ocp-analytics rates runs.dataset --as-of 2026-12-01T00:00:00Z --snapshot 41
      ocp-analytics rates runs.dataset --by label.team --cluster task_id
      ocp-analytics rates runs.dataset --rules team-bars.toml --no-decisions  # all from raw
    """
    from ocp_analytics.api import rates as run_rates

    fmt = output_format(format, out)
    when = as_of_arg(as_of)
    items = rules_arg(rules, rule)
    ds = dataset_arg(dataset, snapshot)
    kwargs: dict[str, Any] = {
        "by": by or [],
        "min_tier": None if min_tier is None else min_tier.value,
        "as_of": when,
        "since": since,
        "until": until,
        "period": None if period is None else period.value,
        **where_arg(where),
    }
    if cluster is not None and engine is Engine.spark:
        raise OcpAnalyticsError(
            hint(
                "--cluster is not available with --engine spark yet.",
                "run it with --engine polars (the default).",
            )
        )
    with warnings_as_lines(), decisions_said():
        if engine is Engine.spark:
            from ocp_analytics import spark

            with spark_session(spark_master, spark_conf) as session:
                frame = spark.rates(session, dataset, items, snapshot=ds.snapshot, **kwargs)
        else:
            frame = run_rates(ds, items, cluster=cluster, use_decisions=decisions, **kwargs)
    if fmt is Format.table:
        keys = [*(["period"] if period else []), *(by or [])]
        keys = [k for k in keys if k in frame.columns]
        shown = rates_table(frame, keys, wide)
        if cluster is not None:
            shown = shown.with_columns(cluster_cells(frame))
    else:
        shown = frame
    _emit_or_say_empty(shown, fmt, out, when, {**kwargs, "snapshot": ds.snapshot})


def compare(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    as_of: AsOfOpt = None,
    snapshot: SnapshotOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    where: WhereOpt = None,
    sample: Annotated[int, typer.Option(min=0, help="Run ids shown per flip (0 or more).")] = 5,
    out: OutOpt = None,
    format: FormatOpt = None,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
    decisions: DecisionsOpt = True,
) -> None:
    """Teams' bars side by side: rate matrix (group × rule); per rule pair, flips and a paired test.

    The matrix has one row per group and, per rule, the accept rate with its
    95 % interval. For every ordered pair of rules (per group with --by):
    flips, the runs accepted under rule_a but not under rule_b (rejected or
    unknown), with a sample of run ids; over the runs decided under both,
    the paired counts a (accepted under both), b (rule_a only), c (rule_b
    only), d (rejected under both), the difference of accept rates with
    Newcombe's paired 95 % interval, McNemar's p-value (exact below 25
    discordant runs) and Holm's adjusted p-value across all rows.
    Flips are listed largest first. JSON is one document {"as_of", "snapshot",
    "matrix", "flips"}; csv and parquet are two tables, so they need --out: the matrix
    goes to --out and the flips beside it as FILE.flips.EXT.

    \b
    Examples:
      ocp-analytics compare runs.dataset --rules team-bars.toml --by label.team
      ocp-analytics compare runs.dataset --rule tests --rule tests+review -o cmp.json
      ocp-analytics compare runs.dataset --rules a.toml --rules b.toml -f csv -o cmp.csv
      ocp-analytics compare runs.dataset --rules team-bars.toml --where label.team=payments
      ocp-analytics compare runs.dataset --rule tests --as-of 2026-12-01 --snapshot 41
      ocp-analytics compare runs.dataset --rules team-bars.toml --no-decisions  # all from raw
    """
    from ocp_analytics.api import compare as run_compare

    fmt = output_format(format, out)
    if fmt is Format.csv and out is None:
        raise OcpAnalyticsError(
            hint(
                "compare -f csv writes two tables (the matrix and the flips), not one stream.",
                "add --out cmp.csv (the flips go beside it as cmp.flips.csv), "
                "or use -f json for one document on standard output.",
            )
        )
    when = as_of_arg(as_of)
    items = rules_arg(rules, rule)
    if not items:
        raise OcpAnalyticsError(
            hint("compare needs rules to compare.", "pass --rules FILE or --rule SHORT.")
        )
    ds = dataset_arg(dataset, snapshot)
    kwargs: dict[str, Any] = {
        "by": by or [],
        "as_of": when,
        "sample": sample,
        "since": since,
        "until": until,
        **where_arg(where),
    }
    with warnings_as_lines(), decisions_said():
        if engine is Engine.spark:
            from ocp_analytics import spark

            with spark_session(spark_master, spark_conf) as session:
                matrix, flips = spark.compare(
                    session, dataset, items, snapshot=ds.snapshot, **kwargs
                )
        else:
            lazy_matrix, lazy_flips = run_compare(ds, items, use_decisions=decisions, **kwargs)
            matrix, flips = lazy_matrix, lazy_flips
    if matrix.is_empty() and (since is not None or until is not None or where):
        typer.echo(no_run_line(since, until, when, where or ()), err=True)
        if fmt is Format.table:
            return
    _write_comparison(matrix, sort_flips(flips), fmt, out, when, ds.snapshot)


def _write_comparison(
    matrix: pl.DataFrame,
    flips: pl.DataFrame,
    fmt: Format,
    out: Path | None,
    when: datetime,
    snapshot: int | None,
) -> None:
    """``compare``'s result: one text or JSON document, or the matrix and its flips file."""
    if fmt is Format.table:
        text = "\n".join(
            [
                "accept rate [95% interval] by group and rule",
                render(matrix_table(matrix), fmt, None),
                "",
                "flips: runs accepted under rule_a but not under rule_b",
                "paired, over the runs decided under both: a accepted under both, b rule_a only,",
                "c rule_b only, d rejected under both; difference = rate under rule_a minus",
                "under rule_b [95% Newcombe]; McNemar's p-value; p_holm adjusted across the rows",
                render(flips_table(flips), fmt, when, snapshot),
            ]
        )
        deliver(text, out)
    elif fmt is Format.json:
        body = {**stamp(when, snapshot), "matrix": matrix.to_dicts(), "flips": flips.to_dicts()}
        deliver(json_text(body), out)
    else:
        emit(matrix, fmt, out, when, snapshot)
        if out is None:
            typer.echo("")
        emit(flips, fmt, None if out is None else _flips_path(out), when, snapshot)
        return
    if out is not None:
        typer.echo(f"wrote {out}", err=True)


def _flips_path(out: Path) -> Path:
    """Where csv and parquet ``compare`` put the flips: ``FILE.flips.EXT`` beside ``--out``.

    Examples
    --------
    >>> _flips_path(Path("out/cmp.csv")).as_posix()
    'out/cmp.flips.csv'
    """
    return out.with_name(out.stem + ".flips" + out.suffix)


def cluster_cells(frame: pl.DataFrame) -> pl.Series:
    """The cluster-robust interval of each rates row as text, with its clusters.

    Examples
    --------
    >>> f = pl.DataFrame({"cluster_ci_low": [0.512, None], "cluster_ci_high": [0.8, None],
    ...                   "clusters": [12, 1], "design_effect": [2.5, None]})
    >>> cluster_cells(f).to_list()
    ['[51.2–80.0] over 12 clusters, design effect 2.5', '– over 1 cluster']
    """
    cells = []
    for r in frame.iter_rows(named=True):
        lo, hi, g, deff = (
            r[c] for c in ("cluster_ci_low", "cluster_ci_high", "clusters", "design_effect")
        )
        span = "–" if lo is None else f"[{100 * lo:.1f}–{100 * hi:.1f}]"
        cell = f"{span} over {g:,} cluster{'' if g == 1 else 's'}"
        cells.append(cell if deff is None else f"{cell}, design effect {deff:.1f}")
    return pl.Series("cluster_interval", cells, dtype=pl.String)


def where_arg(where: list[str] | None) -> dict[str, list[str]]:
    """``{"where": [...]}`` for the API when ``--where`` was given (the strings unchanged).

    Examples
    --------
    >>> where_arg(["label.team=payments"])
    {'where': ['label.team=payments']}
    >>> where_arg(None)
    {}
    """
    return {"where": list(where)} if where else {}


def _emit_or_say_empty(
    frame: pl.DataFrame, fmt: Format, out: Path | None, when: datetime, window: dict[str, Any]
) -> None:
    """Write ``frame``; when a window or ``--where`` selected no run, say so instead of a table.

    Files (csv, json, parquet) are still written, empty, so a pipeline finds them.
    ``window["snapshot"]`` is the seq of the commit read, written beside ``as_of``.
    """
    since, until, where = window.get("since"), window.get("until"), window.get("where", [])
    if frame.is_empty() and (since is not None or until is not None or where):
        typer.echo(no_run_line(since, until, when, where), err=True)
        if fmt is Format.table:
            return
    emit(frame, fmt, out, when, window.get("snapshot"))


def _stamp(when: datetime, snapshot: int | None) -> str:
    """``as_of …, snapshot …`` for the ``wrote N rows`` line."""
    return f"as_of {when.isoformat()}, snapshot {'none' if snapshot is None else snapshot}"
