"""The bytes of a source, block by block, and its lines, found in place.

Compressed streams are decompressed block by block, so a stream cut short
keeps every complete document before the cut; what follows is one
``truncated`` problem naming the byte offset. A stream followed by bytes
that are not another member (``trailing_garbage``), corrupt data
(``corrupt``) and a file named ``.gz`` / ``.zst`` that is not compressed
(``not_compressed``) are problems too (:class:`ReadProblem`). Every problem
becomes one quarantine row, so it counts as one document read.

Lines: ``\\n``, ``\\r\\n`` and a lone ``\\r`` all end a line; a UTF-8 byte
order mark at the start is dropped. The whole lines of a block holding no
``\\r`` are found with ``bytes.find`` and left where they lie
(:class:`LineSpan`); other blocks are read a line at a time.
``tests/property/test_read_lines.py`` holds both paths to one plain rule.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import pyarrow as pa
import zstandard

from ocp_analytics.ingestion.sources import BLOCK, Digest, Source

BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
HEAD = 1024  # bytes of unread text kept in a problem's row


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


class _Reader(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


def _decompressed(f: _Reader, fmt: str, problems: list[ReadProblem]) -> Iterator[bytes]:
    """Decompress gzip members / zstd frames one after another, block by block."""
    read = f.read
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


def read_blocks(
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


class LineSpan(NamedTuple):
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


def read_lines(blocks: Iterator[bytes]) -> Iterator[Line]:
    """Lines of a byte stream, numbered from 1; ``\\n``, ``\\r\\n`` or ``\\r`` end one.

    A UTF-8 byte order mark at the start is dropped.
    """
    for item in read_line_spans(blocks, spans=False):
        assert not isinstance(item, LineSpan)
        yield item


def read_line_spans(blocks: Iterator[bytes], spans: bool = True) -> Iterator[Line | LineSpan]:
    """:func:`read_lines`, but the whole lines of a block come as one span where they can.

    A :class:`LineSpan` tells where its lines lie in the block (not copied). A
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
            yield LineSpan(data, starts, ends, n + 1)
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
