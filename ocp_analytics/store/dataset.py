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
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.commits import (
    BATCHES,
    SIGNAL_LINKS,
    Snapshot,
    commit,
    manifest_frame,
    read_commits,
)
from ocp_analytics.store.commits import STAGING as STAGING
from ocp_analytics.store.commits import record_names as record_names
from ocp_analytics.store.commits import remove_orphans as remove_orphans
from ocp_analytics.store.empty_tables import SCHEMA_DIR as SCHEMA_DIR
from ocp_analytics.store.empty_tables import columns
from ocp_analytics.store.manifest import PartEntry, describe_part, names_held, tables_entries
from ocp_analytics.store.prune import WINDOWED, PartChoice, choose_parts, parts_meeting
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from ocp_analytics._typing import DatasetLike

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


@dataclass
class Dataset:
    """The tables of a dataset as LazyFrames, current run versions only.

    Attributes ``runs``, ``attempts``, ``signals``, ``rules``, ``artifacts``,
    ``findings``, ``quarantine`` and ``events`` (late events, every stored
    one; see :func:`~ocp_analytics.ingest_events`); ``manifest`` is an eager
    DataFrame of ingested run sources; ``snapshot`` the ``seq`` of the last
    commit read (``None``: no commit yet), the snapshot that reads the same
    rows again. Index it like a mapping: ``ds["runs"]``.
    """

    path: Store
    frames: dict[str, pl.LazyFrame] = field(default_factory=dict)
    manifest: pl.DataFrame = field(default_factory=pl.DataFrame)
    # Every committed row, superseded run versions included (same as frames
    # when nothing was superseded); for readers that filter versions themselves.
    scans: dict[str, pl.LazyFrame] = field(default_factory=dict)
    # seq of every batch with signals -> whether its signals carry the attempt link
    signal_links: dict[int, bool] = field(default_factory=dict)
    snapshot: int | None = None
    # The records read (None: tables built by hand), the parts scanned (store/prune.py),
    # run_id and doc_id of each row the run-version rule compares (None: none replaced).
    records: list[dict[str, Any]] | None = field(default=None, repr=False)
    parts: PartChoice | None = field(default=None, repr=False)
    versions: pl.LazyFrame | None = field(default=None, repr=False)
    # what the readers of one call share, read once (within(), superseded())
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def superseded(self) -> pl.DataFrame | None:
        """The ``doc_id`` of every run version read that a newer one replaces; None: none can be.

        Read once (then kept) from :attr:`versions`: the versions of the parts
        read and of every part, read or not, that may hold a newer version of
        one of them. A report's passes over the same window and its
        freshness share one read.

        Examples
        --------
        >>> import ocp_analytics as oa, tempfile
        >>> out = tempfile.mkdtemp() + "/ds"
        >>> _ = oa.ingest("tests/data/examples/v0.3/solo.ocp.json", out)
        >>> oa.scan_dataset(out).superseded() is None  # nothing replaced: none can be
        True
        """
        if self.versions is None:
            return None
        if "superseded" not in self._memo:
            newest = pl.col("doc_id").max().over("run_id")
            old = self.versions.filter(pl.col("doc_id") < newest).select("doc_id")
            self._memo["superseded"] = old.collect()
        found: pl.DataFrame = self._memo["superseded"]
        return found

    def current(self, name: str) -> pl.LazyFrame:
        """Table ``name`` at current run versions, through the shared :meth:`superseded` read.

        The rows of ``self[name]``; a report's readers of several tables take
        the replaced versions out with one read instead of one each.
        """
        pruned = self.parts is not None and self.parts.pruned  # frames keep the window's runs
        stale = self.superseded() if name in S.RUN_TABLES and not pruned else None
        if stale is None:
            return self.frames[name]
        return self.scans[name].join(stale.lazy(), on="doc_id", how="anti")

    def signal_names(self) -> set[tuple[str, str]] | None:
        """Every (kind, name) of a verdict or score in the ``signals`` parts read; None: unknown.

        From the manifest (:func:`~ocp_analytics.store.manifest.names_held`);
        ``None`` for tables built by hand.
        """
        if self.records is None or self.parts is None:
            return None
        live = self.parts.entries or tables_entries(self.records)
        return names_held(live.get("signals", []), self.parts.files.get("signals", []))

    def within(self, since: datetime | None, until: datetime | None) -> Dataset:
        """The dataset as a read of the runs in ``[since, until)`` needs it, parts pruned.

        Every run whose time (``ended_at``, else ``started_at``) is in the
        window is there with all its rows, at its current version; runs
        outside it may be too (filter them). Parts the manifest says cannot
        hold such a run are never opened (store/prune.py). Unbounded, or with
        nothing to prune: the dataset itself.

        Examples
        --------
        >>> import ocp_analytics as oa, tempfile
        >>> from datetime import UTC, datetime
        >>> out = tempfile.mkdtemp() + "/ds"
        >>> _ = oa.ingest("tests/data/examples/v0.3/solo.ocp.json", out)
        >>> ds = oa.scan_dataset(out)
        >>> later = ds.within(datetime(2030, 1, 1, tzinfo=UTC), None)
        >>> later.parts.files["runs"], later.runs.collect().height, ds.within(None, None) is ds
        ([], 0, True)
        """
        if self.records is None or (since is None and until is None):
            return self
        key = ("within", since, until)
        if key not in self._memo:  # the same window read again shares its scans and versions
            choice = choose_parts(self.records, since, until)
            pruned = choice.pruned
            self._memo[key] = (
                _scanned(self.path, self.records, choice, self.snapshot) if pruned else self
            )
        within: Dataset = self._memo[key]
        return within

    def holding(
        self, spans: list[tuple[int, int]], tables: tuple[str, ...] = WINDOWED
    ) -> dict[str, pl.LazyFrame]:
        """The rows of ``tables`` in the parts whose ``doc_id`` range meets ``spans``.

        Every committed version (``scans``, not ``frames``: filter to the runs
        wanted, which the caller knows to be current); the manifest chooses
        the parts (:func:`~ocp_analytics.store.prune.parts_meeting`), so a
        read of a few recent runs opens the recent batches' parts only.
        """
        if self.records is None:
            return {t: self.scans.get(t, self.frames[t]) for t in tables}
        live = self.parts.entries if self.parts is not None else None
        files = parts_meeting(self.records, spans, tables, live or None)
        return {t: _scan(self.path, files[t], t) for t in tables}

    def __getitem__(self, name: str) -> pl.LazyFrame:
        return self.frames[name]

    def __getattr__(self, name: str) -> pl.LazyFrame:
        frames = self.__dict__.get("frames", {})
        if name in frames:
            return frames[name]
        raise AttributeError(name)


