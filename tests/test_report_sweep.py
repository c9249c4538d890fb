"""The report's threshold sweep (issue #37): a chart and a data file when a rule has a score.

The data file is held to :func:`ocp_analytics.sweep` on the same inputs
(window, groups, as_of, snapshot); the dot the chart draws at the rule's own
target is the headline's rate, which is the curve's there.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.reporting.charts import MAX_SWEEP_GROUPS, MAX_SWEEP_POINTS, thin
from ocp_analytics.reporting.page import ReportFiles
from tests.test_report import AS_OF, fleet_report

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

EXAMPLES = Path(__file__).parent / "data" / "examples"
FIRST = EXAMPLES / "v0.3" / "full-fields.ocp.json"
SCORED = "tests+runtime_s<=3300"  # 3300 is an observed runtime of the examples
ABOUT = ["rule", "score", "better", "rule_target"]


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples in two commits: one run first (snapshot 1), then every example."""
    path = tmp_path_factory.mktemp("sweep") / "ds"
    oa.ingest(FIRST, path)
    oa.ingest(EXAMPLES, path)
    return path


def _report(ds: Path, rules: Any, out: Path, **options: Any) -> ReportFiles:
    return oa.report(ds, rules, as_of="2027-01-01", out=out, data_format="parquet", **options)


def test_a_score_rule_has_its_sweep_chart_and_data_file(examples: Path, tmp_path: Path) -> None:
    files = _report(examples, ["tests+review", SCORED], tmp_path / "r.html")
    html = files.html.read_text()
    assert '<section id="sweep">' in html and 'href="#sweep"' in html
    assert '<figure class="chart" data-figure="sweep"><svg' in html
    assert escape(f"{SCORED}: target 3300") in html  # the rule's own target, marked
    index = json.loads((files.data_dir / "index.json").read_text())["figures"]
    assert index["sweep"]["file"] == "sweep.parquet"
    assert "oa.sweep" in index["sweep"]["description"]


def test_the_sweep_data_is_that_of_oa_sweep(examples: Path, tmp_path: Path) -> None:
    scored = [SCORED, "review+runtime_s<=2000", "bench_score>=2400"]  # no run has a bench_score
    files = _report(examples, ["tests+review", *scored], tmp_path / "r.html")
    got = pl.read_parquet(files.data["sweep"])
    assert got.columns[:4] == ABOUT
    assert got["rule"].unique(maintain_order=True).to_list() == scored[:2]
    about = [(SCORED, "runtime_s", "lower", 3300.0), (scored[1], "runtime_s", "lower", 2000.0)]
    for rule, *_ in about:
        mine = got.filter(pl.col("rule") == rule)
        assert mine.select(ABOUT).unique().rows() == [tuple(next(a for a in about if a[0] == rule))]
        want = oa.sweep(examples, rule, as_of="2027-01-01")
        assert want.height > 3
        assert_frame_equal(mine.drop(ABOUT), want)
    with pytest.warns(UserWarning, match="bench_score"):
        assert oa.sweep(examples, scored[2], as_of="2027-01-01").is_empty()


def test_the_rate_marked_at_the_rules_target_is_on_the_curve(
    examples: Path, tmp_path: Path
) -> None:
    files = _report(examples, SCORED, tmp_path / "r.html")
    head = pl.read_parquet(files.data["headline"]).filter(pl.col("rule") == SCORED)
    at = pl.read_parquet(files.data["sweep"]).filter(pl.col("target") == 3300.0)
    cols = ["runs", "accepted", "rejected", "unknown", "accept_rate", "ci_low", "ci_high"]
    assert at.select(cols).rows() == head.select(cols).rows()
    label = f"{SCORED}: target 3300, {100 * head['accept_rate'][0]:.1f} %"
    assert escape(label) in files.html.read_text()


def test_the_sweep_reads_the_reports_snapshot(examples: Path, tmp_path: Path) -> None:
    files = _report(examples, SCORED, tmp_path / "r.html", snapshot=1)
    got = pl.read_parquet(files.data["sweep"]).drop(ABOUT)
    assert_frame_equal(got, oa.sweep(examples, SCORED, as_of="2027-01-01", snapshot=1))
    assert got.height < oa.sweep(examples, SCORED, as_of="2027-01-01").height


def test_no_sweep_without_a_rule_with_a_score(examples: Path, tmp_path: Path) -> None:
    files = _report(examples, "tests+review", tmp_path / "r.html")
    assert "sweep" not in files.data
    assert not (files.data_dir / "sweep.parquet").exists()
    index = json.loads((files.data_dir / "index.json").read_text())["figures"]
    assert "sweep" not in index
    html = files.html.read_text()
    assert 'id="sweep"' not in html and 'href="#sweep"' not in html


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ReportFiles]:
    """2,000 generated runs of eight teams by team over 60 days, with a runtime rule."""
    root = tmp_path_factory.mktemp("sweep-fleet")
    out = root / "report.html"
    ds, rules, files = fleet_report(root, 2000, 3, since="60d", out=out, data_format="parquet")
    return ds, rules, files


def test_by_group_over_the_window_the_sweep_is_that_of_oa_sweep(
    fleet: tuple[Path, Path, ReportFiles],
) -> None:
    ds, rules, files = fleet
    got = pl.read_parquet(files.data["sweep"])
    assert got.columns[4] == "label.team"
    scored = [r for r in oa.read_rules_file(rules) if r.score is not None]
    assert got["rule"].unique(maintain_order=True).to_list() == [r.name for r in scored]
    for rule in scored:
        want = oa.sweep(ds, rule, by="label.team", since="60d", as_of=AS_OF)
        assert want["label.team"].n_unique() > MAX_SWEEP_GROUPS
        assert_frame_equal(got.filter(pl.col("rule") == rule.name).drop(ABOUT), want)


def test_the_chart_draws_a_few_groups_and_says_so(
    fleet: tuple[Path, Path, ReportFiles],
) -> None:
    html = fleet[2].html.read_text()
    assert f"a line for each of the {MAX_SWEEP_GROUPS} groups with most runs" in html
    assert f"at most {MAX_SWEEP_POINTS} of its points" in html


def test_thin_keeps_at_most_so_many_points_of_each_curve_and_both_ends() -> None:
    sizes = {"a": 1, "b": 199, "c": 200, "d": 201, "e": 5000}
    curve = pl.DataFrame(
        {
            "rule": [k for k, n in sizes.items() for _ in range(n)],
            "target": [float(i) for n in sizes.values() for i in range(n)],
        }
    )
    out = thin(curve, ["rule"])
    kept = dict(out.group_by("rule").len().iter_rows())
    assert kept == {"a": 1, "b": 199, "c": 200, "d": MAX_SWEEP_POINTS, "e": MAX_SWEEP_POINTS}
    ends = out.group_by("rule").agg(pl.col("target").min().alias("lo"), pl.col("target").max())
    assert sorted(ends.rows()) == [(k, 0.0, float(n - 1)) for k, n in sizes.items()]
