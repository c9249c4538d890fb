"""The options the commands share: declared once, read once.

A command names ``rules: RulesOpt = None`` and gets the flag, metavar and
help every other ``--rules`` has; an option whose help differs in one command
(``report --out``, ``report --since``) is declared in that command. The
functions here turn the raw values into what the API takes, and check them
before any work starts.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ocp_analytics.exceptions import OcpAnalyticsError, hint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ocp_analytics.model.rules import Rule
    from ocp_analytics.store.scan import Dataset


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

# ------------------------------------------------------------ declarations

_DATASET_HELP = "The dataset folder, or an s3:// or abfss:// prefix."

DatasetArg = Annotated[str, typer.Argument(help=_DATASET_HELP)]
SourcesArg = Annotated[
    list[str],
    typer.Argument(
        help="Files, folders, globs, s3:// or abfss:// objects and prefixes, or - for stdin."
    ),
]
SnapshotOpt = Annotated[
    str | None,
    typer.Option(
        "--snapshot",
        metavar="SEQ|INSTANT",
        help="The dataset as a commit left it: its seq (see `log`), or an instant "
        "(ISO 8601; the last commit at or before it). Default: the newest commit.",
    ),
]
DatasetOutOpt = Annotated[str, typer.Option("--out", "-o", help=_DATASET_HELP)]
StrictOpt = Annotated[bool, typer.Option(help="Exit 3 when anything was quarantined.")]
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
WhereOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        metavar="COLUMN=VALUE",
        help="Only runs whose runs column or label.KEY has this value, e.g. "
        "--where label.team=payments; repeatable (all must hold).",
    ),
]
WideOpt = Annotated[
    bool,
    typer.Option("--wide", help="Show every column in the table (csv, json, parquet have all)."),
]
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

# ------------------------------------------------------------ reading them


def check_parent(out: Path, option: str) -> None:
    """Raise unless the folder ``out`` is to be written in exists.

    Examples
    --------
    >>> check_parent(Path("rates.csv"), "--out")
    >>> check_parent(Path("no/such/folder/rates.csv"), "--out")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: the folder 'no/such/folder' of --out ...
    """
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
        check_parent(out, "--out")
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


def rules_arg(rules_files: list[Path] | None, rule: list[str] | None) -> list[Rule | str]:
    """Rules of every ``--rules`` file (each must hold at least one), then ``--rule``.

    Examples
    --------
    >>> rules_arg(None, ["tests+review", "runtime_s<=3600"])
    ['tests+review', 'runtime_s<=3600']
    >>> rules_arg(None, None)
    []
    """
    from ocp_analytics.model.rules import read_rules_file

    items: list[Rule | str] = []
    for path in rules_files or []:
        items += read_rules_file(path)
    items += rule or []
    return items


def as_of_arg(as_of: str | None) -> datetime:
    """The instant of ``--as-of`` (now when absent), or an error that shows how to write one.

    Examples
    --------
    >>> as_of_arg("2026-12-01").isoformat()
    '2026-12-01T00:00:00+00:00'
    """
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


def dataset_arg(dataset: str, snapshot: str | None) -> Dataset:
    """The dataset scanned once at ``--snapshot`` (the newest commit when absent).

    Every command then reads this one state, and writes its ``seq``
    (:attr:`~ocp_analytics.Dataset.snapshot`) beside ``as_of``; a snapshot no
    commit matches stops the command before any work, naming the commits there are.
    """
    from ocp_analytics.store.scan import scan_dataset

    return scan_dataset(dataset, snapshot=snapshot)


def spark_session(
    master: str | None, conf: list[str] | None
) -> AbstractContextManager[SparkSession]:
    """A SparkSession for ``--engine spark`` as a context (``ocp_analytics.spark.running``)."""
    from ocp_analytics import spark

    return spark.running(master, spark.parse_conf(conf or []))
