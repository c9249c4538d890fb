"""The SQL layer (sql/ and ocp_analytics.sql): literal cases, audits, CLI, safety.

Literal cases live in ``tests/data/sql/*.json``: documents in, expected rows
out, for ``views/acceptance.sql``, ``views/rates.sql`` and every file of
``sql/queries/``. The differential test against the polars engine on
generated documents is ``tests/property/test_sql_differential.py``; the
files themselves (headers, setup order, generated files) are checked by
``tests/test_sql_files.py``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

import ocp_analytics as oa
from ocp_analytics.engine.rates import flips_from
from ocp_analytics.exceptions import DatasetError, OcpAnalyticsError, RuleError
from ocp_analytics.model.rules import Rule, rule_from_object
from ocp_analytics.sql import connect, run_query, sql_files
from ocp_analytics.store.dataset import create

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).parent / "data" / "sql"
EXAMPLES = Path(__file__).parent / "data" / "examples"
AS_OF = datetime(2027, 1, 1, tzinfo=UTC)
END = "2026-09-23T17:56:00Z"


# ------------------------------------------------------------------ helpers


def _ingest(docs: list[dict], root: Path) -> Path:
    src = root / "docs.ndjson"
    src.write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
    summary = oa.ingest(src, root / "ds")
    assert summary.quarantined == 0 and summary.runs_new == len(docs)
    return root / "ds"


def _doc(run_id: str, rule: Any = None, signals: list[dict] | None = None, **run: Any) -> dict:
    body: dict[str, Any] = {
        "id": run_id,
        "started_at": "2026-09-23T17:00:00Z",
        "ended_at": END,
    }
    if rule is not None:
        body["acceptance_rule"] = rule
    body["signals"] = [{"id": f"s{i}", **s} for i, s in enumerate(signals or [])]
    body.update(run)
    return {
        "ocp": "0.3",
        "producer": {"name": "t"},
        "privacy": {"profile": "metadata_only"},
        "run": body,
        "nodes": [],
        "attempts": [],
    }


def _verdict(name: str, value: str, at: str = "2026-09-23T17:10:00Z") -> dict:
    return {
        "kind": "verdict",
        "name": name,
        "value": value,
        "observed_at": at,
        "tier": "verified",
    }


def _plain(value: Any) -> Any:
    """A result value as it is written in a case file."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=0, abs_tol=1e-12)
    return got == want


def _rules(items: list[Any] | None) -> list[Rule | str] | None:
    if items is None:
        return None
    return [rule_from_object(r, where="case") if isinstance(r, dict) else r for r in items]


def _case_files() -> list[Path]:
    return sorted(CASES.glob("*.json"))


@pytest.fixture(scope="module")
def examples_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("examples") / "ds"
    oa.ingest(EXAMPLES, ds)
    return ds


# ------------------------------------------------------------ literal cases


@pytest.mark.parametrize("case_file", _case_files(), ids=lambda p: p.stem)
def test_literal_case(case_file: Path, tmp_path: Path) -> None:
    case = json.loads(case_file.read_text())
    ds = _ingest(case["documents"], tmp_path)
    query = case.get("query") or (sql_files() / case["sql"]).read_text()
    got = run_query(
        ds,
        query,
        rules=_rules(case.get("rules")),
        as_of=case["as_of"],
        variables=case.get("variables"),
    )
    rows = [{k: _plain(v) for k, v in r.items()} for r in got.iter_rows(named=True)]
    want = case["expected"]
    assert [list(r) for r in rows[:1]] == [list(r) for r in want[:1]], "columns differ"
    assert len(rows) == len(want), f"{len(rows)} rows, expected {len(want)}:\n{rows}"
    for got_row, want_row in zip(rows, want, strict=True):
        for col, value in want_row.items():
            assert _same(got_row[col], value), (
                f"{case_file.name}: row {want_row} "
                f"column {col}: SQL {got_row[col]!r}, expected {value!r}"
            )


