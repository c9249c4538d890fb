"""The files a read opens, hashed first: flipped bytes that still decode never reach a figure.

A Parquet part whose bytes were flipped may still decode (a flip inside a
value, a dictionary, a run length) and give a wrong figure with no error.
So every reader of a dataset's parts (the scans of ``store/scan.py``)
and of a decisions store's files (``store/decisions.py``) hands the files it
is about to open to :func:`first_damaged`, which checks each against what
its record says: there, its size, its checksum (the XXH3-128 parts carry
since reads check it, else the SHA-256). A file is hashed once a
process: its size and modification time are remembered with the digest, so
the next read of the same file (the report's second pass, a notebook's next
call) costs a ``stat``, and a file written again since is hashed again.

Only the files a read opens are hashed: a window's read
(:meth:`~ocp_analytics.store.scan.Dataset.within`) hashes the parts the
manifest chose, not the dataset. Files of records written before the
manifest kept a checksum cannot be checked this way (``verify`` checks their
footers). Measured cost: benchmarks/RESULTS.md, "Reads that hash".
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import xxhash

from ocp_analytics.store.damage import Damage, blame, damage_error
from ocp_analytics.store.manifest import PartEntry, record_entries
from ocp_analytics.store.storage import Store

__all__ = [
    "FLIPPED",
    "FLIPPED_XXH3",
    "PartCheck",
    "file_sha256",
    "first_damaged",
    "unhashed",
    "wrong_size",
]

FLIPPED = "its bytes differ from the manifest's SHA-256 (flipped or replaced)"
FLIPPED_XXH3 = "its bytes differ from the manifest's XXH3 (flipped or replaced)"
_BLOCK = 1 << 20  # bytes hashed at a time: memory stays flat whatever a file's size
_WORKERS = 4  # files hashed at once (hashing releases the GIL; remote reads wait)

# uri -> (size, mtime_ns, checksum) of each file hashed whole and found as its record says
_CHECKED: dict[str, tuple[int, int, str]] = {}
_HASHING: ContextVar[bool] = ContextVar("ocp_analytics_read_hashing", default=True)


@contextmanager
def unhashed() -> Iterator[None]:
    """Within it, reads open their files unchecked.

    For the Spark path: each task scans the whole dataset's parts lazily
    and reads only its ``doc_id`` range of them, so hashing what it scans
    would read every part once per worker (docs/dataset.md, "Integrity").
    """
    token = _HASHING.set(False)
    try:
        yield
    finally:
        _HASHING.reset(token)


def wrong_size(size: int, said: int) -> str:
    """The problem of a file whose size is not its record's."""
    return f"{size} bytes, the manifest says {said}"


def file_sha256(target: Store) -> str:
    """The SHA-256 of a file's bytes, in hex, read a block at a time.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> f = store(tempfile.mkdtemp()).child("a.bin")
    >>> f.write_bytes(b"abc")
    >>> file_sha256(f)[:16]
    'ba7816bf8f01cfea'
    """
    return _digest(target, hashlib.sha256())[0]


