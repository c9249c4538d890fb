"""Repair: damaged parts rebuilt from the sources their batch recorded, byte for byte.

A batch's record lists its sources with their resolved path and SHA-256. When
each is still there with the same bytes, ingesting them again as that batch
(same ``seq``, so the same ``doc_id``; the same run versions already stored
before it, so the same runs found unchanged) gives the same rows in the same
order. :func:`repair` does that in a scratch dataset, cuts the rows of each
damaged part out of them by the row counts of the batch's manifest, encodes
them, and puts them back in place only when their SHA-256 is the manifest's:
the part is then exactly what was committed, and every snapshot reads it.
Anything else (a source gone or changed, a batch of late events, a compacted
part, a record without hashes, bytes that come out different) is named and
left as it was.

The ingest itself is passed in (``reingest``): the store does not import the
ingestion (docs/architecture.md); ``verify --repair`` passes the real one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError
from ocp_analytics.store.commits import commit, read_commits, table_files
from ocp_analytics.store.dataset import SCHEMA_DIR, create, locked, open_existing
from ocp_analytics.store.decisions import DECISIONS, DecisionStore
from ocp_analytics.store.manifest import PartEntry, record_entries
from ocp_analytics.store.storage import Store
from ocp_analytics.store.verify import Damage, check

if TYPE_CHECKING:
    from ocp_analytics._typing import StoreLike

__all__ = ["BatchRepair", "Reingest", "RepairSummary", "repair"]

Reingest = Callable[[list[str], str], Any]
"""Ingests sources (paths, in order) into a dataset folder as one batch."""

# The counts of a source that must come out the same when its batch is ingested again.
_COUNTS = ("documents", "runs_new", "runs_replaced", "runs_unchanged", "runs_outranked")


@dataclass
class BatchRepair:
    """One damaged batch: its parts restored, or why they could not be."""

    seq: int
    batch_id: str
    damaged: list[str]
    restored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # why not (empty: repaired)

    def __str__(self) -> str:
        head = f"batch {self.seq} {self.batch_id}"
        if not self.missing:
            return f"{head}: restored {', '.join(self.restored)}"
        return f"{head}: not repaired ({'; '.join(self.missing)}): {', '.join(self.damaged)}"


@dataclass
class RepairSummary:
    """What :func:`repair` found and did; ``unplaced`` are damages of no batch."""

    dataset: str
    batches: list[BatchRepair] = field(default_factory=list)
    unplaced: list[Damage] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)  # a line per damaged store or _schema file

    @property
    def ok(self) -> bool:
        return not self.unplaced and all(not b.missing for b in self.batches)

    def __str__(self) -> str:
        lines = [str(b) for b in self.batches]
        lines += [f"{d}: not repaired (no batch to ingest again)" for d in self.unplaced]
        lines += self.stores
        restored = sum(len(b.restored) for b in self.batches)
        left = sum(len(b.damaged) - len(b.restored) for b in self.batches) + len(self.unplaced)
        lines.append(f"repaired {restored:,} part(s); {left:,} left damaged")
        return "\n".join(lines)


def repair(dataset: StoreLike, reingest: Reingest) -> RepairSummary:
    """Rebuild every damaged part from its batch's recorded sources; name what cannot be.

    Parameters
    ----------
    dataset
        The dataset (local or an object store; the scratch copy is local).
    reingest
        The ingest: ``reingest(paths, folder)`` ingests ``paths`` into the
        dataset ``folder`` as one batch (``ocp_analytics.ingest`` with a
        ``commit_docs`` above the batch's documents).

    Returns
    -------
    RepairSummary
        Per damaged batch, the parts restored or what is missing.
    """
    root = open_existing(dataset)
    summary = RepairSummary(str(root))
    with locked(root):
        damages = check(root).damages
        summary.stores = _drop_stores(root, [d for d in damages if d.table == DECISIONS])
        if empty := [d.file for d in damages if d.table == SCHEMA_DIR]:
            create(root)  # writes again each empty table file it cannot read
            summary.stores += [f"{f}: written again" for f in empty]
        damages = [d for d in damages if d.table not in (DECISIONS, SCHEMA_DIR)]
        records = {r["seq"]: r for r in read_commits(root)}
        by_seq: dict[int, list[Damage]] = {}
        for d in damages:
            if d.table is None or d.seq is None or d.seq not in records:
                summary.unplaced.append(d)
            else:
                by_seq.setdefault(d.seq, []).append(d)
        bad = {d.file for d in damages}
        for seq in sorted(by_seq):  # older first: a later batch's run index reads them
            record = records[seq]
            batch = BatchRepair(seq, str(record["batch_id"]), [d.file for d in by_seq[seq]])
            batch.missing = _unrepairable(record)
            if not batch.missing:
                _rebuild(root, record, batch, bad, reingest)
            bad -= set(batch.restored)
            summary.batches.append(batch)
    return summary


def _drop_stores(root: Store, damages: list[Damage]) -> list[str]:
    """Delete each decisions store a damaged file belongs to; one line each.

    A store is a cache of what a full evaluation gives: deleted, its rules
    are decided from raw, and the next refresh builds it again. One a
    refresh is writing (its lock held) is left, and said so.
    """
    lines = []
    for name in sorted({d.file.split("/")[1] for d in damages}):
        st = DecisionStore(root, name)
        try:
            with locked(st.root):
                st.evict()
        except DatasetError:
            lines.append(f"{DECISIONS}/{name}: damaged, not deleted: a refresh is writing it")
            continue
        lines.append(
            f"{DECISIONS}/{name}: damaged, deleted (its rule is decided from raw until the "
            "next refresh builds it again)"
        )
    return lines


def _unrepairable(record: dict[str, Any]) -> list[str]:
    """Why the batch cannot be ingested again as it was; empty when it can."""
    if record.get("kind") == "compact":
        return ["a compacted part: restore it from a copy, or from the parts it replaced"]
    if "event_sources" in record:
        return ["a batch of late events: repairing one is not supported"]
    if not isinstance(record.get("parts"), list):
        return ["its record has no manifest (no SHA-256 to check a rebuilt part against)"]
    missing = []
    for s in record.get("sources", []):
        where, sha = str(s.get("resolved") or s.get("path")), s.get("sha256")
        if where == "-":
            missing.append("a source read from standard input")
        elif not isinstance(sha, str):
            missing.append(f"{where}: no SHA-256 recorded for it (an older batch)")
        elif not Path(where).is_file():
            missing.append(f"{where}: missing")
        elif _sha256(Path(where)) != sha:
            missing.append(f"{where}: changed since its batch (SHA-256 differs)")
    return missing


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _rebuild(
    root: Store, record: dict[str, Any], batch: BatchRepair, bad: set[str], reingest: Reingest
) -> None:
    seq = int(record["seq"])
    with tempfile.TemporaryDirectory(prefix="ocp-repair-") as tmp:
        scratch = create(Path(tmp) / "ds")
        _seed_versions(root, scratch, seq, bad)
        sources = record.get("sources", [])
        with _at_recorded_paths(sources) as paths:
            reingest(paths, str(scratch.path))
        rebuilt = [r for r in read_commits(scratch) if r["seq"] == seq]
        if not rebuilt:
            batch.missing.append("the sources gave no batch when ingested again")
            return
        differs = _counts_differ(sources, rebuilt[0].get("sources", []))
        if differs:
            batch.missing.append(f"ingested again, the sources give other counts ({differs})")
            return
        entries = [e for e in record_entries(record) if e.file in set(batch.damaged)]
        for table in dict.fromkeys(e.table for e in entries):
            rows = _batch_rows(scratch, rebuilt[0], table, str(record["batch_id"]))
            _restore_table(root, record, table, rows, entries, batch)


def _seed_versions(root: Store, scratch: Store, seq: int, bad: set[str]) -> None:
    """Give the scratch dataset the run versions current before batch ``seq``, as commit seq-1.

    Only what the ingest compares a run with is kept: ``run_id``, ``doc_id``
    and ``doc_sha256`` of each run's latest version with a ``doc_id`` below
    the batch's (every version stays stored, compacted or not). Damaged parts
    are left out: older batches are repaired first, and the batch's own parts
    hold no earlier version.
    """
    if seq <= 1:
        return
    runs = [f for f in table_files(root, read_commits(root), "runs") if f not in bad]
    columns = {"run_id": pl.String, "doc_id": pl.Int64, "doc_sha256": pl.String}
    frame = pl.DataFrame(schema=columns)
    if runs:
        frame = (
            pl.scan_parquet(
                [root.child(f).uri for f in runs],
                schema=S.polars_schema("runs"),
                storage_options=root.storage_options(),
                missing_columns="insert",
                extra_columns="ignore",
                glob=False,
            )
            .select(*columns)
            .filter(pl.col("doc_id") < (seq << 32))
            .sort("doc_id")
            .group_by("run_id")
            .last()
            .collect()
        )
    scratch.child("runs").mkdir()
    rel = "runs/seed.parquet"
    pq.write_table(frame.to_arrow(), str(scratch.child(rel).path))
    commit(
        scratch,
        {
            "batch_id": f"{seq - 1:08d}-seed",
            "seq": seq - 1,
            "committed_at": datetime.now(UTC).isoformat(),
            "files": {"runs": [rel]},
            "sources": [],
            "superseding": 0,
        },
    )


@contextlib.contextmanager
def _at_recorded_paths(sources: list[dict[str, Any]]) -> Iterator[list[str]]:
    """The sources' paths as given (rows carry them), from the folder they were given in."""
    paths = [str(s["path"]) for s in sources]
    resolved = [Path(str(s.get("resolved") or s["path"])) for s in sources]
    base = None
    for given, real in zip(paths, resolved, strict=True):
        if not Path(given).is_absolute() and Path(given).resolve() != real:
            parts = Path(given).parts
            if real.parts[-len(parts) :] == parts:
                base = Path(*real.parts[: -len(parts)])
    if base is None:
        yield paths
        return
    here = os.getcwd()
    os.chdir(base)
    try:
        yield paths
    finally:
        os.chdir(here)


def _counts_differ(recorded: list[dict[str, Any]], again: list[dict[str, Any]]) -> str:
    if len(recorded) != len(again):
        return f"{len(again)} sources, the record has {len(recorded)}"
    for old, new in zip(recorded, again, strict=True):
        for key in _COUNTS:
            if int(old.get(key) or 0) != int(new.get(key) or 0):
                return f"{old['path']}: {key} {new.get(key)}, the record says {old.get(key)}"
    return ""


def _batch_rows(scratch: Store, record: dict[str, Any], table: str, batch_id: str) -> pl.DataFrame:
    """The rebuilt batch's rows of ``table`` in write order, under the damaged batch's id."""
    files = record["files"].get(table, [])
    frames = [pl.read_parquet(str(scratch.child(f).path)) for f in files]
    schema = S.polars_schema(table)
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    if "batch_id" in frame.columns:
        frame = frame.with_columns(pl.lit(batch_id, pl.String).alias("batch_id"))
    return frame.select(pl.col(c).cast(t) for c, t in schema.items())


def _restore_table(
    root: Store,
    record: dict[str, Any],
    table: str,
    rows: pl.DataFrame,
    damaged: list[PartEntry],
    batch: BatchRepair,
) -> None:
    """Cut each damaged part of ``table`` out of ``rows``; write it back if its bytes match."""
    offset = 0
    wanted = {e.file for e in damaged}
    for entry in (e for e in record_entries(record) if e.table == table):
        if entry.rows is None:
            batch.missing.append(f"{entry.file}: no row count in the manifest")
            return
        if entry.file in wanted:
            part = rows.slice(offset, entry.rows)
            data = _encode(part, table)
            if part.height != entry.rows or hashlib.sha256(data).hexdigest() != entry.sha256:
                batch.missing.append(
                    f"{entry.file}: rebuilt, its bytes differ from the committed part's "
                    "(another version of the writer?); restore it from a copy"
                )
            else:
                _put(root.child(entry.file), data)
                batch.restored.append(entry.file)
        offset += entry.rows


def _encode(frame: pl.DataFrame, table: str) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(S.part_table(frame, table), sink, compression="zstd", **S.parquet_options(table))
    return bytes(sink.getvalue())


def _put(target: Store, data: bytes) -> None:
    """Write a part in place: a temporary name renamed over the damaged file, or one PUT."""
    if target.remote:
        target.write_bytes(data)
        return
    tmp = target.path.with_name(f".{target.path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target.path)
