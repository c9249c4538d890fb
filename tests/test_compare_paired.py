"""compare's paired comparison of rules (issue #37): counts, statistics, slices, groups.

The counts of every flips row (``runs_compared, flips, a, b, c, d``, the
sample run ids) are held to a plain count over the acceptance rows
(``oa.acceptance``), run by run, on the bundled examples and on generated
documents evaluated a slice at a time. The statistics are held to the
functions of ``ocp_analytics.engine.stats`` (themselves held to scipy and
statsmodels in tests/test_stats.py) applied to those counts, and Holm's
family to statsmodels ``multipletests``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.engine.evaluate import open_tables
from ocp_analytics.engine.flips import (
    FLIP_COUNTS,
    FlipPartials,
    combine_flips,
    flip_counts,
    flips_from,
)
from ocp_analytics.engine.rates import group_exprs
from ocp_analytics.engine.stats import mcnemar_pvalues, paired_difference
from ocp_analytics.schemas import FLIP_SCHEMA
from tests.conftest import AS_OF, EXAMPLES

RULES = ["tests", "tests+review", "runtime_s<=3600", "review"]
Cell = tuple[Any, ...]


# ------------------------------------------------------------------ references


def _acceptance(ds: Path | dict[str, pl.LazyFrame], rules: Any, by: list[str]) -> pl.DataFrame:
    """Every acceptance row, with the run's groups joined on run_id."""
    frames = open_tables(ds)[0] if isinstance(ds, Path) else ds
    acc = oa.acceptance(frames, rules, as_of=AS_OF).lazy()
    if by:
        groups = group_exprs(by, frames["runs"].collect_schema())
        acc = acc.join(frames["runs"].select("run_id", *groups), on="run_id", how="left")
    return acc.collect()


def brute_force(acc: pl.DataFrame, by: list[str], sample: int) -> dict[Cell, dict[str, Any]]:
    """Per (group, rule_a, rule_b): the counts of flips rows, run by run, in plain Python."""
    outcomes: dict[str, dict[str, str]] = defaultdict(dict)
    group: dict[str, tuple[Any, ...]] = {}
    for r in acc.iter_rows(named=True):
        outcomes[r["run_id"]][r["rule"]] = r["outcome"]
        group[r["run_id"]] = tuple(r[c] for c in by)
    rules = sorted(acc["rule"].unique())
    cells: dict[Cell, dict[str, Any]] = {}
    for run_id, by_rule in outcomes.items():
        for x, y in itertools.permutations(rules, 2):
            if x not in by_rule or y not in by_rule:
                continue
            cell = cells.setdefault(
                (*group[run_id], x, y),
                {"runs_compared": 0, "flips": 0, "a": 0, "b": 0, "c": 0, "d": 0, "ids": []},
            )
            ox, oy = by_rule[x], by_rule[y]
            cell["runs_compared"] += 1
            if ox == "accepted" and oy != "accepted":
                cell["flips"] += 1
                cell["ids"].append(run_id)
            name = {
                ("accepted", "accepted"): "a",
                ("accepted", "rejected"): "b",
                ("rejected", "accepted"): "c",
                ("rejected", "rejected"): "d",
            }.get((ox, oy))
            if name:
                cell[name] += 1
    for cell in cells.values():
        cell["sample_run_ids"] = sorted(cell.pop("ids"))[:sample]
        cell["n"] = cell["a"] + cell["b"] + cell["c"] + cell["d"]
    return cells


def expected_statistics(cells: dict[Cell, dict[str, Any]]) -> dict[Cell, dict[str, Any]]:
    """The statistics of each cell from engine.stats, Holm's from statsmodels.

    Holm's family: one test per group and unordered pair of rules (a pair and
    its reverse have the same table, mirrored, and the same p-value).
    """
    from statsmodels.stats.multitest import multipletests

    keys = list(cells)
    table = pl.DataFrame([[cells[k][x] for k in keys] for x in "abcd"], schema=list("abcd"))
    diff = paired_difference(pl.col("a"), pl.col("b"), pl.col("c"), pl.col("d"))
    estimates = table.select(
        diff.estimate.alias("e"), diff.low.alias("lo"), diff.high.alias("hi")
    ).rows()
    pvalues = mcnemar_pvalues(table["b"].to_numpy(), table["c"].to_numpy())
    out: dict[Cell, dict[str, Any]] = {}
    for k, (e, lo, hi), p in zip(keys, estimates, pvalues, strict=True):
        tested = cells[k]["n"] > 0
        m = cells[k]["b"] + cells[k]["c"]
        out[k] = {
            "difference": e,
            "difference_low": lo,
            "difference_high": hi,
            "p_value": float(p) if tested else None,
            "p_method": ("exact" if m < 25 else "chi2-cc") if tested else None,
            "p_holm": None,
        }
    family = [k for k in keys if k[-2] < k[-1] and out[k]["p_value"] is not None]
    if family:
        adjusted = multipletests([out[k]["p_value"] for k in family], method="holm")[1]
        for k, p in zip(family, adjusted, strict=True):
            out[k]["p_holm"] = out[(*k[:-2], k[-1], k[-2])]["p_holm"] = float(p)
    return out


