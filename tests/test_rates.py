"""Pure rate aggregations: partials, combine, Wilson bounds; the flips' old import path."""

from __future__ import annotations

import polars as pl
import pytest

from ocp_analytics.engine.rates import check_tier, rates_from, wilson
from ocp_analytics.exceptions import OcpAnalyticsError


def test_rates_median_and_shares_from_histogram() -> None:
    acc = pl.LazyFrame(
        {
            "rule": ["r"] * 6,
            "outcome": ["accepted"] * 5 + ["rejected"],
            "tier": ["verified"] * 6,
            "window_open": [False, True, False, False, False, False],
            "attempts_to_acceptance": [1, 4, 2, 1, None, None],
            "accepted_attempt_n": [1, 2, 1, 1, None, None],
            "as_of": [None] * 6,
        },
        schema_overrides={"as_of": pl.Datetime("us", "UTC")},
    )
    row = rates_from(acc).collect().row(0, named=True)
    assert (row["runs"], row["accepted"], row["rejected"], row["provisional"]) == (6, 5, 1, 1)
    assert row["attempts_median"] == 1.5  # (1, 1, 2, 4): middle two are 1 and 2
    assert row["attempts_mean"] == 2.0
    assert row["first_attempt_share"] == 0.5
    assert row["first_node_attempt_share"] == 0.75  # attempt 2 of run 3 is its node's first


def test_wilson_bounds_stay_within_0_and_1() -> None:
    frame = pl.DataFrame({"s": [0, 14, 1, 0], "n": [14, 14, 1, 0]})
    lo, hi = wilson(pl.col("s"), pl.col("n"))
    got = frame.select(lo.alias("lo"), hi.alias("hi")).rows()
    assert [tuple(None if v is None else round(v, 4) for v in r) for r in got] == [
        (0.0, 0.2153),
        (0.7847, 1.0),
        (0.2065, 1.0),
        (None, None),
    ]


def test_unknown_tier_is_refused_naming_the_tiers() -> None:
    assert (check_tier("heuristic"), check_tier(None)) == ("heuristic", None)
    with pytest.raises(
        OcpAnalyticsError, match="use one of verified, reported, heuristic, asserted"
    ):
        check_tier("gold")


def test_flip_functions_keep_their_import_path_in_rates() -> None:
    """Spark and older code import the flips from engine.rates; they now live in engine.flips."""
    from ocp_analytics.engine import flips, rates

    for name in ("FlipPartials", "combine_flips", "flag_counts", "flip_counts", "flips_from"):
        assert getattr(rates, name) is getattr(flips, name), name


def test_partials_regrouped_are_those_of_the_coarser_grouping() -> None:
    """One sink by the finest keys gives every coarser grouping (the report's headline,
    trend and matrix from one pass), over slices and with a filter on a key."""
    import numpy as np

    from ocp_analytics.engine.rates import RatePartials

    rng = np.random.default_rng(3)
    n = 900
    rows = pl.DataFrame(
        {
            "_w": rng.random(n) < 0.7,
            "team": pl.Series(rng.choice(["a", "b", ""], n)).replace("", None),
            "week": rng.integers(0, 4, n),
            "rule": rng.choice(["x", "y"], n),
            "outcome": rng.choice(["accepted", "rejected", "unknown"], n),
            "tier": rng.choice(["verified", "reported", "heuristic", "asserted"], n),
            "window_open": rng.random(n) < 0.2,
            "attempts_to_acceptance": rng.integers(1, 4, n),
            "accepted_attempt_n": rng.integers(1, 3, n),
            "as_of": [None] * n,
        }
    ).with_columns(pl.col("as_of").cast(pl.Datetime("us", "UTC")))
    fine = RatePartials(["_w", "week", "team"], None)
    direct = {k: RatePartials(list(k), None) for k in [("_w",), ("week", "team"), ("team",)]}
    for lo in range(0, n, 250):
        part = rows.slice(lo, 250)
        fine.add(part)
        direct[("_w",)].add(part)
        for k in [("week", "team"), ("team",)]:
            direct[k].add(part.filter(pl.col("_w")))
    empty = rows.head(0)
    for k, where in [(("_w",), None), (("week", "team"), pl.col("_w")), (("team",), pl.col("_w"))]:
        got = fine.regrouped(list(k), where)
        assert got.rates(empty).collect().equals(direct[k].rates(empty).collect())
        assert got.distribution(empty).collect().equals(direct[k].distribution(empty).collect())
