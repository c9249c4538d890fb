"""Where the texts of a chunk lie: :class:`Spans`, :class:`ChunkMeta`.

The texts a reader finds are never copied out of the blocks they were read
from: :class:`Spans` says where each lies and views them as one polars
string column (Arrow string views, :meth:`Spans.series`). :class:`ChunkMeta`
holds a chunk's texts (those views, or a list for documents held in memory),
where each came from (source, line, array index) and the texts that were not
UTF-8; ``doc_sha256`` hashes the bytes as read, in place. The texts of
several small sources share a chunk, so the source is kept per text.
"""

from __future__ import annotations

import hashlib
import struct
from array import array
from dataclasses import dataclass, field
from typing import NamedTuple

import polars as pl
import pyarrow as pa


class Spans(NamedTuple):
    """Where the texts of a chunk lie in the bytes they were read from.

    Text ``i`` is ``buffers[which[i]][starts[i]:starts[i] + lengths[i]]``:
    valid UTF-8, never copied (:meth:`series` views it in place). Every
    buffer is shorter than 2 GiB (Arrow's string views hold 32-bit offsets).
    """

    buffers: list[bytes]
    which: array[int]
    starts: array[int]
    lengths: array[int]

    def data(self, pos: int) -> memoryview:
        """The bytes of text ``pos``, in place."""
        start = self.starts[pos]
        return memoryview(self.buffers[self.which[pos]])[start : start + self.lengths[pos]]

    def sha256(self, positions: list[int]) -> list[str]:
        """SHA-256 of the texts at ``positions``, hex (one view of each buffer, no copy)."""
        sha = hashlib.sha256
        views = [memoryview(b) for b in self.buffers]
        which, starts, lengths = self.which, self.starts, self.lengths
        return [
            sha(views[which[p]][starts[p] : starts[p] + lengths[p]]).hexdigest() for p in positions
        ]

    def series(self) -> pl.Series:
        """The texts as a polars string column viewing the buffers (no copy).

        An Arrow string view is 16 bytes: the length, then the text itself
        when it is at most 12 bytes, else its first 4 bytes, its buffer and
        its offset.
        """
        n = len(self.starts)
        views = array("i", bytes(16 * n))
        views[0::4] = self.lengths
        views[2::4] = self.which
        views[3::4] = self.starts
        prefix = _PREFIX.unpack_from
        bufs = self.buffers
        views[1::4] = array(
            "i",
            [
                prefix(bufs[b], s)[0] if length > 12 else 0
                for b, s, length in zip(self.which, self.starts, self.lengths, strict=True)
            ],
        )
        for i, length in enumerate(self.lengths):
            if length <= 12:  # inline: the text itself, padded with zeros
                start = self.starts[i]
                text = bufs[self.which[i]][start : start + length].ljust(12, b"\0")
                views[4 * i + 1 : 4 * i + 4] = array("i", text)
        arrays = [pa.py_buffer(b) for b in bufs]
        column = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), *arrays])
        series = pl.from_arrow(column)
        assert isinstance(series, pl.Series)
        return series.alias("t")


# A view's prefix is the text's first 4 bytes as they lie in memory: read and
# written back in the machine's own byte order (``array("i")`` is native too).
_PREFIX = struct.Struct("=i")


@dataclass
class ChunkMeta:
    """Where the texts of one chunk came from.

    ``texts``: one per document, as read (a polars column viewing the
    reader's buffers, see ``spans``, or a list). ``paths``: the sources of
    the texts, in read order, each once; ``source``: the index in ``paths``
    of each text's source (``None``: every text is of ``paths[0]``).
    """

    paths: list[str]
    texts: pl.Series | list[str]
    lines: list[int | None]
    indexes: list[int | None]
    # Texts that are not valid UTF-8, by position, read with their bad bytes
    # kept as surrogate escapes (``texts`` holds a display copy).
    raw: dict[int, str] = field(default_factory=dict)
    spans: Spans | None = None
    source: array[int] | None = None

    def path(self, pos: int) -> str:
        """The source path of the text at ``pos``."""
        return self.paths[0 if self.source is None else self.source[pos]]

    def source_paths(self, positions: list[int]) -> pl.Series:
        """The source paths of the texts at ``positions``: a ``source_path`` column."""
        if self.source is None or len(self.paths) == 1:
            return pl.repeat(self.paths[0], len(positions), dtype=pl.String, eager=True).alias(
                "source_path"
            )
        at = [self.source[p] for p in positions]
        return pl.Series("source_path", self.paths, dtype=pl.String).gather(at)

    def data(self, pos: int) -> bytes:
        """The bytes of the text at ``pos`` as read (what ``doc_sha256`` hashes)."""
        return bytes(self._bytes(pos))

    def _bytes(self, pos: int) -> bytes | memoryview:
        if pos in self.raw:
            return self.raw[pos].encode("utf-8", "surrogateescape")
        if self.spans is not None:
            return self.spans.data(pos)
        return str(self.texts[pos]).encode()

    def sha256(self, positions: list[int]) -> list[str]:
        """``doc_sha256`` of the texts at ``positions``: SHA-256 of their bytes as read, hex."""
        if self.spans is not None and not self.raw:
            return self.spans.sha256(positions)
        sha = hashlib.sha256
        return [sha(self._bytes(p)).hexdigest() for p in positions]
