"""``ocp-analytics sweep`` and ``check``: output, and check's exit status a CI job reads.

check exits 0 (no significant drop beyond the margin), 1 (regressed), 4 (not
enough data), 5 on any error (so 1 always means a regression), 2 on wrong
usage the parser catches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import ocp_analytics as oa
from ocp_analytics.cli import app
from tests.conftest import AS_OF
from tests.test_api_judge import _runs

BASE, CAND = "since=2026-11-01,until=2026-12-01", "since=2026-12-01"


@pytest.fixture
def gate(tiny_dataset: Callable[[Iterable[dict]], Path]) -> Path:
    """Team a: 90 % in November, 60 % in December; team b: 80 % and 78 %."""
    docs = _runs("2026-11-10", 90, 10) + _runs("2026-12-10", 60, 40)
    docs += _runs("2026-11-10", 80, 20, "b") + _runs("2026-12-10", 78, 22, "b")
    return tiny_dataset(docs)


def _check(ds: Path, *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["check", str(ds), "--as-of", AS_OF, *args])
    return done.exit_code, done.stdout, done.stderr


def test_check_exits_1_on_a_regression_with_one_line(gate: Path) -> None:
    code, out, _ = _check(gate, "--rule", "tests", "--baseline", BASE, "--candidate", CAND)
    assert code == 1
    assert out.count("\n") == 1 and out.startswith("regressed: 85.0 % → 69.0 %")
    assert "tolerated drop 2.0 pts at 95 % (exit 1)" in out


def test_check_exits_0_within_the_margin_and_prints_a_line_per_group(gate: Path) -> None:
    code, out, _ = _check(
        gate, "--rule", "tests", "--baseline", BASE, "--candidate", CAND,
        "--by", "label.team", "--max-drop", "0.4",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert [x.split(":")[0] for x in lines[:2]] == ["label.team=a", "label.team=b"]
    assert lines[2].startswith("within noise: 2 within noise;")
    assert "at 97.5 %" in lines[2]  # two groups: each interval at 1 - 0.05 / 2


def test_check_json_is_the_verdict_document(gate: Path, tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    code, _, err = _check(
        gate, "--baseline-rule", "tests", "--candidate-rule", "tests+review",
        "--by", "label.team", "-o", str(out),
    )  # fmt: skip
    assert code == 1, err
    doc = json.loads(out.read_text())
    assert (doc["verdict"], doc["exit_code"], doc["paired"]) == ("regressed", 1, True)
    assert doc["as_of"] == "2027-01-01T00:00:00+00:00" and doc["snapshot"] == 1
    assert [g["label.team"] for g in doc["groups"]] == ["a", "b"]
    assert {"a", "b", "c", "d", "p_value", "p_holm", "difference_high"} <= set(doc["groups"][0])


def test_check_exits_4_without_enough_data(gate: Path) -> None:
    code, out, _ = _check(gate, "--baseline", BASE, "--candidate", CAND, "--min-decided", "500")
    assert code == 4
    assert out.startswith("not enough data: 200 → 200 decided")


@pytest.mark.parametrize(
    "args",
    [
        ["--baseline", "from=30d", "--candidate", CAND],  # a window it cannot read
        ["--baseline", BASE],  # no candidate
        ["--baseline", BASE, "--candidate", CAND, "--max-drop", "3"],
        ["--baseline-rule", "tests", "--candidate-rule", "tests"],
    ],
)
def test_check_exits_5_on_an_error_never_1(gate: Path, args: list[str]) -> None:
    code, out, err = _check(gate, *args)
    assert code == 5 and out == ""
    assert err.startswith("error: ") and "Hint:" in err


def test_check_on_a_missing_dataset_exits_5_and_bad_usage_2(tmp_path: Path) -> None:
    assert _check(tmp_path / "nope", "--baseline", BASE, "--candidate", CAND)[0] == 5
    assert _check(tmp_path / "nope", "--no-such-option")[0] == 2


def test_sweep_table_and_csv(examples_dataset: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["sweep", str(examples_dataset), "--as-of", AS_OF]
    done = runner.invoke(app, [*args, "--rule", "tests+runtime_s<=3600"])
    assert done.exit_code == 0, done.output
    assert "95.7 % [79.0–99.2] of 23 decided" in done.stdout
    out = tmp_path / "curve.csv"
    done = runner.invoke(
        app,
        [*args, "--score", "runtime_s", "--better", "lower", "--requires", "tests", "-o", str(out)],
    )
    assert done.exit_code == 0, done.output
    want = oa.sweep(examples_dataset, "tests+runtime_s<=1", as_of=AS_OF)
    assert (
        pl.read_csv(out).select("target", "accepted").rows()
        == want.select("target", "accepted").rows()
    )


def test_sweep_for_rate_and_its_errors(examples_dataset: Path) -> None:
    runner = CliRunner()
    args = ["sweep", str(examples_dataset), "--as-of", AS_OF, "-f", "json"]
    done = runner.invoke(app, [*args, "--rule", "runtime_s<=1", "--for-rate", "0.5"])
    assert done.exit_code == 0, done.output
    assert [r["target"] for r in json.loads(done.stdout)["rows"]] == [3300.0]
    done = runner.invoke(app, [*args, "--score", "runtime_s"])
    assert done.exit_code == 1 and "needs better=" in done.stderr
    assert runner.invoke(app, [*args, "--rule", "r<=1", "--for-rate", "80"]).exit_code == 2


def test_curve_table_keeps_21_evenly_spread_targets(examples_dataset: Path) -> None:
    from ocp_analytics.cli.judge import _curve_table

    curve = pl.DataFrame(
        {
            "g": ["x"] * 101 + ["y"] * 5,
            "target": [float(i) for i in range(101)] + [1.0, 2.0, 3.0, 4.0, 5.0],
            **{c: [1] * 106 for c in ("runs", "accepted", "rejected", "unknown", "decided")},
            **{c: [0.5] * 106 for c in ("accept_rate", "ci_low", "ci_high")},
            "as_of": [None] * 106,
        }
    )
    shown = _curve_table(curve, thin=True)
    assert shown.filter(g="x")["target"].to_list() == [float(5 * i) for i in range(21)]
    assert shown.filter(g="y").height == 5
