"""Row groups encoded apart and joined into one file: byte for byte pyarrow's own file."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ocp_analytics.store.parquet_parallel import (
    ParquetRowGroups,
    _read_struct,
    _write_struct,
    encode,
)

WORDS = pa.dictionary(pa.uint32(), pa.large_string())


def _frame(n: int, seed: int) -> pa.Table:
    """Every kind of column the acceptance file has, and more than 15 columns."""
    words = pa.array(["failed:tests", "missing:ci", "late:revert"], pa.large_string())
    codes = pa.array([(i * seed) % 3 for i in range(2 * n)], pa.uint32())
    reasons = pa.LargeListArray.from_arrays(
        pa.array([2 * i for i in range(n + 1)], pa.int64()),
        pa.DictionaryArray.from_arrays(codes, words),
        type=pa.large_list(pa.field("item", WORDS, nullable=False)),
    )
    cols: dict[str, Any] = {
        "run_id": pa.array([f"run_{seed}_{i:09d}" for i in range(n)], pa.string_view()),
        "rule": pa.DictionaryArray.from_arrays(
            pa.array([0] * n, pa.uint8()), pa.array([f"rule_{seed}"], pa.large_string())
        ),
        "reasons": reasons,
        "q": pa.array([0.98 if i % 2 else 0.7 for i in range(n)], pa.float64()),
        "n": pa.array([None if i % 3 else i for i in range(n)], pa.int64()),
        "ok": pa.array([i % 5 == 0 for i in range(n)], pa.bool_()),
        "at": pa.array([datetime(2026, 12, 1, tzinfo=UTC)] * n, pa.timestamp("us", tz="UTC")),
    }
    for k in range(12):
        cols[f"x{k}"] = pa.array([i * k + seed for i in range(n)], pa.int32())
    return pa.table(cols)


SCHEMA = _frame(1, 1).schema
OPTIONS: dict[str, Any] = {
    "write_statistics": ["rule", "x3"],
    "use_dictionary": ["rule", "q", "n", "x1", "reasons.list.element"],
    "store_schema": False,
}
META = {
    b"ARROW:schema": base64.b64encode(SCHEMA.serialize().to_pybytes()),
    b"ocp_analytics.as_of": b"2026-12-01T00:00:00+00:00",
}


def _one_writer(path: Path, tables: list[pa.Table], **options: Any) -> bytes:
    with pq.ParquetWriter(path, SCHEMA, **options) as writer:
        for t in tables:
            writer.write_table(t)
        writer.add_key_value_metadata(META)
    return path.read_bytes()


@pytest.mark.parametrize("sizes", [[], [3], [1000, 1, 2500], [7] * 20])
def test_joined_row_groups_are_the_file_one_writer_writes(tmp_path: Path, sizes: list[int]) -> None:
    tables = [_frame(n, seed) for seed, n in enumerate(sizes, 1)]
    with ThreadPoolExecutor(3) as pool:  # encoded on threads, appended in order
        parts = list(pool.map(lambda t: encode(t, SCHEMA, **OPTIONS), tables))
    out = ParquetRowGroups(tmp_path / "joined.parquet", SCHEMA, **OPTIONS)
    for part in parts:
        out.append(part)
    out.close(META)
    joined = (tmp_path / "joined.parquet").read_bytes()
    assert joined == _one_writer(tmp_path / "one.parquet", tables, **OPTIONS)
    assert out.rows == sum(sizes)
    assert pq.ParquetFile(tmp_path / "joined.parquet").num_row_groups == len(sizes)


def test_joined_file_reads_the_same_in_pyarrow_polars_and_duckdb(tmp_path: Path) -> None:
    tables = [_frame(n, seed) for seed, n in enumerate([400, 1, 250], 1)]
    out = ParquetRowGroups(tmp_path / "j.parquet", SCHEMA, **OPTIONS)
    for t in tables:
        out.append(encode(t, SCHEMA, **OPTIONS))
    out.close()
    want = pa.concat_tables(tables)
    got = pq.read_table(tmp_path / "j.parquet")
    assert got.num_rows == 651
    for name in ("run_id", "q", "n", "ok", "at", "x11"):
        assert got[name].cast(want.schema.field(name).type).equals(want[name]), name
    assert got["reasons"].to_pylist() == want["reasons"].to_pylist()
    rows = pl.read_parquet(tmp_path / "j.parquet").select("run_id", "n", "x7")
    assert rows.equals(pl.from_arrow(want.select(["run_id", "n", "x7"])), null_equal=True)  # type: ignore[arg-type]
    sql = "SELECT count(*), sum(x7), count(n), max(run_id) FROM read_parquet(?)"
    with duckdb.connect() as con:
        got_sql = con.execute(sql, [str(tmp_path / "j.parquet")]).fetchall()
    assert got_sql == [
        (
            651,
            sum(want["x7"].to_pylist()),
            len(want["n"].drop_null()),
            max(want["run_id"].to_pylist()),
        )
    ]
    # row group statistics moved with their groups: a filter on rule reads one group
    stats = pq.ParquetFile(tmp_path / "j.parquet").metadata.row_group(2).column(1).statistics
    assert (stats.min, stats.max) == ("rule_3", "rule_3")


def test_a_part_of_several_row_groups(tmp_path: Path) -> None:
    t = _frame(10, 4)
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, row_group_size=4, **OPTIONS)
    out = ParquetRowGroups(tmp_path / "j.parquet", SCHEMA, **OPTIONS)
    out.append(encode(_frame(3, 5), SCHEMA, **OPTIONS))
    out.append(sink.getvalue())
    out.close()
    f = pq.ParquetFile(tmp_path / "j.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(4)] == [3, 4, 4, 2]
    assert f.read()["x2"].to_pylist()[3:] == t["x2"].to_pylist()


def test_thrift_footer_read_and_written_back_unchanged(tmp_path: Path) -> None:
    data = _one_writer(tmp_path / "one.parquet", [_frame(20, s) for s in range(1, 18)], **OPTIONS)
    size = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - size : -8]
    fields, end = _read_struct(footer)
    assert end == size
    assert bytes(_write_struct(fields, bytearray())) == footer


@pytest.mark.parametrize("left_out", [["run_id"], ["run_id", "at", "x0", "x11"], ["reasons"]])
def test_columns_left_out_are_written_again_byte_for_byte(
    tmp_path: Path, left_out: list[str]
) -> None:
    """Frames sharing columns (every rule of a slice has the slice's run_id): each
    part leaves them out, the file is still the one pyarrow writes."""
    first = _frame(300, 1)
    tables = [first]
    for seed in (2, 3, 4):
        t = _frame(300, seed)
        for name in left_out:  # the very same data as the frame before
            t = t.set_column(t.schema.get_field_index(name), name, first[name])
        tables.append(t)
    tables.append(_frame(200, 5))  # a new slice: everything encoded again
    out = ParquetRowGroups(tmp_path / "joined.parquet", SCHEMA, **OPTIONS)
    for k, t in enumerate(tables):
        same = left_out if 0 < k < 4 else []
        rest = t.drop_columns(same)
        out.append(encode(rest, rest.schema, **OPTIONS), same=same)
    out.close(META)
    assert (tmp_path / "joined.parquet").read_bytes() == _one_writer(
        tmp_path / "one.parquet", tables, **OPTIONS
    )


@pytest.mark.parametrize(
    "option",
    [{"write_page_index": True}, {"bloom_filter_options": {"run_id": True}}],
)
def test_options_placing_bytes_outside_the_chunks_are_refused(
    tmp_path: Path, option: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match="cannot have"):
        ParquetRowGroups(tmp_path / "x.parquet", SCHEMA, **OPTIONS, **option)


def test_a_part_leaving_out_columns_is_checked(tmp_path: Path) -> None:
    first, other = _frame(10, 1), _frame(12, 2)
    out = ParquetRowGroups(tmp_path / "x.parquet", SCHEMA, **OPTIONS)
    rest = other.drop_columns(["run_id"])
    with pytest.raises(ValueError, match="no chunk of 12 rows before"):
        out.append(encode(rest, rest.schema, **OPTIONS), same=["run_id"])  # nothing before
    out.append(encode(first, SCHEMA, **OPTIONS))
    with pytest.raises(ValueError, match="no chunk of 12 rows before"):  # not the same length
        out.append(encode(rest, rest.schema, **OPTIONS), same=["run_id"])
    with pytest.raises(ValueError, match="where expected"):
        out.append(encode(first, SCHEMA, **OPTIONS), same=["q"])  # q is in the part after all
    with pytest.raises(ValueError, match="named as left out"):
        out.append(encode(first, SCHEMA, **OPTIONS), same=["x11"])  # the last one too
    out.abort()
