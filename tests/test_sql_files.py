"""The SQL files themselves: headers, setup order, generated files.

Every file of ``sql/`` is one statement under a header comment (Purpose,
Parameters, Output). Here the header's output columns are held to the real
relation (``DESCRIBE`` on the bundled examples), the setup order to the
names each file uses, the generated files (``setup.sql``, the tier macros)
to what renders them, and the tier and path macros to what they mean. What
the views compute is held to the engine by ``tests/test_sql.py`` and
``tests/property/test_sql_differential.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

import ocp_analytics as oa
from ocp_analytics import schemas
from ocp_analytics import sql as oasql
from ocp_analytics.exceptions import OcpAnalyticsError
from ocp_analytics.sql import SETUP_FILES, connect, setup_script, sql_files
from ocp_analytics.sql._tiers import tier_macros

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = Path(__file__).parent / "data" / "examples"


def _all_sql_files() -> list[Path]:
    return sorted(p for p in sql_files().rglob("*.sql") if p.name != "setup.sql")


def _name(path: Path) -> str:
    return str(path.relative_to(sql_files()))


@pytest.fixture(scope="module")
def examples_con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    ds = tmp_path_factory.mktemp("examples") / "ds"
    oa.ingest(EXAMPLES, ds)
    con = connect(ds, rules=["tests+review"], as_of="2027-01-01T00:00:00Z")
    yield con
    con.close()


# ------------------------------------------------------------ one statement


@pytest.mark.parametrize("path", _all_sql_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_sql_file_has_header_and_one_statement(path: Path) -> None:
    text = path.read_text()
    first = text.splitlines()[0]
    assert first.startswith(f"-- {path.stem}"), f"header should start with '-- {path.stem}'"
    header = "\n".join(line for line in text.splitlines() if line.startswith("--"))
    assert "Purpose" in header, "header lacks Purpose"
    assert "Parameters" in header, "header lacks Parameters"
    assert "Output" in header, "header lacks Output"
    assert len(duckdb.extract_statements(text)) == 1, "one statement per file"


# ------------------------------------------------------- header vs DESCRIBE

# The header of a relation's file lists its columns after "Output columns…:",
# either on that line (one entry) or one entry a line, indented 3 spaces
# (deeper lines continue the entry). An entry is "name TYPE, name TYPE …"
# ("a, b BIGINT" shares a type; a parenthesis after a type is a remark;
# what follows is prose), or "those of ocp_analytics.schemas.TABLE",
# "those of the VIEW view", or "the ocp_by columns".
_HEAD = re.compile(r"^-- Output columns\b[^:]*:(.*)$")
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")
_GAP = re.compile("…")
_THOSE = re.compile(r"those of (?:the (\w+) view|ocp_analytics\.schemas\.([A-Z_]+))")

# How to make each file's relation: the variables a query needs.
_VARIABLES: dict[str, dict[str, Any]] = {
    "queries/rates_by.sql": {"ocp_by": ["repo", "task_type"]},  # runs has task_type first
    "queries/rates_by_label.sql": {"ocp_label": "team"},
    "queries/passk.sql": {"ocp_k": 3},
    "queries/rates_by_period.sql": {"ocp_period": "week"},
}


def _header_entries(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    start, head = next((i, m) for i, line in enumerate(lines) if (m := _HEAD.match(line)))
    inline = head[1].strip()
    entries = [inline] if inline else []
    for line in lines[start + 1 :]:
        if not line.startswith("--   "):
            break
        body = line[2:]
        if not inline and len(body) - len(body.lstrip()) == 3:
            entries.append(body.strip())
        else:
            entries[-1] += " " + body.strip()
    return entries


def _balanced(text: str, i: int) -> int:
    """The index after the parenthesis group opening at ``text[i]``."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    raise AssertionError(f"unbalanced parenthesis in {text!r}")


def _typed_names(entry: str) -> list[tuple[str, str | None]]:
    """``"a, b BIGINT, c VARCHAR (remark), d  prose"`` -> [(a, BIGINT), (b, BIGINT), ...].

    ``…`` stands for columns left out: its type, and that of the untyped
    names before it, is None.
    """
    out: list[tuple[str, str | None]] = []
    pending: list[str] = []
    i = 0
    while m := _IDENT.match(entry, i) or _GAP.match(entry, i):
        i = m.end()
        if m[0] == "…":  # the names before a gap share no type with those after
            out += [(name, None) for name in [*pending, "…"]]
            pending = []
        else:
            pending.append(m[0])
        if entry[i : i + 1] == " " and (t := _TYPE.match(entry, i + 1)):
            end = _balanced(entry, t.end()) if entry[t.end() : t.end() + 1] == "(" else t.end()
            while entry.startswith("[]", end):
                end += 2
            out += [(name, entry[t.start() : end]) for name in pending]
            pending, i = [], end
        if entry.startswith(" (", i):
            i = _balanced(entry, i + 1)
        if not entry.startswith(", ", i):
            break
        i += 2
    return out + [(name, None) for name in pending]


