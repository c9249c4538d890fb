"""The command line (issue 9, "Release quality"): formats, outputs, options, errors.

Every test runs the typer app in process (``CliRunner``) on the bundled
examples (32 runs) and compares with literal text or values.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.schemas import FLIPS

EXAMPLES = Path(__file__).parent / "data" / "examples"
AS_OF = "2027-01-01T00:00:00Z"
runner = CliRunner()


def run(*args: str, input: str | None = None) -> Result:
    return runner.invoke(app, list(args), input=input)


def ok(*args: str, input: str | None = None) -> Result:
    result = run(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def failed(code: int, *args: str) -> str:
    """The output of a command that must fail with ``code`` and no traceback."""
    result = run(*args)
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "examples.dataset"
    oa.ingest(EXAMPLES, path)
    return str(path)


# ------------------------------------------------------------ format and --out


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("r.csv", "rule,runs,accepted,rejected,unknown,accept_rate,ci_low,ci_high"),
        ("r.json", "{"),
        ("r.txt", "┌──────────┬──────┬─────────┬"),
    ],
)
def test_format_follows_out_extension(ds: str, tmp_path: Path, name: str, first: str) -> None:
    out = tmp_path / name
    result = ok("rates", ds, "--as-of", AS_OF, "--out", str(out))
    assert result.stdout == ""
    assert out.read_text().startswith(first)


def test_parquet_from_out_extension(ds: str, tmp_path: Path) -> None:
    ok("rates", ds, "--rule", "tests+review", "--as-of", AS_OF, "-o", str(tmp_path / "r.parquet"))
    got = pl.read_parquet(tmp_path / "r.parquet").select("rule", "runs", "accepted")
    assert got.rows() == [("recorded", 32, 24), ("tests+review", 32, 14)]
    ok("accept", ds, "--as-of", AS_OF, "-o", str(tmp_path / "a.parquet"))
    assert pl.read_parquet(tmp_path / "a.parquet").height == 32


def test_explicit_format_wins_over_extension(ds: str, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    ok("rates", ds, "--as-of", AS_OF, "--format", "json", "--out", str(out))
    assert json.loads(out.read_text())["rows"][0]["rule"] == "recorded"


def test_unknown_out_extension_is_an_error(ds: str, tmp_path: Path) -> None:
    text = failed(1, "rates", ds, "--out", str(tmp_path / "r.xlsx"))
    assert "cannot tell the format of --out" in text
    assert "Hint: name it .csv, .json, .parquet or .txt, or pass --format" in text


def test_out_works_for_table(ds: str, tmp_path: Path) -> None:
    out = tmp_path / "acc.txt"
    ok("accept", ds, "--as-of", AS_OF, "--format", "table", "--out", str(out))
    text = out.read_text()
    assert "run_ex_full_a" in text
    assert text.endswith("as_of: 2027-01-01T00:00:00+00:00, snapshot: 1\n")
    cmp = tmp_path / "cmp.txt"
    ok("compare", ds, "--rule", "tests", "--as-of", AS_OF, "-o", str(cmp))
    assert cmp.read_text().startswith("accept rate [95% interval] by group and rule\n")
    assert "flips: runs accepted under rule_a but not under rule_b" in cmp.read_text()


def test_out_works_for_sql(ds: str, tmp_path: Path) -> None:
    ok("sql", ds, "SELECT count(*) AS n FROM runs", "-o", str(tmp_path / "n.csv"))
    assert (tmp_path / "n.csv").read_text() == "n\n32\n"
    ok("sql", ds, "SELECT count(*) AS n FROM runs", "-o", str(tmp_path / "n.txt"))
    assert "│ 32 │" in (tmp_path / "n.txt").read_text()


def test_parquet_without_out_is_an_error(ds: str) -> None:
    text = failed(1, "rates", ds, "--format", "parquet")
    assert "error: --format parquet needs --out FILE." in text


# ------------------------------------------------------------------- compare


def test_compare_json_is_one_document(ds: str, tmp_path: Path) -> None:
    args = ["compare", ds, "--rule", "tests", "--rule", "tests+review", "--as-of", AS_OF]
    body = json.loads(ok(*args, "--format", "json").stdout)
    assert sorted(body) == ["as_of", "flips", "matrix", "snapshot"]
    assert body["as_of"] == "2027-01-01T00:00:00+00:00"
    assert body["snapshot"] == 1
    assert body["matrix"][0]["tests+review"] == 1.0
    flip = [f for f in body["flips"] if (f["rule_a"], f["rule_b"]) == ("tests", "tests+review")]
    assert flip[0]["flips"] == 10 and flip[0]["runs_compared"] == 32
    # the 10 flips are runs unknown under tests+review: none is decided under both rules
    paired = {c: flip[0][c] for c in ("a", "b", "c", "d", "n", "difference", "p_value")}
    assert paired == {"a": 14, "b": 0, "c": 0, "d": 0, "n": 14, "difference": 0.0, "p_value": 1.0}
    assert (flip[0]["p_method"], flip[0]["p_holm"]) == ("exact", 1.0)
    # to a file: the same single document, nothing beside it
    ok(*args, "-o", str(tmp_path / "cmp.json"))
    assert json.loads((tmp_path / "cmp.json").read_text()) == body
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp.json"]


def test_compare_csv_writes_flips_beside(ds: str, tmp_path: Path) -> None:
    ok("compare", ds, "--rule", "tests", "--as-of", AS_OF, "-o", str(tmp_path / "cmp.csv"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp.csv", "cmp.flips.csv"]
    flips = pl.read_csv(tmp_path / "cmp.flips.csv")
    assert flips.columns == FLIPS.names
    assert flips.columns[:4] == ["rule_a", "rule_b", "runs_compared", "flips"]


def test_compare_by_group_has_a_paired_test_per_group_and_pair(ds: str, tmp_path: Path) -> None:
    args = ["compare", ds, "--rule", "tests", "--by", "task_type", "--as-of", AS_OF]
    body = json.loads(ok(*args, "-f", "json").stdout)
    rows = {(f["task_type"], f["rule_a"], f["rule_b"]): f for f in body["flips"]}
    assert list(body["flips"][0])[:3] == ["task_type", "rule_a", "rule_b"]
    assert len(rows) == len(body["flips"]) == 2 * len(body["matrix"])
    feature = rows[("feature", "recorded", "tests")]
    assert (feature["runs_compared"], feature["a"], feature["n"]) == (15, 15, 15)
    assert (feature["difference"], feature["p_method"]) == (0.0, "exact")
    text = ok(*args).stdout
    assert "paired, over the runs decided under both: a accepted under both" in text
    assert "│ feature   ┆ recorded ┆ tests    ┆ 15            ┆ 0     ┆ 15 ┆ 0 ┆ 0 ┆ 0 ┆" in text
    assert "+0.0 pts [-20.4, +20.4] ┆ 1.0000 exact ┆ 1.0000 ┆ []" in text


# -------------------------------------------------------------------- options


def test_rules_may_repeat(ds: str, tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('[[rule]]\nname = "a"\nrequires = ["tests"]\n')
    (tmp_path / "b.json").write_text('[{"name": "b", "requires": ["tests", "review"]}]')
    args = ["--rules", str(tmp_path / "a.toml"), "--rules", str(tmp_path / "b.json")]
    body = json.loads(ok("rates", ds, *args, "--as-of", AS_OF, "-f", "json").stdout)
    assert [(r["rule"], r["accepted"]) for r in body["rows"]] == [
        ("a", 24),
        ("b", 14),
        ("recorded", 24),
    ]


@pytest.mark.parametrize("command", ["accept", "rates", "compare", "sql"])
def test_short_f_is_format_in_every_command(ds: str, command: str) -> None:
    extra = {"compare": ["--rule", "tests"], "sql": ["SELECT 1 AS one"]}.get(command, [])
    body = json.loads(ok(command, ds, *extra, "--as-of", AS_OF, "-f", "json").stdout)
    assert isinstance(body, dict)


def test_sql_file_option(ds: str, tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text("SELECT count(*) AS n FROM runs WHERE ocp_version = '0.2'")
    assert ok("sql", ds, "--file", str(query), "-f", "csv").stdout == "n\n5\n"


def test_version() -> None:
    assert ok("--version").stdout == f"ocp-analytics {oa.__version__}\n"


def test_help_of_every_command_has_examples() -> None:
    for command in ["ingest", "accept", "rates", "compare", "sql"]:
        text = ok(command, "--help").stdout
        assert "Examples:" in text, command
        assert re.search(rf"^ +ocp-analytics {command} ", text, re.M), command


# --------------------------------------------------------------------- errors


def test_missing_output_folder(ds: str, tmp_path: Path) -> None:
    out = tmp_path / "nope" / "r.csv"
    text = failed(1, "rates", ds, "--out", str(out))
    assert text == (
        f"error: the folder '{out.parent}' of --out '{out}' does not exist.\n\n"
        f"Hint: create it first (mkdir -p {out.parent}) or pick another path.\n"
    )


def test_missing_sql_file(ds: str, tmp_path: Path) -> None:
    text = failed(1, "sql", ds, "--file", str(tmp_path / "missing.sql"))
    assert f"error: SQL file '{tmp_path / 'missing.sql'}' does not exist." in text
    assert "Hint: check the path given to --file." in text


def test_bad_sql_is_one_error(ds: str) -> None:
    text = failed(1, "sql", ds, "SELECT nope FROM runs")
    assert text.startswith('error: Binder Error: Referenced column "nope" not found')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "--rule", "tests", "--sample", "-1"], "Invalid value for '--sample'"),
        (["rates", "--min-tier", "strong"], "Invalid value for '--min-tier'"),
        (["rates", "--format", "xml"], "Invalid value for '--format' / '-f'"),
    ],
)
def test_bad_option_values_are_usage_errors(ds: str, args: list[str], message: str) -> None:
    command, *rest = args
    text = failed(2, command, ds, *rest)
    assert f"Try 'ocp-analytics {command} --help' for help." in text
    assert message in text


def test_bad_as_of(ds: str) -> None:
    text = failed(1, "rates", ds, "--as-of", "yesterday")
    assert text == (
        "error: cannot read --as-of 'yesterday' as an instant.\n\n"
        "Hint: use ISO 8601, e.g. 2026-12-01T00:00:00Z or 2026-12-01 (midnight UTC).\n"
    )


def test_piped_sql_without_semicolon_runs(ds: str) -> None:
    result = ok("sql", ds, "-f", "csv", input="SELECT count(*) AS n\nFROM runs\n")
    assert result.stdout == "n\n32\n"
    several = ok("sql", ds, "-f", "csv", input="SET VARIABLE k = 2;\nSELECT getvariable('k') AS k")
    assert several.stdout == "k\n2\n"


def test_piped_empty_sql_is_an_error(ds: str) -> None:
    result = run("sql", ds, input="  ;\n")
    assert result.exit_code == 1
    assert result.output.startswith("error: no SQL to run.")


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("", "Hint: write each rule as a [[rule]] table (TOML) or an object in a JSON list."),
        (
            '[[rules]]\nname = "a"\nrequires = ["tests"]\n',
            "Hint: the tables are [[rule]], not [[rules]]: rename them.",
        ),
    ],
    ids=["empty", "rules-typo"],
)
def test_rules_file_without_rule_is_an_error(ds: str, tmp_path: Path, text: str, hint: str) -> None:
    path = tmp_path / "bars.toml"
    path.write_text(text)
    for command in ["accept", "rates", "compare", "sql"]:
        out = failed(1, command, ds, "--rules", str(path))
        assert out == f"error: rules file '{path}' holds no rule.\n\n{hint}\n", command


def test_empty_json_rules_file_is_an_error(ds: str, tmp_path: Path) -> None:
    path = tmp_path / "bars.json"
    path.write_text("[]")
    assert "holds no rule" in failed(1, "rates", ds, "--rules", str(path))


# ---------------------------------------------------------------------- rates


def test_rates_table_shows_decided_share(ds: str) -> None:
    text = ok("rates", ds, "--rule", "tests+review", "--as-of", AS_OF).stdout
    assert "100.0 % [78.5–100.0] of 14 decided" in text
    assert "100.0 % [86.2–100.0] of 24 decided" in text
    assert "ci_low" not in text and "decided_share" not in text


def test_rates_csv_keeps_numbers(ds: str) -> None:
    text = ok("rates", ds, "--rule", "tests+review", "--as-of", AS_OF, "-f", "csv").stdout
    row = pl.read_csv(text.encode()).filter(rule="tests+review").row(0, named=True)
    assert (row["accept_rate"], row["decided_share"]) == (1.0, 14 / 32)


def test_label_no_run_has_is_a_warning(ds: str) -> None:
    result = ok("rates", ds, "--by", "label.nope", "--as-of", AS_OF, "-f", "csv")
    assert result.stderr.startswith("warning: no run has the label 'nope'")
    assert "UserWarning" not in result.stderr
    cmp = ok("compare", ds, "--rule", "tests", "--by", "label.nope", "--as-of", AS_OF, "-f", "json")
    assert "warning: no run has the label 'nope'" in cmp.stderr


# ------------------------------------------------------------- time window


def test_rates_per_period(ds: str) -> None:
    body = json.loads(ok("rates", ds, "--period", "month", "--as-of", AS_OF, "-f", "json").stdout)
    assert [(r["period"], r["rule"], r["runs"]) for r in body["rows"]] == [
        ("2026-08-01T00:00:00+00:00", "recorded", 4),
        ("2026-09-01T00:00:00+00:00", "recorded", 23),
        ("2026-11-01T00:00:00+00:00", "recorded", 1),  # late-revert.ocp.json
        (None, "recorded", 4),  # runs with neither ended_at nor started_at
    ]


def test_since_and_until_select_runs(ds: str) -> None:
    window = ["--since", "2026-09-01", "--until", "2026-10-01", "--as-of", AS_OF]
    assert ok("accept", ds, *window, "-f", "csv").stdout.count("\n") == 1 + 23
    body = json.loads(ok("rates", ds, *window, "-f", "json").stdout)
    assert [(r["rule"], r["runs"]) for r in body["rows"]] == [("recorded", 23)]
    text = failed(1, "rates", ds, "--since", "2026-10-01", "--until", "2026-09-01")
    assert text.startswith("error: the window is empty: since 2026-10-01T00:00:00+00:00")


def test_since_as_a_duration_before_as_of(ds: str) -> None:
    body = json.loads(
        # 45 days before 2026-10-16 is 2026-09-01, the start of the window of the test
        # above; no --until: the window ends at as_of (#39), so the run of
        # late-revert.ocp.json (2026-11-30) is not in it
        ok("rates", ds, "--since", "45d", "--as-of", "2026-10-16T00:00:00Z", "-f", "json").stdout
    )
    assert [(r["rule"], r["runs"]) for r in body["rows"]] == [("recorded", 23)]


def test_bad_period_is_a_usage_error(ds: str) -> None:
    text = failed(2, "rates", ds, "--period", "year")
    assert "Invalid value for '--period'" in text


# ----------------------------------------------------------------------- docs


def _link_checker() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "docs" / "check_links.py"
    spec = importlib.util.spec_from_file_location("check_links", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_link_of_readme_and_docs_resolves_in_the_repository() -> None:
    checker = _link_checker()
    pages = sorted({p for pattern in checker.PAGES for p in checker.ROOT.glob(pattern)})
    assert len(pages) >= 8
    assert {p: checker.broken(p) for p in pages if checker.broken(p)} == {}


def test_link_checker_finds_what_is_broken(tmp_path: Path) -> None:
    checker = _link_checker()
    (tmp_path / "a.md").write_text("# Title\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](a.md#title) [gone](b.md) [out](../x.md) [anchor](a.md#nope) "
        "[web](https://example.org) `[code](c.md)`\n```\n[fenced](d.md)\n```\n"
    )
    assert checker.broken(page, root=tmp_path) == [
        "b.md: no such file",
        "../x.md: outside the repository",
        "a.md#nope: no heading #nope in a.md",
    ]


# --------------------------------------------------------------------- ingest


def test_ingest_of_an_empty_folder_is_a_no_op(tmp_path: Path) -> None:
    (tmp_path / "today").mkdir()
    result = ok("ingest", str(tmp_path / "today"), "-o", str(tmp_path / "runs.dataset"))
    assert result.stdout.splitlines()[1] == "sources: 0 (no document file found; nothing to do)"


def test_ingest_of_a_path_matching_nothing_is_an_error(tmp_path: Path) -> None:
    text = failed(1, "ingest", str(tmp_path / "nope"), "-o", str(tmp_path / "runs.dataset"))
    assert text.startswith("error: ") and "Hint: " in text


def test_ingest_strict_exits_3(tmp_path: Path) -> None:
    bad = Path(__file__).parent / "data" / "bad" / "not_json.ndjson"
    result = run("ingest", str(bad), "-o", str(tmp_path / "runs.dataset"), "--strict")
    assert result.exit_code == 3
    assert result.stderr == "error: 1 document(s) quarantined\n"