def assert_flips_equal(got: pl.DataFrame, acc: pl.DataFrame, by: list[str], sample: int) -> None:
    """``got`` (a flips frame) has exactly the cells and counts of the brute force, and
    the statistics of engine.stats on those counts."""
    assert got.columns == [*by, *FLIP_SCHEMA]
    assert {c: got.schema[c] for c in FLIP_SCHEMA} == dict(FLIP_SCHEMA)
    want = brute_force(acc, by, sample)
    stats = expected_statistics(want)
    rows = {tuple(r[c] for c in [*by, "rule_a", "rule_b"]): r for r in got.iter_rows(named=True)}
    assert set(rows) == set(want)
    for key, w in want.items():
        r = rows[key]
        for c in [*FLIP_COUNTS, "n", "sample_run_ids"]:
            assert r[c] == w[c], (key, c, r[c], w[c])
        for c, value in stats[key].items():
            if isinstance(value, float):
                assert math.isclose(r[c], value, rel_tol=1e-12, abs_tol=1e-15), (key, c)
            else:
                assert r[c] == value, (key, c, r[c], value)


# ----------------------------------------------------------- against the runs


@pytest.mark.parametrize("by", [[], ["task_type"], ["repo", "task_type"]])
def test_compare_equals_a_count_over_the_examples(examples_dataset: Path, by: list[str]) -> None:
    _, flips = oa.compare(examples_dataset, RULES, by=by, as_of=AS_OF, sample=3)
    got = flips
    acc = _acceptance(examples_dataset, RULES, by)
    assert_flips_equal(got, acc, by, 3)
    # the examples hold runs decided under one rule and unknown under the other
    assert (got["flips"] > got["b"]).any()
    assert (got["n"] < got["runs_compared"]).any()


@pytest.mark.parametrize("by", [[], ["label.team"]])
def test_sliced_compare_equals_a_count_over_generated_runs(
    generated: tuple[Path, Path], by: list[str]
) -> None:
    ds, rules = generated
    _, flips = oa.compare(ds, rules, by=by, as_of=AS_OF, sample=4, slice_runs=250)
    got = flips
    assert_flips_equal(got, _acceptance(ds, rules, by), by, 4)
    assert set(got["p_method"].drop_nulls()) == {"exact", "chi2-cc"}
    assert got["p_holm"].min() < 0.05  # some rules really differ on these runs


def test_flips_from_equals_compare(generated: tuple[Path, Path]) -> None:
    ds, rules = generated
    _, flips = oa.compare(ds, rules, by="label.team", as_of=AS_OF, sample=2, slice_runs=400)
    one_pass = flips_from(_acceptance(ds, rules, ["label.team"]).lazy(), 2, ["label.team"])
    assert flips.equals(one_pass.collect())


# ---------------------------------------------------------- partials and sums


def _decisions(runs: int, rules: list[str], seed: int) -> pl.DataFrame:
    """Random outcomes of ``runs`` runs under ``rules``, in two groups, rule after rule."""
    rng = np.random.default_rng(seed)
    words = np.array(["accepted", "rejected", "unknown"])
    return pl.concat(
        pl.DataFrame(
            {
                "_doc": np.arange(runs),
                "run_id": [f"r{i:05d}" for i in range(runs)],
                "rule": rule,
                "outcome": words[rng.choice(3, runs, p=[0.5 - k / 10, 0.4, 0.1 + k / 10])],
                "_g0": np.where(np.arange(runs) % 3 == 0, "x", "y"),
            }
        )
        for k, rule in enumerate(rules)
    )


@pytest.mark.parametrize("keys", [[], ["_g0"]])
def test_counts_add_up_across_slices(keys: list[str]) -> None:
    names = ["p", "q", "s"]
    acc = _decisions(600, names, seed=1)
    sink = FlipPartials(names, 3, keys=keys)
    for lo in range(0, 600, 170):  # slices of 170 runs, each rule's frame in turn
        for name in names:
            sink.add(acc.filter(pl.col("_doc").is_between(lo, lo + 169), pl.col("rule") == name))
    whole = combine_flips([flip_counts(acc, names, 3, keys)], 3, keys).collect()
    assert sink.flips().collect().equals(whole)
    by = ["g"] if keys else []
    assert_flips_equal(whole.rename({"_g0": "g"}, strict=False), acc.rename({"_g0": "g"}), by, 3)


@pytest.mark.parametrize("keys", [[], ["_g0"]])
@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("missing", [False, True])
def test_outcome_vectors_of_many_rules_in_any_order_count_as_the_runs(
    keys: list[str], shuffled: bool, missing: bool
) -> None:
    """33 rules (two words of outcome vectors), each rule's frame in its own order of runs
    or not, and a rule that decided only some runs (no row: neither a flip nor in the table)."""
    names = [f"rule{k:02d}" for k in range(33)]
    acc = pl.concat(_decisions(400, names[i : i + 4], seed=4 + i) for i in range(0, 33, 4))
    if missing:  # the last rule has no row for a fifth of the runs
        acc = acc.filter((pl.col("rule") != names[-1]) | (pl.col("_doc") % 5 != 0))
    sink = FlipPartials(names, 3, keys=keys)
    for lo in range(0, 400, 150):
        for k, name in enumerate(names):
            frame = acc.filter(pl.col("_doc").is_between(lo, lo + 149), pl.col("rule") == name)
            sink.add(frame.sample(fraction=1.0, shuffle=True, seed=k) if shuffled else frame)
    by = ["g"] if keys else []
    flips = sink.flips().collect().rename({"_g0": "g"}, strict=False)
    assert_flips_equal(flips, acc.rename({"_g0": "g"}), by, 3)


