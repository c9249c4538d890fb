"""One Parquet file written from several threads, in order, its write-ahead bounded in bytes.

:class:`ThreadedParquetWriter` takes Arrow tables of one schema, encodes each
as a Parquet file of its own on one of :data:`ENCODERS` threads while the
caller goes on (pyarrow encodes without the GIL), and appends the row groups
to the output in the order the tables came (see
:mod:`ocp_analytics.store.parquet_parallel`: the file is byte for byte the one
a single ``ParquetWriter`` writes). :func:`atomic_parquet` writes it under a
temporary name and renames it into place only when every table is written.

Knows no semantics: it writes the tables it is given, of the schema it is
given. ``write_acceptance`` is its user (the acceptance file's layout is
decided in :mod:`ocp_analytics.api`).
"""

from __future__ import annotations

import os
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from ocp_analytics.store import parquet_parallel
from ocp_analytics.store.parquet_parallel import ParquetRowGroups, encode

__all__ = ["ENCODERS", "PART_SPACE", "WRITE_AHEAD_BYTES", "ThreadedParquetWriter", "atomic_parquet"]

# Tables waiting to be encoded or appended, in bytes at most (one may always
# wait): counted in bytes, not tables, so memory stays bounded whatever their
# size. Encoding is slower than ``write_acceptance`` computes a frame, so the
# writer falls behind during a slice's rules and catches up during the next
# slice's shared work; larger queues cost memory and bought no time
# (benchmarks/RESULTS.md, History: 19b1d36; Measured and not kept).
WRITE_AHEAD_BYTES = 256 << 20

# Threads encoding row groups: one was the bound at 100 rules, two beside the
# evaluation keep both cores busy (benchmarks/RESULTS.md, History: 1e869aa).
# As many as cores, at most 4.
ENCODERS = max(1, min(4, len(os.sched_getaffinity(0))))

# Bytes a buffer the encoders write into holds at first (a 500k-row part of
# the acceptance file is about 3.5 MB); larger ones once a part did not fit.
# Buffers are reused: fresh memory costs page faults a part (same commit).
PART_SPACE = 16 << 20


def _same_data(table: pa.Table, other: pa.Table, name: str) -> bool:
    """Whether column ``name`` of both tables is the very same memory (so the same data).

    Only while ``other`` is alive: its buffers cannot be freed and their
    addresses reused. Dictionary and nested columns are never the same here
    (a dictionary's values and a child's offset are not among an array's
    buffers).

    Examples
    --------
    >>> t = pa.table({"x": [1, 2], "d": pa.array(["a", "b"]).dictionary_encode()})
    >>> _same_data(t.select(["x"]), t, "x"), _same_data(pa.table({"x": [1, 2]}), t, "x")
    (True, False)
    >>> _same_data(t, t, "d"), _same_data(pa.table({"l": [[1]]}), pa.table({"l": [[1]]}), "l")
    (False, False)
    """
    a, b = table.column(name), other.column(name)
    if a.type != b.type or a.num_chunks != b.num_chunks:
        return False
    if pa.types.is_nested(a.type) or pa.types.is_dictionary(a.type):
        return False

    def where(chunk: pa.Array) -> tuple[object, ...]:
        held = ((x.address, x.size) if x else None for x in chunk.buffers())
        return (chunk.offset, len(chunk), *held)

    return all(where(x) == where(y) for x, y in zip(a.chunks, b.chunks, strict=True))


