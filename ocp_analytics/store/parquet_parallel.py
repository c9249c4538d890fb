"""One Parquet file whose row groups are encoded on several threads at once.

pyarrow's ``ParquetWriter`` encodes a file on the thread that calls it, one
row group after the other. With many rules that one thread was the bound of
``write_acceptance`` while the evaluation beside it left part of a core idle
(benchmarks/RESULTS.md, History).

Here each table is encoded by pyarrow as a Parquet file of its own, in memory,
on any thread (pyarrow releases the GIL). :class:`ParquetRowGroups` then
appends, in order, the bytes between each such file's magic and its footer
(its row groups) to one output file, and ends the file with pyarrow's own
footer for the schema (written by pyarrow for an empty file) holding every
row group's metadata, its byte offsets moved to where the row group now lies.
Nothing inside a row group depends on its position (page headers hold sizes,
not offsets), so the file is byte for byte the one a single ``ParquetWriter``
given the same tables writes (``tests/test_parquet_parallel.py`` holds it to
that).

A part may also leave out columns holding the data of the part before it:
their encoded chunks are written again (see :meth:`ParquetRowGroups.append`),
and the file is still the one a single writer writes.

The footer is Thrift's compact encoding of ``FileMetaData``: the few lines of
:func:`_read_struct` / :func:`_write_struct` read it into nested lists and
write them back unchanged but for the byte offsets, each row group's
``ordinal``, and the sizes of a row group whose chunks were written again.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["ROW_GROUP_ROWS", "ParquetRowGroups", "encode"]

_MAGIC = b"PAR1"

# Thrift compact protocol type ids (those Parquet's footer uses; maps are not)
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET = range(11)
_STRUCT = 12

# FileMetaData field ids: schema, num_rows, row_groups
_SCHEMA, _NUM_ROWS, _ROW_GROUPS = 2, 3, 4
# SchemaElement: name, num_children
_NAME, _CHILDREN = 4, 5
# RowGroup: columns, num_rows, file_offset, ordinal
_COLUMNS, _NUM_ROWS_RG, _RG_FILE_OFFSET, _ORDINAL = 1, 3, 5, 7
# ColumnChunk: file_offset (deprecated, 0 when pyarrow writes it), meta_data,
# offset_index_offset, column_index_offset
_CC_FILE_OFFSET, _META, _CC_OFFSETS = 2, 3, (4, 6)
# ColumnMetaData: path_in_schema, total_uncompressed_size,
# total_compressed_size, data_page_offset, dictionary_page_offset
_PATH, _UNCOMPRESSED, _COMPRESSED, _DATA_PAGE, _DICTIONARY_PAGE = 3, 6, 7, 9, 11
# ... and its byte offsets: data page, index page, dictionary page, bloom filter
_OFFSETS = (_DATA_PAGE, 10, _DICTIONARY_PAGE, 14)
# RowGroup total_byte_size and total_compressed_size: sums of its chunks'
_RG_SIZES = {2: _UNCOMPRESSED, 6: _COMPRESSED}

Field = list[Any]  # [field id, type id, value]

# Rows a row group holds at most (pyarrow's default, given explicitly): a
# part of more rows holds several row groups, so leaves out no column.
ROW_GROUP_ROWS = 1 << 20

# Writer options whose bytes lie outside the row groups' chunks (page
# indexes, bloom filters) or depend on a row group's place (encryption).
_REFUSED = ("write_page_index", "bloom_filter_options", "encryption_properties")


def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        if c < 0x80:
            return out, i
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _read_value(b: bytes, i: int, t: int) -> tuple[Any, int]:
    if t in (_TRUE, _FALSE):  # a field's bool is in its type id
        return t == _TRUE, i
    if t == _BYTE:
        return b[i], i + 1
    if t in (_I16, _I32, _I64):
        n, i = _varint(b, i)
        return _zigzag(n), i
    if t == _DOUBLE:
        return b[i : i + 8], i + 8
    if t == _BINARY:
        size, i = _varint(b, i)
        return b[i : i + size], i + size
    if t in (_LIST, _SET):
        head = b[i]
        i += 1
        n, kind = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(b, i)
        items = []
        for _ in range(n):
            if kind in (_TRUE, _FALSE):  # a list's bool is a byte of its own
                v: Any = b[i] == _TRUE
                i += 1
            else:
                v, i = _read_value(b, i, kind)
            items.append(v)
        return (kind, items), i
    if t == _STRUCT:
        return _read_struct(b, i)
    raise ValueError(f"a Parquet footer holds no Thrift type {t}")


def _read_struct(b: bytes, i: int = 0) -> tuple[list[Field], int]:
    """A compact-protocol struct from ``b[i:]``: its fields and the index after it."""
    fields: list[Field] = []
    last = 0
    while True:
        head = b[i]
        i += 1
        if head == _STOP:
            return fields, i
        t, delta = head & 0x0F, head >> 4
        if delta:
            fid = last + delta
        else:
            v, i = _varint(b, i)
            fid = _zigzag(v)
        value, i = _read_value(b, i, t)
        fields.append([fid, t, value])
        last = fid


def _write_varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _write_value(t: int, v: Any, out: bytearray) -> None:
    if t in (_I16, _I32, _I64):
        _write_varint((v << 1) ^ (v >> 63), out)
    elif t == _BYTE:
        out.append(v)
    elif t in (_DOUBLE, _BINARY):
        if t == _BINARY:
            _write_varint(len(v), out)
        out += v
    elif t in (_LIST, _SET):
        kind, items = v
        if len(items) < 15:
            out.append(len(items) << 4 | kind)
        else:
            out.append(0xF0 | kind)
            _write_varint(len(items), out)
        for x in items:
            if kind in (_TRUE, _FALSE):
                out.append(_TRUE if x else _FALSE)
            else:
                _write_value(kind, x, out)
    elif t == _STRUCT:
        _write_struct(v, out)
    # a field's bool is written in its type id


def _write_struct(fields: list[Field], out: bytearray) -> bytearray:
    """Append the compact encoding of ``fields`` (as :func:`_read_struct` gives them)."""
    last = 0
    for fid, t, v in fields:
        if t in (_TRUE, _FALSE):
            t = _TRUE if v else _FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append(delta << 4 | t)
        else:
            out.append(t)
            _write_varint((fid << 1) ^ (fid >> 63), out)
        _write_value(t, v, out)
        last = fid
    out.append(_STOP)
    return out


def _field(fields: list[Field], fid: int) -> Field:
    for f in fields:
        if f[0] == fid:
            return f
    raise ValueError(f"the Parquet footer has no field {fid}")  # pragma: no cover


def _footer(data: memoryview) -> tuple[list[Field], int]:
    """The file's FileMetaData fields and the offset its footer starts at."""
    if bytes(data[:4]) != _MAGIC or bytes(data[-4:]) != _MAGIC:
        raise ValueError("not a Parquet file")  # pragma: no cover
    size = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - size
    fields, end = _read_struct(bytes(data[start:-8]))
    if end != size:
        raise ValueError("the Parquet footer was not read to its end")  # pragma: no cover
    return fields, start


