"""Find input sources and read them as chunks of document texts.

A source is a file (``.json``, ``.ndjson``, ``.jsonl``, each optionally
``.gz`` or ``.zst``), a folder (searched recursively for those; an empty
folder is no source at all, not an error), a glob pattern, an S3 or Azure
object or prefix (``s3://``, ``abfss://``; read literally), or ``-`` for
standard input (spooled to a temporary file first, so it can be hashed and
re-read like any file). Two spellings of one file (``a.ndjson``,
``./a.ndjson``, its absolute path) are one source.

How each kind is read:

* ``.ndjson`` / ``.jsonl``: a document a line. ``\\n``, ``\\r\\n`` and a lone
  ``\\r`` all end a line; a UTF-8 byte order mark at the start is dropped.
* ``.json``: one document or an array of documents; when the file is not one
  JSON value, it is read as a stream of values (below). An empty or
  whitespace-only file is one quarantined ``empty_file`` entry.
* standard input: a stream of JSON values (NDJSON, concatenated
  pretty-printed documents, arrays), never split inside a value.

Compressed streams are decompressed block by block, so a stream cut short
keeps every complete document before the cut; what follows is one
``truncated`` problem naming the byte offset. A stream followed by bytes
that are not another member (``trailing_garbage``), corrupt data
(``corrupt``) and a file named ``.gz`` / ``.zst`` that is not compressed
(``not_compressed``) are problems too. Every problem becomes one quarantine
row, so it counts as one document read.

Text that is not valid UTF-8 is never replaced silently: the line is read
with its bad bytes kept (``ChunkMeta.raw``) and the decoder reports them.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

import orjson
import pyarrow as pa
import zstandard

from ocp_analytics.exceptions import SourceError, hint
from ocp_analytics.ingestion.decode import parse_json
from ocp_analytics.ingestion.tables import ChunkMeta, Spans
from ocp_analytics.store.storage import Store, is_remote, store

DOC_SUFFIXES = (".json", ".ndjson", ".jsonl")
COMPRESSED = (".gz", ".zst")
STDIN = "-"
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BLOCK = 1 << 20
HEAD = 1024


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


def _source(display: str, file: Path) -> Source:
    """A source; a file that cannot be read is one too (it is reported, not fatal).

    Not hashed here: :attr:`Source.sha256` on first use, or while ingest reads it.
    """
    resolved = _text(STDIN if display == STDIN else str(file.resolve()))
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


def find_sources(specs: Sequence[str | Path]) -> list[Source]:
    """Expand files, folders, globs and ``-`` into sources, in a stable order.

    A folder holding no document file gives no source (an empty nightly
    drop is not an error). Raises :class:`SourceError` for a path or pattern
    that matches nothing.
    """
    found: dict[str, Source] = {}
    for spec in specs:
        text = str(spec)
        if text == STDIN:
            found[STDIN] = _source(STDIN, _spool_stdin())
            continue
        if is_remote(text):
            for src in _remote_sources(text):
                found.setdefault(src.resolved, src)
            continue
        p = Path(text)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and _is_doc_file(f))
            for f in files:
                found.setdefault(str(f.resolve()), _source(str(f), f))
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
        for f in files:
            found.setdefault(str(f.resolve()), _source(str(f), f))
    return list(found.values())


@dataclass
class ReadProblem:
    """Part of a source that is no document text (one quarantine row).

    ``line`` is the line (or, for an array, the element's line) where it
    starts, ``None`` until the reader knows it; ``head`` is the start of the
    unread text, if any.
    """

    code: str
    message: str
    line: int | None = None
    head: str = ""


# --- bytes: decompression -------------------------------------------------------


def _compression(file: Path, head: bytes) -> tuple[str | None, str | None]:
    """(format, format named by the file) from the name and the first bytes."""
    name = file.name.lower()
    named = "gzip" if name.endswith(".gz") else "zstd" if name.endswith(".zst") else None
    if head.startswith(GZIP_MAGIC):
        return "gzip", named
    if head.startswith(ZSTD_MAGIC):
        return "zstd", named
    return None, named


class _Member:
    """One gzip member or zstd frame being decompressed."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.d = (
            zlib.decompressobj(31)
            if fmt == "gzip"
            else zstandard.ZstdDecompressor().decompressobj(read_across_frames=False)
        )

    def feed(self, data: bytes) -> bytes:
        return self.d.decompress(data)

    @property
    def eof(self) -> bool:
        return bool(self.d.eof)

    @property
    def unused(self) -> bytes:
        return bytes(self.d.unused_data)


