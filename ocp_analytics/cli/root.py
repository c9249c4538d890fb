"""The root of the command: the typer ``app``, ``--version``, exit codes, ``main``.

The commands are plain functions in their modules; they raise the package's
errors and this module turns them into exit codes. They are registered on
``app`` here, in the order ``ocp-analytics --help`` lists them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, ParamSpec

import typer

from ocp_analytics.cli import dataset, evaluate, ingest, judge, report, sql, tries
from ocp_analytics.cli import refresh as refresh_cmd
from ocp_analytics.exceptions import OcpAnalyticsError, StrictIngestError

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

# exit codes; 2 (wrong usage) is click's own
EXIT_ERROR = 1
EXIT_QUARANTINED = 3

P = ParamSpec("P")


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


def exits(command: Callable[P, None], reads: str | None = None) -> Callable[P, None]:
    """``command`` with the package's errors as ``error: …`` on standard error and an exit code.

    ``--strict`` finding quarantined records exits 3, any other error of the
    package 1 (its message says what was wrong and how to fix it). Other
    exceptions are bugs and keep their traceback, except a read failing on a
    damaged part of the dataset the parameter ``reads`` names: that is one
    ``error:`` line naming the part and suggesting ``verify``, exit 1
    (:func:`~ocp_analytics.store.verify.damaged_parts`).
    """

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        place = kwargs.get(reads) if reads else None  # the dataset argument, if any
        try:
            with _damaged_parts(place if isinstance(place, str) else None):
                command(*args, **kwargs)
        except OcpAnalyticsError as exc:
            typer.echo(f"error: {exc}", err=True)
            code = EXIT_QUARANTINED if isinstance(exc, StrictIngestError) else EXIT_ERROR
            raise typer.Exit(code) from exc

    return run


def _damaged_parts(dataset: str | None) -> AbstractContextManager[None]:
    """Damaged parts of ``dataset`` (a command's argument) named in one line; else nothing."""
    if dataset is None:
        return nullcontext()
    from ocp_analytics.store.verify import damaged_parts

    return damaged_parts(dataset)


# the order of `ocp-analytics --help`; `reads`: the parameter naming the dataset read
app.command()(exits(ingest.ingest, reads="out"))
app.command("ingest-events")(exits(ingest.ingest_events, reads="out"))
app.command()(exits(evaluate.accept, reads="dataset"))
app.command()(exits(evaluate.rates, reads="dataset"))
app.command()(exits(evaluate.compare, reads="dataset"))
app.command()(exits(refresh_cmd.refresh, reads="dataset"))
app.command()(exits(tries.passk, reads="dataset"))
app.command()(exits(tries.cost, reads="dataset"))
app.command()(exits(judge.sweep, reads="dataset"))
app.command()(exits(judge.check))  # its own exit codes: 5 on any error (cli/judge.py)
app.command()(exits(report.report, reads="dataset"))
app.command("unmatched-events")(exits(ingest.unmatched_events, reads="dataset"))
app.command()(exits(dataset.log))
app.command()(exits(dataset.verify))
app.command()(exits(dataset.compact))
app.command()(exits(dataset.vacuum))
app.command()(exits(sql.sql, reads="dataset"))


def main() -> None:
    """Entry point of the console script."""
    app()
