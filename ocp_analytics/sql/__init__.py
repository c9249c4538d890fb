"""DuckDB bridge: the analyst-facing SQL views over a dataset.

The SQL lives in files inside this package (installed with it as package data)::

    sql/setup/    session settings, the committed file lists, alternative_rules
    sql/macros/   small scalar and table macros (tier ranks, Wilson bounds, …);
                  ocp_tier_*.sql are rendered from ocp_analytics.schemas (_tiers)
    sql/views/    one view a file: runs … quarantine, acceptance, rates, helpers
    sql/queries/  parameterised queries (rates_by, rates_by_label, flips, passk)
    sql/checks/   audit queries that return zero rows on a healthy dataset
    sql/setup.sql every file of SETUP_FILES, in order (generated, see main)

:func:`connect` runs the same statements as ``sql/setup.sql`` on a new
connection, after binding the dataset path (and optionally ``as_of``) as
DuckDB variables; user values are only ever passed as bound parameters.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ocp_analytics._typing import RulesLike, StoreLike, When
from ocp_analytics.engine.timeaxis import resolve_as_of
from ocp_analytics.exceptions import OcpAnalyticsError, SqlSetupError, hint
from ocp_analytics.model.rules import Rule, resolve_rules
from ocp_analytics.schemas import TABLES
from ocp_analytics.sql._tiers import tier_macros
from ocp_analytics.store.commits import Snapshot, read_commits, record_names
from ocp_analytics.store.dataset import SCHEMA_DIR, open_existing
from ocp_analytics.store.read_check import PartCheck
from ocp_analytics.store.storage import Store, fsspec_filesystem

# The statements of sql/setup.sql, in the order they run: a file uses only
# the variables, macros and views of earlier ones (DuckDB binds a view or a
# macro when it is created), which tests/test_sql_files.py checks.
SETUP_FILES = (
    "setup/timezone.sql",
    "setup/check_dataset.sql",
    "macros/ocp_literal_path.sql",
    "setup/batch_files.sql",
    "setup/table_files.sql",
    "setup/superseding.sql",
    "setup/alternative_rules.sql",
    "macros/ocp_all_versions.sql",
    "macros/ocp_run_rows.sql",
    "macros/ocp_as_of.sql",
    "macros/ocp_tier_rank.sql",
    "macros/ocp_tier_word.sql",
    "macros/ocp_tier_q.sql",
    "macros/ocp_verdict_state.sql",
    "macros/ocp_signal_order.sql",
    "macros/ocp_z95.sql",
    "macros/ocp_wilson.sql",
    "macros/ocp_rate_counts.sql",
    "macros/ocp_rate_figures.sql",
    "views/current_docs.sql",
    "macros/ocp_current_versions.sql",
    "views/runs.sql",
    "views/attempts.sql",
    "views/signals.sql",
    "views/rules.sql",
    "views/artifacts.sql",
    "views/findings.sql",
    "views/quarantine.sql",
    "views/events.sql",
    "views/matched_events.sql",
    "views/unmatched_events.sql",
    "views/attempt_positions.sql",
    "views/latest_signals.sql",
    "views/latest_verdicts.sql",
    "views/latest_scores.sql",
    "views/run_features.sql",
    "views/run_rules.sql",
    "views/rule_parts.sql",
    "views/acceptance.sql",
    "views/rates.sql",
    "macros/ocp_label_column.sql",
    "macros/ocp_rates_by_label.sql",
)

SETUP_HEADER = """\
-- setup.sql: the ocp-analytics views over one dataset, for the DuckDB CLI.
--
-- GENERATED from the files named below by `python -m ocp_analytics.sql`;
-- edit those files, then regenerate (tests/test_sql_files.py checks it is current).
--
-- Usage (from any folder; the dataset path is the only input):
--   duckdb -c "SET VARIABLE ocp_dataset = '/path/to/dataset'" \\
--          -c ".read sql/setup.sql" \\
--          -c "SELECT * FROM rates"
-- Optional: SET VARIABLE ocp_as_of = TIMESTAMPTZ '2027-01-01 00:00:00+00';
-- (before or after setup; unset means now), and rows in alternative_rules.
"""

_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Every value is a bound parameter; the column list is fixed text.
_INSERT_RULE = (
    "INSERT INTO alternative_rules (name, definition, requires, score_name, "
    "score_target, score_better, score_scale, excludes_events, window_days) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def sql_files() -> Path:
    """The folder of the SQL files (views, queries, checks), inside the package.

    Raises
    ------
    OcpAnalyticsError
        When the files are missing (an installation that dropped the
        package data).

    Examples
    --------
    >>> (sql_files() / "views" / "acceptance.sql").is_file()
    True
    """
    folder = Path(__file__).resolve().parent
    if not (folder / "views").is_dir():
        raise OcpAnalyticsError(
            hint(
                f"the SQL files are not at {str(folder)!r}.",
                "reinstall ocp-analytics (pip install --force-reinstall ocp-analytics); "
                "the SQL files ship inside the package as package data.",
            )
        )
    return folder


def _setup_statements() -> Iterator[tuple[str, str]]:
    """Each file of ``SETUP_FILES`` and its statement: rendered when generated, else read."""
    root, generated = sql_files(), tier_macros()
    for name in SETUP_FILES:
        yield name, generated[name] if name in generated else (root / name).read_text()


def setup_script() -> str:
    """The text of ``sql/setup.sql``: every file of ``SETUP_FILES``, in order.

    Examples
    --------
    >>> setup_script().count("CREATE OR REPLACE VIEW acceptance AS")
    1
    """
    parts = [SETUP_HEADER]
    for name, text in _setup_statements():
        parts.append(f"\n-- ---- sql/{name} ----\n{text.rstrip()}\n")
    return "".join(parts)


def _generated_files() -> dict[Path, str]:
    """Every file ``python -m ocp_analytics.sql`` writes, with the text it must hold.

    ``setup.sql`` and the tier macros (rendered from
    :mod:`ocp_analytics.schemas`); the other SQL files are edited by hand.

    Examples
    --------
    >>> sorted(p.name for p in _generated_files())
    ['ocp_tier_q.sql', 'ocp_tier_rank.sql', 'ocp_tier_word.sql', 'setup.sql']
    """
    root = sql_files()
    files = {root / name: text for name, text in tier_macros().items()}
    files[root / "setup.sql"] = setup_script()
    return files


def _set_variable(con: duckdb.DuckDBPyConnection, name: str, value: Any) -> None:
    if not _VARIABLE_NAME.match(name):
        raise OcpAnalyticsError(
            hint(
                f"{name!r} is not a valid DuckDB variable name.",
                "use letters, digits and underscores, e.g. ocp_by.",
            )
        )
    # The name is checked above; the value is always a bound parameter.
    con.execute(f"SET VARIABLE {name} = ?", [value])


def _rule_values(rule: Rule) -> list[Any]:
    score = rule.score
    return [
        rule.name,
        rule.definition,
        None if rule.requires is None else list(rule.requires),
        score.name if score else None,
        score.target if score else None,
        score.better if score else None,
        score.scale if score else None,
        None if rule.excludes_events is None else list(rule.excludes_events),
        rule.window_days,
    ]


def _run_setup(con: duckdb.DuckDBPyConnection) -> None:
    for name, text in _setup_statements():
        try:
            con.execute(text)
        except duckdb.Error as exc:
            raise SqlSetupError(
                hint(
                    f"sql/{name} failed: {exc}",
                    "check that the dataset is readable; if the file was "
                    "edited, run it alone in the duckdb CLI to see the error.",
                )
            ) from exc


def _add_new_tables(root: Store) -> None:
    """Give a dataset made before a table existed (``events``) that table's schema file.

    The views read ``_schema/<table>.parquet`` of every table; a dataset that
    cannot be written (read-only) is left as it is.
    """
    from ocp_analytics.store.dataset import SCHEMA_DIR, create

    if all(root.child(SCHEMA_DIR, f"{t}.parquet").is_file() for t in TABLES):
        return
    with contextlib.suppress(OSError):
        create(root)


def snapshot_seq(root: Store, snapshot: Snapshot = None) -> int | None:
    """The ``seq`` of the last commit the views read: ``snapshot``'s, else the newest.

    The newest is found from the records' names (each is its seq), without
    reading them; ``None`` when nothing was committed.
    """
    if snapshot is None:
        stems = (n.removesuffix(".json") for n in record_names(root))
        return max((int(s) for s in stems if s.isdigit()), default=None)
    return max((int(r["seq"]) for r in read_commits(root, snapshot)), default=None)


def _check_parts(con: duckdb.DuckDBPyConnection, root: Store, snapshot: Snapshot) -> None:
    """Hash every part the views read against the manifest before a query reads one.

    DuckDB reads the bytes itself; a flip that still decodes would give a
    wrong figure with no error (store/read_check.py). The list is the one
    ``setup/table_files.sql`` made, less the empty table files (they hold no rows).
    """
    found = con.execute("SELECT getvariable('ocp_files')").fetchall()
    listed = found[0][0] if found and isinstance(found[0][0], dict) else {}
    files = [f for fs in listed.values() for f in fs if not f.startswith(f"{SCHEMA_DIR}/")]
    PartCheck(root, read_commits(root, snapshot))(files)


def connect(
    dataset: StoreLike,
    *,
    rules: RulesLike = None,
    as_of: When = None,
    database: str = ":memory:",
    snapshot: Snapshot = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the ocp-analytics views over ``dataset``.

    The connection has ``TimeZone = 'UTC'``, the views of ``sql/views``
    (``runs``, ``attempts``, ``signals``, ``rules``, ``artifacts``,
    ``findings``, ``quarantine``, ``events``, ``matched_events``,
    ``unmatched_events``, ``acceptance``, ``rates`` and their helpers) and
    the table ``alternative_rules``. The views read the batches committed
    when the connection was made, or up to ``snapshot``; the ``seq`` of the
    last commit they read is the DuckDB variable ``ocp_snapshot``.

    Parameters
    ----------
    dataset
        A dataset (made by :func:`ocp_analytics.ingest`): its folder, an
        object-store URI, or its :class:`~ocp_analytics.store.storage.Store`.
    rules
        Alternative rules, as for :func:`ocp_analytics.acceptance`: Rule
        objects, short forms (``"tests+review"``), a rules file, or a list.
        When given, they replace the rows of ``alternative_rules``.
    as_of
        The instant of knowledge, set as the DuckDB variable ``ocp_as_of``:
        a signal observed after it takes no part, and a window with
        ``ocp_since`` and no ``ocp_until`` ends at it (docs/figures.md,
        "as_of"); unset, each query uses its own now (to the second).
        Change it later with ``con.execute("SET VARIABLE ocp_as_of = ?", [t])``.
    database
        The DuckDB database to open (``":memory:"`` by default). In a
        database file, ``alternative_rules`` is kept between sessions.
    snapshot
        The dataset as a commit left it: its ``seq`` or an instant (the last
        commit at or before it), as for :func:`ocp_analytics.acceptance`;
        the views read only the parts of commits up to it. ``None``: the
        newest commit when the connection is made.

    Returns
    -------
    duckdb.DuckDBPyConnection
        Variables are per connection: query through this connection, not
        through ``con.cursor()``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> con = connect(ds, rules="tests+review", as_of="2027-01-01T00:00:00Z")
    >>> con.sql("SELECT rule, runs, accepted, unknown FROM rates").fetchall()
    [('recorded', 7, 7, 0), ('tests+review', 7, 4, 3)]
    >>> con.sql("SELECT outcome, tier, attempts_to_acceptance FROM acceptance "
    ...         "WHERE run_id = 'run_ex_full_a' AND rule = 'recorded'").fetchall()
    [('accepted', 'reported', 4)]
    >>> _ = oa.ingest("tests/data/examples/swarm-v02.ocp.json", ds)
    >>> connect(ds, snapshot=1).sql("SELECT count(*) FROM runs").fetchall()
    [(7,)]
    """
    found = open_existing(dataset)
    root = found.uri if found.remote else str(found.path.resolve())
    _add_new_tables(found)
    alternatives = resolve_rules(rules) if rules is not None else None
    con = duckdb.connect(database)
    try:
        if found.remote:  # S3 / Azure: read through the store's own client
            con.register_filesystem(fsspec_filesystem(found))
        _set_variable(con, "ocp_dataset", root)
        seq = snapshot_seq(found, snapshot)
        if seq is not None:
            _set_variable(con, "ocp_snapshot", seq)
        if as_of is not None:
            _set_variable(con, "ocp_as_of", resolve_as_of(as_of))
        try:
            _run_setup(con)
        except SqlSetupError:  # views read the parts' footers: a damaged one is named
            _check_parts(con, found, snapshot)
            raise
        _check_parts(con, found, snapshot)
        if alternatives is not None:
            con.execute("DELETE FROM alternative_rules")
            if alternatives:
                con.executemany(_INSERT_RULE, [_rule_values(r) for r in alternatives])
    except BaseException:
        con.close()
        raise
    return con