def _schema_columns(table: str, listed: str) -> list[tuple[str, str | None]]:
    """The columns of a table's schema; ``listed`` names some of them, in order."""
    names = getattr(schemas, table).names
    shown = _typed_names(listed)
    named = [c for c, _ in shown if c != "…"]
    if any(c == "…" for c, _ in shown):
        assert named == [c for c in names if c in named], f"{named} not in the order of {table}"
    elif named:
        assert named == names, f"{table} has the columns {names}"
    types = dict(shown)
    return [(c, types.get(c)) for c in names]


def _header_columns(name: str, variables: dict[str, Any]) -> list[tuple[str, str | None]]:
    columns: list[tuple[str, str | None]] = []
    for entry in _header_entries(sql_files() / name):
        if m := _THOSE.match(entry):
            if m[1]:
                columns += _header_columns(f"views/{m[1]}.sql", variables)
            else:
                columns += _schema_columns(m[2], entry[m.end() :].lstrip(":( "))
        elif entry.startswith("the ocp_by columns"):
            runs = [c for c, _ in _header_columns("views/runs.sql", variables)]
            columns += [(c, None) for c in runs if c in variables["ocp_by"]]
        elif entry.startswith('"label.KEY" VARCHAR'):
            columns.append((f"label.{variables['ocp_label']}", "VARCHAR"))
        else:
            columns += _typed_names(entry)
    return columns


def _duckdb_type(text: str) -> str:
    # DESCRIBE quotes struct fields that are keywords ("name", "value")
    text = text.replace("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ").replace('"', "")
    return " ".join(text.split())


