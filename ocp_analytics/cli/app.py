"""The ``ocp-analytics`` command: parse arguments, call the API, map errors.

Exit codes: 0 success; 1 an error the message explains (bad dataset, rule,
source, output path); 2 wrong usage (an unknown option, a value out of
range); 3 ``ingest --strict`` quarantined something.

Options mean the same in every command: ``-o/--out`` the file written,
``-f/--format`` its format (by default the extension of ``--out``, else a
table), ``--rules`` a rules file and ``--rule`` a short rule (both
repeatable), ``--as-of`` the instant late events are judged at.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import polars as pl
import typer

from ocp_analytics.exceptions import OcpAnalyticsError, StrictIngestError, hint

app = typer.Typer(
    name="ocp-analytics",
    help=(
        "Columnar analytics for OCP run documents: ingest, acceptance, rates, SQL.\n\n"
        "\b\n"
        "Start with:\n"
        "  ocp-analytics ingest runs/ --out runs.dataset\n"
        "  ocp-analytics rates runs.dataset --rule tests+review\n"
        "  ocp-analytics COMMAND --help"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # plain click help and errors: `\b` paragraphs keep their line breaks,
    # and a usage error is three plain lines, not a box
    rich_markup_mode=None,
)

TABLE_ROWS = 40


class Format(StrEnum):
    """Output formats."""

    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


class Period(StrEnum):
    """Calendar buckets of the time axis (UTC)."""

    day = "day"
    week = "week"
    month = "month"


class Tier(StrEnum):
    """Evidence tiers, strongest first."""

    verified = "verified"
    reported = "reported"
    heuristic = "heuristic"
    asserted = "asserted"


class Engine(StrEnum):
    """Who runs the evaluation: this process (polars) or a Spark cluster."""

    polars = "polars"
    spark = "spark"


# the format an --out file gets when --format is absent
SUFFIX_FORMATS = {
    ".csv": Format.csv,
    ".json": Format.json,
    ".parquet": Format.parquet,
    ".pq": Format.parquet,
    ".txt": Format.table,
    ".text": Format.table,
}


def _fail(exc: Exception, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        from ocp_analytics._version import __version__

        try:
            number = version("ocp-analytics")
        except PackageNotFoundError:  # pragma: no cover - run from a bare source tree
            number = __version__
        typer.echo(f"ocp-analytics {number}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Columnar analytics for OCP run documents."""