def _engine_rows(case: dict, ds: Path) -> list[dict]:
    """What the polars engine gives for a case (the twin of its SQL file)."""
    rules, as_of = _rules(case.get("rules")), case["as_of"]
    variables = case.get("variables", {})
    min_tier = variables.get("ocp_min_tier")
    kind = case["sql"]
    if kind == "queries/rates_by_period.sql":
        pytest.skip("held to oa.rates(period=...) by tests/test_sql_period.py")
    if kind == "views/acceptance.sql":
        frame = oa.acceptance(ds, rules, as_of=as_of).sort("run_id", "rule")
    elif kind == "views/rates.sql":
        frame = oa.rates(ds, rules, as_of=as_of)
    elif kind == "queries/flips.sql":
        frame = flips_from(
            oa.acceptance(ds, rules, as_of=as_of).lazy(), sample=variables.get("ocp_sample", 5)
        ).collect()
    elif kind == "queries/rates_by.sql":
        frame = oa.rates(ds, rules, by=variables["ocp_by"], min_tier=min_tier, as_of=as_of)
    elif kind == "queries/passk.sql":
        frame = oa.passk(ds, rules, k=variables["ocp_k"], as_of=as_of).sort("rule", "k")
    elif kind == "queries/cost.sql":
        measure = variables.get("ocp_measure", "cost_usd")
        frame = oa.cost(ds, rules, measure=measure, as_of=as_of)
    elif kind == "queries/rates_by_label.sql":
        key = variables["ocp_label"]
        frame = oa.rates(ds, rules, by=f"label.{key}", min_tier=min_tier, as_of=as_of)
    else:
        raise AssertionError(f"no engine twin known for {kind}")
    return [{k: _plain(v) for k, v in r.items()} for r in frame.iter_rows(named=True)]


@pytest.mark.parametrize("case_file", _case_files(), ids=lambda p: p.stem)
def test_literal_case_agrees_with_engine(case_file: Path, tmp_path: Path) -> None:
    """Every case holds the polars engine to the same rows."""
    case = json.loads(case_file.read_text())
    ds = _ingest(case["documents"], tmp_path)
    rows = _engine_rows(case, ds)
    assert len(rows) == len(case["expected"])
    for got_row, want_row in zip(rows, case["expected"], strict=True):
        assert list(got_row) == list(want_row)
        for col, value in want_row.items():
            assert _same(got_row[col], value), f"{case_file.name} {want_row} column {col}"


def test_every_query_and_the_acceptance_view_have_a_case() -> None:
    covered = {json.loads(p.read_text())["sql"] for p in _case_files()}
    wanted = {f"queries/{p.name}" for p in (sql_files() / "queries").glob("*.sql")}
    wanted |= {"views/acceptance.sql", "views/rates.sql"}
    assert wanted <= covered, f"no literal case for {sorted(wanted - covered)}"


# ------------------------------------------------------------------ connect


def test_views_have_engine_columns(examples_ds: Path) -> None:
    con = connect(examples_ds, as_of=AS_OF)
    types = dict(con.sql("SELECT * FROM acceptance").pl().schema)
    engine = dict(oa.acceptance(examples_ds, as_of=AS_OF).schema)
    assert types == engine
    assert list(types) == [
        "run_id",
        "rule",
        "outcome",
        "reasons",
        "tier",
        "q",
        "accepted_attempt",
        "attempts_to_acceptance",
        "accepted_attempt_n",
        "accepted_round",
        "window_open",
        "as_of",
    ]
    tz = con.sql("SELECT current_setting('TimeZone')").fetchall()
    assert tz == [("UTC",)]


def test_examples_match_engine(examples_ds: Path) -> None:
    rules = ["tests", "tests+review", "runtime_s<=3600"]
    con = connect(examples_ds, rules=rules, as_of=AS_OF)
    sql = con.sql("SELECT * FROM acceptance").pl().sort("run_id", "rule")
    engine = oa.acceptance(examples_ds, rules, as_of=AS_OF).sort("run_id", "rule")
    assert sql.equals(engine)
    sql_rates = con.sql("SELECT * FROM rates").pl()
    engine_rates = oa.rates(examples_ds, rules, as_of=AS_OF)
    assert sql_rates.rows() == engine_rates.rows()


def test_tables_keep_current_versions_only(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1" / "a.json").write_bytes(
        orjson.dumps(_doc("r", {"name": "t", "requires": ["tests"]}, [_verdict("tests", "fail")]))
    )
    (tmp_path / "v2" / "a.json").write_bytes(
        orjson.dumps(_doc("r", {"name": "t", "requires": ["tests"]}, [_verdict("tests", "pass")]))
    )
    oa.ingest(tmp_path / "v1", ds)
    oa.ingest(tmp_path / "v2", ds)
    con = connect(ds, as_of=AS_OF)
    # the second batch superseded a run, so the views filter by current_docs
    assert con.sql("SELECT getvariable('ocp_superseding')").fetchall() == [(1,)]
    assert con.sql("SELECT count(*) FROM ocp_all_versions('runs')").fetchall() == [(2,)]
    assert con.sql("SELECT count(*) FROM runs").fetchall() == [(1,)]
    assert con.sql("SELECT value_text FROM signals").fetchall() == [("pass",)]
    assert con.sql("SELECT outcome FROM acceptance").fetchall() == [("accepted",)]


