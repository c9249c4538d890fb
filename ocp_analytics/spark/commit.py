"""The parts a Spark ingest writes, and the commit record that makes them visible.

Tasks write parts with the package's writer (declared schema, zstd), under
``DATASET/_staging/BATCH/`` on a file system, or at their final keys in an
object store (which has no rename), where no reader sees a part until a
commit record lists it. The driver moves staged parts into the table folders
and writes the commit record last (:func:`ocp_analytics.store.dataset.commit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.batch import SourceSummary
from ocp_analytics.store import dataset as D
from ocp_analytics.store.dataset import write_parquet_atomic
from ocp_analytics.store.manifest import PartEntry
from ocp_analytics.store.storage import Store


@dataclass(frozen=True)
class Part:
    """A written part: where, how many rows, its ``doc_id`` span and its codes by document.

    ``entry`` is its manifest entry (size, rows, SHA-256, ranges), as the
    writer returned it; the commit record lists it under ``parts``.
    """

    table: str
    name: str  # the file's name in the table folder (staged or final)
    rows: int
    lo: int | None = None  # doc_id span (tables with doc_id)
    hi: int | None = None
    # findings, quarantine: doc_id (where held), code and source_path of each row
    codes: pl.DataFrame | None = None
    entry: PartEntry | None = None
    # the sources whose rows it holds: display path -> index in the batch's sources
    sources: Mapping[str, int] | None = None

    @classmethod
    def of(
        cls,
        table: str,
        name: str,
        frame: pl.DataFrame,
        entry: PartEntry | None = None,
        sources: Mapping[str, int] | None = None,
    ) -> Part:
        """The entry of ``frame`` written as ``table/name`` (its manifest entry ``entry``).

        Examples
        --------
        >>> f = pl.DataFrame({"doc_id": [4, 9], "code": ["a", "b"]})
        >>> p = Part.of("findings", "x.parquet", f)
        >>> p.rel, p.rows, p.lo, p.hi, p.codes.columns
        ('findings/x.parquet', 2, 4, 9, ['doc_id', 'code'])
        """
        lo = hi = None
        if "doc_id" in frame.columns:
            lo, hi = _span(frame)
        codes = None
        if table in ("findings", "quarantine"):
            codes = frame.select(c for c in ("doc_id", "code", "source_path") if c in frame.columns)
        return cls(table, name, frame.height, lo, hi, codes, entry, sources)

    @property
    def rel(self) -> str:
        """``table/name``: the part's path in the dataset, as commit records list it."""
        return f"{self.table}/{self.name}"

    def may_hold(self, lo: int, hi: int) -> bool:
        """Whether a run-table part may hold documents of ``[lo, hi]``."""
        if self.table not in S.RUN_TABLES or self.rows == 0:
            return False
        return self.lo is not None and self.hi is not None and self.lo <= hi and self.hi >= lo


def _span(frame: pl.DataFrame) -> tuple[int | None, int | None]:
    """The smallest and largest ``doc_id`` of ``frame``."""
    lo, hi = frame.select(pl.min("doc_id").alias("lo"), pl.max("doc_id").alias("hi")).row(0)
    return lo, hi


@dataclass(frozen=True)
class Built:
    """What a build task returns for one source: its runs' rank keys (and the task's parts).

    A task's sources share parts: the first source of a task carries them all.
    """

    documents: int  # texts read, plus the read problems quarantined
    files: list[Part]
    ranks: pl.DataFrame | None  # each run's rank keys (None: no run)


class PartWriter:
    """Buffers a task's frames per table and writes parts with the package's writer.

    The frames of consecutive sources share parts (a task of a thousand
    one-run files writes a part per table, not a thousand); each part names
    the sources it holds rows of (:attr:`Part.sources`), so the driver counts
    each source's quarantined rows and findings by their ``source_path``.
    """

    def __init__(self, staging: Store, prefix: str) -> None:
        self.staging, self.prefix = staging, prefix
        self.pending: dict[str, list[pl.DataFrame]] = {}
        self.files: list[Part] = []
        self.parts = 0
        self.runs = 0  # runs held since the last part
        self.holding: dict[str, int] = {}

    def source(self, paths: Mapping[str, int]) -> None:
        """Rows of these sources (display path -> index) follow.

        Two sources shown by one path never share a part: their rows would
        not tell them apart, so a path held for another source closes the part.
        """
        if any(self.holding.get(p, i) != i for p, i in paths.items()):
            self.flush()
        self.holding.update(paths)

    def add(self, frames: Mapping[str, pl.DataFrame]) -> None:
        """Hold the non-empty frames; their runs count towards :attr:`runs`."""
        for table, frame in frames.items():
            if frame.height:
                self.pending.setdefault(table, []).append(frame)
        runs = frames.get("runs")
        self.runs += 0 if runs is None else runs.height

    def flush(self) -> None:
        """Write one part per table held (``PREFIX-NNNNN.parquet``)."""
        for table, frames in self.pending.items():
            frame = pl.concat(frames)
            folder = self.staging.child(table)
            folder.mkdir()
            name = f"{self.prefix}-{self.parts:05d}.parquet"
            target = folder.child(name)
            entry = write_parquet_atomic(S.part_table(frame, table), target, part_of=table)
            self.files.append(Part.of(table, name, frame, entry, dict(self.holding)))
        self.pending, self.holding, self.runs = {}, {}, 0
        self.parts += 1


def drop_skipped(staging: Store, files: list[Part], skip: pl.Series) -> list[Part]:
    """Rewrite the run-table parts that hold unchanged or outranked documents without them."""
    if skip.len() == 0:
        return files
    ids = pl.DataFrame({"doc_id": skip.cast(pl.Int64)})
    lo, hi = _span(ids)
    kept = []
    for f in files:
        if lo is None or hi is None or not f.may_hold(lo, hi):
            kept.append(f)
            continue
        path = staging.child(f.table, f.name)
        read = pl.read_parquet(path.uri, storage_options=path.storage_options())
        frame = read.join(ids, on="doc_id", how="anti")
        if frame.height == f.rows:
            kept.append(f)
            continue
        path.delete()
        if frame.height:
            entry = write_parquet_atomic(S.part_table(frame, f.table), path, part_of=f.table)
            kept.append(Part.of(f.table, f.name, frame, entry, f.sources))
    return kept


def commit_batch(
    root: Store,
    staging: Store,
    batch_id: str,
    seq: int,
    files: list[Part],
    entries: list[SourceSummary],
    superseding: int,
) -> None:
    """Move staged parts into the table folders (local), then write the commit record (last).

    The record lists each part's manifest entry (``parts``), as the
    one-machine ingest's does.
    """
    listed: dict[str, list[str]] = {t: [] for t in S.TABLES}
    for f in files:
        if staging != root:
            staging.child(f.rel).move_to(root.child(f.rel))
        listed[f.table].append(f.rel)
    parts = [f.entry.to_json() for f in files if f.entry is not None]
    record = {
        "batch_id": batch_id,
        "seq": seq,
        "committed_at": datetime.now(UTC).isoformat(),
        "files": listed,
        "sources": [e.record() for e in entries],
        "superseding": superseding,
        "parts": parts,
    }
    D.commit(root, record)


def remove_unlisted(root: Store, batch_id: str, records: list[dict[str, Any]]) -> None:
    """Delete this batch's parts that no commit lists (object stores: failed attempts)."""
    listed = {f for r in records for files in r["files"].values() for f in files}
    for table in S.TABLES:
        for name in root.child(table).names():
            if name.startswith(batch_id) and f"{table}/{name}" not in listed:
                root.child(table, name).delete()
