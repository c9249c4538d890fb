"""A source as chunks of document texts, each with its line or array index.

How each kind is read:

* ``.ndjson`` / ``.jsonl``: a document a line (lines found by ``read.py``,
  kept where they lie); blank lines are skipped, blanks around a text
  stripped.
* ``.json``: one document or an array of documents; when the file is not one
  JSON value, it is read as a stream of values (below). An empty or
  whitespace-only file is one quarantined ``empty_file`` entry.
* standard input: a stream of JSON values (NDJSON, concatenated
  pretty-printed documents, arrays), never split inside a value.

A chunk (:data:`Chunk`) is a :class:`~ocp_analytics.ingestion.spans.ChunkMeta`
and the positions whose text was cut short by the end of its source. Text
that is not valid UTF-8 is never replaced silently: it is kept with its bad
bytes (``ChunkMeta.raw``) and the decoder reports them.

:func:`read_chunks` gives the chunks of one source. An ingest reads its
sources through one :class:`Chunker`, so the texts of consecutive sources
share a chunk until it is full or the caller takes it (a folder of
one-document files costs about what one file of the same documents costs).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import orjson

from ocp_analytics.ingestion.read import (
    BOM,
    HEAD,
    LineSpan,
    ReadProblem,
    read_blocks,
    read_line_spans,
    read_lines,
)
from ocp_analytics.ingestion.sanitize import parse_json
from ocp_analytics.ingestion.sources import Digest, Source
from ocp_analytics.ingestion.spans import ChunkMeta, Spans

_BLANK = b" \t"  # stripped from both ends of an NDJSON line
_OWN_MAX = 1 << 30  # texts added one by one are copied into buffers of at most this


@dataclass
class Chunker:
    """Accumulate document texts into chunks of ``size``, from one source or several.

    Texts are kept where they lie (:class:`~ocp_analytics.ingestion.spans.Spans`):
    the lines of a :class:`~ocp_analytics.ingestion.read.LineSpan` in its
    buffer, texts added one by one copied into a buffer of the chunk's own.
    :meth:`read` adds a source's texts and yields each chunk that fills; what
    is left stays open for the next source until :meth:`take`. A chunk holds
    each source path once (``ChunkMeta.paths``), its texts consecutive.
    """

    size: int
    paths: list[str] = field(default_factory=list)
    source: array[int] = field(default_factory=lambda: array("i"))  # per text, in ``paths``
    added: int = 0  # texts of the source being read, in every chunk
    _path: str = ""  # the source being read
    _held: set[str] = field(default_factory=set)  # ``paths``, as a set
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

    def holds(self, path: str) -> bool:
        """Whether the open chunk holds texts of a source of this path."""
        return path in self._held

    def read(
        self, source: Source, problems: list[ReadProblem], digest: Digest | None = None
    ) -> Iterator[Chunk]:
        """Add the texts of ``source``; yield each chunk as it fills.

        The texts left when the source ends stay in the open chunk. Parts of
        the source that are no document text go to ``problems``, as
        :func:`read_chunks` says.
        """
        if self.holds(source.path):  # one path appears once in a chunk
            yield self.take()
        self._path, self.added = source.path, 0
        if source.error is not None:
            problems.append(
                ReadProblem("unreadable", f"the file cannot be read: {source.error}", line=1)
            )
            return
        readers = {"json": _read_json, "ndjson": _read_ndjson, "stream": _read_stream}
        yield from readers[source.kind](source, self, problems, digest)

    def _of_source(self, k: int) -> None:
        """Note ``k`` more texts of the source being read."""
        if self._path not in self._held:
            self._held.add(self._path)
            self.paths.append(self._path)
        self.source.extend(array("i", [len(self.paths) - 1]) * k)
        self.added += k

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
        self._of_source(1)
        self.which.append(self.own_at)
        self.starts.append(len(self.own))
        self.lengths.append(len(data))
        self.own += data
        self.lines.append(line)
        self.indexes.append(index)

    def add_span(self, span: LineSpan) -> Iterator[Chunk]:
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
            self._of_source(k)
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
            self.paths, spans.series(), self.lines, self.indexes, self.raw, spans, self.source
        )
        cut = frozenset(self.unterminated)
        self.lines, self.indexes, self.raw, self.buffers = [], [], {}, []
        self.which, self.starts, self.lengths = array("i"), array("i"), array("i")
        self.unterminated = set()
        self.paths, self.source, self._held = [], array("i"), set()
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
    chunker = Chunker(size)
    yield from chunker.read(source, problems, digest)
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
    source: Source, ch: Chunker, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[Chunk]:
    last = 0
    for item in read_line_spans(read_blocks(source, problems, digest)):
        if isinstance(item, LineSpan):
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
    source: Source, ch: Chunker, problems: list[ReadProblem], digest: Digest | None = None
) -> Iterator[Chunk]:
    data = b"".join(read_blocks(source, problems, digest)).removeprefix(BOM)
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
        if ch.full():  # the chunk may hold the texts of sources before this one
            yield ch.take()
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
    ch: Chunker,
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
        blocks = read_blocks(source, problems, digest)
    for n, raw_line, _ in read_lines(blocks):
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


def _emit(ch: Chunker, line: int, data: bytes, cut: bool) -> Iterator[Chunk]:
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


def _emit_value(ch: Chunker, line: int, data: bytes, cut: bool) -> Iterator[Chunk]:
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
    ch: Chunker, line: int, data: bytes, problems: list[ReadProblem]
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
