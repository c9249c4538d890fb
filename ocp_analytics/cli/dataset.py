"""``verify`` and ``log``: the dataset itself, its integrity and its commits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import polars as pl
import typer

from ocp_analytics.cli.options import (
    DatasetArg,
    Format,
    FormatOpt,
    OutOpt,
    SnapshotOpt,
    output_format,
)
from ocp_analytics.cli.output import deliver, emit, json_text

if TYPE_CHECKING:
    from ocp_analytics.store.verify import Checked

ChecksumsOpt = Annotated[
    bool,
    typer.Option(
        "--checksums/--no-checksums",
        help="Hash every part against its SHA-256 (reads every byte); "
        "--no-checksums checks sizes, footers and row counts only.",
    ),
]

_DAMAGE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "file": pl.String,
    "table": pl.String,
    "problem": pl.String,
    "seq": pl.Int64,
    "batch_id": pl.String,
    "sources": pl.List(pl.String),
}


def verify(
    dataset: DatasetArg,
    checksums: ChecksumsOpt = True,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """Check every commit record and every part it lists; exit 1 if any is damaged.

    Each part is checked against its commit record's manifest entry: it
    exists, its size, its SHA-256, a readable Parquet footer, its row count
    (parts of records written before the manifest: existence and footer).
    Each damaged file is one line: the file (its table's folder), what is
    wrong, and the batch and sources that wrote it. Exit 0 with one summary
    line when nothing is damaged. JSON: one document; CSV and Parquet: one
    row per damaged file.

    \b
    Examples:
      ocp-analytics verify runs.dataset
      ocp-analytics verify runs.dataset --no-checksums   # sizes and footers: quick
      ocp-analytics verify s3://lake/runs.dataset -f json -o verify.json
    """
    from ocp_analytics.store.verify import check

    fmt = output_format(format, out)
    checked = check(dataset, checksums=checksums)
    damages = checked.damages
    if fmt is Format.json:
        deliver(json_text(_document(dataset, checked)), out)
    elif fmt is Format.table:
        lines = [str(d) for d in damages]
        lines.append(f"{len(damages):,} damaged; {checked}" if damages else f"ok: {checked}")
        deliver("\n".join(lines), out)
    else:
        emit(_damage_frame(checked), fmt, out, None)
    if damages:
        if fmt is not Format.table or out is not None:  # the lines are not on the terminal
            typer.echo(f"error: {len(damages):,} damaged file(s) in {dataset}", err=True)
        raise typer.Exit(1)


def _damage_frame(checked: Checked) -> pl.DataFrame:
    rows = [
        {
            "file": d.file,
            "table": d.table,
            "problem": d.problem,
            "seq": d.seq,
            "batch_id": d.batch_id,
            "sources": list(d.sources),
        }
        for d in checked.damages
    ]
    return pl.DataFrame(rows, schema=_DAMAGE_SCHEMA)


def _document(dataset: str, checked: Checked) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "ok": not checked.damages,
        "checksums": checked.checksums,
        "commit_records": checked.records,
        "parts": checked.parts,
        "bytes": checked.bytes,
        "rows": checked.rows,
        "damaged": _damage_frame(checked).to_dicts(),
    }


def log(
    dataset: DatasetArg,
    snapshot: SnapshotOpt = None,
    out: OutOpt = None,
    format: FormatOpt = None,
) -> None:
    """The commits of a dataset, oldest first: seq, time, batch, sources and counts.

    One row per commit (an ingest or an ingest-events batch): its seq (what
    --snapshot takes), committed_at, batch_id, kind (runs or events), its
    sources, the documents read, runs new, replaced and unchanged, events
    new, quarantined, and the parts and bytes it wrote (bytes empty for a
    batch written before the manifest). The table names each commit's first
    source and how many more; csv, json and parquet list every path.
    --snapshot lists the commits up to that one.

    \b
    Examples:
      ocp-analytics log runs.dataset
      ocp-analytics log runs.dataset --snapshot 2026-12-01T00:00:00Z
      ocp-analytics log runs.dataset -o commits.csv
    """
    from ocp_analytics.store.commits import commit_log, read_commits
    from ocp_analytics.store.dataset import open_existing

    fmt = output_format(format, out)
    frame = commit_log(read_commits(open_existing(dataset), snapshot))
    if fmt is Format.table:
        if frame.height == 0:
            deliver("commits: 0 (nothing ingested yet)", out)
            return
        frame = frame.with_columns(
            pl.Series("sources", [_sources_text(s) for s in frame["sources"]], dtype=pl.String)
        )
    emit(frame, fmt, out, None)


def _sources_text(sources: pl.Series) -> str:
    """A commit's sources in a table cell: the first one's file name, and how many more.

    Examples
    --------
    >>> _sources_text(pl.Series(["exports/2026-12-01/a.ndjson", "b.json", "c.json"]))
    'a.ndjson and 2 more'
    """
    paths = sources.to_list()
    if not paths:
        return ""
    more = len(paths) - 1
    return paths[0].rstrip("/").rsplit("/", 1)[-1] + (f" and {more} more" if more else "")
