"""accept, rates and compare on the command line (formats, errors)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from ocp_analytics.cli import app
from tests.conftest import AS_OF, EXAMPLES

# --- command line ------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture(scope="module")
def examples_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("cli") / "ds"
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "--out", str(ds)])
    assert result.exit_code == 0, result.output
    return ds


def test_cli_accept_formats(examples_ds: Path, tmp_path: Path) -> None:
    args = ["accept", str(examples_ds), "--rule", "tests+review", "--as-of", AS_OF]
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "as_of: 2027-01-01T00:00:00+00:00" in table.output
    as_json = runner.invoke(app, [*args, "--format", "json"])
    body = json.loads(as_json.stdout)
    assert body["as_of"] == "2027-01-01T00:00:00+00:00"
    assert {r["rule"] for r in body["rows"]} == {"recorded", "tests+review"}
    out = tmp_path / "acc.parquet"
    written = runner.invoke(app, [*args, "--format", "parquet", "--out", str(out)])
    assert written.exit_code == 0, written.output
    assert pl.read_parquet(out).height == len(body["rows"])
    csv = runner.invoke(app, [*args, "--format", "csv", "--out", str(tmp_path / "a.csv")])
    assert csv.exit_code == 0
    assert pl.read_csv(tmp_path / "a.csv").height == len(body["rows"])


def test_cli_rates_and_compare(examples_ds: Path) -> None:
    rates = runner.invoke(
        app,
        ["rates", str(examples_ds), "--rule", "tests", "--by", "ocp_version", "--format", "json"],
    )
    assert rates.exit_code == 0, rates.output
    rows = json.loads(rates.stdout)["rows"]
    assert {r["rule"] for r in rows} == {"recorded", "tests"}
    compare = runner.invoke(
        app, ["compare", str(examples_ds), "--rule", "tests", "--rule", "tests+review"]
    )
    assert compare.exit_code == 0, compare.output
    assert "flips" in compare.output


def test_cli_errors_exit_1_with_a_hint(examples_ds: Path, tmp_path: Path) -> None:
    bad_rule = runner.invoke(app, ["accept", str(examples_ds), "--rule", "tests+"])
    assert bad_rule.exit_code == 1
    assert "Hint" in bad_rule.output
    bad_by = runner.invoke(app, ["rates", str(examples_ds), "--by", "nope"])
    assert bad_by.exit_code == 1 and "label.KEY" in bad_by.output
    missing = runner.invoke(app, ["rates", str(tmp_path / "nothing")])
    assert missing.exit_code == 1