class _RichProgress:
    """A progress bar (documents, documents/s) on a terminal."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.docs = 0
        self.bar = Progress(
            TextColumn("ingest"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[docs]:,} documents ({task.fields[rate]:,.0f}/s)"),
            TimeElapsedColumn(),
            transient=True,
        )
        self.task = self.bar.add_task("ingest", total=0, docs=0, rate=0.0)
        self.start_time = 0.0

    def start(self, total_bytes: int) -> None:
        import time

        self.start_time = time.perf_counter()
        self.bar.update(self.task, total=total_bytes)
        self.bar.start()

    def advance(self, documents: int, nbytes: int) -> None:
        import time

        self.docs += documents
        rate = self.docs / max(time.perf_counter() - self.start_time, 1e-9)
        self.bar.update(self.task, advance=nbytes, docs=self.docs, rate=rate)

    def stop(self) -> None:
        self.bar.stop()


EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="polars (this process) or spark (ocp_analytics.spark; pip install "
        "'ocp-analytics[spark]').",
    ),
]
SparkMasterOpt = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        metavar="URL",
        help="Spark master for --engine spark (default local[*]; under spark-submit, its own).",
    ),
]
SparkConfOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--spark-conf", metavar="KEY=VALUE", help="A Spark setting for --engine spark; repeatable."
    ),
]


def _spark_session(master: str | None, conf: list[str] | None) -> Any:
    """A SparkSession for ``--engine spark`` as a context (``ocp_analytics.spark.running``)."""
    from ocp_analytics import spark

    return spark.running(master, spark.parse_conf(conf or []))


_SOURCES_HELP = "Files, folders, globs, s3:// or abfss:// objects and prefixes, or - for stdin."


@app.command()
def ingest(
    sources: Annotated[list[str], typer.Argument(help=_SOURCES_HELP)],
    out: Annotated[
        str, typer.Option("--out", "-o", help="The dataset folder, or an s3:// or abfss:// prefix.")
    ],
    strict: Annotated[bool, typer.Option(help="Exit 3 when anything was quarantined.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    workers: Annotated[
        int | None,
        typer.Option(min=0, help="Threads decoding chunks (default: one per core, at most 2)."),
    ] = None,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
) -> None:
    """Ingest OCP run documents into a Parquet dataset.

    Sources are files, folders (read recursively), glob patterns, S3 or Azure
    objects and prefixes (s3://, abfss://; docs/spark.md), or - for
    standard input: .json (a document or a list), .ndjson/.jsonl (a document
    a line), optionally .gz or .zst. A source already ingested with the same
    content is skipped; a document that cannot be read is quarantined and the
    batch goes on. The summary reconciles documents read with runs written
    plus quarantined.

    \b
    Examples:
      ocp-analytics ingest runs/ --out runs.dataset
      ocp-analytics ingest 'exports/*.jsonl.zst' more.ndjson.gz -o runs.dataset
      cat today.ndjson | ocp-analytics ingest - -o runs.dataset --strict
      ocp-analytics ingest 'exports/*.ndjson.gz' -o runs.dataset --engine spark
      ocp-analytics ingest s3://drops/runs/ -o s3://lake/runs.dataset --engine spark
    """
    from ocp_analytics.ingestion.batch import WORKERS
    from ocp_analytics.ingestion.batch import ingest as run_ingest

    progress = _RichProgress() if (sys.stderr.isatty() and not quiet) else None
    try:
        if engine is Engine.spark:
            from ocp_analytics import spark

            with _spark_session(spark_master, spark_conf) as session:
                summary = spark.ingest(session, sources, out)
        else:
            summary = run_ingest(
                sources,
                out,
                strict=False,
                progress=progress,
                workers=WORKERS if workers is None else workers,
            )
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc
    typer.echo(str(summary))
    if strict and summary.quarantined:
        raise _fail(StrictIngestError(f"{summary.quarantined} document(s) quarantined"), 3)


@app.command("ingest-events")
def ingest_events(
    sources: Annotated[list[str], typer.Argument(help=_SOURCES_HELP)],
    out: Annotated[
        str, typer.Option("--out", "-o", help="The dataset folder, or an s3:// or abfss:// prefix.")
    ],
    strict: Annotated[bool, typer.Option(help="Exit 3 when anything was quarantined.")] = False,
    unmatched: Annotated[
        bool, typer.Option("--unmatched", help="Then list the events that match no run.")
    ] = False,
) -> None:
    """Ingest late events (a revert, an incident) about commits into a dataset.

    Each record is an OCP signal of kind event plus the commit it concerns
    (docs/late-events.md). Events are matched to runs when the dataset is
    read, through each run's commit or merge artifacts, so they may arrive
    before or after their runs. An event id already stored keeps its first
    record; a record that cannot be read is quarantined with its line.

    \b
    Examples:
      ocp-analytics ingest-events events.ndjson --out runs.dataset
      ocp-analytics ingest-events 'feeds/*.ndjson.gz' -o runs.dataset --unmatched
      curl -s https://ci.example/reverts | ocp-analytics ingest-events - -o runs.dataset
    """
    from ocp_analytics.ingestion.events import ingest_events as run_ingest_events
    from ocp_analytics.ingestion.events import unmatched_events as run_unmatched

    try:
        summary = run_ingest_events(sources, out)
        typer.echo(str(summary))
        if unmatched:
            typer.echo("")
            typer.echo(_unmatched_text(run_unmatched(out).collect()))
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc
    if strict and summary.quarantined:
        raise _fail(StrictIngestError(f"{summary.quarantined} event record(s) quarantined"), 3)


UNMATCHED_COLUMNS = (
    "event_id",
    "commit",
    "name",
    "observed_at",
    "tier",
    "source_path",
    "source_line",
)


def _unmatched_text(frame: pl.DataFrame) -> str:
    if frame.height == 0:
        return "unmatched events: 0 (every event concerns a run)"
    return f"unmatched events: {frame.height:,}\n" + _table(frame.select(UNMATCHED_COLUMNS))


# ------------------------------------------------------------------ options


def _check_parent(out: Path, option: str) -> None:
    parent = out.parent
    if not parent.is_dir():
        raise OcpAnalyticsError(
            hint(
                f"the folder {str(parent)!r} of {option} {str(out)!r} does not exist.",
                f"create it first (mkdir -p {parent}) or pick another path.",
            )
        )


def output_format(format: Format | None, out: Path | None) -> Format:
    """The format to write: ``--format``, else the extension of ``--out``, else a table.

    Also checks, before any work, that ``--out`` can be written.

    Examples
    --------
    >>> output_format(None, Path("rates.csv")).value
    'csv'
    >>> output_format(Format.json, Path("rates.csv")).value
    'json'
    >>> output_format(None, None).value
    'table'
    """
    if out is not None:
        _check_parent(out, "--out")
        if out.is_dir():
            raise OcpAnalyticsError(
                hint(f"--out {str(out)!r} is a folder.", "give the path of a file.")
            )
    if format is None:
        if out is None:
            return Format.table
        found = SUFFIX_FORMATS.get(out.suffix.lower())
        if found is None:
            raise OcpAnalyticsError(
                hint(
                    f"cannot tell the format of --out {str(out)!r} from its extension.",
                    "name it .csv, .json, .parquet or .txt, or pass --format "
                    "table|csv|json|parquet.",
                )
            )
        return found
    if format is Format.parquet and out is None:
        raise OcpAnalyticsError(
            hint("--format parquet needs --out FILE.", "add --out result.parquet.")
        )
    return format


def _rules_arg(rules_files: list[Path] | None, rule: list[str] | None) -> list[Any]:
    """Rules of every ``--rules`` file (each must hold at least one), then ``--rule``."""
    from ocp_analytics.model.rules import read_rules_file

    items: list[Any] = []
    for path in rules_files or []:
        items += read_rules_file(path)
    items += rule or []
    return items


def _as_of(as_of: str | None) -> datetime:
    from ocp_analytics.engine.timeaxis import resolve_as_of

    try:
        return resolve_as_of(as_of)
    except (ValueError, OcpAnalyticsError) as exc:
        raise OcpAnalyticsError(
            hint(
                f"cannot read --as-of {as_of!r} as an instant.",
                "use ISO 8601, e.g. 2026-12-01T00:00:00Z or 2026-12-01 (midnight UTC).",
            )
        ) from exc


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Warnings of the API as one ``warning: …`` line each on standard error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                typer.echo(f"warning: {message}", err=True)


# ------------------------------------------------------------------ output


def _plain(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists as JSON text, so CSV and terminals can show them."""
    return frame.with_columns(
        [
            pl.col(c).map_elements(
                lambda v: orjson.dumps(v.to_list()).decode(), return_dtype=pl.String
            )
            for c, t in frame.schema.items()
            if isinstance(t, pl.List)
        ]
    )


def _json(body: object) -> str:
    return orjson.dumps(
        body, option=orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC, default=str
    ).decode()


def _table(frame: pl.DataFrame) -> str:
    shown = _plain(frame.head(TABLE_ROWS))
    with pl.Config(
        tbl_rows=TABLE_ROWS,
        tbl_cols=-1,
        fmt_str_lengths=60,
        tbl_hide_dataframe_shape=True,
        tbl_width_chars=400,
        tbl_hide_column_data_types=True,
    ):
        text = str(shown)
    if frame.height > TABLE_ROWS:
        text += (
            f"\n({TABLE_ROWS} of {frame.height:,} rows shown; "
            "--format csv|json|parquet --out FILE writes all)"
        )
    return text


def render(frame: pl.DataFrame, fmt: Format, as_of: datetime | None) -> str:
    """A result as an aligned table, CSV, or JSON (``{"as_of": …, "rows": […]}``)."""
    if fmt is Format.json:
        return _json({"as_of": as_of.isoformat() if as_of else None, "rows": frame.to_dicts()})
    if fmt is Format.csv:
        return _plain(frame).write_csv()
    text = _table(frame)
    if as_of is not None:
        text += f"\nas_of: {as_of.isoformat()}"
    return text


def _write_parquet(frame: pl.DataFrame, out: Path, as_of: datetime | None) -> None:
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    meta = {
        **(table.schema.metadata or {}),
        b"ocp_analytics.as_of": (as_of.isoformat() if as_of else "").encode(),
    }
    pq.write_table(table.replace_schema_metadata(meta), out)


def _deliver(text: str, out: Path | None) -> None:
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        out.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


def emit(frame: pl.DataFrame, fmt: Format, out: Path | None, as_of: datetime | None) -> None:
    """Write a result to ``out`` (or print it) as a table, CSV, JSON or Parquet."""
    if fmt is Format.parquet:
        if out is None:
            raise OcpAnalyticsError(
                hint("--format parquet needs --out FILE.", "add --out result.parquet.")
            )
        _write_parquet(frame, out, as_of)
    else:
        _deliver(render(frame, fmt, as_of), out)
    if out is not None:
        typer.echo(f"wrote {frame.height:,} rows to {out}", err=True)


DatasetArg = Annotated[
    str, typer.Argument(help="The dataset folder, or an s3:// or abfss:// prefix.")
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option("--rules", metavar="FILE", help="A rules file (.toml or .json); repeatable."),
]
RuleOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--rule",
        metavar="RULE",
        help="A short rule, e.g. 'tests+review' or 'runtime_s<=3600'; repeatable.",
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="INSTANT",
        help="Judge late events as of this instant (ISO 8601; default now).",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", "-o", metavar="FILE", help="Write to this file (its folder must exist)."),
]
FormatOpt = Annotated[
    Format | None,
    typer.Option(
        "--format",
        "-f",
        help="table, csv, json or parquet (default: from the --out extension, else table).",
    ),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        help="Only runs whose time (ended_at, else started_at) is at or after WHEN: "
        "an instant, or a duration before --as-of (30d, 12h, 2w).",
    ),
]
UntilOpt = Annotated[
    str | None,
    typer.Option("--until", metavar="WHEN", help="Only runs whose time is before WHEN."),
]
ByOpt = Annotated[
    list[str] | None,
    typer.Option("--by", metavar="COLUMN", help="Group by a runs column or label.KEY; repeatable."),
]