def test_uncommitted_parts_are_not_read(tmp_path: Path, examples_ds: Path) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(examples_ds, ds)
    part = next((ds / "runs").glob("*.parquet"))
    shutil.copy(part, ds / "runs" / "99999999-leftover-00000.parquet")
    con = connect(ds)
    assert con.sql("SELECT count(*) FROM runs").fetchall() == [(32,)]
    leftovers = con.sql((sql_files() / "checks" / "unlisted_parts.sql").read_text()).fetchall()
    assert [Path(f).name for (f,) in leftovers] == ["99999999-leftover-00000.parquet"]


def test_empty_dataset_has_columns(tmp_path: Path) -> None:
    ds = create(tmp_path / "ds")  # a dataset with no batch committed yet
    con = connect(ds, rules="tests")
    for view, columns in [
        ("runs", 27),
        ("quarantine", 8),
        ("acceptance", 12),
        ("rates", 19),
    ]:
        rel = con.sql(f"SELECT * FROM {view}")
        assert len(rel.columns) == columns
        assert rel.fetchall() == []


def test_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="Hint:"):
        connect(tmp_path)


def test_reserved_rule_name_is_refused(examples_ds: Path) -> None:
    with pytest.raises(RuleError):
        connect(examples_ds, rules=[Rule("recorded", requires=("tests",))])


def test_alternative_rules_table_checks_rows(examples_ds: Path) -> None:
    con = connect(examples_ds)
    for bad in (
        "INSERT INTO alternative_rules (name) VALUES ('recorded')",
        "INSERT INTO alternative_rules (name, score_name) VALUES ('x', 'runtime_s')",
        "INSERT INTO alternative_rules (name, window_days) VALUES ('x', -1)",
    ):
        with pytest.raises(duckdb.ConstraintException):
            con.execute(bad)


def test_alternative_rules_inserted_in_sql(examples_ds: Path) -> None:
    """Rows written by an analyst in SQL behave as the same Rule in the engine."""
    con = connect(examples_ds, as_of=AS_OF)
    con.execute(
        "INSERT INTO alternative_rules (name, requires, score_name, score_target, "
        "score_better) VALUES ('tr', ['tests', 'review', 'tests'], 'runtime_s', 3600, "
        "'lower')"
    )
    rule = Rule(
        "tr",
        requires=("tests", "review", "tests"),
        score=oa.ScoreTarget("runtime_s", 3600.0, "lower"),
    )
    sql = con.sql("SELECT * FROM acceptance WHERE rule = 'tr'").pl().sort("run_id")
    engine = oa.acceptance(examples_ds, [rule], as_of=AS_OF, recorded=False)
    assert sql.equals(engine.sort("run_id"))


def test_persistent_database_keeps_rules(tmp_path: Path, examples_ds: Path) -> None:
    db = str(tmp_path / "analysis.duckdb")
    connect(examples_ds, rules=["tests", "tests+review"], database=db).close()
    con = connect(examples_ds, database=db)
    names = con.sql("SELECT name FROM alternative_rules ORDER BY name").fetchall()
    assert names == [("tests",), ("tests+review",)]
    con.close()
    con = connect(examples_ds, rules=[], database=db)
    assert con.sql("SELECT count(*) FROM alternative_rules").fetchall() == [(0,)]


# ------------------------------------------------------------------- as_of


def test_as_of_is_honoured(tmp_path: Path) -> None:
    revert = {
        "kind": "event",
        "name": "revert",
        "value": "commit/abc",
        "observed_at": "2026-09-26T00:00:00Z",
        "tier": "verified",
    }
    ds = _ingest(
        [
            _doc(
                "r",
                {"name": "t", "requires": ["tests"]},
                [_verdict("tests", "pass"), revert],
            )
        ],
        tmp_path,
    )
    query = "SELECT outcome, reasons, window_open, as_of FROM acceptance"
    before = run_query(ds, query, as_of="2026-09-25T00:00:00Z").row(0)
    assert before == ("accepted", [], True, datetime(2026, 9, 25, tzinfo=UTC))
    after = run_query(ds, query, as_of=datetime(2026, 9, 27, tzinfo=UTC)).row(0)
    assert after == (
        "rejected",
        ["late:revert"],
        True,
        datetime(2026, 9, 27, tzinfo=UTC),
    )
    closed = run_query(ds, query, as_of="2026-10-08T00:00:00+02:00").row(0)
    assert closed == (
        "rejected",
        ["late:revert"],
        False,
        datetime(2026, 10, 7, 22, tzinfo=UTC),
    )
    # the views read the variable at query time: changing it later counts
    con = connect(ds, as_of="2026-09-25T00:00:00Z")
    con.execute("SET VARIABLE ocp_as_of = ?", [datetime(2026, 9, 27, tzinfo=UTC)])
    assert con.sql("SELECT outcome FROM acceptance").fetchall() == [("rejected",)]


