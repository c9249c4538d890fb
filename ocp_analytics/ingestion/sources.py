"""Find input sources and open them: what to read, and the key that skips a re-read.

A source is a file (``.json``, ``.ndjson``, ``.jsonl``, each optionally
``.gz`` or ``.zst``), a folder (searched recursively for those; an empty
folder is no source at all, not an error), a glob pattern, an S3 or Azure
object or prefix (``s3://``, ``abfss://``; read literally), or ``-`` for
standard input (spooled to a temporary file first, so it can be hashed and
re-read like any file). Two spellings of one file (``a.ndjson``,
``./a.ndjson``, its absolute path) are one source.

A source is keyed by its resolved path and the SHA-256 of its bytes
(:attr:`Source.sha256`, or :class:`Digest` while an ingest reads it).
Reading its bytes and lines is ``read.py``; its document texts, ``chunks.py``.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ocp_analytics.exceptions import SourceError, hint
from ocp_analytics.store.storage import Store, is_remote, store

DOC_SUFFIXES = (".json", ".ndjson", ".jsonl")
COMPRESSED = (".gz", ".zst")
STDIN = "-"
BLOCK = 1 << 20  # bytes read at a time, to hash or to decompress and split


@dataclass(frozen=True)
class Source:
    """One input file: its display path, the file to read, size and hash.

    ``digest``: the SHA-256 of its bytes when already known. Otherwise
    :attr:`sha256` reads the file for it on first use; an ingest learns it
    while reading the file instead (:class:`Digest`), so a new file is read
    once, not twice.
    """

    path: str  # as shown in tables and the manifest ("-" for stdin)
    file: Path
    size: int
    digest: str | None = None
    resolved: str = ""  # the absolute, resolved path ("-" for stdin): re-ingest key
    error: str | None = None  # why the file cannot be read (one ``unreadable`` row)
    remote: Store | None = None  # the object, for a source in a store (``file``: its key)

    def open(self) -> IO[bytes]:
        """The source's raw bytes (a local file or an object)."""
        return self.remote.open() if self.remote is not None else self.file.open("rb")

    @functools.cached_property
    def sha256(self) -> str:
        """The SHA-256 of the source's bytes, hex ("" for a source that cannot be read).

        A file that cannot be read now (gone, or no longer readable, since it
        was found) has no hash: its read reports it (``unreadable``).
        """
        if self.digest is not None:
            return self.digest
        if self.error is not None:
            return ""
        try:
            return _sha256(self.remote if self.remote is not None else self.file)
        except OSError:
            return ""

    @property
    def kind(self) -> str:
        """``json``, ``ndjson`` or ``stream`` (standard input)."""
        if self.path == STDIN:
            return "stream"
        name = self.file.name.lower()
        for c in COMPRESSED:
            name = name.removesuffix(c)
        return "json" if name.endswith(".json") else "ndjson"


class Digest:
    """The SHA-256 of a source, taken from the bytes as a read passes them.

    Valid only when the read went from the first byte to the end of the
    file; otherwise (a read stopped by a problem) :meth:`hexdigest` hashes
    the file again, as :attr:`Source.sha256` would.

    Examples
    --------
    >>> import io
    >>> d = Digest()
    >>> f = d.wrap(io.BytesIO(b"abc"))
    >>> f.read(2) + f.read() + f.read()
    b'abc'
    >>> d.hexdigest(Source("-", Path("-"), 3))[:16]
    'ba7816bf8f01cfea'
    """

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Forget the bytes seen: the file is read again from its start."""
        self._h = hashlib.sha256()
        self._read = 0
        self._ended = False

    def wrap(self, f: IO[bytes]) -> _Hashing:
        """``f`` read through this digest, from its start."""
        self.restart()
        return _Hashing(f, self)

    def _add(self, data: bytes, asked: int) -> None:
        self._h.update(data)
        self._read += len(data)
        if not data and asked != 0:
            self._ended = True

    def hexdigest(self, source: Source) -> str:
        """The source's hash: the bytes read when the read covered the file, else read again."""
        if self._ended and self._read == source.size:
            return self._h.hexdigest()
        return source.sha256


class _Hashing:
    """A binary file whose reads pass through a :class:`Digest` (``seek(0)`` starts over)."""

    def __init__(self, f: IO[bytes], digest: Digest) -> None:
        self._f, self._d = f, digest

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._d._add(data, n)
        return data

    def seek(self, pos: int) -> None:
        if pos != 0:
            raise ValueError("a hashed read can only start over")
        self._f.seek(0)
        self._d.restart()


def _is_doc_file(p: Path) -> bool:
    name = p.name.lower()
    for c in COMPRESSED:
        name = name.removesuffix(c)
    return name.endswith(DOC_SUFFIXES)