@app.command()
def accept(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
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
      ocp-analytics accept runs.dataset --late-only   # accepted yesterday, reverted today
      ocp-analytics accept runs.dataset --engine spark -o acceptance.parquet  # a folder of parts
    """
    from ocp_analytics.api import acceptance, write_acceptance

    try:
        fmt = output_format(format, out)
        when = _as_of(as_of)
        alt = _rules_arg(rules, rule)
        if engine is Engine.spark:
            if late_only:
                raise OcpAnalyticsError(
                    hint(
                        "--late-only is not available with --engine spark yet.",
                        "run it with --engine polars (the default).",
                    )
                )
            window = {"recorded": recorded, "since": since, "until": until}
            _accept_spark(dataset, alt, when, window, fmt, out, spark_master, spark_conf)
            return
        with _warnings_as_lines():
            if fmt is Format.parquet and out is not None:
                rows = write_acceptance(
                    dataset,
                    out,
                    alt,
                    as_of=when,
                    recorded=recorded,
                    since=since,
                    until=until,
                    late_only=late_only,
                )
                typer.echo(f"wrote {rows:,} rows to {out} (as_of {when.isoformat()})", err=True)
                return
            lazy = acceptance(
                dataset,
                alt,
                as_of=when,
                recorded=recorded,
                since=since,
                until=until,
                late_only=late_only,
            )
            frame = lazy.sort("run_id", "rule").collect()
        emit(frame, fmt, out, when)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


def _accept_spark(
    dataset: str,
    alt: list[Any],
    when: datetime,
    window: dict[str, Any],
    fmt: Format,
    out: Path | None,
    master: str | None,
    conf: list[str] | None,
) -> None:
    """``accept --engine spark``: Parquet as a folder of parts written by the tasks."""
    from ocp_analytics import spark

    with _spark_session(master, conf) as session, _warnings_as_lines():
        if fmt is Format.parquet and out is not None:
            rows = spark.write_acceptance(session, dataset, out, alt, when, **window)
            typer.echo(
                f"wrote {rows:,} rows to the folder {out} (as_of {when.isoformat()})", err=True
            )
            return
        frame = spark.to_polars(spark.acceptance(session, dataset, alt, when, **window))
    emit(frame.sort("run_id", "rule"), fmt, out, when)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}".removesuffix(".0")


def rate_text(
    rate: float | None, low: float | None, high: float | None, decided: int, runs: int
) -> str:
    """A rate with its interval and how many runs were decided.

    Examples
    --------
    >>> rate_text(1.0, 0.7846, 1.0, 14, 31)
    '100% [78.5–100] of 14/31 decided'
    >>> rate_text(None, None, None, 0, 3)
    '– of 0/3 decided'
    """
    if rate is None:
        return f"– of {decided:,}/{runs:,} decided"
    return f"{_pct(rate)}% [{_pct(low or 0.0)}–{_pct(high or 0.0)}] of {decided:,}/{runs:,} decided"


def rates_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Rates for reading: ``accept_rate`` becomes one text column with its
    interval and decided share (``100% [78.5–100] of 14/31 decided``)."""
    cells = [
        rate_text(
            r["accept_rate"], r["ci_low"], r["ci_high"], r["accepted"] + r["rejected"], r["runs"]
        )
        for r in frame.iter_rows(named=True)
    ]
    return frame.with_columns(pl.Series("accept_rate", cells, dtype=pl.String)).drop(
        "ci_low", "ci_high", "decided_share"
    )


@app.command()
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
    since: SinceOpt = None,
    until: UntilOpt = None,
    period: Annotated[
        Period | None,
        typer.Option(
            "--period", help="Rates per UTC day, week (from Monday) or month (a column period)."
        ),
    ] = None,
    out: OutOpt = None,
    format: FormatOpt = None,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
) -> None:
    """Acceptance rates per group and rule, with 95 % Wilson intervals.

    accept_rate = accepted / (accepted + rejected): runs whose outcome is
    unknown are left out, so read it with decided_share. The table shows both
    in one cell, e.g. '100% [78.5–100] of 14/31 decided' (14 of 31 runs
    decided); csv, json and parquet keep accept_rate, ci_low, ci_high and
    decided_share as numbers.

    \b
    Examples:
      ocp-analytics rates runs.dataset
      ocp-analytics rates runs.dataset --rules team-bars.toml --by label.team --by task_type
      ocp-analytics rates runs.dataset --min-tier verified        # verified-only rate
      ocp-analytics rates runs.dataset --rule tests+review -o rates.csv
      ocp-analytics rates runs.dataset --since 30d --period week --by label.team
    """
    from ocp_analytics.api import rates as run_rates

    try:
        fmt = output_format(format, out)
        when = _as_of(as_of)
        kwargs: dict[str, Any] = {
            "by": by or [],
            "min_tier": None if min_tier is None else min_tier.value,
            "as_of": when,
            "since": since,
            "until": until,
            "period": None if period is None else period.value,
        }
        with _warnings_as_lines():
            if engine is Engine.spark:
                from ocp_analytics import spark

                with _spark_session(spark_master, spark_conf) as session:
                    frame = spark.rates(session, dataset, _rules_arg(rules, rule), **kwargs)
            else:
                frame = run_rates(dataset, _rules_arg(rules, rule), **kwargs).collect()
        emit(rates_table(frame) if fmt is Format.table else frame, fmt, out, when)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


