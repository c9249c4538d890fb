"""Generated frames joined from parts encoded apart: always pyarrow's one-writer file."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings

from ocp_analytics.store.parquet_parallel import ParquetRowGroups, encode
from tests.conftest import examples

WORDS = pa.dictionary(pa.uint32(), pa.large_string())
SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string_view(), nullable=False),
        pa.field("tier", pa.dictionary(pa.uint8(), pa.large_string()), nullable=False),
        pa.field("reasons", pa.large_list(pa.field("item", WORDS, nullable=False))),
        pa.field("q", pa.float64()),
        pa.field("n", pa.int64()),
        pa.field("ok", pa.bool_()),
        pa.field("note", pa.string_view()),
    ]
)
SHAREABLE = ["run_id", "q", "n", "ok", "note"]  # flat columns a frame may share
OPTIONS: dict[str, Any] = {
    "write_statistics": ["tier", "n"],
    "use_dictionary": ["tier", "q", "reasons.list.element"],
    "store_schema": False,
}


@st.composite
def frames(draw: st.DrawFn) -> list[tuple[pa.Table, list[str]]]:
    """Frames, each with the columns it shares with the frame before it."""
    out: list[tuple[pa.Table, list[str]]] = []
    for _ in range(draw(st.integers(1, 6))):
        n = out[-1][0].num_rows if out and draw(st.booleans()) else draw(st.integers(1, 40))
        text = st.text(max_size=12)
        cols: dict[str, pa.Array] = {
            "run_id": pa.array(draw(st.lists(text, min_size=n, max_size=n)), pa.string_view()),
            "tier": pa.DictionaryArray.from_arrays(
                pa.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), pa.uint8()),
                pa.array(["verified", "reported", "asserted"], pa.large_string()),
            ),
            "q": pa.array(
                draw(st.lists(st.none() | st.floats(allow_nan=False), min_size=n, max_size=n)),
                pa.float64(),
            ),
            "n": pa.array(
                draw(st.lists(st.none() | st.integers(-(2**40), 2**40), min_size=n, max_size=n)),
                pa.int64(),
            ),
            "ok": pa.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), pa.bool_()),
            "note": pa.array(
                draw(st.lists(st.none() | text, min_size=n, max_size=n)), pa.string_view()
            ),
        }
        lengths = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        offsets = [0]
        for k in lengths:
            offsets.append(offsets[-1] + k)
        codes = pa.array(
            draw(st.lists(st.integers(0, 3), min_size=offsets[-1], max_size=offsets[-1])),
            pa.uint32(),
        )
        words = pa.array(["failed:a", "missing:b", "late:c", "x"], pa.large_string())
        cols["reasons"] = pa.LargeListArray.from_arrays(
            pa.array(offsets, pa.int64()),
            pa.DictionaryArray.from_arrays(codes, words),
            type=SCHEMA.field("reasons").type,
        )
        same: list[str] = []
        if out and out[-1][0].num_rows == n:  # share the very columns of the frame before
            same = draw(st.lists(st.sampled_from(SHAREABLE), unique=True, max_size=4))
            for name in same:
                cols[name] = out[-1][0][name].combine_chunks()
        out.append((pa.table([cols[f.name] for f in SCHEMA], schema=SCHEMA), same))
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_joined_parts_are_one_writers_file(
    tmp_path_factory: Any, drawn: list[tuple[pa.Table, list[str]]]
) -> None:
    tmp: Path = tmp_path_factory.mktemp("join")
    event(f"frames sharing columns: {sum(bool(same) for _, same in drawn)}")
    meta = {b"ARROW:schema": base64.b64encode(SCHEMA.serialize().to_pybytes())}
    out = ParquetRowGroups(tmp / "joined.parquet", SCHEMA, **OPTIONS)
    for k, (table, same) in enumerate(drawn):
        rest = table.drop_columns(same)
        space = pa.allocate_buffer(256 if k % 2 else 1 << 16)  # too small, then large enough
        out.append(encode(rest, rest.schema, space, **OPTIONS), same=same)
    out.close(meta)
    with pq.ParquetWriter(tmp / "one.parquet", SCHEMA, **OPTIONS) as writer:
        for table, _ in drawn:
            writer.write_table(table)
        writer.add_key_value_metadata(meta)
    assert (tmp / "joined.parquet").read_bytes() == (tmp / "one.parquet").read_bytes()