def _moved(row_group: list[Field], by: int, ordinal: int) -> list[Field]:
    """``row_group`` with every byte offset moved by ``by`` and its ordinal set."""
    for f in row_group:
        if f[0] == _RG_FILE_OFFSET:
            f[2] += by
        elif f[0] == _ORDINAL:
            f[2] = ordinal
        elif f[0] == _COLUMNS:
            for chunk in f[2][1]:
                _moved_chunk(chunk, by)
    return row_group


def _chunk_fields(chunk: list[Field]) -> dict[int, Any]:
    """A ColumnChunk's ColumnMetaData, by field id."""
    return {f[0]: f[2] for f in _field(chunk, _META)[2]}


def _chunk_span(chunk: list[Field]) -> tuple[int, int]:
    """Where a column chunk's bytes start (its dictionary page, if any) and their size."""
    found = _chunk_fields(chunk)
    at = found.get(_DICTIONARY_PAGE) or found[_DATA_PAGE]
    return at, found[_COMPRESSED]


def _chunk_path(chunk: list[Field]) -> tuple[bytes, ...]:
    return tuple(_chunk_fields(chunk)[_PATH][1])


def _moved_chunk(chunk: list[Field], by: int) -> list[Field]:
    """``chunk`` (a ColumnChunk) with its byte offsets moved by ``by``."""
    for g in chunk:
        if g[0] in _CC_OFFSETS or (g[0] == _CC_FILE_OFFSET and g[2]):
            g[2] += by
        elif g[0] == _META:
            for h in g[2]:
                if h[0] in _OFFSETS:
                    h[2] += by
    return chunk


