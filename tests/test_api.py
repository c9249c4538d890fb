"""The public evaluation API: rates and comparisons sliced equal one pass; errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.engine.evaluate import open_tables
from ocp_analytics.engine.rates import flips_from, group_exprs, rates_from
from tests.conftest import AS_OF, EXAMPLES


def _unsliced_rates(ds: Path, rules: Path, by: list[str], min_tier: str | None) -> pl.DataFrame:
    """Rates from every acceptance row at once, groups joined on run_id."""
    frames = open_tables(ds)[0]
    acc = oa.acceptance(frames, rules, as_of=AS_OF).lazy()
    if by:
        groups = group_exprs(by, frames["runs"].collect_schema())
        acc = acc.join(frames["runs"].select("run_id", *groups), on="run_id", how="left")
    return rates_from(acc, by, min_tier).collect()


@pytest.mark.parametrize(
    ("by", "min_tier"),
    [([], None), (["label.team"], None), (["task_type", "label.team"], "reported")],
)
def test_sliced_rates_equal_one_pass(
    generated: tuple[Path, Path], by: list[str], min_tier: str | None
) -> None:
    ds, rules = generated
    sliced = oa.rates(ds, rules, by=by, min_tier=min_tier, as_of=AS_OF, slice_runs=250)
    assert_frame_equal(sliced, _unsliced_rates(ds, rules, by, min_tier))
    assert sliced.filter(pl.col("rule") == "recorded")["runs"].sum() == 1500


def test_sliced_compare_equals_one_pass(generated: tuple[Path, Path]) -> None:
    ds, rules = generated
    matrix, flips = oa.compare(ds, rules, by="label.team", as_of=AS_OF, sample=4, slice_runs=250)
    frames = open_tables(ds)[0]
    team = group_exprs(["label.team"], frames["runs"].collect_schema())
    acc = oa.acceptance(ds, rules, as_of=AS_OF).lazy()
    acc = acc.join(frames["runs"].select("run_id", *team), on="run_id", how="left")
    assert_frame_equal(flips, flips_from(acc, 4, ["label.team"]).collect())
    rated = _unsliced_rates(ds, rules, ["label.team"], None)
    got = matrix.unpivot(index="label.team")
    got = got.filter(~pl.col("variable").str.contains("__"))
    want = rated.select("label.team", pl.col("rule").alias("variable"), "accept_rate")
    assert_frame_equal(
        got.sort("label.team", "variable"),
        want.rename({"accept_rate": "value"}).sort("label.team", "variable"),
        check_dtypes=False,
    )


def test_compare_with_a_run_id_twice_in_memory() -> None:
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    tables = oa.read_documents([doc, doc])
    _, flips = oa.compare(tables, ["tests"], as_of=AS_OF)
    assert flips["runs_compared"].to_list() == [2, 2]


def test_rates_by_unknown_column_says_what_to_use(generated: tuple[Path, Path]) -> None:
    ds, _ = generated
    with pytest.raises(oa.OcpAnalyticsError, match=r"label\.KEY"):
        oa.rates(ds, by=["no_such_column"])


@pytest.mark.parametrize(
    ("rules", "by"),
    [(["tests", "tests__low"], []), (["tests", "task_type"], ["task_type"])],
)
def test_compare_refuses_rule_names_that_collide_with_its_columns(
    examples_dataset: Path, rules: list[str], by: list[str]
) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="collides with a column of the comparison"):
        oa.compare(examples_dataset, rules, by=by, as_of=AS_OF)


def test_by_a_label_no_run_has_warns(examples_dataset: Path) -> None:
    with pytest.warns(UserWarning, match="no run has the label 'nosuchkey'"):
        out = oa.rates(examples_dataset, by="label.nosuchkey", as_of=AS_OF)
    assert out["label.nosuchkey"].to_list() == [None]


def test_compare_refuses_a_negative_sample(examples_dataset: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="sample must be 0 or more"):
        oa.compare(examples_dataset, ["tests"], sample=-1, as_of=AS_OF)
