"""``ingest``, ``ingest-events`` and ``unmatched-events``: what goes into a dataset."""

from __future__ import annotations

import sys
from typing import Annotated

import polars as pl
import typer

from ocp_analytics.cli.options import (
    DatasetArg,
    DatasetOutOpt,
    Engine,
    EngineOpt,
    Format,
    FormatOpt,
    OutOpt,
    SourcesArg,
    SparkConfOpt,
    SparkMasterOpt,
    StrictOpt,
    output_format,
    spark_session,
)
from ocp_analytics.cli.output import emit, table_text, warnings_as_lines
from ocp_analytics.exceptions import StrictIngestError

UNMATCHED_COLUMNS = (
    "event_id",
    "commit",
    "name",
    "observed_at",
    "tier",
    "source_path",
    "source_line",
)


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


def ingest(
    sources: SourcesArg,
    out: DatasetOutOpt,
    strict: StrictOpt = False,
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
    if engine is Engine.spark:
        from ocp_analytics import spark

        with spark_session(spark_master, spark_conf) as session:
            summary = spark.ingest(session, sources, out)
    else:
        with warnings_as_lines():
            summary = run_ingest(
                sources,
                out,
                strict=False,
                progress=progress,
                workers=WORKERS if workers is None else workers,
            )
    typer.echo(str(summary))
    if strict and summary.quarantined:
        raise StrictIngestError(f"{summary.quarantined} document(s) quarantined")


def ingest_events(
    sources: SourcesArg,
    out: DatasetOutOpt,
    strict: StrictOpt = False,
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

    summary = run_ingest_events(sources, out)
    typer.echo(str(summary))
    if unmatched:
        typer.echo("")
        typer.echo(_unmatched_text(run_unmatched(out).collect()))
    if strict and summary.quarantined:
        raise StrictIngestError(f"{summary.quarantined} event record(s) quarantined")


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

    fmt = output_format(format, out)
    frame = run_unmatched(dataset).collect()
    if fmt is Format.table and out is None:
        typer.echo(_unmatched_text(frame))
        return
    emit(frame, fmt, out, None)


def _unmatched_text(frame: pl.DataFrame) -> str:
    if frame.height == 0:
        return "unmatched events: 0 (every event concerns a run)"
    return f"unmatched events: {frame.height:,}\n" + table_text(frame.select(UNMATCHED_COLUMNS))