def test_partials_of_a_slice_are_sums_only() -> None:
    """A slice's partial holds counts and ids, no statistic: what Spark tasks return."""
    part = flip_counts(_decisions(50, ["p", "q"], seed=2), ["p", "q"], 2)
    assert part.columns == ["rule_a", "rule_b", *FLIP_COUNTS, "sample_run_ids"]
    p, q = part.row(0, named=True), part.row(1, named=True)
    assert (p["a"], p["b"], p["c"], p["d"]) == (q["a"], q["c"], q["b"], q["d"])


# ------------------------------------------------------------- literal cells


def _cells(rows: list[tuple[str, str, int, int, int, int]]) -> pl.DataFrame:
    """Partials from literal (rule_a, rule_b, a, b, c, d); flips = b, 100 runs compared."""
    return pl.DataFrame(
        {
            "rule_a": [r[0] for r in rows],
            "rule_b": [r[1] for r in rows],
            "runs_compared": [100] * len(rows),
            "flips": [r[3] for r in rows],
            "a": [r[2] for r in rows],
            "b": [r[3] for r in rows],
            "c": [r[4] for r in rows],
            "d": [r[5] for r in rows],
            "sample_run_ids": [[] for _ in rows],
        },
        schema={c: FLIP_SCHEMA[c] for c in ["rule_a", "rule_b", *FLIP_COUNTS, "sample_run_ids"]},
    )


def test_mcnemar_is_exact_below_25_discordant_runs() -> None:
    part = _cells(
        [
            ("x", "y", 10, 18, 6, 0),  # 24 discordant runs
            ("y", "x", 10, 6, 18, 0),
            ("x", "z", 10, 18, 7, 0),  # 25
            ("z", "x", 10, 7, 18, 0),
        ]
    )
    got = combine_flips([part], 5).collect()
    assert got.select("rule_a", "rule_b", "p_method").rows() == [
        ("x", "y", "exact"),
        ("x", "z", "chi2-cc"),
        ("y", "x", "exact"),
        ("z", "x", "chi2-cc"),
    ]
    want = mcnemar_pvalues(np.array([18, 18, 6, 7]), np.array([6, 7, 18, 18]))
    assert got["p_value"].to_list() == pytest.approx(want.tolist(), rel=1e-14)


def test_no_run_decided_under_both_gives_no_test() -> None:
    part = _cells(
        [
            ("x", "y", 0, 0, 0, 0),
            ("y", "x", 0, 0, 0, 0),
            ("x", "z", 5, 9, 0, 5),
            ("z", "x", 5, 0, 9, 5),
            ("y", "z", 5, 0, 0, 5),
            ("z", "y", 5, 0, 0, 5),
        ]
    )
    got = combine_flips([part], 5).collect()
    none = got.filter(rule_a="x", rule_b="y").row(0, named=True)
    assert none["n"] == 0
    assert [none[c] for c in ("difference", "p_value", "p_method", "p_holm")] == [None] * 4
    # x/y is left out of Holm's family: two tests, x/z (p = 2/512) and y/z (p = 1)
    holm = dict(zip(zip(got["rule_a"], got["rule_b"], strict=True), got["p_holm"], strict=True))
    assert holm[("x", "z")] == holm[("z", "x")] == pytest.approx(2 * 2 / 512, rel=1e-12)
    assert holm[("y", "z")] == holm[("z", "y")] == 1.0


def test_difference_is_rate_a_minus_rate_b() -> None:
    got = combine_flips([_cells([("x", "y", 59, 6, 16, 80)])], 5).collect().row(0, named=True)
    # Fagerland, Lydersen and Laake (2017), ch. 8: 59, 6, 16, 80
    assert got["n"] == 161
    assert got["difference"] == pytest.approx((59 + 6) / 161 - (59 + 16) / 161, rel=1e-12)
    assert (round(got["difference_low"], 4), round(got["difference_high"], 4)) == (
        -0.1186,
        -0.0046,
    )


def test_no_slice_gives_the_declared_columns() -> None:
    got = combine_flips([], 5, ["_g0"]).collect()
    assert got.height == 0
    assert dict(got.schema) == {"_g0": pl.String(), **dict(FLIP_SCHEMA)}


def test_compare_of_one_rule_has_no_pairs() -> None:
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    tables = oa.read_documents([doc])
    _, flips = oa.compare(tables, ["tests"], as_of=AS_OF, recorded=False)
    assert flips.columns == list(FLIP_SCHEMA) and flips.height == 0