def _leaf_paths(elements: list[list[Field]]) -> list[tuple[bytes, ...]]:
    """The leaf columns' paths from the footer's flattened schema (root first)."""
    paths: list[tuple[bytes, ...]] = []

    def walk(i: int, prefix: tuple[bytes, ...]) -> int:
        found = {f[0]: f[2] for f in elements[i]}
        here = (*prefix, found[_NAME]) if i else prefix
        children = found.get(_CHILDREN, 0)
        if not children:
            paths.append(here)
            return i + 1
        i += 1
        for _ in range(children):
            i = walk(i, here)
        return i

    walk(0, ())
    return paths


def _write(
    sink: Any,
    schema: pa.Schema,
    table: pa.Table | None,
    metadata: dict[bytes, bytes] | None = None,
    **options: Any,
) -> None:
    """pyarrow's ParquetWriter writes ``table`` (if any) and ``metadata`` to ``sink``."""
    import pyarrow.parquet as pq

    with pq.ParquetWriter(sink, schema, **options) as writer:
        if table is not None:
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        if metadata:
            writer.add_key_value_metadata(metadata)


def encode(
    table: pa.Table, schema: pa.Schema, into: pa.Buffer | None = None, **options: Any
) -> pa.Buffer:
    """``table`` as a Parquet file in memory, written by pyarrow with ``options``.

    The file is written into ``into`` (a mutable buffer, given back sliced)
    when it fits, else into fresh memory: reusing buffers saves the page
    faults of new memory (benchmarks/RESULTS.md).
    Thread-safe; pyarrow encodes without the GIL.

    Examples
    --------
    >>> t = pa.table({"x": [1, 2, 3]})
    >>> bytes(encode(t, t.schema)[:4])
    b'PAR1'
    >>> space = pa.allocate_buffer(1 << 16)
    >>> encode(t, t.schema, space).address == space.address
    True
    >>> encode(t, t.schema, pa.allocate_buffer(16)).size > 16  # too small: fresh memory
    True
    """
    if into is not None:
        fixed = pa.FixedSizeBufferWriter(into)
        try:
            _write(fixed, schema, table, **options)
            return into.slice(0, fixed.tell())
        except OSError as e:
            if "out of bounds" not in str(e):  # only "the buffer is full" is handled
                raise
    sink = pa.BufferOutputStream()
    _write(sink, schema, table, **options)
    return sink.getvalue()


