"""Reads that hash (#38): a flipped byte anywhere in a part a command reads is named, never a
silently changed figure; a part is hashed once a process, and only the parts a read opens.

Bytes are flipped across each whole file (not only its footer: a flip inside a value or a
dictionary may still decode), then the figures are read through polars (``oa.rates``), the
decisions stores and DuckDB (``oa.connect``). Each read either raises the one-line
``DatasetError`` naming the file or, for a flip in a file the read does not open, gives the
figures of the whole dataset.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.store import read_check
from ocp_analytics.store.commits import read_commits

EXAMPLES = Path(__file__).parent / "data" / "examples" / "v0.3"
AS_OF = "2027-01-01T00:00:00Z"
RULES = ["tests", "tests+review"]
FLIPS = 24  # offsets a file, spread over its whole length


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("hashed") / "ds"
    oa.ingest(EXAMPLES, ds)
    oa.refresh(ds, RULES, as_of=AS_OF)
    return ds


@pytest.fixture
def ds(whole: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(whole, copy)
    return copy


def _rates(ds: Path) -> pl.DataFrame:
    return oa.rates(ds, RULES, as_of=AS_OF).sort("rule")


def _sql(ds: Path) -> list[tuple[object, ...]]:
    con = oa.connect(ds, rules=RULES, as_of=AS_OF)
    return con.sql("SELECT rule, runs, accepted, unknown FROM rates ORDER BY rule").fetchall()


def _flips(path: Path) -> list[bytes]:
    data = path.read_bytes()
    out = []
    for at in range(0, len(data), max(1, len(data) // FLIPS)):
        flipped = bytearray(data)
        flipped[at] ^= 0x01  # one bit: the flip most likely to still decode
        out.append(bytes(flipped))
    return out


def _each_flip_is_named(ds: Path, path: Path, read: Callable[[Path], object]) -> None:
    """Every flip raises the one line naming ``path``: a flip that still decodes too."""
    rel = str(path.relative_to(ds))
    data = path.read_bytes()
    for flipped in _flips(path):
        path.write_bytes(flipped)
        read_check._CHECKED.clear()  # a new process: nothing hashed yet
        with pytest.raises(oa.DatasetError) as caught:
            read(ds)
        message = str(caught.value)
        assert f" {rel}: " in message and "\n" not in message
        assert "differ from the manifest's XXH3" in message  # what a read checks
    path.write_bytes(data)


@pytest.mark.parametrize("table", ["runs", "signals", "attempts", "rules"])
def test_a_flip_anywhere_in_a_part_is_named_by_the_engine(ds: Path, table: str) -> None:
    shutil.rmtree(ds / "decisions")  # from raw: every part is read
    part = ds / read_commits(ds)[0]["files"][table][0]
    _each_flip_is_named(ds, part, _rates)


@pytest.mark.parametrize("table", ["runs", "signals"])
def test_a_flip_anywhere_in_a_part_is_named_by_sql(ds: Path, table: str) -> None:
    part = ds / read_commits(ds)[0]["files"][table][0]
    _each_flip_is_named(ds, part, _sql)


def test_a_flip_anywhere_in_a_store_file_is_named(ds: Path) -> None:
    stores = [p for p in sorted(ds.glob("decisions/*")) if list(p.glob("parts/*.parquet"))]
    rules = [orjson.loads(max(s.glob("_generations/*.json")).read_bytes())["rule"] for s in stores]
    # the recorded rule's, each rule's, and the rule set's codes (what rates reads of them)
    assert len(stores) == len(RULES) + 2, rules
    (codes,) = [s for s in stores if s.name.startswith("set-")]
    for target in codes.glob("parts/*.parquet"):
        _each_flip_is_named(ds, target, _rates)
    shutil.rmtree(codes)  # without the codes, rates reads each rule's store
    first = next(s for s in stores if s != codes)
    for target in [*first.glob("parts/*.parquet"), *first.glob("ids/*.parquet")]:
        _each_flip_is_named(ds, target, _rates)


def test_a_part_is_hashed_once_a_process(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[str] = []
    real = read_check._problem

    def counting(target: Any, entry: Any) -> str | None:
        hashed.append(str(target))
        return real(target, entry)

    monkeypatch.setattr(read_check, "_problem", counting)
    read_check._CHECKED.clear()
    first = _rates(ds)
    once = len(hashed)
    assert once > 0
    assert_frame_equal(_rates(ds), first)
    assert len(hashed) == once  # the second read stats the files, hashes none


def test_a_window_hashes_only_the_parts_it_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tmp_path / "ds"
    for f in sorted(EXAMPLES.glob("*.json")):  # a batch a file: parts to prune
        oa.ingest(f, ds)
    hashed: list[str] = []
    real = read_check._problem
    monkeypatch.setattr(read_check, "_problem", lambda t, e: hashed.append(str(t)) or real(t, e))
    read_check._CHECKED.clear()
    oa.rates(ds, "tests", as_of="2031-01-01T00:00:00Z", since="2030-01-01T00:00:00Z")  # no run
    assert not [h for h in hashed if "/runs/" in h or "/signals/" in h]
    oa.rates(ds, "tests", as_of=AS_OF)
    assert [h for h in hashed if "/signals/" in h]


def test_a_damaged_part_of_a_table_no_read_opens_is_not_hashed(tmp_path: Path) -> None:
    """A damaged ``findings`` part stops no read of the runs: only a read of it."""
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES.parent, ds)  # all the examples: one of them has findings
    want = oa.scan_dataset(ds).runs.collect()
    (findings,) = read_commits(ds)[0]["files"]["findings"]
    (ds / findings).write_bytes(b"damaged")
    read_check._CHECKED.clear()
    assert_frame_equal(oa.scan_dataset(ds).runs.collect(), want)
    with pytest.raises(oa.DatasetError, match="damaged part findings/"):
        oa.scan_dataset(ds).findings.collect()