def _decompressed(f: object, fmt: str, problems: list[ReadProblem]) -> Iterator[bytes]:
    """Decompress gzip members / zstd frames one after another, block by block."""
    read = f.read  # type: ignore[attr-defined]
    magic = GZIP_MAGIC if fmt == "gzip" else ZSTD_MAGIC
    member: _Member | None = _Member(fmt)
    offset = 0  # compressed bytes consumed
    out = 0  # decompressed bytes produced
    pending = b""
    while True:
        data = pending or read(BLOCK)
        pending = b""
        if not data:
            break
        if member is None:  # between members: another member, zero padding, or junk
            if not data.strip(b"\x00"):
                offset += len(data)
                continue
            if len(data) < len(magic) and magic.startswith(data):
                more = read(BLOCK)
                if more:
                    pending = data + more
                    continue
            if not data.startswith(magic):
                problems.append(
                    ReadProblem(
                        "trailing_garbage",
                        f"bytes from offset {offset} of the file follow the end of the "
                        f"{fmt} stream and are not {fmt} data; they are not read",
                        head=data[:HEAD].decode("utf-8", "replace"),
                    )
                )
                return
            member = _Member(fmt)
        try:
            block = member.feed(data)
        except (zlib.error, zstandard.ZstdError) as exc:
            problems.append(
                ReadProblem(
                    "corrupt",
                    f"the {fmt} stream is corrupt near byte {offset} of the file "
                    f"(decompressed byte {out}): {exc}; nothing after it is read",
                )
            )
            return
        out += len(block)
        if block:
            yield block
        if member.eof:
            rest = member.unused
            offset += len(data) - len(rest)
            member, pending = None, rest
        else:
            offset += len(data)
    if member is not None and offset:
        problems.append(
            ReadProblem(
                "truncated",
                f"the {fmt} stream ends at byte {offset} of the file (decompressed byte "
                f"{out}) before its end marker; the documents after the cut are lost",
            )
        )