def _relation(con: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyRelation:
    text = (sql_files() / name).read_text()
    if m := re.search(r"^CREATE (?:OR REPLACE VIEW|TABLE IF NOT EXISTS) (\w+)", text, re.M):
        return con.sql(f"SELECT * FROM {m[1]}")
    assert name.startswith(("queries/", "checks/")), f"{name} makes no relation"
    for key, value in _VARIABLES.get(name, {}).items():
        con.execute(f"SET VARIABLE {key} = ?", [value])
    return con.sql(text)


def _relation_files() -> list[str]:
    folders = ("views", "queries", "checks")
    names = [_name(p) for p in _all_sql_files() if p.parent.name in folders]
    return [*names, "setup/alternative_rules.sql"]


@pytest.mark.parametrize("name", _relation_files())
def test_header_lists_the_columns_of_the_relation(
    name: str, examples_con: duckdb.DuckDBPyConnection
) -> None:
    rel = _relation(examples_con, name)
    described = list(zip(rel.columns, (_duckdb_type(str(t)) for t in rel.types), strict=True))
    listed = _header_columns(name, _VARIABLES.get(name, {}))
    assert [c for c, _ in listed] == [c for c, _ in described], "column names or order"
    types = dict(described)
    wrong = [(c, t, types[c]) for c, t in listed if t is not None and _duckdb_type(t) != types[c]]
    assert not wrong, f"(column, header type, DESCRIBE type): {wrong}"


def test_header_parser_reads_every_form() -> None:
    entry = "a, b BIGINT, c STRUCT(x INTEGER, y VARCHAR)[] (remark), d VARCHAR  prose, e"
    assert _typed_names(entry) == [
        ("a", "BIGINT"),
        ("b", "BIGINT"),
        ("c", "STRUCT(x INTEGER, y VARCHAR)[]"),
        ("d", "VARCHAR"),
    ]
    assert _typed_names("verdicts, scores  the run's features") == [
        ("verdicts", None),
        ("scores", None),
    ]
    assert _typed_names("w, x (remark), …, y, z DOUBLE.") == [
        ("w", None),
        ("x", None),
        ("…", None),
        ("y", "DOUBLE"),
        ("z", "DOUBLE"),
    ]


# -------------------------------------------------------------- setup order

_DEFINES = re.compile(
    r"^(?:CREATE (?:OR REPLACE )?(?:VIEW|MACRO|TABLE(?: IF NOT EXISTS)?)|SET VARIABLE) (\w+)",
    re.M,
)


def _references(text: str) -> set[str]:
    """The names a statement uses: variables it reads, then unqualified words of its code."""
    code = re.sub(r"--[^\n]*", "", text)
    variables = set(re.findall(r"getvariable\('(\w+)'\)", code))
    code = re.sub(r"'(?:[^']|'')*'", "''", code)  # string literals
    code = re.sub(r"\.\s*\w+", "", code)  # struct fields and qualified columns
    return variables | set(re.findall(r"\b[A-Za-z_]\w*\b", code))


def test_every_setup_file_is_listed_once() -> None:
    on_disk = {_name(p) for p in _all_sql_files() if p.parent.name in ("setup", "macros", "views")}
    assert sorted(SETUP_FILES) == sorted(on_disk)
    assert len(set(SETUP_FILES)) == len(SETUP_FILES)


def _used_before_defined(files: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Each (file, text) that uses names a later file defines, with those names."""
    defined = [set(_DEFINES.findall(text)) for _, text in files]
    out = []
    for i, (name, text) in enumerate(files):
        later = set().union(*defined[i + 1 :]) - defined[i]
        if early := sorted(_references(text) & later):
            out.append((name, early))
    return out


def test_setup_files_use_only_what_earlier_files_define() -> None:
    files = [(name, (sql_files() / name).read_text()) for name in SETUP_FILES]
    assert all(_DEFINES.search(text) for _, text in files[1:]), "all but timezone.sql define"
    assert _used_before_defined(files) == []


def test_order_check_finds_a_use_before_its_definition() -> None:
    files = [
        ("a.sql", "CREATE OR REPLACE VIEW a AS SELECT ocp_b(x) FROM c"),
        ("b.sql", "CREATE OR REPLACE MACRO ocp_b(x) AS x + getvariable('ocp_v')"),
        ("c.sql", "CREATE OR REPLACE VIEW c AS SELECT {'a': 1}.a AS x -- uses a"),
        ("v.sql", "SET VARIABLE ocp_v = 'c'"),
    ]
    assert _used_before_defined(files) == [("a.sql", ["c", "ocp_b"]), ("b.sql", ["ocp_v"])]


# ------------------------------------------------- generated files, macros


def test_setup_sql_is_up_to_date() -> None:
    assert (sql_files() / "setup.sql").read_text() == setup_script(), (
        "sql/setup.sql is stale: run python -m ocp_analytics.sql"
    )
    assert oasql.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(tier_macros()))
def test_tier_macro_file_is_rendered_from_schemas(name: str) -> None:
    assert (sql_files() / name).read_text() == tier_macros()[name], (
        f"sql/{name} is stale: run python -m ocp_analytics.sql"
    )


def test_tier_macros_hold_the_schemas_tiers(examples_con: duckdb.DuckDBPyConnection) -> None:
    tiers = schemas.OUTCOME_TIERS
    for rank, tier in enumerate(tiers):
        got = examples_con.execute(
            "SELECT ocp_tier_rank(?), ocp_tier_word(?), ocp_tier_q(?)", [tier.upper(), rank, rank]
        ).fetchall()
        assert got == [(rank, tier, schemas.TIER_Q[tier])]
    weakest = examples_con.sql(
        "SELECT ocp_tier_rank('gold'), ocp_tier_word(NULL), ocp_tier_q(NULL)"
    ).fetchall()
    assert weakest == [(len(tiers) - 1, tiers[-1], schemas.TIER_Q[tiers[-1]])]


def test_literal_path_macro(examples_con: duckdb.DuckDBPyConnection) -> None:
    got = examples_con.sql(
        "SELECT ocp_literal_path('a[1]/*?.x'), ocp_literal_path('plain/p.parquet')"
    ).fetchall()
    assert got == [("a[[]1]/[*][?].x", "plain/p.parquet")]


def test_sql_files_missing_raises_with_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(oasql, "__file__", str(tmp_path / "pkg" / "sql.py"))
    with pytest.raises(OcpAnalyticsError, match="Hint:"):
        sql_files()


def test_wilson_takes_low_and_high_and_the_old_numbers(examples_dataset: Path) -> None:
    con = connect(examples_dataset)
    got = con.execute(
        "SELECT ocp_wilson(14, 14, 'low'), ocp_wilson(14, 14, 'high'),"
        " ocp_wilson(14, 14, -1), ocp_wilson(14, 14, 1)"
    ).fetchone()
    assert got is not None
    assert [round(v, 4) for v in got] == [0.7847, 1.0, 0.7847, 1.0]
    with pytest.raises(duckdb.Error, match="use 'low' or 'high'"):
        con.execute("SELECT ocp_wilson(1, 2, 'lower')").fetchone()


def test_rates_by_period_with_since_only_ends_at_as_of(
    generated: tuple[Path, Path],
) -> None:
    ds, _ = generated
    query = sql_files() / "queries" / "rates_by_period.sql"
    as_of = "2026-09-01T00:00:00Z"
    since = "2026-07-01T00:00:00Z"
    open_end = oasql.run_query(
        ds, query, as_of=as_of, variables={"ocp_period": "month", "ocp_since": since}
    )
    closed = oasql.run_query(
        ds,
        query,
        as_of=as_of,
        variables={"ocp_period": "month", "ocp_since": since, "ocp_until": as_of},
    )
    assert open_end.equals(closed)
    assert open_end["period"].max() < datetime.fromisoformat(as_of)
    assert open_end["runs"].sum() > 0
