"""Integrity of the decisions stores (#38): ``verify`` checks every file a store's newest
record lists (bytes, rows, SHA-256, footer), readers name a damaged one in one line, and
``verify --repair`` deletes a damaged store, which the next refresh builds again."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.store.verify import check, verify
from tests.test_verify import _flip, _truncate, damage

EXAMPLES = Path(__file__).parent / "data" / "examples" / "v0.3"
AS_OF = "2027-01-01T00:00:00Z"
RULES = ["tests", "tests+review"]
runner = CliRunner()


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples, and the stores of the recorded rule and two others."""
    ds = tmp_path_factory.mktemp("stores") / "ds"
    oa.ingest(EXAMPLES, ds)
    oa.refresh(ds, RULES, as_of=AS_OF)
    return ds


@pytest.fixture
def ds(whole: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(whole, copy)
    return copy


def _store(ds: Path, rule: str) -> Path:
    """The folder of ``rule``'s store."""
    for record in sorted(ds.glob("decisions/*/_generations/*.json")):
        if orjson.loads(record.read_bytes())["rule"].get("name", "recorded") == rule:
            return record.parent.parent
    raise AssertionError(rule)


def _part(ds: Path, rule: str) -> Path:
    return next((_store(ds, rule) / "parts").glob("*.parquet"))


def _rel(ds: Path, path: Path) -> str:
    return str(path.relative_to(ds))


def test_verify_checks_the_stores_files_with_the_dataset(whole: Path) -> None:
    checked = check(whole)
    # a part each for the recorded rule and the two named, one for the rule set's codes
    assert checked.damages == [] and checked.store_files == 4
    assert "4 decisions store files" in str(checked)


@pytest.mark.parametrize("kind", ["truncated", "flipped", "deleted", "replaced"])
def test_verify_finds_a_damaged_store_part(ds: Path, kind: str) -> None:
    part = _part(ds, "tests")
    problem = damage(part, kind, _part(ds, "tests+review"))  # another store's part
    [found] = verify(ds)
    assert (found.file, found.table) == (_rel(ds, part), "decisions")
    assert found.problem == (
        f"{problem} (the decisions store of rule 'tests': `verify --repair` deletes it, "
        "the next refresh builds it again)"
    )
    result = runner.invoke(app, ["verify", str(ds)])
    assert result.exit_code == 1 and str(found) in result.output


def test_verify_finds_a_store_record_that_cannot_be_read(ds: Path) -> None:
    record = next((_store(ds, "tests") / "_generations").glob("*.json"))
    _truncate(record)
    [found] = verify(ds)
    assert found.file == _rel(ds, record) and found.problem.startswith("not a readable record")


@pytest.mark.parametrize("damage", [_truncate, Path.unlink])
def test_a_read_failing_on_a_damaged_store_part_names_it_in_one_line(
    ds: Path, damage: Callable[[Path], None]
) -> None:
    part = _part(ds, "tests")
    damage(part)
    args = ["rates", str(ds), "--rule", "tests", "--as-of", AS_OF]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert f"damaged decisions store file {_rel(ds, part)}: " in line
    assert line.endswith(f"Hint: run `ocp-analytics verify {ds}`.")
    raw = runner.invoke(app, [*args, "--no-decisions"])  # the dataset itself is whole
    assert raw.exit_code == 0, raw.output


def test_repair_deletes_the_damaged_store_and_refresh_builds_it_again(ds: Path) -> None:
    want = oa.rates(ds, RULES, as_of=AS_OF, use_decisions=False)
    part, kept = _part(ds, "tests"), _store(ds, "tests+review")
    kept_files = sorted(p.name for p in kept.rglob("*.parquet"))
    _flip(part)
    result = runner.invoke(app, ["verify", str(ds), "--repair"])
    assert result.exit_code == 0, result.output
    assert f"{_rel(ds, part.parent.parent)}: damaged, deleted" in result.output
    assert not list((part.parent.parent).rglob("*.parquet"))
    assert sorted(p.name for p in kept.rglob("*.parquet")) == kept_files
    from ocp_analytics.api.stored import observing

    with observing() as seen:
        got = oa.rates(ds, RULES, as_of=AS_OF)
    assert seen[0].from_raw == ("tests",) and got.equals(want)
    oa.refresh(ds, RULES, as_of=AS_OF)
    assert verify(ds) == [] and oa.rates(ds, RULES, as_of=AS_OF).equals(want)


def _strip_files(ds: Path) -> None:
    """Records as refreshes wrote them before they kept each file's bytes, rows and SHA-256."""
    for path in ds.glob("decisions/*/_generations/*.json"):
        record: dict[str, Any] = orjson.loads(path.read_bytes())
        for entry in record["chain"]:
            entry.pop("files", None)
        path.write_bytes(orjson.dumps(record))


def test_older_store_records_are_checked_for_what_they_allow(ds: Path) -> None:
    _strip_files(ds)
    assert verify(ds) == []
    part = _part(ds, "tests")
    _truncate(part)
    [found] = verify(ds)
    assert found.file == _rel(ds, part) and found.problem.startswith("unreadable Parquet footer")
    assert pl.read_parquet(_part(ds, "recorded")).height == 7


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(chain=[None]),
        lambda r: r["chain"][0].update(parts=None),
        lambda r: r["chain"][0].update(files=[{"file": ["not", "a", "name"]}]),
        lambda r: r["chain"][0].update(files=[{"file": r["chain"][0]["parts"][0], "bytes": "x"}]),
    ],
)
def test_a_store_record_of_odd_shapes_is_named_not_a_crash(
    ds: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    path = next((_store(ds, "tests") / "_generations").glob("*.json"))
    record = orjson.loads(path.read_bytes())
    edit(record)
    path.write_bytes(orjson.dumps(record))
    found = verify(ds)  # never raises; a file it can still place is checked for what it can
    assert all(d.table == "decisions" for d in found)


def test_a_generations_entry_that_is_a_folder_is_named(ds: Path) -> None:
    (_store(ds, "tests") / "_generations" / "00000009.json").mkdir()
    [found] = verify(ds)
    assert found.file.endswith("_generations/00000009.json")
    assert found.problem.startswith("not a readable record")


def test_the_datasets_own_damage_is_named_before_a_stores(ds: Path) -> None:
    from ocp_analytics.store.verify import damaged_parts

    _truncate(next((_store(ds, "tests") / "_generations").glob("*.json")))
    runs = next((ds / "runs").glob("*.parquet"))
    _truncate(runs)
    found = verify(ds)
    assert [d.table for d in found] == ["runs", "decisions"]
    with pytest.raises(oa.DatasetError, match=f"damaged part {_rel(ds, runs)}"), damaged_parts(ds):
        oa.scan_dataset(ds).runs.collect()


def test_an_error_no_store_read_explains_is_not_blamed_on_a_store(ds: Path) -> None:
    from polars.exceptions import ColumnNotFoundError, ComputeError

    from ocp_analytics.store.verify import damaged_parts

    _truncate(_part(ds, "tests"))
    with pytest.raises(ComputeError, match="a query's own mistake"), damaged_parts(ds):
        raise ComputeError("a query's own mistake")
    with pytest.raises(ColumnNotFoundError), damaged_parts(ds):
        oa.scan_dataset(ds).runs.select("no_such_column").collect()
