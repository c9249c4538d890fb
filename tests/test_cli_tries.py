"""The ``passk`` and ``cost`` commands and ``rates --cluster`` (#37), in process.

Each runs the typer app (``CliRunner``) on the bundled examples and holds
the output to the API's figures for the same arguments, in every format.
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
from tests.conftest import AS_OF, EXAMPLES

runner = CliRunner()


def ok(*args: str) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli-tries") / "examples.dataset"
    oa.ingest(EXAMPLES, path)
    return str(path)


def test_passk_json_holds_the_api_rows(ds: str) -> None:
    out = ok("passk", ds, "--k", "3", "--rule", "runtime_s<=3000", "--as-of", AS_OF, "-f", "json")
    body = json.loads(out.stdout)
    want = oa.passk(ds, "runtime_s<=3000", k=3, as_of=AS_OF)
    assert (body["as_of"], body["snapshot"]) == ("2027-01-01T00:00:00+00:00", 1)
    got = [(r["rule"], r["k"], r["tasks"], r["pass_at_k"]) for r in body["rows"]]
    assert got == want.select("rule", "k", "tasks", "pass_at_k").rows()


def test_passk_table_csv_and_parquet_outputs(ds: str, tmp_path: Path) -> None:
    table = ok("passk", ds, "--k", "2", "--by", "task_type", "--as-of", AS_OF).stdout
    assert "pass_at_k" in table and "bug_fix" in table
    assert table.splitlines()[-1] == "as_of: 2027-01-01T00:00:00+00:00, snapshot: 1"
    csv = tmp_path / "passk.csv"
    said = ok("passk", ds, "--k", "2", "--as-of", AS_OF, "-o", str(csv))
    assert "wrote 2 rows" in said.stderr
    assert pl.read_csv(csv).columns[:3] == ["rule", "k", "tasks"]
    pqt = tmp_path / "passk.parquet"
    ok("passk", ds, "--k", "2", "--as-of", AS_OF, "-o", str(pqt))
    assert pq.read_metadata(pqt).metadata[b"ocp_analytics.snapshot"] == b"1"


def test_passk_flaky_lists_tasks_with_sample_ids(ds: str) -> None:
    out = ok("passk", ds, "--flaky", "--sample", "1", "--as-of", AS_OF, "-f", "json")
    assert json.loads(out.stdout)["rows"] == []  # the bundled tasks never disagree
    header = ok("passk", ds, "--flaky", "--as-of", AS_OF, "-f", "csv").stdout.splitlines()[0]
    assert header.startswith("rule,task_id,decided,accepted,rejected,accept_rate,sample_")
    table = ok("passk", ds, "--flaky", "--as-of", AS_OF).stdout
    assert table == "flaky tasks: none: no task_id has both accepted and rejected runs\n"


def test_passk_refuses_k_0_and_the_task_as_a_group(ds: str) -> None:
    assert runner.invoke(app, ["passk", ds, "--k", "0"]).exit_code == 2
    result = runner.invoke(app, ["passk", ds, "--by", "task_id", "--as-of", AS_OF])
    assert result.exit_code == 1
    assert "both a group and the task" in result.output


def test_passk_where_with_no_run_says_so(ds: str) -> None:
    result = ok("passk", ds, "--where", "label.team=nobody", "--as-of", AS_OF)
    assert result.stdout == ""
    assert "no run" in result.stderr


def test_cost_table_reads_cost_per_accepted_with_its_interval(ds: str) -> None:
    out = ok("cost", ds, "--rule", "tests+review", "--no-recorded", "--as-of", AS_OF).stdout
    row = oa.cost(ds, "tests+review", recorded=False, as_of=AS_OF).row(0, named=True)
    cell = f"{row['cost_per_accepted']:.2f} [{row['cost_ci_low']:.2f}–{row['cost_ci_high']:.2f}]"
    assert f"{cell} per accepted (14)" in out
    assert "cost_to_acceptance_median" in out


def test_cost_json_per_measure_and_per_run(ds: str, tmp_path: Path) -> None:
    body = json.loads(ok("cost", ds, "--measure", "wall_s", "--as-of", AS_OF, "-f", "json").stdout)
    want = oa.cost(ds, measure="wall_s", as_of=AS_OF).row(0, named=True)
    assert body["rows"][0]["measure"] == "wall_s"
    assert body["rows"][0]["cost_per_accepted"] == pytest.approx(want["cost_per_accepted"])
    per_run = tmp_path / "runs.parquet"
    ok("cost", ds, "--per-run", "--as-of", AS_OF, "-o", str(per_run))
    frame = pl.read_parquet(per_run)
    assert frame.height == 32
    assert frame.filter(run_id="run_ex_swarm")["cost"].item() == pytest.approx(3.39)
    assert runner.invoke(app, ["cost", ds, "--measure", "dollars"]).exit_code == 2


def test_rates_cluster_adds_the_interval_beside_wilson(ds: str) -> None:
    args = ["rates", ds, "--rule", "runtime_s<=3000", "--cluster", "task_id", "--as-of", AS_OF]
    table = ok(*args).stdout
    assert "cluster_interval" in table and "over 7 clusters, design effect" in table
    rows = json.loads(ok(*args, "-f", "json").stdout)["rows"]
    want = oa.rates(ds, "runtime_s<=3000", cluster="task_id", as_of=AS_OF)
    assert [r["cluster_se"] for r in rows] == pytest.approx(want["cluster_se"].to_list())
    spark = runner.invoke(app, [*args, "--engine", "spark"])
    assert spark.exit_code == 1 and "--cluster is not available" in spark.output
