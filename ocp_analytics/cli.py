"""The ``ocp-analytics`` command: parse arguments, call the API, map errors.

Exit codes: 0 success; 1 an error the message explains (bad dataset, rule,
source); 2 wrong usage; 3 ``ingest --strict`` quarantined something.
"""

from __future__ import annotations

import sys
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import polars as pl
import typer

from ocp_analytics.exceptions import OcpAnalyticsError, StrictIngestError

app = typer.Typer(
    name="ocp-analytics",
    help="Columnar analytics for OCP run documents: ingest, acceptance, rates, SQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

TABLE_ROWS = 40


class Format(StrEnum):
    """Output formats."""

    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


def _fail(exc: Exception, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(code)


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


@app.command()
def ingest(
    sources: Annotated[list[str], typer.Argument(help="Files, folders, globs, or - for stdin.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The dataset folder.")],
    strict: Annotated[bool, typer.Option(help="Exit 3 when anything was quarantined.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    workers: Annotated[
        int | None,
        typer.Option(min=0, help="Threads decoding chunks (default: one per core, at most 2)."),
    ] = None,
) -> None:
    """Ingest OCP run documents into a Parquet dataset."""
    from ocp_analytics.ingest import WORKERS
    from ocp_analytics.ingest import ingest as run_ingest

    progress = _RichProgress() if (sys.stderr.isatty() and not quiet) else None
    try:
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


def _rules_arg(rules_file: Path | None, rule: list[str] | None) -> list[Any]:
    items: list[Any] = []
    if rules_file is not None:
        items.append(rules_file)
    items += rule or []
    return items


def _as_of(as_of: str | None) -> datetime:
    from ocp_analytics.acceptance import resolve_as_of

    try:
        return resolve_as_of(as_of)
    except ValueError as exc:
        raise OcpAnalyticsError(
            f"cannot read --as-of {as_of!r}: {exc}\n\nHint: use ISO 8601, e.g. 2026-12-01T00:00:00Z"
        ) from exc


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


def emit(frame: pl.DataFrame, fmt: Format, out: Path | None, as_of: datetime | None) -> None:
    """Write a result as an aligned table, CSV, JSON (with header) or Parquet."""
    if fmt is Format.parquet:
        if out is None:
            raise OcpAnalyticsError(
                "--format parquet needs --out FILE\n\nHint: add --out result.parquet"
            )
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        meta = {
            **(table.schema.metadata or {}),
            b"ocp_analytics.as_of": (as_of.isoformat() if as_of else "").encode(),
        }
        pq.write_table(table.replace_schema_metadata(meta), out)
        return
    if fmt is Format.json:
        text = orjson.dumps(
            {"as_of": as_of.isoformat() if as_of else None, "rows": frame.to_dicts()},
            option=orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC,
            default=str,
        ).decode()
    elif fmt is Format.csv:
        text = _plain(frame).write_csv()
    else:
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
        if as_of is not None:
            text += f"\nas_of: {as_of.isoformat()}"
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + ("\n" if not text.endswith("\n") else ""))


DatasetArg = Annotated[Path, typer.Argument(help="The dataset folder.")]
RulesOpt = Annotated[Path | None, typer.Option("--rules", help="Rules file (.toml or .json).")]
RuleOpt = Annotated[
    list[str] | None,
    typer.Option("--rule", help="Short rule, e.g. 'tests+review' or 'runtime_s<=3600'."),
]
AsOfOpt = Annotated[
    str | None, typer.Option("--as-of", help="Judge events as of this instant (default now, UTC).")
]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table, csv, json or parquet.")]
ByOpt = Annotated[
    list[str] | None, typer.Option("--by", help="Group by a runs column or label.KEY (repeatable).")
]


@app.command()
def accept(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    out: OutOpt = None,
    format: FormatOpt = Format.table,
    recorded: Annotated[bool, typer.Option(help="Include each run's recorded rule.")] = True,
) -> None:
    """Per-run acceptance under each run's own rule and alternative rules.

    With --format parquet the runs are evaluated a slice at a time, so memory
    stays bounded on datasets of any size; rows are then written slice by
    slice and rule by rule (other formats are sorted by run_id and rule).
    """
    from ocp_analytics.acceptance import acceptance, write_acceptance

    try:
        when = _as_of(as_of)
        alt = _rules_arg(rules, rule)
        if format is Format.parquet and out is not None:
            rows = write_acceptance(dataset, out, alt, as_of=when, recorded=recorded)
            typer.echo(f"wrote {rows:,} rows to {out} (as_of {when.isoformat()})", err=True)
            return
        frame = acceptance(dataset, alt, as_of=when, recorded=recorded)
        emit(frame.sort("run_id", "rule").collect(), format, out, when)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


@app.command()
def rates(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    min_tier: Annotated[
        str | None,
        typer.Option("--min-tier", help="Count only outcomes at least this strong as decided."),
    ] = None,
    as_of: AsOfOpt = None,
    out: OutOpt = None,
    format: FormatOpt = Format.table,
) -> None:
    """Acceptance rates per group and rule, with 95 % Wilson intervals."""
    from ocp_analytics.rates import rates as run_rates

    try:
        when = _as_of(as_of)
        frame = run_rates(
            dataset, _rules_arg(rules, rule), by=by or [], min_tier=min_tier, as_of=when
        ).collect()
        emit(frame, format, out, when)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


@app.command()
def compare(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    by: ByOpt = None,
    as_of: AsOfOpt = None,
    sample: Annotated[int, typer.Option(help="Run ids sampled per flip.")] = 5,
    out: OutOpt = None,
    format: FormatOpt = Format.table,
) -> None:
    """Teams' bars side by side: rate matrix (group × rule) and flips per rule pair."""
    from ocp_analytics.rates import compare as run_compare

    try:
        when = _as_of(as_of)
        items = _rules_arg(rules, rule)
        if not items:
            raise OcpAnalyticsError(
                "compare needs rules to compare\n\nHint: pass --rules FILE or --rule SHORT"
            )
        matrix, flips = run_compare(dataset, items, by=by or [], as_of=when, sample=sample)
        m, f = matrix.collect(), flips.collect()
        if format is Format.table:
            keys = [c for c in m.columns if not c.endswith(("__low", "__high"))]
            names = [c for c in keys if f"{c}__low" in m.columns]
            shown = m.select(
                *[c for c in keys if c not in names],
                *[
                    pl.struct(n, f"{n}__low", f"{n}__high")
                    .map_elements(_rate_cell(n), return_dtype=pl.String)
                    .alias(n)
                    for n in names
                ],
            )
            typer.echo("accept rate [95% interval] by group and rule")
            emit(shown, format, None, None)
            typer.echo("\nflips: runs accepted under rule_a but not under rule_b")
            emit(f, format, None, when)
            return
        if format is Format.json:
            emit(m, format, out, when)
            flip_out = out.with_name(out.stem + ".flips" + out.suffix) if out else None
            emit(f, format, flip_out, when)
            return
        emit(m, format, out, when)
        emit(f, format, out.with_name(out.stem + ".flips" + out.suffix) if out else None, when)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc


@app.command()
def sql(
    dataset: DatasetArg,
    query: Annotated[str | None, typer.Argument(help="A SQL query; omit for a prompt.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Run the query in this file.")
    ] = None,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    out: OutOpt = None,
    format: Annotated[
        Format, typer.Option("--format", help="table, csv, json or parquet.")
    ] = Format.table,
) -> None:
    """Run SQL over the dataset's views (runs, signals, acceptance, rates, …)."""
    from ocp_analytics.sql import connect

    try:
        when = _as_of(as_of)
        con = connect(dataset, rules=_rules_arg(rules, rule) or None, as_of=when)
        text = file.read_text() if file is not None else query
        if text is None:
            _prompt(con)
            return
        emit(con.sql(text).pl(), format, out, None)
    except OcpAnalyticsError as exc:
        raise _fail(exc) from exc
    except Exception as exc:  # duckdb errors: show them plainly
        if type(exc).__module__.startswith("duckdb") or type(exc).__module__.startswith("_duckdb"):
            raise _fail(exc) from exc
        raise


def _rate_cell(name: str) -> Any:
    from ocp_analytics.rates import format_rate

    def cell(s: dict[str, Any]) -> str:
        return format_rate(s[name], s[f"{name}__low"], s[f"{name}__high"])

    return cell


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
            return
        if line.strip() in (".quit", ".exit"):
            return
        buf.append(line)
        if line.rstrip().endswith(";"):
            text, buf = "\n".join(buf), []
            try:
                emit(con.sql(text).pl(), Format.table, None, None)
            except Exception as exc:  # keep the prompt alive on a bad query
                typer.echo(f"error: {exc}", err=True)


def main() -> None:
    """Entry point of the console script."""
    app()


if __name__ == "__main__":
    main()