class ThreadedParquetWriter:
    """Appends Arrow tables to one Parquet file, their row groups encoded on several threads.

    Each table is encoded by pyarrow as a Parquet file of its own on one of
    :data:`ENCODERS` threads; the encoded row groups are appended to ``path``
    in the order the tables came. Tables of at most :data:`WRITE_AHEAD_BYTES`
    wait to be encoded or appended (always at least one), so memory stays
    bounded whatever the caller hands over. A column holding the very memory
    of the table before (every rule of a slice hands over the slice's
    ``run_id``) is encoded once, its chunk written again.
    :meth:`close` appends the last ones and writes the footer.

    ``options`` are those of ``pyarrow.parquet.ParquetWriter``.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> t = pa.table({"x": [1, 2, 3]})
    >>> path = Path(tempfile.mkdtemp()) / "x.parquet"
    >>> writer = ThreadedParquetWriter(path, t.schema)
    >>> writer.write(t)
    >>> writer.write(t.slice(1))
    >>> writer.close({b"note": b"two tables"})
    >>> pq.read_table(path)["x"].to_pylist(), writer.rows
    ([1, 2, 3, 2, 3], 5)
    """

    def __init__(self, path: Path, schema: pa.Schema, **options: Any) -> None:
        self.schema = schema
        self.rows = 0
        self._out = ParquetRowGroups(path, schema, **options)
        self._pool = ThreadPoolExecutor(ENCODERS, thread_name_prefix="ocp-write")
        self._pending: deque[tuple[Future[tuple[pa.Buffer, pa.Buffer]], int, list[str]]] = deque()
        self._bytes = 0
        self._last: pa.Table | None = None  # the table before (alive: see _same_data)
        # buffers the encoders write into, reused once their part is appended
        self._spare: deque[pa.Buffer] = deque()
        self._space = PART_SPACE  # bytes a new one holds

    def write(self, table: pa.Table) -> None:
        """Hand ``table`` (of the writer's schema, not empty) to an encoding thread."""
        size = table.nbytes
        self._append(WRITE_AHEAD_BYTES - size)
        last, self._last = self._last, table
        same = [c for c in table.column_names if last is not None and _same_data(table, last, c)]
        if len(same) == table.num_columns or table.num_rows > parquet_parallel.ROW_GROUP_ROWS:
            same = []  # a part leaves out columns when it holds one row group and others
        part = self._pool.submit(self._encode, table.drop_columns(same))
        self._pending.append((part, size, same))
        self._bytes += size
        self.rows += table.num_rows

    def _encode(self, table: pa.Table) -> tuple[pa.Buffer, pa.Buffer]:
        """The encoded part and the buffer it was meant to fill (on an encoding thread)."""
        try:
            into = self._spare.pop()
        except IndexError:
            into = pa.allocate_buffer(self._space)
        return encode(table, table.schema, into, **self._out.options), into

    def _append(self, most: int) -> None:
        """Append the encoded tables at the front, waiting until at most ``most`` bytes wait."""
        while self._pending and (self._bytes > most or self._pending[0][0].done()):
            future, size, same = self._pending.popleft()
            self._bytes -= size
            part, into = future.result()  # a failed encoding raises here
            self._out.append(part, same)
            if part.address == into.address:
                self._spare.append(into)
            else:  # it did not fit: larger buffers from now on
                self._space = max(self._space, 2 * part.size)
                self._spare.clear()

    def close(self, metadata: dict[bytes, bytes]) -> None:
        """Append the last tables and write the footer (raising the first error, if any)."""
        try:
            self._append(-1)
            self._out.close(metadata)
        finally:
            self.abort()

    def abort(self) -> None:
        """Drop the tables not encoded yet, wait for the threads and close the file."""
        for part, _, _ in list(self._pending):
            part.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._out.abort()


@contextmanager
def atomic_parquet(
    target: Path, schema: pa.Schema, metadata: dict[bytes, bytes], **options: Any
) -> Iterator[ThreadedParquetWriter]:
    """A writer to a temporary name beside ``target``, renamed to ``target`` at the end.

    When the block ends without an error the footer (with ``metadata``) is
    written and the file renamed into place; otherwise the writer is aborted
    (the block's error wins) and no file appears.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> t = pa.table({"x": [1, 2, 3]})
    >>> target = Path(tempfile.mkdtemp()) / "x.parquet"
    >>> with atomic_parquet(target, t.schema, {b"note": b"one table"}) as writer:
    ...     writer.write(t)
    >>> pq.read_metadata(target).metadata[b"note"], [p.name for p in target.parent.iterdir()]
    (b'one table', ['x.parquet'])
    """
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        writer = ThreadedParquetWriter(tmp, schema, **options)
        try:
            yield writer
        except BaseException:
            writer.abort()
            raise
        writer.close(metadata)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
