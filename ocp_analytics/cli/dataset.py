"""``verify``, ``log``, ``compact``, ``vacuum``: the dataset, its integrity and its commits."""

from __future__ import annotations

import sys
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
    from ocp_analytics._typing import Progress
    from ocp_analytics.store.verify import Checked

ChecksumsOpt = Annotated[
    bool,
    typer.Option(
        "--checksums/--no-checksums",
        help="Hash every part against its SHA-256 (reads every byte); "
        "--no-checksums checks sizes, footers and row counts only.",
    ),
]

RepairOpt = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Rebuild each damaged part by ingesting its batch's recorded sources again "
        "(still there, same SHA-256); a part is put back only when its bytes are the "
        "committed ones. Names what it cannot repair; then checks again.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]

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
    repair: RepairOpt = False,
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

    --repair first rebuilds what it can: a damaged part of an ingest batch
    whose sources are still at their recorded paths with the same SHA-256
    is rebuilt by ingesting them again as that batch, and put back only when
    its bytes are the committed ones; one line per batch says what was
    restored or what is missing (a source gone or changed, a batch of late
    events, a compacted part). The check then runs on the repaired dataset.

    The files of the decisions stores (see refresh) are checked too; a
    damaged store is deleted by --repair (its rule is decided from raw
    until the next refresh builds it again).

    \b
    Examples:
      ocp-analytics verify runs.dataset
      ocp-analytics verify runs.dataset --no-checksums   # sizes and footers: quick
      ocp-analytics verify runs.dataset --repair
      ocp-analytics verify s3://lake/runs.dataset -f json -o verify.json
    """
    from ocp_analytics.store.verify import check

    fmt = output_format(format, out)
    if repair:
        _repair(dataset)
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


def _repair(dataset: str) -> None:
    """Repair what can be, one line a damaged batch on standard error."""
    from ocp_analytics.ingestion.batch import ingest
    from ocp_analytics.store.repair import repair

    def reingest(paths: list[str], out: str) -> None:
        # one batch, like the one it rebuilds
        ingest(paths, out, commit_docs=2**62, workers=0)

    typer.echo(str(repair(dataset, reingest)), err=True)


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
        "decisions_store_files": checked.store_files,
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
    frame = commit_log(read_commits(open_existing(dataset), snapshot, readable=False))
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


# --- compact and vacuum ------------------------------------------------------------------


def compact(
    dataset: DatasetArg,
    target_size: Annotated[
        str,
        typer.Option(
            "--target-size",
            help="A compacted part's size on disk (KiB, MiB, GiB; default 64MiB). "
            "Parts under half of it are rewritten.",
        ),
    ] = "64MiB",
    quiet: QuietOpt = False,
) -> None:
    """Rewrite the small parts of each table into large ones, as a new commit.

    Each table's parts under half of --target-size are grouped, in the order
    of the batches they came from, and each group becomes one part: runs
    sorted by run time, the other tables of runs by doc_id, so that each
    part's manifest ranges are tight and a time window reads fewer parts.
    Every row is copied as it is: every figure, at the newest snapshot and
    at every older one, stays the same. Older snapshots read the old parts
    until `ocp-analytics vacuum` deletes them. A damaged part stops it
    (run `verify --repair` first). Safe to kill: the next writer removes the
    unfinished parts. Prints the live parts before and after.

    \b
    Examples:
      ocp-analytics compact runs.dataset
      ocp-analytics compact runs.dataset --target-size 256MiB
      ocp-analytics compact runs.dataset && ocp-analytics vacuum runs.dataset --older-than 30d
    """
    from ocp_analytics.store.maintenance import compact as run

    summary = run(dataset, target_bytes=_bytes(target_size), progress=_progress(quiet, "compact"))
    typer.echo(str(summary))


def vacuum(
    dataset: DatasetArg,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Keep every snapshot from this age (30d, 12h, 2w, 0s) or instant on.",
        ),
    ],
    keep_decisions: Annotated[
        bool,
        typer.Option(
            "--keep-decisions",
            help="Keep the decisions stores no refresh wrote since --older-than too.",
        ),
    ] = False,
    quiet: QuietOpt = False,
) -> None:
    """Delete the parts that no snapshot newer than --older-than reads.

    Parts a compaction replaced are read only by the snapshots before it;
    once those are all older than --older-than (the commit current at that
    instant and every later one are kept), the parts are deleted and the
    bytes freed. A snapshot older than what the vacuum kept is then refused
    with a line saying which is the oldest readable one. Parts no commit
    lists (left by a killed writer) are removed too. Safe to kill: the
    snapshots it makes unreadable are recorded first, and a rerun deletes
    what was left. Prints the parts deleted and the bytes freed.

    The decisions stores (see refresh) no refresh has written since
    --older-than are deleted too, unless --keep-decisions: their rules are
    decided from raw until the next refresh builds them again.

    \b
    Examples:
      ocp-analytics vacuum runs.dataset --older-than 30d
      ocp-analytics vacuum runs.dataset --older-than 2026-12-01T00:00:00Z
      ocp-analytics vacuum runs.dataset --older-than 0s   # keep the newest snapshot only
    """
    from ocp_analytics.store.maintenance import vacuum as run

    progress = _progress(quiet, "vacuum")
    summary = run(dataset, older_than=older_than, progress=progress, keep_decisions=keep_decisions)
    typer.echo(str(summary))


_SIZES = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20}
_SIZES |= {"kb": 1000, "mb": 1000**2, "gb": 1000**3, "g": 1 << 30, "gib": 1 << 30}


def _bytes(text: str) -> int:
    """A size as text, in bytes.

    Examples
    --------
    >>> _bytes("64MiB"), _bytes("1.5 GB"), _bytes("4096")
    (67108864, 1500000000, 4096)
    """
    import re

    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = found[2].lower() if found else None
    if found is None or unit not in _SIZES or float(found[1]) * _SIZES[unit] < 1:
        raise typer.BadParameter(f"{text!r} is not a size: give e.g. 64MiB, 1GiB or 500MB.")
    return int(float(found[1]) * _SIZES[unit])


class _Bar:
    """A progress bar of bytes, on a terminal."""

    def __init__(self, what: str) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self.bar = Progress(
            f"{what} ", BarColumn(), DownloadColumn(), TimeRemainingColumn(), transient=True
        )
        self.task = self.bar.add_task(what, total=None)

    def start(self, total_bytes: int) -> None:
        self.bar.update(self.task, total=total_bytes, completed=0)
        self.bar.start()

    def advance(self, documents: int, nbytes: int) -> None:
        self.bar.update(self.task, advance=nbytes)

    def stop(self) -> None:
        self.bar.stop()


def _progress(quiet: bool, what: str) -> Progress | None:
    return _Bar(what) if (sys.stderr.isatty() and not quiet) else None
