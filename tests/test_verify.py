"""Integrity (#38): ``verify`` finds every damaged part and record; ``damaged_parts`` names them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.exceptions import ColumnNotFoundError, ComputeError, PanicException

import ocp_analytics as oa
from ocp_analytics import schemas as S
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import store
from ocp_analytics.store.verify import Damage, damaged_parts, verify

DATA = Path(__file__).parent / "data"
EXAMPLES, BAD = DATA / "examples", DATA / "bad"
SHA = "its bytes differ from the manifest's SHA-256 (flipped or replaced)"


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four batches, every table with a part in two of them."""
    tmp = tmp_path_factory.mktemp("verify")
    ds = tmp / "ds"
    oa.ingest([EXAMPLES / "v0.3", BAD / "not_json.ndjson", BAD / "naive_timestamp.json"], ds)
    oa.ingest([EXAMPLES / "golden", BAD / "missing_run.json"], ds)
    lines = (DATA / "events" / "example-events.ndjson").read_bytes().splitlines(keepends=True)
    for i, chunk in enumerate((lines[:2], lines[2:])):
        (tmp / f"events-{i}.ndjson").write_bytes(b"".join(chunk))
        oa.ingest_events(tmp / f"events-{i}.ndjson", ds)
    return ds


@pytest.fixture
def ds(whole: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(whole, copy)
    return copy


def _records(ds: Path) -> list[dict[str, Any]]:
    return D.read_commits(ds)


def _parts(ds: Path, table: str) -> list[tuple[dict[str, Any], str]]:
    """Each committed part of ``table`` with the record that lists it."""
    return [(r, f) for r in _records(ds) for f in r["files"][table]]


def _sources(record: dict[str, Any]) -> tuple[str, ...]:
    return tuple(s["path"] for s in [*record["sources"], *record.get("event_sources", [])])


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path) -> None:
    """XOR 16 bytes in the middle of the file (its size unchanged)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 16] = bytes(b ^ 0xFF for b in data[mid : mid + 16])
    path.write_bytes(bytes(data))


def _flip_footer(path: Path) -> None:
    """XOR the first 8 bytes of the Parquet footer: pyarrow cannot read it.

    Its first bytes are the structure's own (field headers), so the damage
    never depends on the data: 8 bytes in its middle could fall inside a
    statistic's text (a source path's, whose length follows the folder a
    test runs in), which reads as well flipped.
    """
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    at = len(data) - 8 - footer
    data[at : at + 8] = bytes(b ^ 0xFF for b in data[at : at + 8])
    path.write_bytes(bytes(data))


def _flip_name(path: Path) -> None:
    """XOR the name of the first column where the footer's schema holds it.

    pyarrow decodes the names when it reads a footer: the flipped name is not
    UTF-8, and raises a ``UnicodeDecodeError`` rather than an Arrow error.
    """
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    name = pq.read_schema(path).names[0].encode()
    at = data.index(name, len(data) - 8 - footer)
    data[at : at + len(name)] = bytes(b ^ 0xFF for b in name)
    path.write_bytes(bytes(data))


def damage(path: Path, kind: str, other: Path) -> str:
    """Damage the file ``path`` as ``kind`` says; the problem ``verify`` reports.

    ``replaced`` copies ``other`` over it: a valid Parquet file of the same columns.
    """
    size = path.stat().st_size
    if kind == "truncated":
        _truncate(path)
        return f"{size // 2} bytes, the manifest says {size}"
    if kind == "flipped":
        _flip(path)
        return SHA
    if kind == "deleted":
        path.unlink()
        return "missing"
    shutil.copyfile(other, path)
    replaced = other.stat().st_size
    return SHA if replaced == size else f"{replaced} bytes, the manifest says {size}"


def test_a_whole_dataset_has_no_damage(whole: Path) -> None:
    assert verify(whole) == []
    assert all(len(_parts(whole, t)) == 2 for t in S.TABLES)


@pytest.mark.parametrize("kind", ["truncated", "flipped", "deleted", "replaced"])
@pytest.mark.parametrize("table", list(S.TABLES))
def test_verify_finds_a_damaged_part(ds: Path, table: str, kind: str) -> None:
    (record, rel), (_, other) = _parts(ds, table)
    problem = damage(ds / rel, kind, ds / other)  # other: the other batch's part of the table
    found = verify(ds)
    assert found == [
        Damage(rel, problem, table, record["seq"], record["batch_id"], _sources(record))
    ]
    assert rel in str(found[0]) and record["batch_id"] in str(found[0])


@pytest.mark.parametrize("flip", [_flip_footer, _flip_name])
@pytest.mark.parametrize("table", list(S.TABLES))
def test_a_footer_check_alone_finds_a_damaged_footer(
    ds: Path, table: str, flip: Callable[[Path], None]
) -> None:
    (record, rel), _ = _parts(ds, table)
    flip(ds / rel)
    found = verify(ds, checksums=False)
    assert [(d.file, d.seq) for d in found] == [(rel, record["seq"])]
    assert found[0].problem.startswith("unreadable Parquet footer (")


def _rewrite(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    record = orjson.loads(path.read_bytes())
    edit(record)
    path.write_bytes(orjson.dumps(record))


RECORD = "_batches/00000002.json"


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (_truncate, "not valid JSON ("),
        (lambda p: p.write_bytes(b"\xff" + p.read_bytes()[1:]), "not valid JSON ("),
        (lambda p: _rewrite(p, lambda r: r.update(files=[])), "'files' is list, not dict"),
        (lambda p: _rewrite(p, lambda r: r.update(seq=3)), "seq is 3 in the record 00000002.json"),
        (lambda p: _rewrite(p, lambda r: r.pop("batch_id")), "no 'batch_id'"),
        (
            lambda p: _rewrite(p, lambda r: r["parts"].pop()),
            "quarantine/{batch}-00000.parquet has no manifest entry",
        ),
        (
            lambda p: p.unlink(),
            "missing, while records before and after it exist; 7 of its parts are left unread",
        ),
    ],
    ids=["truncated", "flipped", "files", "seq", "batch_id", "parts", "deleted"],
)
def test_verify_finds_a_damaged_commit_record(
    ds: Path, damage: Callable[[Path], None], problem: str
) -> None:
    batch = _records(ds)[1]["batch_id"]
    damage(ds / RECORD)
    found = verify(ds)
    assert [(d.file, d.table, d.seq) for d in found] == [(RECORD, None, 2)]
    assert found[0].problem.startswith(problem.format(batch=batch))


def test_a_changed_manifest_entry_is_found_on_its_part(ds: Path) -> None:
    def fewer_rows(record: dict[str, Any]) -> None:
        record["parts"][0]["rows"] -= 1
        record["parts"][0].pop("sha256")  # else the checksum is the first check to fail

    _rewrite(ds / RECORD, fewer_rows)
    rows = orjson.loads((ds / RECORD).read_bytes())["parts"][0]["rows"]
    (found,) = verify(ds)
    assert (found.table, found.seq, found.problem) == (
        "runs",
        2,
        f"{rows + 1} rows, the manifest says {rows}",
    )


def _strip_manifests(ds: Path) -> None:
    """Make every record look written before the manifest."""
    for path in (ds / D.BATCHES).glob("*.json"):
        _rewrite(path, lambda r: r.pop("parts"))


def test_records_without_a_manifest_are_read_and_checked_for_what_they_allow(
    ds: Path,
) -> None:
    want = oa.scan_dataset(ds).runs.collect()
    _strip_manifests(ds)
    assert oa.scan_dataset(ds).runs.collect().equals(want)
    assert verify(ds) == []
    (record, runs), _ = _parts(ds, "runs")
    (_, signals), _ = _parts(ds, "signals")
    _flip_footer(ds / runs)
    (ds / signals).unlink()
    found = [(d.file, d.seq, d.problem.split(" (")[0]) for d in verify(ds)]
    assert found == [
        (runs, record["seq"], "unreadable Parquet footer"),
        (signals, record["seq"], "missing"),
    ]


def test_a_damaged_record_stops_readers_with_one_line(ds: Path) -> None:
    _truncate(ds / RECORD)
    with pytest.raises(oa.DatasetError) as caught:
        oa.scan_dataset(ds)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the commit record {RECORD} of {str(ds)!r} is not valid JSON")
    assert message.endswith(f"Hint: run `ocp-analytics verify {ds}`.")


@pytest.mark.parametrize("damage", [_truncate, _flip_footer, _flip_name, _flip, Path.unlink])
@pytest.mark.parametrize("table", list(S.TABLES))
def test_a_read_failing_on_a_damaged_part_names_it_in_one_line(
    ds: Path, table: str, damage: Callable[[Path], None]
) -> None:
    (record, rel), _ = _parts(ds, table)
    damage(ds / rel)
    with pytest.raises(oa.DatasetError) as caught, damaged_parts(ds):
        oa.scan_dataset(ds)[table].collect()
        if damage in (_flip, _flip_footer, _flip_name):  # flipped bytes may read: say they fail
            raise PanicException("called `Option::unwrap()` on a `None` value")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{ds}: damaged part {rel}: ")
    assert f"(batch {record['seq']} {record['batch_id']}" in message
    assert message.endswith(f"Hint: run `ocp-analytics verify {ds}`.")
    # found before the read, by the scan's check of the part (store/read_check.py)
    assert caught.value.__cause__ is None


def test_duckdb_failing_on_a_damaged_part_names_it(ds: Path) -> None:
    (_, rel), _ = _parts(ds, "signals")
    _truncate(ds / rel)
    with pytest.raises(oa.DatasetError, match=f"damaged part {rel}: "), damaged_parts(ds):
        duckdb.sql(f"SELECT count(*) FROM read_parquet('{ds / rel}')").fetchall()


@pytest.mark.parametrize("damage", [_truncate, _flip_footer, _flip_name])
@pytest.mark.parametrize("table", ["signals", "runs", f"{D.SCHEMA_DIR}/runs"])
def test_the_sql_command_on_a_damaged_part_names_it(
    ds: Path, table: str, damage: Callable[[Path], None]
) -> None:
    """DuckDB's errors on damaged files: an untyped ``duckdb.Error`` (a footer's thrift), a
    binder error of the package's own views, a column name that is not UTF-8 (raised as
    ``UnicodeDecodeError``, or as a ``RuntimeError`` when the message holds it)."""
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    rel = f"{table}.parquet" if table.startswith(D.SCHEMA_DIR) else _parts(ds, table)[0][1]
    damage(ds / rel)
    query = f"SELECT * FROM {table.split('/')[-1]}"
    result = CliRunner().invoke(app, ["sql", str(ds), query])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert f" {rel}: " in line and line.endswith(f"`ocp-analytics verify {ds}`.")


def test_a_damaged_empty_table_file_is_named_and_written_again(ds: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    rel = f"{D.SCHEMA_DIR}/signals.parquet"
    _flip_footer(ds / rel)
    (found,) = verify(ds)
    assert (found.file, found.table) == (rel, D.SCHEMA_DIR)
    assert found.problem.startswith("unreadable Parquet footer (")
    result = CliRunner().invoke(app, ["sql", str(ds), "SELECT count(*) AS n FROM signals"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert f"damaged empty table file {rel}: unreadable Parquet footer (" in line
    assert line.endswith(f"Hint: run `ocp-analytics verify {ds}`.")
    result = CliRunner().invoke(app, ["verify", str(ds), "--repair"])
    assert result.exit_code == 0 and f"{rel}: written again" in result.output, result.output
    assert verify(ds) == []
    assert pl.read_parquet(ds / rel).columns == S.TABLES["signals"].names


def test_errors_no_damage_explains_are_raised_as_they_were(whole: Path) -> None:
    with pytest.raises(ColumnNotFoundError), damaged_parts(whole):
        oa.scan_dataset(whole).runs.select("no_such_column").collect()
    with pytest.raises(ComputeError, match=r"^not a part$"), damaged_parts(whole):
        raise ComputeError("not a part")
    with damaged_parts(whole):
        assert oa.scan_dataset(whole).runs.select(pl.len()).collect().item() > 0


def test_verify_reads_an_object_store(bucket: str) -> None:
    uri = f"{bucket}/verify.dataset"
    oa.ingest(EXAMPLES / "v0.3" / "solo.ocp.json", uri)
    assert verify(uri) == []
    (record,) = D.read_commits(uri)
    part = store(uri).child(record["files"]["signals"][0])
    size = part.size()
    part.write_bytes(part.read_bytes()[:100])
    found = verify(uri)
    assert [(d.file, d.problem) for d in found] == [
        (record["files"]["signals"][0], f"100 bytes, the manifest says {size}")
    ]


# --- repair --------------------------------------------------------------------------------


def _flip_middle(part: Path) -> None:
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))


@pytest.fixture
def sourced(tmp_path: Path) -> Path:
    """Two batches whose sources are still there; the second finds a copy of the first's
    runs unchanged (skipped), so rebuilding it needs the run versions stored before it."""
    from benchmarks.generate import write_ndjson

    write_ndjson(tmp_path / "a", 120, seed=1)
    write_ndjson(tmp_path / "b", 80, seed=2)
    shutil.copy(tmp_path / "a" / "part-00000.ndjson", tmp_path / "b" / "copy-of-a.ndjson")
    out = tmp_path / "ds"
    oa.ingest(tmp_path / "a", out)
    assert oa.ingest(tmp_path / "b", out).runs_unchanged == 120
    return out


def _rates(ds: Path) -> pl.DataFrame:
    return oa.rates(ds, ["tests", "tests+review"], as_of="2027-01-01", by="task_type")


def test_repair_rebuilds_damaged_parts_byte_for_byte(sourced: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    before = _rates(sourced)
    for pattern in ("runs/00000002-*", "signals/00000002-*", "attempts/00000001-*"):
        _flip_middle(next(sourced.glob(pattern)))
    assert len(verify(sourced)) == 3
    result = CliRunner().invoke(app, ["verify", str(sourced), "--repair"])
    assert result.exit_code == 0, result.output
    assert "repaired 3 part(s); 0 left damaged" in result.output
    assert result.output.rstrip().splitlines()[-1].startswith("ok: 2 commit records")
    assert verify(sourced) == [] and _rates(sourced).equals(before)


def test_repair_names_a_source_gone_or_changed(sourced: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    _flip_middle(next(sourced.glob("signals/00000002-*")))
    changed = tmp_path / "b" / "part-00000.ndjson"
    changed.write_bytes(changed.read_bytes() + b"\n")
    (tmp_path / "b" / "copy-of-a.ndjson").unlink()
    result = CliRunner().invoke(app, ["verify", str(sourced), "--repair"])
    assert result.exit_code == 1
    assert f"{changed}: changed since its batch (SHA-256 differs)" in result.output
    assert "copy-of-a.ndjson: missing" in result.output
    assert "repaired 0 part(s); 1 left damaged" in result.output
    assert len(verify(sourced)) == 1


def test_a_compacted_part_is_not_rebuilt_from_sources(sourced: Path) -> None:
    from ocp_analytics.store.repair import repair

    oa.compact(sourced)
    _flip_middle(next(sourced.glob("signals/00000003-*")))
    summary = repair(sourced, lambda paths, out: oa.ingest(paths, out))
    assert not summary.ok and "a compacted part" in str(summary)