class ParquetRowGroups:
    """Writes a Parquet file from files :func:`encode` made, their row groups in order.

    ``schema`` and ``options`` must be those every part was encoded with
    (``store_schema`` and the other ``pyarrow.parquet.ParquetWriter``
    keywords); :meth:`close` writes the footer pyarrow writes for them.

    A part may leave out columns whose data is that of the part appended
    before it (``same`` in :meth:`append`): their encoded chunks are written
    again instead of being encoded again. At 100 rules every frame of a slice
    holds the same ``run_id`` column, a sixth of the encoding.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> t = pa.table({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    >>> path = tempfile.mkdtemp() + "/x.parquet"
    >>> out = ParquetRowGroups(path, t.schema)
    >>> out.append(encode(t, t.schema))
    >>> out.append(encode(t.drop_columns("y"), t.schema.remove(1)), same=["y"])
    >>> out.close()
    >>> pq.read_table(path).to_pydict()
    {'x': [1, 2, 3, 1, 2, 3], 'y': ['a', 'b', 'c', 'a', 'b', 'c']}
    """

    def __init__(self, path: str | Path, schema: pa.Schema, **options: Any) -> None:
        refused = [k for k in _REFUSED if options.get(k)]
        if refused:
            raise ValueError(f"row groups joined into one file cannot have {', '.join(refused)}")
        self.schema = schema
        self.options = options
        self.rows = 0
        self._row_groups: list[list[Field]] = []
        # the last chunk written of each leaf column: (bytes, ColumnChunk, offset, rows)
        self._last: dict[tuple[bytes, ...], tuple[bytes, list[Field], int, int]] = {}
        fields, _ = _footer(memoryview(self._empty()))
        self._leaves = _leaf_paths(_field(fields, _SCHEMA)[2][1])  # in the file's order
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._file.write(_MAGIC)
        self._at = len(_MAGIC)

    def append(self, part: pa.Buffer, same: Collection[str] = ()) -> None:
        """Append the row groups of ``part`` (a file :func:`encode` wrote).

        ``same`` names the columns ``part`` leaves out because they hold the
        data of the part appended before it (``part`` then holds one row
        group): their chunks are written again.
        """
        data = memoryview(part)
        fields, start = _footer(data)
        groups = _field(fields, _ROW_GROUPS)[2][1]
        if not same:  # the row groups as they are, moved
            by = self._at - len(_MAGIC)
            for row_group in groups:
                self._row_groups.append(_moved(row_group, by, len(self._row_groups)))
                rows = _field(row_group, _NUM_ROWS_RG)[2]
                for chunk in _field(row_group, _COLUMNS)[2][1]:
                    at, size = _chunk_span(chunk)  # where it now lies
                    body = bytes(data[at - by : at - by + size])
                    self._last[_chunk_path(chunk)] = (body, chunk, at, rows)
            self._file.write(data[len(_MAGIC) : start])
            self._at += start - len(_MAGIC)
            self.rows += _field(fields, _NUM_ROWS)[2]
            return
        if len(groups) != 1:
            raise ValueError("a part leaving out columns must hold one row group")
        (row_group,) = groups
        rows = _field(row_group, _NUM_ROWS_RG)[2]
        given = iter(_field(row_group, _COLUMNS)[2][1])
        placed: list[tuple[tuple[bytes, ...], bytes, list[Field], int]] = []
        for path in self._leaves:  # checked before a byte is written
            if path[0].decode() in same:
                if path not in self._last or self._last[path][3] != rows:
                    raise ValueError(f"no chunk of {rows} rows before for {path[0].decode()!r}")
                body, chunk, at, _ = self._last[path]
                placed.append((path, body, copy.deepcopy(chunk), at))
            else:
                chunk = next(given, None)
                if chunk is None or _chunk_path(chunk) != path:
                    raise ValueError(f"the part has no chunk for {path!r} where expected")
                at, size = _chunk_span(chunk)
                placed.append((path, bytes(data[at : at + size]), chunk, at))
        if next(given, None) is not None:
            raise ValueError("the part has chunks for columns named as left out")
        chunks = []
        for path, body, chunk, at in placed:
            chunks.append(_moved_chunk(chunk, self._at - at))
            self._last[path] = (body, chunk, self._at, rows)
            self._file.write(body)
            self._at += len(body)
        _field(row_group, _COLUMNS)[2] = (_STRUCT, chunks)
        first, _ = _chunk_span(chunks[0])
        for f in row_group:
            if f[0] == _RG_FILE_OFFSET:
                f[2] = first
            elif f[0] == _ORDINAL:
                f[2] = len(self._row_groups)
            elif f[0] in _RG_SIZES:
                f[2] = sum(_chunk_fields(c)[_RG_SIZES[f[0]]] for c in chunks)
        self._row_groups.append(row_group)
        self.rows += rows

    def _empty(self, metadata: dict[bytes, bytes] | None = None) -> pa.Buffer:
        """The file pyarrow writes for the schema and options, with no rows."""
        sink = pa.BufferOutputStream()
        _write(sink, self.schema, None, metadata, **self.options)
        return sink.getvalue()

    def close(self, metadata: dict[bytes, bytes] | None = None) -> None:
        """Write the footer (with ``metadata`` as key-value pairs) and close the file."""
        try:
            fields, _ = _footer(memoryview(self._empty(metadata)))
            _field(fields, _NUM_ROWS)[2] = self.rows
            _field(fields, _ROW_GROUPS)[2] = (_STRUCT, self._row_groups)
            footer = _write_struct(fields, bytearray())
            self._file.write(footer + len(footer).to_bytes(4, "little") + _MAGIC)
        finally:
            self._file.close()

    def abort(self) -> None:
        """Close the file without a footer (the caller removes it)."""
        self._file.close()