def _matrix_table(m: pl.DataFrame) -> pl.DataFrame:
    from ocp_analytics.engine.rates import format_rate

    keys = [c for c in m.columns if not c.endswith(("__low", "__high"))]
    names = [c for c in keys if f"{c}__low" in m.columns]
    cells = {
        n: [
            format_rate(r[n], r[f"{n}__low"], r[f"{n}__high"])
            for r in m.select(n, f"{n}__low", f"{n}__high").iter_rows(named=True)
        ]
        for n in names
    }
    return m.select(
        *[c for c in keys if c not in names],
        *[pl.Series(n, cells[n], dtype=pl.String) for n in names],
    )


def _flips_path(out: Path) -> Path:
    return out.with_name(out.stem + ".flips" + out.suffix)


@app.command()
def compare(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    as_of: AsOfOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    sample: Annotated[int, typer.Option(min=0, help="Run ids shown per flip (0 or more).")] = 5,
    out: OutOpt = None,
    format: FormatOpt = None,
    engine: EngineOpt = Engine.polars,
    spark_master: SparkMasterOpt = None,
    spark_conf: SparkConfOpt = None,
) -> None:
    """Teams' bars side by side: rate matrix (group × rule) and flips per rule pair.

    The matrix has one row per group and, per rule, the accept rate with its
    95 % interval. Flips count, for every ordered pair of rules, the runs
    accepted under rule_a but not under rule_b, with a sample of run ids.
    JSON is one document {"as_of", "matrix", "flips"}; csv and parquet write
    the matrix to --out and the flips beside it as FILE.flips.EXT.

    \b
    Examples:
      ocp-analytics compare runs.dataset --rules team-bars.toml --by label.team
      ocp-analytics compare runs.dataset --rule tests --rule tests+review -o cmp.json
      ocp-analytics compare runs.dataset --rules a.toml --rules b.toml -f csv -o cmp.csv
    """
    from ocp_analytics.api import compare as run_compare

    try:
        fmt = output_format(format, out)
        when = _as_of(as_of)
        items = _rules_arg(rules, rule)
        if not items:
            raise OcpAnalyticsError(
                hint("compare needs rules to compare.", "pass --rules FILE or --rule SHORT.")
            )
        kwargs: dict[str, Any] = {
            "by": by or [],
            "as_of": when,
            "sample": sample,
            "since": since,
            "until": until,
        }
        with _warnings_as_lines():
            if engine is Engine.spark:
                from ocp_analytics import spark

                with _spark_session(spark_master, spark_conf) as session:
                    m, f = spark.compare(session, dataset, items, **kwargs)
            else:
                matrix, flips = run_compare(dataset, items, **kwargs)
                m, f = matrix.collect(), flips.collect()
        if fmt is Format.table:
            text = "\n".join(
                [
                    "accept rate [95% interval] by group and rule",
                    render(_matrix_table(m), fmt, None),
                    "",
                    "flips: runs accepted under rule_a but not under rule_b",
                    render(f, fmt, when),
                ]
            )
            _deliver(text, out)
        elif fmt is Format.json:
            body = {
                "as_of": when.isoformat(),
                "matrix": m.to_dicts(),
                "flips": f.to_dicts(),
            }
            _deliver(_json(body), out)
        else:
            emit(m, fmt, out, when)
            if out is None:
                typer.echo("")
            emit(f, fmt, None if out is None else _flips_path(out), when)
            return
        if out is not None:
            typer.echo(f"wrote {out}", err=True)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


