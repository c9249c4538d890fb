"""Snapshots reproduce a result: the same ``as_of`` and ``snapshot`` give the same numbers
after any later batch (a new ingest replacing a run, late events), in Python, the CLI,
the report, SQL and Spark; and every output says which snapshot it read.

Each command is run on the dataset at ``--snapshot K`` after every later batch, and on a
copy of the dataset taken right after commit K (its newest commit): both must agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.exceptions import DatasetError
from ocp_analytics.store.commits import read_commits

DATA = Path(__file__).parent / "data"
SOLO = DATA / "examples" / "v0.3" / "solo.ocp.json"
AS_OF = "2027-01-01T00:00:00Z"
RULES = ["tests", "tests+review"]
runner = CliRunner()


def ok(*args: str | Path) -> Result:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


# --- Python ------------------------------------------------------------------------------


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_python_results_at_a_snapshot_stay_the_same_after_later_batches(
    history: tuple[Path, list[Path]], seq: int
) -> None:
    ds, copies = history
    then = copies[seq - 1]
    rates_now = oa.rates(ds, RULES, as_of=AS_OF, by="task_type", snapshot=seq)
    assert rates_now.equals(oa.rates(then, RULES, as_of=AS_OF, by="task_type"))
    acc = oa.acceptance(ds, RULES, as_of=AS_OF, snapshot=str(seq)).sort("run_id", "rule")
    assert acc.equals(oa.acceptance(then, RULES, as_of=AS_OF).sort("run_id", "rule"))
    (m_now, f_now), (m_then, f_then) = (
        oa.compare(ds, RULES, as_of=AS_OF, snapshot=seq),
        oa.compare(then, RULES, as_of=AS_OF),
    )
    assert m_now.equals(m_then) and f_now.equals(f_then)
    dist = oa.attempts_distribution(ds, RULES, as_of=AS_OF, snapshot=seq)
    assert dist.equals(oa.attempts_distribution(then, RULES, as_of=AS_OF))


def test_the_later_batches_do_change_the_numbers(history: tuple[Path, list[Path]]) -> None:
    """Without the snapshot the same call reads the late revert: the test above means something."""
    ds, _ = history
    first = oa.acceptance(ds, as_of=AS_OF, snapshot=1).sort("run_id", "rule")
    latest = oa.acceptance(ds, as_of=AS_OF).sort("run_id", "rule")
    assert not first.equals(latest)


def test_write_acceptance_writes_the_snapshot_it_read(
    history: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    ds, copies = history
    oa.write_acceptance(ds, tmp_path / "at-2.parquet", RULES, as_of=AS_OF, snapshot=2)
    oa.write_acceptance(ds, tmp_path / "newest.parquet", RULES, as_of=AS_OF)
    meta = pq.read_schema(tmp_path / "at-2.parquet").metadata
    assert meta[b"ocp_analytics.snapshot"] == b"2"
    assert meta[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"
    assert pq.read_schema(tmp_path / "newest.parquet").metadata[b"ocp_analytics.snapshot"] == b"4"
    then = oa.acceptance(copies[1], RULES, as_of=AS_OF).sort("run_id", "rule")
    assert pl.read_parquet(tmp_path / "at-2.parquet").sort("run_id", "rule").equals(then)


def test_a_snapshot_with_a_scanned_dataset_is_refused(history: tuple[Path, list[Path]]) -> None:
    ds, _ = history
    with pytest.raises(DatasetError, match="a snapshot was given with a dataset already scanned"):
        oa.rates(oa.scan_dataset(ds), as_of=AS_OF, snapshot=1)
    # the scanned dataset alone reads its own snapshot
    assert oa.rates(oa.scan_dataset(ds, snapshot=1), as_of=AS_OF).equals(
        oa.rates(ds, as_of=AS_OF, snapshot=1)
    )


def test_a_snapshot_no_commit_matches_is_refused(history: tuple[Path, list[Path]]) -> None:
    ds, _ = history
    with pytest.raises(DatasetError, match="9"):
        oa.rates(ds, as_of=AS_OF, snapshot=9)
    result = runner.invoke(app, ["rates", str(ds), "--as-of", AS_OF, "--snapshot", "9"])
    assert result.exit_code != 0 and "Traceback" not in result.output


# --- CLI ---------------------------------------------------------------------------------


def _json(*args: str | Path) -> dict[str, Any]:
    return json.loads(ok(*args, "-f", "json").stdout)


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_cli_results_at_a_snapshot_stay_the_same_after_later_batches(
    history: tuple[Path, list[Path]], seq: int
) -> None:
    ds, copies = history
    then, snap = copies[seq - 1], ["--snapshot", str(seq)]
    rules = ["--rule", "tests", "--rule", "tests+review", "--as-of", AS_OF]
    for command in (["rates", "--by", "task_type"], ["compare"], ["accept"]):
        name, *extra = command
        now = _json(name, ds, *rules, *extra, *snap)
        before = _json(name, then, *rules, *extra)
        assert now == before
        assert now["snapshot"] == seq and now["as_of"] == "2027-01-01T00:00:00+00:00"


def test_cli_outputs_say_the_snapshot_beside_as_of(
    history: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    ds, _ = history
    table = ok("rates", ds, "--as-of", AS_OF, "--snapshot", "2").stdout
    assert table.rstrip().endswith("as_of: 2027-01-01T00:00:00+00:00, snapshot: 2")
    newest = ok("rates", ds, "--as-of", AS_OF).stdout
    assert newest.rstrip().endswith("as_of: 2027-01-01T00:00:00+00:00, snapshot: 4")
    at = read_commits(ds)[1]["committed_at"]  # an instant: the last commit at or before it
    assert _json("rates", ds, "--as-of", AS_OF, "--snapshot", at)["snapshot"] == 2
    ok("accept", ds, "--as-of", AS_OF, "--snapshot", "3", "-o", tmp_path / "acc.parquet")
    meta = pq.read_schema(tmp_path / "acc.parquet").metadata
    assert meta[b"ocp_analytics.snapshot"] == b"3"
    ok("rates", ds, "--as-of", AS_OF, "--snapshot", "3", "-o", tmp_path / "rates.parquet")
    meta = pq.read_schema(tmp_path / "rates.parquet").metadata
    assert meta[b"ocp_analytics.snapshot"] == b"3"


def test_report_at_a_snapshot_is_the_same_after_later_batches(
    history: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    pytest.importorskip("vl_convert")
    ds, copies = history
    args = ["--rule", "tests+review", "--by", "task_type", "--as-of", AS_OF]
    ok("report", ds, *args, "--snapshot", "2", "-o", tmp_path / "now.html")
    ok("report", copies[1], *args, "-o", tmp_path / "then.html")
    now, then = tmp_path / "now-data", tmp_path / "then-data"
    for name in ("headline", "rates_by_period", "compare_matrix", "flips", "tier_mix"):
        a = orjson.loads((now / f"{name}.json").read_bytes())
        b = orjson.loads((then / f"{name}.json").read_bytes())
        assert a["rows"] == b["rows"], name
        assert (a["snapshot"], a["as_of"]) == (2, b["as_of"])
    assert orjson.loads((now / "index.json").read_bytes())["snapshot"] == 2
    assert "snapshot 2" in (tmp_path / "now.html").read_text()


def test_python_report_at_a_snapshot(history: tuple[Path, list[Path]], tmp_path: Path) -> None:
    pytest.importorskip("vl_convert")
    ds, _ = history
    files = oa.report(
        ds, "tests", as_of=AS_OF, snapshot=1, out=tmp_path / "r.html", data_format="parquet"
    )
    meta = pq.read_schema(files.data["headline"]).metadata
    assert meta[b"ocp_analytics.snapshot"] == b"1"
    assert meta[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"


# --- SQL and Spark -----------------------------------------------------------------------


@pytest.mark.parametrize("seq", [1, 3])
def test_sql_views_read_the_snapshot(history: tuple[Path, list[Path]], seq: int) -> None:
    from ocp_analytics.sql import connect

    ds, copies = history
    query = "SELECT rule, runs, accepted, rejected, unknown FROM rates ORDER BY rule"
    now = connect(ds, rules="tests", as_of=AS_OF, snapshot=seq)
    then = connect(copies[seq - 1], rules="tests", as_of=AS_OF)
    assert now.sql(query).fetchall() == then.sql(query).fetchall()
    assert now.execute("SELECT getvariable('ocp_snapshot')").fetchall() == [(seq,)]
    body = _json("sql", ds, "SELECT count(*) AS n FROM runs", "--as-of", AS_OF, "--snapshot", seq)
    assert body["snapshot"] == seq


def test_spark_rates_at_a_snapshot(history: tuple[Path, list[Path]]) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    from ocp_analytics import spark as osp

    try:
        session = osp.session("local[1]")
    except Exception as exc:  # no Java, or one too old
        pytest.skip(str(exc))
    ds, copies = history
    got = osp.rates(session, str(ds), RULES, as_of=AS_OF, snapshot=2)
    assert got.equals(oa.rates(copies[1], RULES, as_of=AS_OF))