def _digest(target: Store, digest: Any) -> tuple[str, int]:
    """``digest`` (a hashlib or xxhash object) of a file's bytes in hex, and their count.

    Read a block at a time: memory stays flat whatever the file's size.
    Raises ``FileNotFoundError`` when the file is missing.
    """
    size = 0
    with target.open() if target.remote else target.path.open("rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _stamp(target: Store) -> tuple[int, int] | None:
    """A local file's size and modification time; ``None``: missing."""
    try:
        st = os.stat(target.path)
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def _problem(target: Store, entry: PartEntry) -> str | None:
    """What is wrong with a file, read whole once: missing, its size, its checksum.

    The entry's XXH3 when it has one (about 3x faster than SHA-256 here),
    else its SHA-256. In an object store, the one read that hashes tells
    the size and the absence too: a size or an existence is a request each,
    and thousands of parts would wait on thousands of them.
    """
    fast = entry.xxh3 is not None
    try:
        found, size = _digest(target, xxhash.xxh3_128() if fast else hashlib.sha256())
    except FileNotFoundError:
        return "missing"
    if entry.size is not None and size != entry.size:
        return wrong_size(size, entry.size)
    if found != _said(entry):
        return FLIPPED_XXH3 if fast else FLIPPED
    return None


def first_damaged(base: Store, entries: Sequence[PartEntry]) -> tuple[PartEntry, str] | None:
    """The first of ``entries`` (files under ``base``) that is not as its entry says, and why.

    Checked: the file exists, its size, its checksum (its XXH3, else its
    SHA-256; a local file is hashed unless this process hashed it at the
    same size and modification time, an object once a process). An entry
    with neither checksum is not checked.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> base = store(tempfile.mkdtemp())
    >>> base.child("a.bin").write_bytes(b"abc")
    >>> sha = file_sha256(base.child("a.bin"))
    >>> first_damaged(base, [PartEntry("a.bin", "runs", 3, None, sha)]) is None
    True
    >>> base.child("a.bin").write_bytes(b"abd")
    >>> first_damaged(base, [PartEntry("a.bin", "runs", 3, None, sha)])[1]
    "its bytes differ from the manifest's SHA-256 (flipped or replaced)"
    """
    if not _HASHING.get():
        return None
    todo: list[tuple[PartEntry, Store, tuple[int, int]]] = []
    for entry in entries:
        if entry.sha256 is None and entry.xxh3 is None:
            continue
        target = base.child(entry.file)
        if target.remote:  # objects are never rewritten in place: the key and digest suffice
            stamp = (entry.size or 0, 0)
        else:
            found = _stamp(target)
            if found is None:
                return entry, "missing"
            if entry.size is not None and found[0] != entry.size:
                return entry, wrong_size(found[0], entry.size)
            stamp = found
        if _CHECKED.get(target.uri) != (*stamp, _said(entry)):
            todo.append((entry, target, stamp))
    if not todo:
        return None
    with ThreadPoolExecutor(min(len(todo), _WORKERS), thread_name_prefix="ocp-hash") as pool:
        problems = list(pool.map(lambda t: _problem(t[1], t[0]), todo))
    for (entry, target, stamp), problem in zip(todo, problems, strict=True):
        if problem is not None:
            return entry, problem
        _CHECKED[target.uri] = (*stamp, _said(entry))
    return None


def _said(entry: PartEntry) -> str:
    """The checksum a file is checked against: its XXH3, else its SHA-256."""
    return entry.xxh3 or entry.sha256 or ""


class PartCheck:
    """Checks the parts of a dataset's commit records before a scan opens them.

    Called with the files (``TABLE/NAME.parquet``) a scan is about to read;
    raises the one-line :class:`~ocp_analytics.exceptions.DatasetError`
    every command ends with on a damaged part (the part, what is wrong, the
    batch and sources that wrote it, a hint to run ``verify``).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile, pathlib
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> part = next(pathlib.Path(out, "runs").glob("*.parquet"))
    >>> data = bytearray(part.read_bytes()); data[100] ^= 1; _ = part.write_bytes(bytes(data))
    >>> oa.scan_dataset(out).runs  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ocp_analytics.exceptions.DatasetError: ...: damaged part runs/00000001-...: its bytes differ ...
    """

    def __init__(
        self,
        root: Store,
        records: list[dict[str, Any]],
        parsed: list[list[PartEntry]] | None = None,
    ) -> None:
        self.root, self.records, self.parsed = root, records, parsed
        self._owners: dict[str, tuple[PartEntry, dict[str, Any]]] | None = None

    def _index(self) -> dict[str, tuple[PartEntry, dict[str, Any]]]:
        if self._owners is None:
            parsed = self.parsed or [record_entries(r) for r in self.records]
            self._owners = {
                e.file: (e, r) for r, es in zip(self.records, parsed, strict=True) for e in es
            }
        return self._owners

    def first(self, files: Sequence[str]) -> Damage | None:
        """The damage of the first of ``files`` whose bytes are not as the manifest says."""
        if not files:
            return None
        owners = self._index()
        found = first_damaged(self.root, [owners[f][0] for f in files if f in owners])
        if found is None:
            return None
        entry, problem = found
        record = owners[entry.file][1]
        wrote = blame(record, entry.file, f"{record.get('seq', '')}.json")
        return dataclasses.replace(wrote, problem=problem, table=entry.table)

    def __call__(self, files: Sequence[str]) -> None:
        """Raise on the first of ``files`` whose bytes are not as the manifest says."""
        damage = self.first(files)
        if damage is not None:
            raise damage_error(str(self.root), [damage])