@app.command()
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
) -> None:
    """The nightly report: one self-contained HTML page, and each figure's data beside it.

    Headline (runs, accept rate with its 95 % interval, decided share, change
    against the previous window of the same length), accept rate per period
    and group, the group × rule matrix and largest flips, attempts to
    acceptance, evidence tiers, provisional acceptances and data quality.
    The page has no script and loads nothing: it opens offline. Needs the
    report extra: pip install 'ocp-analytics[report]'.

    \b
    Examples:
      ocp-analytics report runs.dataset --by label.team --since 30d -o report.html
      ocp-analytics report runs.dataset --rules team-bars.toml --by label.team \\
          --since 30d --as-of 2026-12-01T00:00:00Z -o report.html --data-out report-data
    """
    from ocp_analytics.reporting.page import report as run_report

    try:
        _check_parent(out, "--out")
        files = run_report(
            dataset,
            _rules_arg(rules, rule),
            by=by or [],
            since=since,
            until=until,
            as_of=_as_of(as_of),
            period=period,
            out=out,
            data_out=data_out,
            data_format=data_format,  # type: ignore[arg-type]
            sample=sample,
            title=title,
        )
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc
    typer.echo(f"wrote {files.html} and {len(files.data)} data files in {files.data_dir}", err=True)


@app.command("unmatched-events")
def unmatched_events(
    dataset: DatasetArg,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """Late events whose commit no current run names (they count for no run yet).

    An event is matched through a run's artifacts of kind commit or merge
    (the artifact's path, else its id). A run naming the commit may still
    arrive: it is matched when it does.

    \b
    Examples:
      ocp-analytics unmatched-events runs.dataset
      ocp-analytics unmatched-events runs.dataset -o unmatched.csv
    """
    from ocp_analytics.ingestion.events import unmatched_events as run_unmatched

    try:
        fmt = output_format(format, out)
        frame = run_unmatched(dataset).collect()
        if fmt is Format.table and out is None:
            typer.echo(_unmatched_text(frame))
            return
        emit(frame, fmt, out, None)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


@app.command()
def sql(
    dataset: DatasetArg,
    query: Annotated[
        str | None, typer.Argument(help="A SQL query; omit it to read standard input.")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", metavar="FILE", help="Run the SQL in this file.")
    ] = None,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """Run SQL over the dataset's views (runs, signals, acceptance, rates, …).

    The views: runs, attempts, signals, rules, artifacts, findings,
    quarantine (current run versions), events (late events kept apart from
    their runs, see ingest-events), matched_events and unmatched_events,
    acceptance (the columns of accept, for the recorded rule and every
    --rule/--rules), rates. The query comes from
    the argument, from --file, or from standard input (piped text runs as it
    is, a trailing ';' optional); on a terminal without a query a prompt
    opens (end a query with ';', quit with .quit). Several statements run in
    order; the last query's result is shown.

    \b
    Examples:
      ocp-analytics sql runs.dataset "SELECT rule, accept_rate FROM rates"
      ocp-analytics sql runs.dataset --rule tests+review \\
          "SELECT * FROM acceptance WHERE outcome = 'rejected'" -o rejected.csv
      ocp-analytics sql runs.dataset --file my-query.sql -f json
      echo "SELECT count(*) FROM runs" | ocp-analytics sql runs.dataset
    """
    import duckdb

    from ocp_analytics.sql import connect

    try:
        fmt = output_format(format, out)
        when = _as_of(as_of)
        alternatives = _rules_arg(rules, rule) or None
        text = _sql_text(query, file)
        con = connect(dataset, rules=alternatives, as_of=when)
        if text is None:
            _prompt(con)
            return
        result = con.sql(text)
        if result is not None:
            emit(result.pl(), fmt, out, None)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc
    except duckdb.Error as exc:
        raise _fail(
            OcpAnalyticsError(
                hint(str(exc), "the views and their columns: ocp-analytics sql --help")
            )
        ) from exc


def _sql_text(query: str | None, file: Path | None) -> str | None:
    """The SQL to run: the argument, the file, piped standard input, or None (prompt)."""
    if query is not None and file is not None:
        raise OcpAnalyticsError(hint("both a query and --file were given.", "pass one of them."))
    if file is not None:
        if not file.is_file():
            raise OcpAnalyticsError(
                hint(f"SQL file {str(file)!r} does not exist.", "check the path given to --file.")
            )
        text = file.read_text(encoding="utf-8")
    elif query is not None:
        text = query
    elif sys.stdin.isatty():
        return None
    else:
        text = sys.stdin.read()
    if not text.strip().strip(";").strip():
        raise OcpAnalyticsError(
            hint("no SQL to run.", 'pass a query, e.g. "SELECT * FROM rates", or --file FILE.')
        )
    return text


def _prompt(con: Any) -> None:
    typer.echo(
        "ocp-analytics SQL; views: runs, attempts, signals, rules, artifacts, "
        "findings, quarantine, acceptance, rates. End a query with ';', quit with .quit"
    )
    buf: list[str] = []
    while True:
        try:
            line = input("sql> " if not buf else "...> ")
        except EOFError:
            if "".join(buf).strip():
                _run_in_prompt(con, "\n".join(buf))
            return
        if line.strip() in (".quit", ".exit"):
            return
        buf.append(line)
        if line.rstrip().endswith(";"):
            text, buf = "\n".join(buf), []
            _run_in_prompt(con, text)


def _run_in_prompt(con: Any, text: str) -> None:
    try:
        result = con.sql(text)
        if result is not None:
            emit(result.pl(), Format.table, None, None)
    except Exception as exc:  # keep the prompt alive on a bad query
        typer.echo(f"error: {exc}", err=True)


def main() -> None:
    """Entry point of the console script."""
    app()


if __name__ == "__main__":
    main()
