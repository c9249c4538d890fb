"""``sql``: a query over the dataset's DuckDB views (``ocp_analytics.sql``), or a prompt."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ocp_analytics.cli.options import (
    AsOfOpt,
    DatasetArg,
    Format,
    FormatOpt,
    OutOpt,
    RuleOpt,
    RulesOpt,
    SnapshotOpt,
    as_of_arg,
    output_format,
    rules_arg,
)
from ocp_analytics.cli.output import emit
from ocp_analytics.exceptions import OcpAnalyticsError, hint

if TYPE_CHECKING:
    import duckdb


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
    snapshot: SnapshotOpt = None,
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
    order; the last query's result is shown. --snapshot: the views read the
    dataset as that commit left it (its seq is written beside as_of).

    \b
    Examples:
      ocp-analytics sql runs.dataset "SELECT rule, accept_rate FROM rates"
      ocp-analytics sql runs.dataset --rule tests+review \\
          "SELECT * FROM acceptance WHERE outcome = 'rejected'" -o rejected.csv
      ocp-analytics sql runs.dataset --file my-query.sql -f json
      echo "SELECT count(*) FROM runs" | ocp-analytics sql runs.dataset
      ocp-analytics sql runs.dataset --snapshot 41 "SELECT count(*) FROM runs"
    """
    import duckdb

    from ocp_analytics.sql import connect

    try:
        fmt = output_format(format, out)
        when = as_of_arg(as_of)
        alternatives = rules_arg(rules, rule) or None
        text = _sql_text(query, file)
        con = connect(dataset, rules=alternatives, as_of=when, snapshot=snapshot)
        seq = con.execute("SELECT getvariable('ocp_snapshot')").fetchall()[0][0]
        if text is None:
            _prompt(con)
            return
        result = con.sql(text)
        if result is not None:  # the query runs here: its runtime errors too
            emit(result.pl(), fmt, out, when, seq)
    except duckdb.Error as exc:
        raise OcpAnalyticsError(
            hint(str(exc), "the views and their columns: ocp-analytics sql --help")
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


def _prompt(con: duckdb.DuckDBPyConnection) -> None:
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


def _run_in_prompt(con: duckdb.DuckDBPyConnection, text: str) -> None:
    try:
        result = con.sql(text)
        if result is not None:
            emit(result.pl(), Format.table, None, None)
    except Exception as exc:  # keep the prompt alive on a bad query
        typer.echo(f"error: {exc}", err=True)