def run_query(
    dataset: StoreLike,
    query: str | Path,
    *,
    rules: RulesLike = None,
    as_of: When = None,
    variables: Mapping[str, Any] | None = None,
    snapshot: Snapshot = None,
) -> pl.DataFrame:
    """Run one query over the views of ``dataset`` and return a DataFrame.

    Parameters
    ----------
    dataset, rules, as_of, snapshot
        As for :func:`connect`.
    query
        SQL text, or the :class:`~pathlib.Path` of a ``.sql`` file such as
        ``sql_files() / "queries" / "flips.sql"``.
    variables
        DuckDB variables the query reads with ``getvariable`` (for example
        ``{"ocp_by": ["task_type"]}`` for ``queries/rates_by.sql``), each
        set with a bound parameter.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> flips = run_query(ds, sql_files() / "queries" / "flips.sql",
    ...                   rules=["tests", "tests+review"], as_of="2027-01-01T00:00:00Z")
    >>> flips.filter(rule_a="tests", rule_b="tests+review")["flips"].item()
    3
    """
    text = query.read_text() if isinstance(query, Path) else query
    con = connect(dataset, rules=rules, as_of=as_of, snapshot=snapshot)
    try:
        for name, value in (variables or {}).items():
            _set_variable(con, name, value)
        return con.sql(text).pl()
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m ocp_analytics.sql [--check]``: write (or check) the generated files.

    Examples
    --------
    >>> main(["--check"])  # doctest: +ELLIPSIS
    ocp_tier_q.sql, ... setup.sql are up to date
    0
    """
    args = sys.argv[1:] if argv is None else argv
    files = _generated_files()
    if "--check" in args:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for path in stale:
            print(f"{path} is out of date; run: python -m ocp_analytics.sql")
        if stale:
            return 1
        print(f"{', '.join(sorted(p.name for p in files))} are up to date")
        return 0
    for path, text in files.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
