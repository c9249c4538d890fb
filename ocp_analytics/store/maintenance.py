"""The dataset over time: compaction rewrites small parts, vacuum deletes what no snapshot reads.

:func:`compact` rewrites the small live parts of each table into large
ones, sorted so that their manifest ranges are tight (``runs`` by run time,
the other tables of runs by ``doc_id``), and commits them as a new batch whose
record ``replaces`` the parts they rewrite. Rows are copied as they are
(``doc_id`` and every superseded run version included), so every figure is
the same; snapshots before the compaction still read the old parts.

:func:`vacuum` deletes the parts that only snapshots older than a given age
read (the parts a compaction replaced), and records in ``_vacuum.json`` the
oldest snapshot it left readable: an older one is refused with a line that
says so (:func:`~ocp_analytics.store.commits.read_commits`).

Both hold the dataset's write lock and are safe to kill at any point, as an
ingest is: a compaction's parts are invisible until its record is written
(a killed one leaves orphans, removed by the next writer), and a vacuum
records the snapshots it makes unreadable before it deletes anything (run
again, it deletes what a killed run left).
"""

from __future__ import annotations

import hashlib
import io
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics._typing import Progress, Silent
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.commits import (
    SIGNAL_LINKS,
    VACUUMS,
    commit,
    oldest_readable,
    read_commits,
    read_vacuums,
    remove_orphans,
)
from ocp_analytics.store.dataset import locked, open_existing, write_parquet_atomic
from ocp_analytics.store.decisions import evict_stores
from ocp_analytics.store.manifest import (
    PartEntry,
    record_entries,
    replaced_files,
    table_entries,
)
from ocp_analytics.store.storage import Store

if TYPE_CHECKING:
    from ocp_analytics._typing import StoreLike

__all__ = [
    "TARGET_BYTES",
    "CompactSummary",
    "VacuumSummary",
    "compact",
    "files_read_from",
    "vacuum",
]

# A compacted part's size on disk. A part is rewritten when it is below half of
# it; a group of parts is read whole, and takes several times its size in memory.
TARGET_BYTES = 64 << 20


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


@dataclass
class CompactSummary:
    """What :func:`compact` did: parts before and after, and the commit it made.

    ``seq`` is the compaction's commit (``None``: nothing was small enough
    to rewrite); ``rewritten`` parts of ``bytes_rewritten`` bytes became
    ``written`` parts of ``bytes_written`` bytes holding ``rows`` rows.
    """

    dataset: str
    seq: int | None = None
    parts_before: int = 0
    parts_after: int = 0
    rewritten: int = 0
    written: int = 0
    bytes_rewritten: int = 0
    bytes_written: int = 0
    rows: int = 0
    orphans_removed: int = 0
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)  # rewritten, written

    def __str__(self) -> str:
        if self.seq is None:
            return (
                f"dataset: {self.dataset}\nnothing to compact: "
                f"{_count(self.parts_before, 'live part')}, no two small ones in a table"
            )
        per_table = ", ".join(f"{t} {a} -> {b}" for t, (a, b) in self.tables.items())
        return (
            f"dataset: {self.dataset}\n"
            f"commit {self.seq} (compact): live parts {self.parts_before:,} -> "
            f"{self.parts_after:,} ({per_table})\n"
            f"rewritten: {_count(self.rewritten, 'part')} ({self.bytes_rewritten:,} bytes) "
            f"-> {_count(self.written, 'part')} ({self.bytes_written:,} bytes), "
            f"{_count(self.rows, 'row')}\n"
            f"the old parts stay for snapshots before {self.seq} until a vacuum"
        )


@dataclass
class VacuumSummary:
    """What :func:`vacuum` did: the parts it deleted and the oldest snapshot left readable."""

    dataset: str
    older_than: datetime
    kept_from: int | None = None  # the oldest snapshot the age keeps
    oldest_snapshot: int | None = None  # the oldest readable one afterwards (None: all)
    deleted: int = 0
    bytes_freed: int = 0
    parts_before: int = 0
    parts_after: int = 0
    orphans_removed: int = 0
    stores_deleted: int = 0  # decisions stores no refresh wrote since older_than
    store_bytes_freed: int = 0

    def __str__(self) -> str:
        readable = (
            "every snapshot"
            if self.oldest_snapshot is None
            else f"snapshots {self.oldest_snapshot} and later"
        )
        return (
            f"dataset: {self.dataset}\n"
            f"kept: every snapshot from {self.older_than:%Y-%m-%dT%H:%M:%SZ} on"
            + (f" (commit {self.kept_from} on)" if self.kept_from is not None else "")
            + f"; readable: {readable}\n"
            f"parts on disk {self.parts_before:,} -> {self.parts_after:,}: deleted "
            f"{_count(self.deleted, 'part')}, {self.bytes_freed:,} bytes freed"
            + (f", {_count(n, 'orphan')} removed" if (n := self.orphans_removed) else "")
            + (
                f"\ndecisions stores no refresh wrote since then: {_count(n, 'store')} deleted, "
                f"{self.store_bytes_freed:,} bytes freed (their rules are decided from raw "
                "until refreshed again)"
                if (n := self.stores_deleted)
                else ""
            )
        )