def _point_in_time_docs() -> list[dict]:
    """Runs that ended 2025-12-20, each with a signal observed after as_of 2026-01-01."""
    end, early, late = "2025-12-20T10:00:00Z", "2025-12-20T10:05:00Z", "2026-10-15T12:00:00Z"
    runtime = {"name": "runtime_s", "target": 3600, "better": "lower"}

    def score(value: float, at: str) -> dict:
        return {"kind": "score", "name": "runtime_s", "value": value, "observed_at": at}

    revert = {"kind": "event", "name": "revert", "observed_at": "2026-01-02T00:00:00Z"}
    return [
        _doc(
            "later_verdict",
            {"requires": ["tests", "review"]},
            [_verdict("tests", "pass", early), _verdict("review", "reject", late)],
            ended_at=end,
        ),
        _doc(
            "later_score",
            {"requires": ["tests"], "score": runtime},
            [_verdict("tests", "pass", early), score(3300, early), score(4000, late)],
            ended_at=end,
        ),
        _doc(
            "later_revert",
            {"requires": ["tests"]},
            [_verdict("tests", "pass", early), revert],
            ended_at=end,
        ),
    ]


@pytest.mark.parametrize("backend", ["polars", "sql"])
def test_signals_observed_after_as_of_take_no_part(tmp_path: Path, backend: str) -> None:
    """SEMANTICS §1, §4: as_of is the instant of knowledge, on every backend."""
    ds = _ingest(_point_in_time_docs(), tmp_path)
    cols = ["run_id", "outcome", "reasons", "tier"]

    def rows(as_of: str) -> list[tuple]:
        if backend == "polars":
            frame = oa.acceptance(ds, as_of=as_of)
        else:
            frame = run_query(ds, "SELECT * FROM acceptance", as_of=as_of)
        return frame.select(cols).sort("run_id").rows()

    assert rows("2026-01-01T00:00:00Z") == [
        ("later_revert", "accepted", [], "verified"),
        ("later_score", "accepted", [], "asserted"),  # the score written with no tier
        ("later_verdict", "unknown", ["missing:review"], "verified"),
    ]
    assert rows("2026-11-01T00:00:00Z") == [
        ("later_revert", "rejected", ["late:revert"], "asserted"),
        ("later_score", "rejected", ["below_target:runtime_s"], "asserted"),
        ("later_verdict", "rejected", ["failed:review"], "verified"),
    ]


def test_latest_verdicts_view_reads_what_was_known(tmp_path: Path) -> None:
    ds = _ingest(_point_in_time_docs()[:1], tmp_path)
    query = "SELECT name, state FROM latest_verdicts ORDER BY name"
    assert run_query(ds, query, as_of="2026-01-01T00:00:00Z").rows() == [("tests", 2)]
    later = run_query(ds, query, as_of="2026-10-15T12:00:00Z").rows()
    assert later == [("review", 0), ("tests", 2)]


def test_as_of_defaults_to_now(tmp_path: Path) -> None:
    ds = _ingest([_doc("r", {"name": "t", "requires": ["tests"]})], tmp_path)
    before = datetime.now(UTC).replace(microsecond=0)
    [(as_of,)] = connect(ds).sql("SELECT as_of FROM acceptance").fetchall()
    assert before <= as_of <= datetime.now(UTC)
    assert as_of.microsecond == 0


# ----------------------------------------------------------------- security


def test_rule_name_is_never_sql(tmp_path: Path) -> None:
    ds = _ingest(
        [_doc("r", {"name": "t", "requires": ["tests"]}, [_verdict("tests", "pass")])],
        tmp_path,
    )
    name = "x'); DROP TABLE runs; --"
    con = connect(ds, rules=[Rule(name, requires=("tests",))], as_of=AS_OF)
    rows = con.sql("SELECT rule, outcome FROM acceptance ORDER BY rule").fetchall()
    assert rows == [("recorded", "accepted"), (name, "accepted")]
    assert con.sql("SELECT count(*) FROM runs").fetchall() == [(1,)]
    assert con.sql("SELECT count(*) FROM alternative_rules").fetchall() == [(1,)]