def _sha256(path: Path | Store) -> str:
    h = hashlib.sha256()
    with path.open("rb") if isinstance(path, Path) else path.open() as f:
        for block in iter(lambda: f.read(BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _text(path: str) -> str:
    r"""A path as text for tables and the manifest.

    Bytes of a file name that are not UTF-8 are shown as ``\xNN`` escapes,
    never dropped or replaced.

    Examples
    --------
    >>> _text("runs/caf\udce9.ndjson")
    'runs/caf\\xe9.ndjson'
    """
    try:
        path.encode()
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return path


def _readable_size(file: Path) -> int:
    """The file's size, once it opened for reading (a permission problem raises here)."""
    with file.open("rb"):
        return file.stat().st_size


def _source(display: str, file: Path, resolved: str) -> Source:
    """A source; a file that cannot be read is one too (it is reported, not fatal).

    ``resolved``: the file's absolute, resolved path. Not hashed here:
    :attr:`Source.sha256` on first use, or while ingest reads it.
    """
    resolved = _text(resolved)
    try:
        return Source(_text(display), file, _readable_size(file), None, resolved)
    except OSError as exc:
        return Source(_text(display), file, 0, "", resolved, f"{type(exc).__name__}: {exc}")


def _remote_source(obj: Store) -> Source:
    """A source in an object store: shown and keyed by its URI."""
    try:
        return Source(obj.uri, Path(obj.fs_path), obj.size(), None, obj.uri, None, obj)
    except OSError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return Source(obj.uri, Path(obj.fs_path), 0, "", obj.uri, error, obj)


def _remote_sources(text: str) -> list[Source]:
    """The document files of an object or prefix (literal: no patterns)."""
    where = store(text)
    if where.is_file():
        return [_remote_source(where)]
    if where.is_dir():
        return [_remote_source(f) for f in where.files() if _is_doc_file(Path(f.fs_path))]
    raise SourceError(
        hint(
            f"source {text!r} matches no object.",
            "give an object or a prefix holding .json/.ndjson/.jsonl objects (optionally "
            ".gz or .zst); in a store a path is literal, never a pattern.",
        )
    )


def _spool_stdin() -> Path:
    fd, name = tempfile.mkstemp(prefix="ocp-stdin-", suffix=".ndjson")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return Path(name)


def find_sources(specs: str | Path | Sequence[str | Path]) -> list[Source]:
    """Expand files, folders, globs and ``-`` into sources, in a stable order.

    ``specs``: one source or several. A folder holding no document file gives
    no source (an empty nightly drop is not an error). Raises
    :class:`SourceError` for a path or pattern that matches nothing.

    Examples
    --------
    >>> [s.path for s in find_sources("tests/data/examples/v0.3/s*.json")]
    ['tests/data/examples/v0.3/solo.ocp.json', 'tests/data/examples/v0.3/swarm.ocp.json']
    """
    found: dict[str, Source] = {}
    for spec in [specs] if isinstance(specs, str | Path) else specs:
        text = str(spec)
        if text == STDIN:
            found[STDIN] = _source(STDIN, _spool_stdin(), STDIN)
            continue
        if is_remote(text):
            for src in _remote_sources(text):
                found.setdefault(src.resolved, src)
            continue
        p = Path(text)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and _is_doc_file(f))
            _add_files(found, files)
            continue
        if p.is_file():
            files = [p]
        elif glob.has_magic(text):
            files = sorted(Path(f) for f in glob.glob(text, recursive=True) if Path(f).is_file())
        else:
            files = []
        if not files:
            raise SourceError(
                hint(
                    f"source {text!r} matches no file.",
                    "give a file, a folder of .json/.ndjson/.jsonl files (optionally "
                    ".gz or .zst), a glob pattern in quotes, or - for standard input.",
                )
            )
        _add_files(found, files)
    return list(found.values())


def _add_files(found: dict[str, Source], files: list[Path]) -> None:
    """Add each file not found yet as a source, keyed by its resolved path."""
    folders: dict[Path, str] = {}
    for f in files:
        resolved = _resolved(f, folders)
        if resolved not in found:
            found[resolved] = _source(str(f), f, resolved)


def _resolved(file: Path, folders: dict[Path, str]) -> str:
    """``str(file.resolve())``, each folder resolved once (``folders``).

    A file that is no symbolic link resolves to its name in its folder's
    resolved path; resolving every component of every file's path was most
    of the time an ingest took to find a folder of many small files.
    """
    if file.is_symlink():
        return str(file.resolve())
    folder = folders.get(file.parent)
    if folder is None:
        folder = folders[file.parent] = str(file.parent.resolve())
    return os.path.join(folder, file.name)
