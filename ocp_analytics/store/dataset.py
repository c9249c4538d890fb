"""The on-disk Parquet dataset: layout, atomic writes, manifest and scans.

Layout::

    DATASET/
      ocp-dataset.json          format marker
      _batches/NNNNNNNN.json    one commit record per batch: its files, its sources,
                                and a manifest entry per part (see store/manifest.py)
      runs/ attempts/ signals/ rules/ artifacts/ findings/ quarantine/ events/
                                Parquet parts named <batch_id>-<part>.parquet

Each Parquet part is written under a temporary name and renamed into place
(in an object store: one PUT at its final key); a batch becomes visible only when its
commit record appears in ``_batches/``, and readers read only the parts
that committed records list.
A crash at any point therefore leaves the dataset as it was before the
batch; the next ingest removes the orphaned parts and redoes the batch.
The records, and the dataset as of any of them (a snapshot), are in
``store/commits.py``.
"""

from __future__ import annotations

import fcntl
import os
import socket
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.commits import BATCHES, commit
from ocp_analytics.store.commits import STAGING as STAGING
from ocp_analytics.store.commits import read_commits as read_commits
from ocp_analytics.store.commits import record_names as record_names
from ocp_analytics.store.commits import remove_orphans as remove_orphans
from ocp_analytics.store.empty_tables import SCHEMA_DIR as SCHEMA_DIR
from ocp_analytics.store.empty_tables import columns
from ocp_analytics.store.manifest import PartEntry, describe_part
from ocp_analytics.store.storage import Store, store

FORMAT = {"format": "ocp-analytics-dataset", "version": 1}
MARKER = "ocp-dataset.json"


@overload
def write_parquet_atomic(table: pa.Table, path: str | Path | Store) -> None: ...


@overload
def write_parquet_atomic(
    table: pa.Table, path: str | Path | Store, *, part_of: str
) -> PartEntry: ...


def write_parquet_atomic(
    table: pa.Table, path: str | Path | Store, *, part_of: str | None = None
) -> PartEntry | None:
    """Write a Parquet file atomically: a temporary name renamed into place, or one PUT.

    ``part_of``: the dataset table the file is a part of; its parts are
    encoded as :func:`~ocp_analytics.schemas.parquet_options` says, and its
    manifest entry is returned (the part at ``TABLE/NAME``, ``NAME`` being
    ``path``'s), computed from ``table`` and the encoded bytes.

    Examples
    --------
    >>> import tempfile
    >>> t = pa.table({"doc_id": [5, 2]})
    >>> e = write_parquet_atomic(t, tempfile.mkdtemp() + "/p.parquet", part_of="rules")
    >>> e.file, e.rows, e.doc_id, len(e.sha256)
    ('rules/p.parquet', 2, (2, 5), 64)
    """
    target = store(path)
    if part_of is None:
        target.write_parquet(table)
        return None
    # Encoded in memory, so the checksum is taken from the bytes written, never
    # from a second read of the file (a GET on an object store).
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", **S.parquet_options(part_of))
    data = sink.getvalue()
    write_encoded(target, data)
    return describe_part(table, data, part_of, f"{part_of}/{target.name}")


def write_encoded(target: Store, data: pa.Buffer) -> None:
    """Write a part's bytes as :meth:`~.storage.Store.write_parquet` does: rename or one PUT.

    Unlike :meth:`~.storage.Store.write_bytes`, a local part is not fsynced,
    as parts never were: only the commit record is.
    """
    if target.remote:
        target.write_bytes(data)
        return
    tmp = target.path.with_name(f".{target.path.name}.tmp")
    with tmp.open("wb") as f:
        f.write(data)
    os.replace(tmp, target.path)


def is_dataset(path: str | Path | Store) -> bool:
    """True when ``path`` is an ocp-analytics dataset folder."""
    return store(path).child(MARKER).is_file()


def _skeleton_names() -> set[str]:
    return {BATCHES, SCHEMA_DIR, ".lock", f".{MARKER}.tmp", *S.TABLES}


def _is_unfinished(root: Store) -> bool:
    """A folder left by a :func:`create` that was killed before writing the marker.

    It holds nothing but the dataset's own folders and files, and no commit
    record (a batch is committed only after the marker exists).
    """
    names = _skeleton_names()
    if any(name not in names for name in root.names()):
        return False
    return not root.child(BATCHES).names()


def create(path: str | Path | Store) -> Store:
    """Create an empty dataset folder (or return an existing one).

    The format marker is written last, atomically. A folder left by a
    creation that was killed before the marker (only the dataset's own
    folders in it, no commit) is completed, not refused. ``path`` may be an
    ``s3://`` (``s3a://``) prefix.
    """
    root = store(path)
    if root.is_file():
        raise DatasetError(
            hint(f"{str(root)!r} exists and is not a folder.", "choose another --out path.")
        )
    if root.is_dir() and not is_dataset(root) and not _is_unfinished(root):
        raise DatasetError(
            hint(
                f"{str(root)!r} is a non-empty folder that is not a dataset.",
                "give an empty or new folder, or an existing dataset.",
            )
        )
    for name in (BATCHES, SCHEMA_DIR, *S.TABLES):
        root.child(name).mkdir()
    for table, schema in S.TABLES.items():
        empty = root.child(SCHEMA_DIR, f"{table}.parquet")
        if not empty.is_file() or columns(empty) != schema.names:
            # a dataset made by an earlier version gets today's columns: DuckDB
            # reads every listed file with the columns of the first and
            # refuses a file (this one, listed last) that lacks one of them
            write_parquet_atomic(schema.empty_table(), empty)
    if not is_dataset(root):
        root.child(MARKER).write_bytes(orjson.dumps(FORMAT))
    return root


