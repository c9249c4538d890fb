"""Find input sources and read them as chunks of document texts.

A source is a file (``.json``, ``.ndjson``, ``.jsonl``, each optionally
``.gz`` or ``.zst``), a folder (searched recursively for those), a glob
pattern, or ``-`` for standard input (spooled to a temporary file first, so
it can be hashed and re-read like any file).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import os
import shutil
import sys
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import zstandard

from ocp_analytics.exceptions import SourceError, hint
from ocp_analytics.tables import ChunkMeta

DOC_SUFFIXES = (".json", ".ndjson", ".jsonl")
COMPRESSED = (".gz", ".zst")
STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One input file: its display path, the file to read, size and hash."""

    path: str  # as shown in tables and the manifest ("-" for stdin)
    file: Path
    size: int
    sha256: str

    @property
    def kind(self) -> str:
        """``json`` or ``ndjson``, from the name without a compression suffix."""
        name = self.file.name.lower()
        for c in COMPRESSED:
            name = name.removesuffix(c)
        if self.path == STDIN:
            return "sniff"
        return "json" if name.endswith(".json") else "ndjson"


def _is_doc_file(p: Path) -> bool:
    name = p.name.lower()
    for c in COMPRESSED:
        name = name.removesuffix(c)
    return name.endswith(DOC_SUFFIXES)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _source(display: str, file: Path) -> Source:
    return Source(display, file, file.stat().st_size, _sha256(file))


def _spool_stdin() -> Path:
    fd, name = tempfile.mkstemp(prefix="ocp-stdin-", suffix=".ndjson")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return Path(name)


def find_sources(specs: Sequence[str | Path]) -> list[Source]:
    """Expand files, folders, globs and ``-`` into sources, in a stable order.

    Raises :class:`SourceError` for a path or pattern that matches nothing.
    """
    found: dict[str, Source] = {}
    for spec in specs:
        text = str(spec)
        if text == STDIN:
            found[STDIN] = _source(STDIN, _spool_stdin())
            continue
        p = Path(text)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and _is_doc_file(f))
        elif p.is_file():
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
            found.setdefault(str(f), _source(str(f), f))
    return list(found.values())


def _open(file: Path) -> Any:
    name = file.name.lower()
    if name.endswith(".gz"):
        return gzip.open(file, "rb")
    if name.endswith(".zst"):
        return zstandard.ZstdDecompressor().stream_reader(file.open("rb"), read_across_frames=True)
    with file.open("rb") as head:
        magic = head.read(4)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(file, "rb")
    if magic == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().stream_reader(file.open("rb"), read_across_frames=True)
    return file.open("rb")


_READ_ERRORS = (EOFError, OSError, zlib.error, zstandard.ZstdError)


@dataclass
class ReadProblem:
    """A source could not be read to its end (e.g. a truncated gzip stream)."""

    line: int
    message: str


class _Chunker:
    """Accumulate (text, line, index) triples into chunks of ``size``."""

    def __init__(self, source: Source, size: int) -> None:
        self.source, self.size = source, size
        self.texts: list[str] = []
        self.lines: list[int | None] = []
        self.indexes: list[int | None] = []
        self.unterminated: set[int] = set()

    def add(self, text: str, line: int | None, index: int | None, cut: bool = False) -> None:
        if cut:
            self.unterminated.add(len(self.texts))
        self.texts.append(text)
        self.lines.append(line)
        self.indexes.append(index)

    def full(self) -> bool:
        return len(self.texts) >= self.size

    def take(self) -> tuple[ChunkMeta, frozenset[int]]:
        meta = ChunkMeta(self.source.path, self.texts, self.lines, self.indexes)
        cut = frozenset(self.unterminated)
        self.texts, self.lines, self.indexes, self.unterminated = [], [], [], set()
        return meta, cut


Chunk = tuple[ChunkMeta, frozenset[int]]


def read_chunks(source: Source, size: int, problems: list[ReadProblem]) -> Iterator[Chunk]:
    """Yield chunks of document texts with their 1-based lines or array indexes.

    A read error (a truncated or corrupt compressed stream) stops the source
    where it happened; it is appended to ``problems`` with the line it hit.
    """
    chunker = _Chunker(source, size)
    kind = source.kind
    if kind == "sniff":
        kind = _sniff(source.file)
    reader = _read_json if kind == "json" else _read_ndjson
    yield from reader(source, chunker, problems)
    if chunker.texts:
        yield chunker.take()


def _sniff(file: Path) -> str:
    with _open(file) as f:
        head = f.read(4096).lstrip()
    if head[:1] == b"[":
        return "json"
    return "ndjson"


def _read_ndjson(source: Source, ch: _Chunker, problems: list[ReadProblem]) -> Iterator[Chunk]:
    line_no = 0
    try:
        with _open(source.file) as raw:
            for raw_line in io.BufferedReader(raw, 1 << 20):
                line_no += 1
                cut = not raw_line.endswith(b"\n")
                text = raw_line.decode("utf-8", errors="replace").strip()
                if text:
                    ch.add(text, line_no, None, cut)
                if ch.full():
                    yield ch.take()
    except _READ_ERRORS as exc:
        problems.append(
            ReadProblem(line_no + 1, f"source cannot be read past line {line_no}: {exc}")
        )


def _read_json(source: Source, ch: _Chunker, problems: list[ReadProblem]) -> Iterator[Chunk]:
    try:
        with _open(source.file) as raw:
            data = raw.read()
    except _READ_ERRORS as exc:
        problems.append(ReadProblem(1, f"source cannot be read: {exc}"))
        return
    text = data.decode("utf-8", errors="replace")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        # Not one JSON value: maybe NDJSON saved as .json; else the text as a
        # single document (quarantined by the decoder with a precise reason).
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines[:2]):
            yield from _read_ndjson(source, ch, problems)
            return
        ch.add(text.strip(), 1, None, cut=not text.rstrip().endswith(("}", "]")))
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            ch.add(orjson.dumps(item).decode(), None, i)
            if ch.full():
                yield ch.take()
    else:
        ch.add(text.strip(), 1, None)
