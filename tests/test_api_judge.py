"""oa.sweep and oa.check (issue #37): the threshold sweep and the CI gate, end to end.

The sweep is held to per-target evaluations: at each target, the counts
:func:`oa.rates` gives for the rule with that target (on generated documents
read a few hundred runs a slice, with groups, windows and filters, both
directions). The gate's counts are held to :func:`oa.rates` per window and to
:func:`oa.compare`'s paired table; its intervals to the engine's statistics
(themselves held to statsmodels in tests/test_stats.py) at the adjusted level.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from statistics import NormalDist
from typing import Any

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.api.check import read_window
from ocp_analytics.engine.stats import Interval, newcombe_difference, paired_difference
from tests.conftest import AS_OF

COUNTS = ["runs", "accepted", "rejected", "unknown"]


def _at(curve: pl.DataFrame, target: float, better: str) -> dict[str, Any] | None:
    """The curve's counts at ``target``: the row of the nearest observed value on the lax side."""
    lax = curve.filter(
        pl.col("target") <= target if better == "lower" else pl.col("target") >= target
    )
    if lax.is_empty():
        return None
    row = lax.sort("target", descending=better == "lower").row(0, named=True)
    return {k: row[k] for k in COUNTS}


def _targets(curve: pl.DataFrame) -> list[float]:
    """A few observed values, the points between them, and one past each end."""
    values = curve.get_column("target").unique().sort().to_list()
    picks = [*values[:: max(1, len(values) // 5)], values[-1]]
    between = [(a + b) / 2 for a, b in itertools.pairwise(picks)]
    return sorted({*picks, *between, values[0] - 1, values[-1] + 1})


@pytest.mark.parametrize(
    ("requires", "score", "better"),
    [("tests", "runtime_s", "lower"), ("", "runtime_s", "lower"), ("review", "quality", "higher")],
)
def test_sweep_counts_equal_the_rule_evaluated_at_each_target(
    generated: tuple[Path, Path], requires: str, score: str, better: str
) -> None:
    ds, _ = generated
    reqs = [requires] if requires else []
    window = {"since": "2026-07-01", "until": "2026-12-01", "where": ["label.env=ci"]}
    curve = oa.sweep(
        ds,
        score=score,
        better=better,  # type: ignore[arg-type]
        requires=reqs,
        by="label.team",
        as_of=AS_OF,
        slice_runs=400,
        **window,
    )
    assert curve.height > 20
    op = "<=" if better == "lower" else ">="
    for target in _targets(curve):
        rule = oa.Rule.parse("+".join([*reqs, f"{score}{op}{target!r}"]))
        want = oa.rates(ds, rule, by="label.team", recorded=False, as_of=AS_OF, **window)
        for row in want.iter_rows(named=True):
            got = _at(curve.filter(pl.col("label.team") == row["label.team"]), target, better)
            if got is None:  # below every value: each run with the score misses
                assert row["accepted"] == 0
                continue
            assert got == {k: row[k] for k in COUNTS}, (target, row["label.team"])


def test_sweep_reads_the_same_with_one_slice_or_many(generated: tuple[Path, Path]) -> None:
    ds, _ = generated
    one = oa.sweep(ds, "tests+runtime_s<=3600", by="task_type", as_of=AS_OF)
    many = oa.sweep(ds, "tests+runtime_s<=3600", by="task_type", as_of=AS_OF, slice_runs=250)
    assert one.equals(many)
    assert one.columns == [
        "task_type",
        "target",
        "runs",
        "accepted",
        "rejected",
        "unknown",
        "decided",
        "accept_rate",
        "ci_low",
        "ci_high",
        "as_of",
    ]


def test_sweep_for_rate_is_the_strictest_target_reaching_the_rate(
    generated: tuple[Path, Path],
) -> None:
    ds, _ = generated
    curve = oa.sweep(ds, score="runtime_s", better="lower", by="label.team", as_of=AS_OF)
    at = oa.sweep(ds, score="runtime_s", better="lower", by="label.team", as_of=AS_OF, for_rate=0.6)
    assert at.height == curve.get_column("label.team").n_unique()
    for row in at.iter_rows(named=True):
        reaching = curve.filter(
            (pl.col("label.team") == row["label.team"]) & (pl.col("accept_rate") >= 0.6)
        )
        want = reaching.get_column("target").min() if reaching.height else None
        assert row["target"] == want


def test_sweep_refuses_a_rule_it_cannot_sweep(examples_dataset: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="one rule with a score"):
        oa.sweep(examples_dataset, "tests+review")
    with pytest.raises(oa.OcpAnalyticsError, match="not both"):
        oa.sweep(examples_dataset, "runtime_s<=1", score="runtime_s", better="lower")
    with pytest.raises(oa.OcpAnalyticsError, match="needs better="):
        oa.sweep(examples_dataset, score="runtime_s")
    with pytest.raises(oa.OcpAnalyticsError, match="for_rate"):
        oa.sweep(examples_dataset, "runtime_s<=1", for_rate=80)


def test_sweep_warns_for_a_score_no_run_carries(examples_dataset: Path) -> None:
    with pytest.warns(UserWarning, match="score 'runtme_s' that no run carries"):
        out = oa.sweep(examples_dataset, "runtme_s<=3600", as_of=AS_OF)
    assert out.is_empty()


# ------------------------------------------------------------------ the gate


def _values(interval: Interval) -> tuple[float, float, float]:
    """An interval of literal counts as numbers: (estimate, low, high)."""
    e, lo, hi = interval
    return pl.select(e.alias("e"), lo.alias("lo"), hi.alias("hi")).row(0)


def _doc(i: int, day: str, verdict: str, team: str = "a") -> dict[str, Any]:
    return {
        "ocp": "0.3",
        "run": {
            "id": f"r{day}-{team}-{i}",
            "ended_at": f"{day}T12:00:00Z",
            "labels": {"team": team},
            "acceptance_rule": {"name": "t", "definition": "d", "requires": ["tests"]},
            "signals": [
                {"kind": "verdict", "name": "tests", "value": verdict, "tier": "verified"},
                {"kind": "verdict", "name": "review", "value": "accept" if i % 4 else "reject"},
            ],
        },
        "attempts": [],
    }


def _runs(day: str, passed: int, failed: int, team: str = "a") -> list[dict[str, Any]]:
    return [_doc(i, day, "pass" if i < passed else "fail", team) for i in range(passed + failed)]


@pytest.fixture
def gate(tiny_dataset: Callable[[Iterable[dict]], Path]) -> Path:
    """Team a: 90 % in November, 60 % in December (a real drop); team b: 80 % and 78 %."""
    docs = _runs("2026-11-10", 90, 10) + _runs("2026-12-10", 60, 40)
    docs += _runs("2026-11-10", 80, 20, "b") + _runs("2026-12-10", 78, 22, "b")
    return tiny_dataset(docs)


WINDOWS = {"baseline": "since=2026-11-01,until=2026-12-01", "candidate": "since=2026-12-01"}


def test_check_calls_a_real_drop_a_regression_and_exits_1(gate: Path) -> None:
    result = oa.check(gate, "tests", **WINDOWS, as_of=AS_OF)
    assert (result.verdict, result.exit_code, result.paired) == ("regressed", 1, False)
    row = result.groups.row(0, named=True)
    assert (row["baseline_accepted"], row["baseline_decided"]) == (170, 200)
    assert (row["candidate_accepted"], row["candidate_decided"]) == (138, 200)
    want = _values(newcombe_difference(pl.lit(170), pl.lit(200), pl.lit(138), pl.lit(200)))
    assert (row["difference"], row["difference_low"], row["difference_high"]) == pytest.approx(want)
    assert result.lines()[0].startswith("regressed: 85.0 % → 69.0 % (-16.0 pts [")


def test_check_per_group_widens_each_interval_and_takes_the_worst(gate: Path) -> None:
    result = oa.check(gate, "tests", **WINDOWS, by="label.team", as_of=AS_OF)
    assert result.verdict == "regressed" and result.exit_code == 1
    assert result.level == pytest.approx(0.975)  # two groups with enough data
    calls = dict(result.groups.select("label.team", "call").rows())
    assert calls == {"a": "regressed", "b": "within noise"}
    z = NormalDist().inv_cdf(1 - 0.025 / 2)
    want = _values(newcombe_difference(pl.lit(90), pl.lit(100), pl.lit(60), pl.lit(100), z))
    got = result.groups.filter(pl.col("label.team") == "a")
    assert got.select("difference", "difference_low", "difference_high").row(0) == pytest.approx(
        want
    )
    for rates_window, side in (
        (WINDOWS["baseline"], "baseline"),
        (WINDOWS["candidate"], "candidate"),
    ):
        since, until = read_window(rates_window)
        r = oa.rates(gate, "tests", by="label.team", since=since, until=until, as_of=AS_OF)
        r = r.filter(rule="tests").select(
            "label.team", "accepted", (pl.col("accepted") + pl.col("rejected")).alias("decided")
        )
        mine = result.groups.select(
            "label.team",
            pl.col(f"{side}_accepted").alias("accepted"),
            pl.col(f"{side}_decided").alias("decided"),
        )
        assert mine.sort("label.team").rows() == r.sort("label.team").rows()


def test_check_tolerates_a_drop_within_the_margin(gate: Path) -> None:
    result = oa.check(gate, "tests", **WINDOWS, max_drop=0.3, as_of=AS_OF)
    assert (result.verdict, result.exit_code) == ("within noise", 0)


def test_check_without_enough_runs_exits_4(gate: Path) -> None:
    result = oa.check(gate, "tests", **WINDOWS, min_decided=201, as_of=AS_OF)
    assert (result.verdict, result.exit_code) == ("not enough data", 4)
    empty = oa.check(gate, baseline="until=2020-01-01", candidate="since=2026-12-31", as_of=AS_OF)
    assert empty.verdict == "not enough data"
    assert empty.groups.select("baseline_decided", "candidate_decided").row(0) == (0, 0)


def test_check_paired_holds_compare_counts_and_the_paired_interval(gate: Path) -> None:
    result = oa.check(
        gate, baseline_rule="tests", candidate_rule="tests+review", by="label.team", as_of=AS_OF
    )
    assert result.paired
    _, flips = oa.compare(gate, ["tests", "tests+review"], by="label.team", as_of=AS_OF)
    cells = flips.filter(rule_a="tests+review", rule_b="tests").sort("label.team")
    groups = result.groups.sort("label.team")
    assert (
        groups.select("label.team", "a", "b", "c", "d").rows()
        == cells.select("label.team", "a", "b", "c", "d").rows()
    )
    z = NormalDist().inv_cdf(1 - (1 - result.level) / 2)
    for got, cell in zip(groups.iter_rows(named=True), cells.iter_rows(named=True), strict=True):
        lits = [pl.lit(cell[k]) for k in "abcd"]
        want = _values(paired_difference(*lits, z=z))
        assert (got["difference"], got["difference_low"], got["difference_high"]) == (
            pytest.approx(want)
        )
        assert got["p_value"] == pytest.approx(cell["p_value"])
    # review rejects a quarter of the runs tests passes: a drop far beyond 2 points
    assert result.verdict == "regressed"


def test_check_refuses_what_it_cannot_compare(gate: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="two windows"):
        oa.check(gate, "tests", baseline="since=30d")
    with pytest.raises(oa.OcpAnalyticsError, match="the same rule"):
        oa.check(gate, baseline_rule="tests", candidate_rule="tests")
    with pytest.raises(oa.OcpAnalyticsError, match="take no rule"):
        oa.check(gate, baseline_rule="tests", candidate_rule="review", baseline="since=1d")
    with pytest.raises(oa.OcpAnalyticsError, match="max_drop"):
        oa.check(gate, **WINDOWS, max_drop=2)