def open_existing(path: str | Path | Store) -> Store:
    """Check that ``path`` is a dataset and return its :class:`~.storage.Store`."""
    root = store(path)
    if not is_dataset(root):
        raise DatasetError(
            hint(
                f"{str(root)!r} is not an ocp-analytics dataset (no {MARKER}).",
                f"create one with: ocp-analytics ingest SOURCE --out {root}",
            )
        )
    return root


@contextmanager
def locked(root: Store) -> Iterator[None]:
    """Hold the dataset's write lock (one ingest at a time).

    Local: an ``flock`` on ``.lock``, released by the kernel if the process
    dies. S3 / Azure: a ``.lock`` object created with a conditional PUT and deleted
    afterwards; one left by a killed process is reported with its owner.
    """
    if root.remote:
        with _remote_lock(root):
            yield
        return
    with (root.path / ".lock").open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise DatasetError(
                hint(
                    f"another process is writing to {str(root)!r}.",
                    "wait for it to finish, then run again.",
                )
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def _remote_lock(root: Store) -> Iterator[None]:
    lock = root.child(".lock")
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "at": datetime.now(UTC).isoformat()}
    if not lock.create_exclusive(orjson.dumps(owner)):
        try:
            held = lock.read_bytes().decode("utf-8", "replace")
        except OSError:
            held = "unknown owner"
        raise DatasetError(
            hint(
                f"another process is writing to {str(root)!r} (lock: {held}).",
                f"wait for it to finish; if no ingest is running (a killed job), delete "
                f"{lock.uri} and run again.",
            )
        )
    try:
        yield
    finally:
        lock.delete()


# --- writing a batch, and the index of runs already written ---------------------------


class BatchWriter:
    """The parts of one batch, written under their final names and committed together.

    Nothing is visible to readers until :meth:`commit` renames the batch's
    record into ``_batches/``; ``sources`` are objects with a ``record()``
    for the manifest. A part is converted and written on a
    second thread while the caller goes on (both release the GIL); at most
    one part waits for that thread, so memory holds one part more.
    """

    def __init__(self, root: Store, seq: int) -> None:
        self.root, self.seq = root, seq
        self.batch_id = f"{seq:08d}-{uuid.uuid4().hex[:8]}"
        self.files: dict[str, list[str]] = {t: [] for t in S.TABLES}
        self.entries: list[PartEntry] = []  # one per part written, in order
        self.sources: list[Any] = []
        self.next_doc = 0
        self.parts = 0
        self.superseding = 0
        self.pending: dict[str, list[pl.DataFrame]] = {t: [] for t in S.TABLES}
        self.pending_rows = 0
        self._pool: ThreadPoolExecutor | None = None
        self._writing: Future[None] | None = None

    def doc_id_base(self, n: int) -> int:
        """The first ``doc_id`` of ``n`` documents: the batch's ``seq`` in the high 32 bits."""
        base = (self.seq << 32) + self.next_doc
        self.next_doc += n
        return base

    def write(
        self, frames: dict[str, pl.DataFrame], flush_rows: int, rows: int | None = None
    ) -> None:
        """Buffer a chunk's frames; write a part once ``flush_rows`` runs are held."""
        for table, frame in frames.items():
            if frame.height:
                self.pending[table].append(frame)
        if rows is None:  # by default a part holds flush_rows runs
            rows = frames["runs"].height if "runs" in frames else 0
        self.pending_rows += rows
        if self.pending_rows >= flush_rows:
            self.flush()

    def flush(self) -> None:
        """Start writing the held frames as one part per table."""
        part: list[tuple[str, list[pl.DataFrame], str]] = []
        for table, frames in self.pending.items():
            if frames:
                rel = f"{table}/{self.batch_id}-{self.parts:05d}.parquet"
                part.append((table, frames, rel))
                self.files[table].append(rel)
        self.pending = {t: [] for t in S.TABLES}
        self.pending_rows = 0
        self.parts += 1
        if part:
            self.wait()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="ocp-parts")
            self._writing = self._pool.submit(self._write_part, part)

    def _write_part(self, part: list[tuple[str, list[pl.DataFrame], str]]) -> None:
        for table, frames, rel in part:
            arrow = S.part_table(pl.concat(frames), table)
            self.entries.append(write_parquet_atomic(arrow, self.root.child(rel), part_of=table))

    def wait(self) -> None:
        """Wait for the part being written (a failed write raises here)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def close(self) -> None:
        """Wait for the last part and stop the writing thread."""
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def commit(self, extra: dict[str, Any] | None = None) -> None:
        """Write what is held, then the commit record (the batch becomes visible)."""
        self.flush()
        self.close()
        commit(
            self.root,
            {
                "batch_id": self.batch_id,
                "seq": self.seq,
                "committed_at": datetime.now(UTC).isoformat(),
                "files": self.files,
                "sources": [s.record() for s in self.sources],
                "superseding": self.superseding,
                "parts": [e.to_json() for e in self.entries],
                **(extra or {}),
            },
        )


def resolved_path(record: dict[str, Any]) -> str:
    """The resolved path of a manifest source (records before it was kept: resolved now)."""
    if "resolved" in record:
        return str(record["resolved"])
    path = str(record["path"])
    return path if path == "-" else str(Path(path).resolve())