def _blocks(
    source: Source, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[bytes]:
    """The bytes of a source, decompressed, block by block.

    A stream problem stops the source where it happened and is appended to
    ``problems`` once every block before it was yielded. ``digest`` hashes
    the file's bytes as they are read.
    """
    try:
        with source.open() as raw:
            f = raw if digest is None else digest.wrap(raw)
            head = f.read(4)
            fmt, named = _compression(source.file, head)
            if named is not None and fmt != named:
                problems.append(
                    ReadProblem(
                        "not_compressed",
                        f"the file is named as {named} data but does not start with the "
                        f"{named} magic bytes (starts with {head!r}); nothing is read. "
                        "Rename it without the compression suffix, or compress it",
                        head=(head + f.read(HEAD)).decode("utf-8", "replace"),
                    )
                )
                return
            f.seek(0)
            if fmt is None:
                yield from iter(lambda: f.read(BLOCK), b"")
            else:
                yield from _decompressed(f, fmt, problems)
    except OSError as exc:  # (decompression errors are caught where they happen)
        problems.append(ReadProblem("unreadable", f"the file cannot be read: {exc}"))


# --- lines -------------------------------------------------------------------------

Line = tuple[int, bytes, bool]  # 1-based number, bytes without terminator, terminated


class _Span(NamedTuple):
    """Whole lines of one buffer, each ended by ``\\n``: no ``\\r``, valid UTF-8."""

    data: bytes
    starts: list[int]  # where each line starts
    ends: list[int]  # where it ends (its ``\\n``)
    first: int  # the number of the first line


# A span's offsets are 32-bit (Arrow's string views): longer buffers are read a line at a time.
_SPAN_MAX = 2**31 - 1


def _split_cr(data: bytes) -> list[bytes]:
    """Split on CR as well, for CR-only line endings (a CRLF's CR is dropped).

    A CR at the very end of ``data`` ends a line of its own (no LF follows it here).
    """
    out: list[bytes] = []
    parts = data.split(b"\n")
    for i, part in enumerate(parts):
        if i < len(parts) - 1 and part.endswith(b"\r"):
            part = part[:-1]
        out += part.split(b"\r") if b"\r" in part else [part]
    return out


def _line_ends(data: bytes, last: int) -> tuple[list[int], list[int]]:
    """Where each line of ``data[: last + 1]`` starts and ends (``data[last]`` is ``\\n``)."""
    starts: list[int] = []
    ends: list[int] = []
    find = data.find
    at = 0
    while at <= last:
        end = find(b"\n", at, last + 1)
        starts.append(at)
        ends.append(end)
        at = end + 1
    return starts, ends


def _lines(blocks: Iterator[bytes]) -> Iterator[Line]:
    """Lines of a byte stream, numbered from 1; ``\\n``, ``\\r\\n`` or ``\\r`` end one.

    A UTF-8 byte order mark at the start is dropped.
    """
    for item in _line_spans(blocks, spans=False):
        assert not isinstance(item, _Span)
        yield item


def _line_spans(blocks: Iterator[bytes], spans: bool = True) -> Iterator[Line | _Span]:
    """:func:`_lines`, but the whole lines of a block come as one span where they can.

    A :class:`_Span` tells where its lines lie in the block (not copied). A
    block holding a ``\\r``, or bytes that are not UTF-8 (checked by Arrow:
    a view of them would be undefined), is read line by line.
    """
    rest = b""
    n = 0
    first = True
    for block in blocks:
        data = rest + block if rest else block
        if first:
            if len(data) < len(BOM) and BOM.startswith(data):
                rest = data
                continue
            data = data.removeprefix(BOM)
            first = False
        if b"\r" in data:
            # A CR at the very end may be the first half of a CRLF: keep it.
            keep = data.endswith(b"\r")
            parts = _split_cr(data[:-1] if keep else data)
            rest = parts.pop() + (b"\r" if keep else b"")
        elif (
            spans
            and 0 <= (last := data.rfind(b"\n")) < _SPAN_MAX
            and (data.isascii() or _is_utf8(data, last))
        ):
            starts, ends = _line_ends(data, last)
            yield _Span(data, starts, ends, n + 1)
            n += len(ends)
            rest = data[last + 1 :]
            continue
        else:
            parts = data.split(b"\n")
            rest = parts.pop()
        for p in parts:
            n += 1
            yield n, p, True
    if first:
        rest = rest.removeprefix(BOM)
    if rest.endswith(b"\r"):
        for p in _split_cr(rest[:-1]):
            n += 1
            yield n, p, True
    elif rest:
        parts = _split_cr(rest)
        for p in parts[:-1]:
            n += 1
            yield n, p, True
        yield n + 1, parts[-1], False


def _is_utf8(data: bytes, end: int) -> bool:
    """Whether ``data[:end]`` is valid UTF-8 (checked by Arrow, without a copy)."""
    offsets = pa.py_buffer(array("q", [0, end]))
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


# --- chunks ------------------------------------------------------------------------

_BLANK = b" \t"  # stripped from both ends of an NDJSON line
_OWN_MAX = 1 << 30  # texts added one by one are copied into buffers of at most this


@dataclass
class _Chunker:
    """Accumulate document texts into chunks of ``size``.

    Texts are kept where they lie (:class:`~ocp_analytics.ingestion.tables.Spans`): the
    lines of a :class:`_Span` in its buffer, texts added one by one copied
    into a buffer of the chunk's own.
    """

    source: Source
    size: int
    lines: list[int | None] = field(default_factory=list)
    indexes: list[int | None] = field(default_factory=list)
    raw: dict[int, str] = field(default_factory=dict)
    unterminated: set[int] = field(default_factory=set)
    buffers: list[bytes] = field(default_factory=list)
    which: array[int] = field(default_factory=lambda: array("i"))
    starts: array[int] = field(default_factory=lambda: array("i"))
    lengths: array[int] = field(default_factory=lambda: array("i"))
    own: bytearray = field(default_factory=bytearray)
    own_at: int = -1  # the index of ``own`` in ``buffers`` (-1: none yet)

    def __len__(self) -> int:
        return len(self.lengths)

    def add(self, data: bytes, line: int | None, index: int | None, cut: bool = False) -> None:
        """Add one document's bytes; bytes that are not UTF-8 are kept in ``raw``."""
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.raw[len(self)] = data.decode("utf-8", "surrogateescape")
            data = data.decode("utf-8", "replace").encode()
        if self.own_at < 0 or len(self.own) + len(data) > _OWN_MAX:
            self._seal()
            self.own_at = len(self.buffers)
            self.buffers.append(b"")
        if cut:
            self.unterminated.add(len(self))
        self.which.append(self.own_at)
        self.starts.append(len(self.own))
        self.lengths.append(len(data))
        self.own += data
        self.lines.append(line)
        self.indexes.append(index)

    def add_span(self, span: _Span) -> Iterator[Chunk]:
        """Add the lines of a span (stripped; blank ones skipped); yield chunks as they fill."""
        data, starts, ends, first = span
        numbers: Sequence[int] = range(first, first + len(starts))
        odd = [
            i
            for i, (s, e) in enumerate(zip(starts, ends, strict=True))
            if s == e or data[s] in _BLANK or data[e - 1] in _BLANK
        ]
        if odd:
            starts, ends, numbers = _stripped(data, starts, ends, first, odd)
        lengths = [e - s for s, e in zip(starts, ends, strict=True)]
        at, total = 0, len(starts)
        while at < total:
            k = min(total - at, self.size - len(self))
            self.which.extend(array("i", [len(self.buffers)]) * k)
            self.buffers.append(data)
            self.starts.extend(array("i", starts[at : at + k]))
            self.lengths.extend(array("i", lengths[at : at + k]))
            self.lines.extend(numbers[at : at + k])
            self.indexes.extend([None] * k)
            at += k
            if self.full():
                yield self.take()

    def _seal(self) -> None:
        """Hand the texts added one by one to ``buffers`` as bytes."""
        if self.own_at >= 0:
            self.buffers[self.own_at] = bytes(self.own)
            self.own = bytearray()
            self.own_at = -1

    def full(self) -> bool:
        return len(self) >= self.size

    def take(self) -> Chunk:
        self._seal()
        spans = Spans(self.buffers, self.which, self.starts, self.lengths)
        meta = ChunkMeta(
            self.source.path, spans.series(), self.lines, self.indexes, self.raw, spans
        )
        cut = frozenset(self.unterminated)
        self.lines, self.indexes, self.raw, self.buffers = [], [], {}, []
        self.which, self.starts, self.lengths = array("i"), array("i"), array("i")
        self.unterminated = set()
        return meta, cut


def _stripped(
    data: bytes, starts: list[int], ends: list[int], first: int, odd: list[int]
) -> tuple[list[int], list[int], list[int]]:
    """Lines ``odd`` stripped of blanks, the blank ones left out: starts, ends, numbers."""
    starts, ends = list(starts), list(ends)
    blank = set()
    for i in odd:
        line = data[starts[i] : ends[i]]
        text = line.strip(_BLANK)
        if not text:
            blank.add(i)
            continue
        starts[i] += len(line) - len(line.lstrip(_BLANK))
        ends[i] = starts[i] + len(text)
    keep = [i for i in range(len(starts)) if i not in blank]
    return [starts[i] for i in keep], [ends[i] for i in keep], [first + i for i in keep]


Chunk = tuple[ChunkMeta, frozenset[int]]


def read_chunks(
    source: Source, size: int, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[Chunk]:
    """Yield chunks of document texts with their 1-based lines or array indexes.

    Parts of the source that are no document text (a stream cut short, an
    empty ``.json`` file, …) are appended to ``problems``, each with its
    code, message and line; each is one quarantine row. ``digest`` hashes
    the file's bytes on the way (see :class:`Digest`).
    """
    chunker = _Chunker(source, size)
    if source.error is not None:
        problems.append(
            ReadProblem("unreadable", f"the file cannot be read: {source.error}", line=1)
        )
        return
    readers = {"json": _read_json, "ndjson": _read_ndjson, "stream": _read_stream}
    yield from readers[source.kind](source, chunker, problems, digest)
    if len(chunker):
        yield chunker.take()


def _stream_cut(problems: list[ReadProblem]) -> ReadProblem | None:
    return next((p for p in problems if p.code == "truncated"), None)


def _fold_tail(problems: list[ReadProblem], line: int, data: bytes) -> None:
    """Put the unfinished text before a cut into the cut's problem row."""
    cut = _stream_cut(problems)
    assert cut is not None
    cut.line = line
    cut.head = data[:HEAD].decode("utf-8", "replace")
    cut.message += f"; line {line} is incomplete"


def _number_problems(problems: list[ReadProblem], next_line: int) -> None:
    for p in problems:
        if p.line is None:
            p.line = next_line


def _read_ndjson(
    source: Source, ch: _Chunker, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[Chunk]:
    last = 0
    for item in _line_spans(_blocks(source, problems, digest)):
        if isinstance(item, _Span):
            last = item.first + len(item.ends) - 1
            yield from ch.add_span(item)
            continue
        n, data, terminated = item
        last = n
        data = data.strip(_BLANK)
        if not data:
            continue
        if not terminated and _stream_cut(problems) is not None and not _parses(data):
            _fold_tail(problems, n, data)
            continue
        ch.add(data, n, None, cut=not terminated)
        if ch.full():
            yield ch.take()
    _number_problems(problems, last + 1)


def _parses(data: bytes) -> bool:
    """Whether a text is a whole JSON value (as the decoder's slow path reads it)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            parse_json(data.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            return False
    return True


def _read_json(
    source: Source, ch: _Chunker, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[Chunk]:
    data = b"".join(_blocks(source, problems, digest)).removeprefix(BOM)
    if not data.strip() and not problems:
        problems.append(
            ReadProblem(
                "empty_file",
                "the file is empty or holds only whitespace; expected a JSON document "
                "or an array of documents",
                line=1,
            )
        )
        return
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        # Not one JSON value (several values, NDJSON saved as .json, a value
        # cut short, invalid UTF-8): read it as a stream of values.
        yield from _read_stream(source, ch, problems, blocks=iter([data]))
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            ch.add(orjson.dumps(item), 1, i)
            if ch.full():
                yield ch.take()
    else:
        ch.add(data.strip(), 1, None)
    _number_problems(problems, 1)


# --- a stream of JSON values --------------------------------------------------------

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _depth(data: bytes) -> int:
    """Brackets opened minus closed on a line, strings left out."""
    s = _STRING.sub(b"", data) if b'"' in data else data
    return s.count(b"{") + s.count(b"[") - s.count(b"}") - s.count(b"]")


def _starts_document(first: bytes, raw_line: bytes, data: bytes) -> bool:
    """Inside an object begun on line ``first``: a whole value at column 0 (a new document).

    No member of an object can start with a bracket, so such a line means the
    object never closed. Inside an array it may be an element.
    """
    return (
        first[:1] == b"{"
        and raw_line[:1] in (b"{", b"[")
        and not data.endswith(b",")
        and _depth(data) == 0
    )


def _read_stream(
    source: Source,
    ch: _Chunker,
    problems: list[ReadProblem],
    digest: Digest | None = None,
    blocks: Iterator[bytes] | None = None,
) -> Iterator[Chunk]:
    """Read consecutive JSON values, one or many lines each (standard input).

    A value is complete when its brackets balance. A value that never closes
    ends at the next line that is a whole document at column 0, or at the end
    of the source (then it is cut: ``truncated``). A top-level array gives
    its elements.
    """
    buf: list[bytes] = []
    depth = start = last = 0
    if blocks is None:
        blocks = _blocks(source, problems, digest)
    for n, raw_line, _ in _lines(blocks):
        last = n
        data = raw_line.strip(b" \t")
        if buf and data and _starts_document(buf[0], raw_line, data):
            yield from _emit(ch, start, b"\n".join(buf), cut=False)
            buf = []
        if not buf:
            if not data:
                continue
            d = _depth(data)
            if d <= 0:
                yield from _emit(ch, n, data, cut=False)
                continue
            buf, depth, start = [data], d, n
            continue
        buf.append(raw_line)
        depth += _depth(data)
        if depth <= 0:
            yield from _emit(ch, start, b"\n".join(buf), cut=False)
            buf = []
    if buf:
        text = b"\n".join(buf)
        if _stream_cut(problems) is not None:
            yield from _emit_array_head(ch, start, text, problems)
        else:
            yield from _emit(ch, start, text, cut=True)
    _number_problems(problems, last + 1)


_BOUNDARY = re.compile(rb"[}\]][ \t\r\n]*[{\[]")


def _emit(ch: _Chunker, line: int, data: bytes, cut: bool) -> Iterator[Chunk]:
    """Add one complete-looking value; values back to back (``}{``) are split."""
    if _BOUNDARY.search(_STRING.sub(b"", data) if b'"' in data else data):
        pieces = _split_values(data)
        if len(pieces) > 1:
            for offset, piece in pieces:
                yield from _emit_value(ch, line + offset, piece, cut and piece is pieces[-1][1])
            return
    yield from _emit_value(ch, line, data, cut)


def _split_values(data: bytes) -> list[tuple[int, bytes]]:
    """JSON values written back to back: (lines after the first, text) each.

    What cannot be read as a value is the last piece, as it is.
    """
    import json

    text = data.decode("utf-8", "surrogateescape")
    dec = json.JSONDecoder()
    ws = re.compile(r"[ \t\r\n]*")
    out: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(text):
        try:
            _, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            end = len(text)
        piece = text[pos:end].encode("utf-8", "surrogateescape")
        out.append((text.count("\n", 0, pos), piece))
        pos = ws.match(text, end).end()  # type: ignore[union-attr]
    return out


def _emit_value(ch: _Chunker, line: int, data: bytes, cut: bool) -> Iterator[Chunk]:
    """Add one value; an array gives its elements.

    An array orjson cannot read (an element with a lone surrogate, bytes that
    are not UTF-8, a number beyond a float, or no closing bracket) is cut into
    its elements' own bytes, so each element lands on its own; what follows
    the last readable element is one more text.
    """
    texts: list[bytes] | None = None
    rest = b""
    if data[:1] == b"[":
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            texts, rest = _whole_elements(data)
        else:
            if isinstance(value, list):
                texts = [orjson.dumps(item) for item in value]
    if texts is None:
        ch.add(data, line, None, cut=cut)
        if ch.full():
            yield ch.take()
        return
    for i, item in enumerate(texts):
        ch.add(item, line, i)
        if ch.full():
            yield ch.take()
    if rest.strip() not in (b"]", b""):
        ch.add(rest.strip(), line, len(texts), cut=cut)
        if ch.full():
            yield ch.take()


def _emit_array_head(
    ch: _Chunker, line: int, data: bytes, problems: list[ReadProblem]
) -> Iterator[Chunk]:
    """A value cut by the end of a compressed stream: keep an array's whole elements."""
    elements: list[bytes] = []
    if data[:1] == b"[":
        elements, data = _whole_elements(data)
    for i, item in enumerate(elements):
        ch.add(item, line, i)
        if ch.full():
            yield ch.take()
    _fold_tail(problems, line, data)


def _whole_elements(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete elements at the start of a cut array, and the rest."""
    import json

    text = data.decode("utf-8", "surrogateescape")
    dec = json.JSONDecoder()
    ws = re.compile(r"[ \t\r\n]*")
    pos = ws.match(text, 1).end()  # type: ignore[union-attr]
    out: list[bytes] = []
    while pos < len(text):
        try:
            _, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        out.append(text[pos:end].encode("utf-8", "surrogateescape"))
        pos = ws.match(text, end).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != ",":
            break
        pos = ws.match(text, pos + 1).end()  # type: ignore[union-attr]
    return out, text[pos:].encode("utf-8", "surrogateescape")