# --- compaction ----------------------------------------------------------------------------


def compact(
    dataset: StoreLike, *, target_bytes: int = TARGET_BYTES, progress: Progress | None = None
) -> CompactSummary:
    """Rewrite the small live parts of each table into large, sorted ones, as a new commit.

    A part is small below half of ``target_bytes``; each table's small parts
    are taken in reading order and grouped until a group holds
    ``target_bytes``, and each group of two or more becomes one part:
    ``runs`` sorted by run time (``ended_at``, else ``started_at``) then
    ``doc_id``, the other tables of runs by ``doc_id`` (each run's rows in
    their order), late events and quarantine as they were. Every row is
    copied as it is, so every reader gives the same results; the commit's
    record ``replaces`` the old parts from its ``seq`` on, and snapshots
    before it still read them until :func:`vacuum` deletes them. Each part
    read is checked against its manifest's size and SHA-256 first: a damaged
    part stops the compaction (``verify --repair``), never to be rewritten
    under a fresh checksum.

    Parameters
    ----------
    dataset
        The dataset: a local path, an ``s3://`` or ``abfss://`` URI, or a
        :class:`~ocp_analytics.store.storage.Store`.
    target_bytes
        The size of a compacted part on disk (64 MiB by default).
    progress
        Receives the bytes to read, then the bytes read; silent by default.

    Returns
    -------
    CompactSummary
        Parts before and after, what was rewritten, the commit's ``seq``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> for f in ("solo", "swarm"):
    ...     _ = oa.ingest(f"tests/data/examples/v0.3/{f}.ocp.json", out)
    >>> before = oa.rates(out, "tests+review", as_of="2027-01-01")
    >>> s = compact(out)
    >>> s.seq, s.parts_before, s.parts_after
    (3, 10, 5)
    >>> oa.rates(out, "tests+review", as_of="2027-01-01").equals(before)
    True
    """
    if target_bytes < 1:
        what = f"target_bytes must be positive, not {target_bytes}."
        raise DatasetError(hint(what, "leave the default, 64 MiB."))
    root = open_existing(dataset)
    summary = CompactSummary(str(root))
    with locked(root):
        records = read_commits(root)
        summary.orphans_removed = remove_orphans(root, records)
        live = {t: table_entries(records, t) for t in S.TABLES}
        summary.parts_before = sum(len(v) for v in live.values())
        groups = {t: _groups(root, entries, target_bytes) for t, entries in live.items()}
        groups = {t: g for t, g in groups.items() if g}
        if not groups:
            summary.parts_after = summary.parts_before
            return summary
        seq = max(r["seq"] for r in records) + 1
        _rewrite(root, seq, groups, summary, progress or Silent())
    summary.parts_after = summary.parts_before - summary.rewritten + summary.written
    return summary


def _size(root: Store, entry: PartEntry) -> int:
    return entry.size if entry.size is not None else root.child(entry.file).size()


def _groups(
    root: Store, entries: list[PartEntry], target: int
) -> list[list[tuple[PartEntry, int]]]:
    """The table's small parts in reading order, cut into groups of about ``target`` bytes."""
    groups: list[list[tuple[PartEntry, int]]] = [[]]
    held = 0
    for entry in entries:
        size = _size(root, entry)
        if size * 2 >= target:
            continue
        if held >= target:
            groups.append([])
            held = 0
        groups[-1].append((entry, size))
        held += size
    return [g for g in groups if len(g) > 1]


def _rewrite(
    root: Store,
    seq: int,
    groups: dict[str, list[list[tuple[PartEntry, int]]]],
    summary: CompactSummary,
    progress: Progress,
) -> None:
    """Write each group as one part, then the commit record that makes them live."""
    batch_id = f"{seq:08d}-{uuid.uuid4().hex[:8]}"
    files: dict[str, list[str]] = {}
    replaces: dict[str, list[str]] = {}
    parts: list[dict[str, Any]] = []
    progress.start(sum(size for gs in groups.values() for g in gs for _, size in g))
    for table, table_groups in groups.items():
        for group in table_groups:
            frame = _sorted(pl.concat([_read_part(root, e, progress) for e, _ in group]), table)
            rel = f"{table}/{batch_id}-{len(parts):05d}.parquet"
            entry = write_parquet_atomic(S.part_table(frame, table), root.child(rel), part_of=table)
            files.setdefault(table, []).append(rel)
            replaces.setdefault(table, []).extend(e.file for e, _ in group)
            parts.append(entry.to_json())
            summary.bytes_rewritten += sum(size for _, size in group)
            summary.bytes_written += entry.size or 0
            summary.rows += frame.height
        summary.tables[table] = (len(replaces[table]), len(files[table]))
    progress.stop()
    commit(
        root,
        {
            "batch_id": batch_id,
            "seq": seq,
            "committed_at": datetime.now(UTC).isoformat(),
            "kind": "compact",
            "files": files,
            "sources": [],
            "superseding": 0,
            "parts": parts,
            "replaces": replaces,
            SIGNAL_LINKS: False,  # its parts mix batches that did and did not write the link
        },
    )
    summary.seq = seq
    summary.rewritten = sum(len(v) for v in replaces.values())
    summary.written = len(parts)


