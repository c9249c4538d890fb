"""Issue 39 on the command line: units that cannot be misread, empty windows said, tables that
fit a terminal, rates spelled one way, ``--where``, and the ``as_of`` of ``sql``.

Every test runs the typer app in process on the bundled examples (32 runs) and
compares with literal text or values.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.cli.output import TABLE_ROWS, table_text

EXAMPLES = Path(__file__).parent / "data" / "examples"
AS_OF = "2027-01-01T00:00:00Z"
runner = CliRunner()


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def ok(*args: str) -> Result:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli_tables") / "examples.dataset"
    oa.ingest(EXAMPLES, path)
    return str(path)


# ------------------------------------------------------ 1. units and empty windows


def test_since_1m_is_refused_as_ambiguous(ds: str) -> None:
    result = run("rates", ds, "--since", "1m", "--as-of", AS_OF)
    assert result.exit_code == 1
    assert result.output == (
        "error: since '1m' is ambiguous: m could be minutes or months.\n\n"
        "Hint: write 1min for minutes or 1mo for calendar months.\n"
    )


def test_minutes_and_months_have_their_own_units(ds: str) -> None:
    # 3 calendar months before 2026-12-01 is 2026-09-01: the 23 September runs and the
    # November one (late-revert), not the 4 of August
    body = json.loads(
        ok("rates", ds, "--since", "3mo", "--as-of", "2026-12-01", "-f", "json").stdout
    )
    assert [(r["rule"], r["runs"]) for r in body["rows"]] == [("recorded", 24)]
    assert ok("rates", ds, "--since", "90min", "--as-of", AS_OF).stderr.startswith(
        "no run in the window 2026-12-31T22:30:00+00:00 → 2027-01-01T00:00:00+00:00"
    )


@pytest.mark.parametrize("command", [["rates"], ["accept"], ["compare", "--rule", "tests"]])
def test_a_window_with_no_run_says_so_instead_of_an_empty_table(
    ds: str, command: list[str]
) -> None:
    window = ["--since", "2025-01-01", "--until", "2025-02-01", "--as-of", AS_OF]
    result = ok(command[0], ds, *command[1:], *window)
    assert result.stdout == ""
    assert result.stderr == (
        "no run in the window 2025-01-01T00:00:00+00:00 → 2025-02-01T00:00:00+00:00 "
        "(as_of 2027-01-01T00:00:00+00:00)\n"
    )


# ---------------------------------------------------------- 2. rates spelled once


def test_rates_read_the_same_in_rates_and_compare(ds: str) -> None:
    args = ["--rule", "tests+review", "--as-of", AS_OF]
    rates = ok("rates", ds, *args).stdout
    assert "100.0 % [78.5–100.0] of 14 decided" in rates
    cmp = ok("compare", ds, *args).stdout
    assert "100.0 % [78.5–100.0]" in cmp


# ------------------------------------------------------------ 3. tables that fit


def test_rates_table_shows_the_scanned_columns_and_as_of_once(ds: str) -> None:
    text = ok("rates", ds, "--by", "task_type", "--as-of", AS_OF).stdout
    header = text.splitlines()[1]
    assert [c.strip() for c in header.strip("│").split("┆")] == [
        "task_type",
        "rule",
        "runs",
        "decided",
        "accept_rate",
        "attempts_median",
    ]
    assert "│ feature   ┆ recorded ┆ 15   ┆ 15      ┆ 100.0 % [79.6–100.0] of 15 decided ┆" in text
    assert text.count("2027-01-01") == 1
    assert text.rstrip().endswith("as_of: 2027-01-01T00:00:00+00:00, snapshot: 1")


def test_wide_shows_every_column_and_other_formats_keep_them(ds: str) -> None:
    wide = ok("rates", ds, "--wide", "--as-of", AS_OF).stdout
    for column in ("attempts_mean", "tier_verified", "decided_share", "unknown"):
        assert column in wide
    assert "│ as_of" not in wide and "ci_low" not in wide
    csv = pl.read_csv(ok("rates", ds, "--as-of", AS_OF, "-f", "csv").stdout.encode())
    assert {"ci_low", "ci_high", "decided_share", "tier_verified", "as_of"} <= set(csv.columns)


def test_the_row_cap_keeps_the_newest_periods() -> None:
    frame = pl.DataFrame(
        {"period": pl.date_range(pl.date(2026, 1, 1), pl.date(2026, 3, 1), eager=True)}
    ).with_columns(pl.lit("recorded").alias("rule"))
    text = table_text(frame)
    assert "2026-03-01" in text and "2026-01-01" not in text
    assert text.endswith(
        f"({TABLE_ROWS} of 60 rows shown, the newest periods; 20 left out; "
        "--format csv|json|parquet --out FILE writes all)"
    )


def test_flips_are_sorted_largest_first(ds: str) -> None:
    args = ["--rule", "tests", "--rule", "tests+review", "--as-of", AS_OF, "-f", "json"]
    flips = json.loads(ok("compare", ds, *args).stdout)["flips"]
    sizes = [f["flips"] for f in flips]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == 10


def test_compare_csv_to_stdout_is_refused_with_a_hint(ds: str) -> None:
    result = run("compare", ds, "--rule", "tests", "--as-of", AS_OF, "-f", "csv")
    assert result.exit_code == 1
    assert result.output.startswith(
        "error: compare -f csv writes two tables (the matrix and the flips), not one stream."
    )
    assert "Hint: add --out cmp.csv" in result.output


# -------------------------------------------------------------------- 4. --where


def test_where_selects_runs_on_every_evaluation_command(ds: str, tmp_path: Path) -> None:
    where = ["--where", "task_type=feature", "--as-of", AS_OF]
    rates = json.loads(ok("rates", ds, *where, "-f", "json").stdout)["rows"]
    assert [(r["rule"], r["runs"]) for r in rates] == [("recorded", 15)]
    acc = pl.read_csv(ok("accept", ds, *where, "-f", "csv").stdout.encode())
    assert acc.height == 15
    cmp = json.loads(ok("compare", ds, "--rule", "tests", *where, "-f", "json").stdout)
    assert cmp["matrix"][0]["recorded"] == 1.0
    out = tmp_path / "acc.parquet"
    ok("accept", ds, *where, "-o", str(out))
    assert pq.read_table(out).num_rows == 15
    nobody = ok("rates", ds, "--where", "label.team=payments", "--as-of", AS_OF)
    assert nobody.stderr == (
        "no run with --where label.team=payments (as_of 2027-01-01T00:00:00+00:00)\n"
    )


# ------------------------------------------------------------- 6. sql and as_of


def test_sql_writes_its_as_of_into_json_and_parquet(ds: str, tmp_path: Path) -> None:
    query = "SELECT count(*) AS n FROM runs"
    body = json.loads(ok("sql", ds, query, "--as-of", AS_OF, "-f", "json").stdout)
    assert body["as_of"] == "2027-01-01T00:00:00+00:00"
    out = tmp_path / "n.parquet"
    ok("sql", ds, query, "--as-of", AS_OF, "-o", str(out))
    meta = pq.read_schema(out).metadata
    assert meta[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"