def test_quotes_round_trip(tmp_path: Path) -> None:
    value = "a'b\"c"
    folder = tmp_path / 'it\'s "here"'
    folder.mkdir()
    ds = _ingest(
        [
            _doc(
                "r'1",
                {"name": value, "requires": [value]},
                [_verdict(value, "pass")],
                labels={value: value},
            )
        ],
        folder,
    )
    got = run_query(ds, "SELECT run_id, labels, rule_name FROM runs")
    assert got.row(0) == ("r'1", {value: value}, value)
    by_label = run_query(
        ds,
        sql_files() / "queries" / "rates_by_label.sql",
        variables={"ocp_label": value},
        as_of=AS_OF,
    )
    assert by_label.columns[0] == f"label.{value}"
    assert by_label.select(f"label.{value}", "accepted").row(0) == (value, 1)


@pytest.fixture(scope="module")
def odd_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset whose folder name is a glob pattern, next to a folder it would match."""
    root = tmp_path_factory.mktemp("odd")
    ds = root / "odd[1]*?.dataset"
    oa.ingest(EXAMPLES / "v0.3", ds)  # 7 runs
    oa.ingest(EXAMPLES / "herdr-run-assemble-v01.ocp.json", root / "odd1ab.dataset")  # decoy
    return ds


def test_dataset_path_with_glob_characters_is_literal(odd_ds: Path) -> None:
    """Issue 9: '[', '*', '?' in the dataset path are never patterns (the decoy
    odd1ab.dataset, which the pattern matches, holds 1 other run)."""
    con = connect(odd_ds, as_of=AS_OF)
    try:
        assert con.sql("SELECT rule, runs, accepted FROM rates").fetchall() == [("recorded", 7, 7)]
        assert con.sql("SELECT count(*) FROM quarantine").fetchall() == [(0,)]
        assert len(con.execute("SELECT getvariable('ocp_batch_files')").fetchall()[0][0]) == 1
        for check in sorted((sql_files() / "checks").glob("*.sql")):
            assert con.sql(check.read_text()).fetchall() == [], check.name
    finally:
        con.close()


def test_variable_names_are_checked(examples_ds: Path) -> None:
    with pytest.raises(OcpAnalyticsError, match="not a valid DuckDB variable name"):
        run_query(examples_ds, "SELECT 1", variables={"x = 1; DROP TABLE runs; --": 1})


# ------------------------------------------------------------------- checks


CHECKS = sorted((sql_files() / "checks").glob("*.sql"))


@pytest.fixture(scope="module")
def examples_con(examples_ds: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(examples_ds)
    yield con
    con.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda p: p.stem)
def test_check_is_clean_on_examples(check: Path, examples_con: duckdb.DuckDBPyConnection) -> None:
    assert examples_con.sql(check.read_text()).fetchall() == []


def _broken(examples_ds: Path, tmp_path: Path, edit: Any) -> Path:
    ds = tmp_path / "broken"
    shutil.copytree(examples_ds, ds)
    record_path = next((ds / "_batches").glob("*.json"))
    record = orjson.loads(record_path.read_bytes())
    edit(record["files"])
    record_path.write_bytes(orjson.dumps(record))
    return ds


def _counts(ds: Path) -> dict[str, int]:
    con = connect(ds)
    try:
        return {p.stem: len(con.sql(p.read_text()).fetchall()) for p in CHECKS}
    finally:
        con.close()


def test_checks_find_orphans(examples_ds: Path, tmp_path: Path) -> None:
    ds = _broken(examples_ds, tmp_path, lambda files: files.update(runs=[]))
    counts = _counts(ds)
    assert counts["orphan_rows"] > 0
    assert counts["runs_without_current_version"] > 0
    assert counts["duplicate_current_runs"] == counts["multiple_rules_per_doc"] == 0


def test_checks_find_duplicates(examples_ds: Path, tmp_path: Path) -> None:
    def twice(files: dict[str, list[str]]) -> None:
        files["runs"] = files["runs"] * 2
        files["rules"] = files["rules"] * 2

    counts = _counts(_broken(examples_ds, tmp_path, twice))
    assert counts["duplicate_current_runs"] == 32
    assert counts["duplicate_doc_ids"] == 32  # 33 documents, one outranked in its batch
    assert counts["multiple_rules_per_doc"] > 0
    assert counts["orphan_rows"] == 0


# ---------------------------------------------------------------------- CLI


CLI = shutil.which("duckdb")


def _cli(*commands: str, cwd: Path) -> list[list[str]]:
    args = [CLI, "-csv"]
    for c in commands:
        args += ["-c", c]
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return list(csv.reader(io.StringIO(done.stdout)))


@pytest.mark.skipif(CLI is None, reason="the duckdb CLI is not on PATH")
def test_duckdb_cli_documented_command(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES / "v0.3", ds)
    rows = _cli(
        f"SET VARIABLE ocp_dataset = '{ds}'",
        f".read {sql_files() / 'setup.sql'}",
        "SET VARIABLE ocp_as_of = TIMESTAMPTZ '2027-01-01 00:00:00+00'",
        "INSERT INTO alternative_rules (name, requires) VALUES ('tests+review', "
        "['tests', 'review'])",
        "SELECT rule, runs, accepted, unknown FROM rates",
        cwd=tmp_path,  # not the repository: the file must not depend on the folder
    )
    assert rows == [
        ["rule", "runs", "accepted", "unknown"],
        ["recorded", "7", "7", "0"],
        ["tests+review", "7", "4", "3"],
    ]


@pytest.mark.skipif(CLI is None, reason="the duckdb CLI is not on PATH")
def test_duckdb_cli_agrees_with_engine(examples_ds: Path, tmp_path: Path) -> None:
    rows = _cli(
        f"SET VARIABLE ocp_dataset = '{examples_ds}'",
        f".read {sql_files() / 'setup.sql'}",
        "SET VARIABLE ocp_as_of = '2027-01-01T00:00:00Z'",
        "SELECT run_id, outcome, array_to_string(reasons, '|'), tier, "
        "attempts_to_acceptance FROM acceptance ORDER BY run_id",
        cwd=tmp_path,
    )
    engine = oa.acceptance(examples_ds, as_of=AS_OF).sort("run_id")
    want = [
        [
            r["run_id"],
            r["outcome"],
            "|".join(r["reasons"]),
            r["tier"],
            "NULL" if r["attempts_to_acceptance"] is None else str(r["attempts_to_acceptance"]),
        ]
        for r in engine.iter_rows(named=True)
    ]
    assert rows[1:] == want
    # every audit in one session: each prints only its CSV header
    reads = [f".read {check}" for check in CHECKS]
    out = _cli(
        f"SET VARIABLE ocp_dataset = '{examples_ds}'",
        f".read {sql_files() / 'setup.sql'}",
        *reads,
        cwd=tmp_path,
    )
    assert len(out) == len(CHECKS), out


@pytest.mark.skipif(CLI is None, reason="the duckdb CLI is not on PATH")
def test_duckdb_cli_reads_glob_characters_literally(odd_ds: Path, tmp_path: Path) -> None:
    rows = _cli(
        f"SET VARIABLE ocp_dataset = '{odd_ds}'",
        f".read {sql_files() / 'setup.sql'}",
        "SELECT rule, runs FROM rates",
        cwd=tmp_path,
    )
    assert rows == [["rule", "runs"], ["recorded", "7"]]


@pytest.mark.skipif(CLI is None, reason="the duckdb CLI is not on PATH")
def test_duckdb_cli_without_dataset_says_how(tmp_path: Path) -> None:
    done = subprocess.run(
        [CLI, "-c", f".read {sql_files() / 'setup.sql'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "ocp_dataset is not set" in done.stdout + done.stderr


def test_compacted_parts_are_read_once_and_older_snapshots_read_the_old_ones(
    history: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """A compaction's record replaces parts: SQL reads its parts, not both, from its seq on."""
    from ocp_analytics.store.maintenance import compact

    ds = tmp_path / "ds"
    shutil.copytree(history[0], ds)
    query = "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM signals), * FROM rates"
    before = run_query(ds, query, as_of=AS_OF)
    compact(ds, target_bytes=64 << 20)
    assert run_query(ds, query, as_of=AS_OF).rows() == before.rows()
    assert run_query(ds, query, as_of=AS_OF).rows() == oa.run_query(ds, query, as_of=AS_OF).rows()
    for seq, copy in enumerate(history[1], 1):
        at = run_query(ds, query, as_of=AS_OF, snapshot=seq).rows()
        assert at == run_query(copy, query, as_of=AS_OF).rows()
