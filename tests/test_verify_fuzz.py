"""Flipped bytes across a part's footer (#38): every read either gives its rows or names the part.

16 bytes are flipped at every 17th offset from just before a part's
footer to its end, and the table is read through polars and DuckDB: a
read may succeed (the flip fell where no figure reads), else it must fail
with the one-line ``DatasetError`` naming the part, whatever error the
reader raised (a ``ComputeError``, a Rust panic, a thrift error, a column
name that is not UTF-8). The reads here do not hash the part first (polars
under ``unhashed``, DuckDB connected before the flips), as a part of a record
written before the manifest is read: the error after the read is what names
it. A flip that still decodes is named before any read by the hash:
tests/test_read_check.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ocp_analytics as oa
from ocp_analytics.store import dataset as D
from ocp_analytics.store.read_check import unhashed
from ocp_analytics.store.verify import damaged_parts

EXAMPLES = Path(__file__).parent / "data" / "examples" / "v0.3"
STEP = 17  # offsets apart: about 100 flips a part


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("fuzz") / "ds"
    oa.ingest(EXAMPLES, ds)
    return ds


def _offsets(data: bytes) -> range:
    footer = int.from_bytes(data[-8:-4], "little")
    return range(max(0, len(data) - 8 - footer - 32), len(data) - 4, STEP)


@pytest.mark.parametrize("reader", ["polars", "duckdb"])
@pytest.mark.parametrize("table", ["runs", "signals"])
def test_every_flip_reads_or_is_named(whole: Path, tmp_path: Path, table: str, reader: str) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(whole, ds)
    rel = D.read_commits(ds)[0]["files"][table][0]
    part = ds / rel
    data = part.read_bytes()
    con = oa.connect(ds) if reader == "duckdb" else None
    failed = 0
    for at in _offsets(data):
        flipped = bytearray(data)
        flipped[at : at + 16] = bytes(b ^ 0xFF for b in flipped[at : at + 16])
        part.write_bytes(bytes(flipped))
        try:
            with damaged_parts(ds):
                if con is None:
                    with unhashed():
                        oa.scan_dataset(ds)[table].collect()
                else:
                    con.sql(f"SELECT * FROM {table}").fetchall()
        except oa.DatasetError as exc:
            message = str(exc)
            assert f"damaged part {rel}: " in message and "\n" not in message, (at, message)
            failed += 1
    assert failed > 0  # the flips did reach the reader