def _read_part(root: Store, entry: PartEntry, progress: Progress) -> pl.DataFrame:
    """A part's rows in the table's columns of today, once its bytes match its manifest."""
    data = root.child(entry.file).read_bytes()
    problem = None
    if entry.size is not None and len(data) != entry.size:
        problem = f"{len(data)} bytes, the manifest says {entry.size}"
    elif entry.sha256 is not None and hashlib.sha256(data).hexdigest() != entry.sha256:
        problem = "its bytes differ from the manifest's SHA-256"
    if problem is not None:
        raise DatasetError(
            hint(
                f"{root}: damaged part {entry.file}: {problem}; nothing was compacted.",
                f"run `ocp-analytics verify {root} --repair`, then compact again.",
            )
        )
    progress.advance(0, len(data))
    frame = pl.read_parquet(io.BytesIO(data))
    schema = S.polars_schema(entry.table)
    # a part written before a column existed reads it as null, as a scan does
    return frame.select(
        pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
        for c, t in schema.items()
    )


def _sorted(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """Rows in the order that makes the part's manifest ranges tight."""
    if table == "runs":
        time = pl.coalesce("ended_at", "started_at")
        return frame.sort([time, pl.col("doc_id")], nulls_last=True, maintain_order=True)
    if "doc_id" in frame.columns:
        return frame.sort("doc_id", maintain_order=True)
    return frame  # late events and quarantine: kept in the order they were stored


# --- vacuum --------------------------------------------------------------------------------


def files_read_from(records: list[dict[str, Any]], seq: int) -> set[str]:
    """Every part that some snapshot at or after ``seq`` reads.

    The parts live at ``seq``, and every part a later record wrote (a later
    compaction may have replaced it, but the snapshots between read it).

    Examples
    --------
    >>> a = {"seq": 1, "files": {"runs": ["runs/a.parquet"]}}
    >>> b = {"seq": 2, "files": {"runs": ["runs/b.parquet"]}}
    >>> c = {"seq": 3, "files": {"runs": ["runs/c.parquet"]},
    ...      "replaces": {"runs": ["runs/a.parquet", "runs/b.parquet"]}}
    >>> sorted(files_read_from([a, b, c], 2)), sorted(files_read_from([a, b, c], 3))
    (['runs/a.parquet', 'runs/b.parquet', 'runs/c.parquet'], ['runs/c.parquet'])
    """
    upto = [r for r in records if r["seq"] <= seq]
    tables = {t for r in records for t in r["files"]}
    read = {e.file for t in tables for e in table_entries(upto, t)}
    return read | {e.file for r in records if r["seq"] > seq for e in record_entries(r)}


def vacuum(
    dataset: StoreLike,
    *,
    older_than: timedelta | datetime | str,
    now: datetime | None = None,
    progress: Progress | None = None,
    keep_decisions: bool = False,
) -> VacuumSummary:
    """Delete the parts that no snapshot newer than ``older_than`` reads.

    Every snapshot from the instant ``older_than`` names on stays readable:
    the commit current at that instant and every later one. The parts only
    older snapshots read (parts a :func:`compact` replaced before it) are
    deleted, after ``_vacuum.json`` records the oldest snapshot left
    readable; reading an older one is then refused with a line that says
    so. Parts no commit lists (left by a killed writer) are removed too.
    So are the decisions stores no refresh has written since then, from a
    commit before the newest (rule sets no longer refreshed: their readers
    decide from raw, their next refresh builds them again), unless
    ``keep_decisions`` (:func:`~ocp_analytics.store.decisions.evict_stores`).

    Parameters
    ----------
    dataset
        The dataset: a local path, an ``s3://`` or ``abfss://`` URI, or a
        :class:`~ocp_analytics.store.storage.Store`.
    older_than
        An age (a ``timedelta``, or text: ``30d``, ``12h``, ``90m``, ``2w``,
        ``0s``) counted back from ``now``, or an instant (a ``datetime`` or
        ISO 8601 text).
    now
        The instant ages count back from (default: the clock).
    progress
        Receives the bytes to delete, then the bytes deleted; silent by default.
    keep_decisions
        Keep every decisions store, however long ago it was refreshed.

    Returns
    -------
    VacuumSummary
        Parts deleted, bytes freed, the oldest readable snapshot.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> for f in ("solo", "swarm"):
    ...     _ = oa.ingest(f"tests/data/examples/v0.3/{f}.ocp.json", out)
    >>> _ = compact(out)
    >>> s = vacuum(out, older_than="0s")
    >>> s.deleted, s.oldest_snapshot
    (10, 3)
    >>> oa.scan_dataset(out, snapshot=1)  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ocp_analytics.exceptions.DatasetError: snapshot 1 is older than the vacuum of ...Z:
    its parts are deleted; the oldest readable snapshot is 3.
    ...
    """
    at = (now or datetime.now(UTC)).astimezone(UTC)
    cutoff = _cutoff(older_than, at)
    root = open_existing(dataset)
    summary = VacuumSummary(str(root), cutoff)
    with locked(root):
        records = read_commits(root)
        summary.orphans_removed = remove_orphans(root, records)
        listed = {e.file for r in records for e in record_entries(r)}
        before = [r["seq"] for r in records if _committed_at(r) <= cutoff]
        keep = max(before, default=min((r["seq"] for r in records), default=0))
        previous = oldest_readable(root)
        summary.kept_from = keep if records else None
        keep = max(keep, previous[0] if previous else 0)
        dead = sorted(listed - files_read_from(records, keep)) if records else []
        present = [(f, root.child(f)) for f in dead if root.child(f).is_file()]
        sizes = [target.size() for _, target in present]
        summary.parts_before = len(listed - set(dead)) + len(present)
        oldest = _oldest_after(records, dead)
        if oldest is not None and (previous is None or oldest > previous[0]):
            _record_vacuum(root, at, cutoff, oldest, [f for f, _ in present], sum(sizes))
        summary.oldest_snapshot = max(
            (s for s in (oldest, previous[0] if previous else None) if s is not None),
            default=None,
        )
        _delete(present, sizes, progress or Silent())
        if not keep_decisions:
            newest = max((r["seq"] for r in records), default=0)
            summary.stores_deleted, summary.store_bytes_freed = evict_stores(root, cutoff, newest)
    summary.deleted, summary.bytes_freed = len(present), sum(sizes)
    summary.parts_after = summary.parts_before - summary.deleted
    return summary


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _cutoff(older_than: timedelta | datetime | str, now: datetime) -> datetime:
    """The instant ``older_than`` names: an age back from ``now``, or an instant.

    Examples
    --------
    >>> now = datetime(2026, 12, 31, tzinfo=UTC)
    >>> _cutoff("30d", now).isoformat(), _cutoff("2026-12-01", now).isoformat()
    ('2026-12-01T00:00:00+00:00', '2026-12-01T00:00:00+00:00')
    """
    if isinstance(older_than, timedelta):
        return now - older_than
    if isinstance(older_than, datetime):
        t = older_than
    else:
        age = _AGE.match(older_than)
        if age:
            return now - timedelta(**{_UNITS[age[2]]: float(age[1])})
        try:
            t = datetime.fromisoformat(older_than.strip())
        except ValueError:
            raise DatasetError(
                hint(
                    f"cannot read {older_than!r} as an age or an instant.",
                    "give an age (30d, 12h, 90m, 2w) or an instant (2026-12-01T00:00:00Z).",
                )
            ) from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _committed_at(record: dict[str, Any]) -> datetime:
    t = datetime.fromisoformat(str(record["committed_at"]))
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _oldest_after(records: list[dict[str, Any]], dead: Iterable[str]) -> int | None:
    """The oldest snapshot that reads none of ``dead``: the last compaction replacing one."""
    replaced_at = {
        f: r["seq"] for r in records for files in replaced_files(r).values() for f in files
    }
    return max((replaced_at[f] for f in dead if f in replaced_at), default=None)


def _record_vacuum(
    root: Store, at: datetime, cutoff: datetime, oldest: int, deleted: list[str], size: int
) -> None:
    """Append this vacuum to ``_vacuum.json`` (one atomic write), before any part goes."""
    entry = {
        "at": at.isoformat(),
        "older_than": cutoff.isoformat(),
        "oldest_snapshot": oldest,
        "deleted": deleted,
        "bytes": size,
    }
    data = orjson.dumps([*read_vacuums(root), entry], option=orjson.OPT_INDENT_2)
    root.child(VACUUMS).write_bytes(data)


def _delete(present: list[tuple[str, Store]], sizes: list[int], progress: Progress) -> None:
    progress.start(sum(sizes))
    for (_, target), size in zip(present, sizes, strict=True):
        target.delete()
        progress.advance(0, size)
    progress.stop()