def _scan(root: Store, files: list[str], table: str) -> pl.LazyFrame:
    if not files:
        return pl.LazyFrame(schema=S.polars_schema(table))
    # glob=False: a dataset path holding "[", "*" or "?" is a path, not a pattern.
    return pl.scan_parquet(
        [root.child(f).uri for f in files],
        schema=S.polars_schema(table),
        # parts written before a column existed read it as null; a column
        # this version does not know (a newer writer's) is left out
        missing_columns="insert",
        extra_columns="ignore",
        glob=False,
        storage_options=root.storage_options(),
    )


def scan_dataset(path: str | Path | Store, *, snapshot: Snapshot = None) -> Dataset:
    """Scan a dataset: one LazyFrame per table, holding each run's current version.

    A run id ingested again with new content replaces its older version for
    every table; ``quarantine`` holds every quarantined document.

    Parameters
    ----------
    path
        The dataset: a local path, an ``s3://`` or ``abfss://`` URI, or a
        :class:`~ocp_analytics.store.storage.Store`.
    snapshot
        The dataset as a commit left it: its ``seq`` (``ocp-analytics log``),
        or an instant (the last commit at or before it); late events and
        run versions committed after it are not read. ``None``: the latest.
        A snapshot no commit matches raises
        :class:`~ocp_analytics.exceptions.DatasetError`.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> oa.scan_dataset(out).runs.select("run_id", "n_attempts").collect().rows()
    [('run_ex_solo', 1)]
    >>> _ = oa.ingest(["tests/data/examples/v0.3/swarm.ocp.json"], out)
    >>> ds = oa.scan_dataset(out, snapshot=1)
    >>> ds.snapshot, ds.runs.select("run_id").collect().height
    (1, 1)
    """
    root = open_existing(path)
    records = read_commits(root, snapshot)
    last = max((r["seq"] for r in records), default=None)
    return _scanned(root, records, choose_parts(records, None, None), last)


def _scanned(
    root: Store, records: list[dict[str, Any]], choice: PartChoice, last: int | None
) -> Dataset:
    """The dataset of ``records`` reading the parts ``choice`` names, current versions only."""
    scans = {t: _scan(root, choice.files[t], t) for t in S.TABLES}
    frames = dict(scans)
    versions = None
    if choice.resolve:
        versions = scans["runs"].select("run_id", "doc_id")
        if choice.versions:  # parts outside the window that may hold a newer version
            newer = _scan(root, choice.versions, "runs").select("run_id", "doc_id")
            versions = pl.concat([versions, newer])
        current = versions.group_by("run_id").agg(pl.col("doc_id").max()).select("doc_id")
        for t in S.RUN_TABLES:
            frames[t] = scans[t].join(current, on="doc_id", how="semi")
    links = {r["seq"]: bool(r.get(SIGNAL_LINKS)) for r in records if r["files"].get("signals")}
    return Dataset(
        root, frames, manifest_frame(records), scans, links, last, records, choice, versions
    )


def scan_at(
    dataset: DatasetLike, snapshot: Snapshot = None
) -> Dataset | Mapping[str, pl.LazyFrame | pl.DataFrame]:
    """``dataset`` scanned once at ``snapshot``; a scanned or in-memory one as it is.

    What every reader that takes ``snapshot=`` does first, so that the whole
    evaluation reads one state of the dataset and knows its ``seq``
    (:attr:`Dataset.snapshot`). A snapshot with a scanned :class:`Dataset`
    (it was read at its own) or with tables in memory (they have no commits)
    is refused.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> scan_at(out, "1").snapshot
    1
    >>> scan_at(oa.scan_dataset(out), 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.DatasetError: a snapshot was given with a dataset already scanned...
    """
    if isinstance(dataset, Dataset | Mapping):
        if snapshot is None:
            return dataset
        what = "already scanned" if isinstance(dataset, Dataset) else "of tables in memory"
        raise DatasetError(
            hint(
                f"a snapshot was given with a dataset {what} (snapshot={snapshot!r}).",
                "pass the dataset's path with snapshot=, or scan it with "
                "scan_dataset(path, snapshot=...) and pass that alone.",
            )
        )
    return scan_dataset(dataset, snapshot=snapshot)


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
