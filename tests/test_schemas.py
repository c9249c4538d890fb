"""schemas.py: the one home of column types."""

from __future__ import annotations

import polars as pl
import pytest

from ocp_analytics import schemas as S


@pytest.mark.parametrize("table", [*S.TABLES, *S.OUTPUTS])
def test_polars_schema_is_what_arrow_converts_to(table: str) -> None:
    empty = pl.from_arrow({**S.TABLES, **S.OUTPUTS}[table].empty_table())
    assert isinstance(empty, pl.DataFrame)
    assert S.polars_schema(table) == empty.schema


def test_the_decisions_columns_are_the_declared_acceptance_table() -> None:
    from ocp_analytics.engine.acceptance import OUTPUT_SCHEMA

    assert list(OUTPUT_SCHEMA) == S.ACCEPTANCE.names
    assert dict(S.polars_schema("acceptance")) == OUTPUT_SCHEMA


def test_flip_counts_have_the_declared_flips_columns() -> None:
    from ocp_analytics.engine.flips import combine_flips, flag_counts

    # outcome codes: 0 rejected, 1 accepted, 2 unknown
    flags = pl.DataFrame({"_doc": [1, 1], "r": [0, 1], "o": [1, 0]})
    ids = pl.DataFrame({"_doc": [1], "run_id": ["r1"]})
    flips = combine_flips([flag_counts(flags, ids, ["x", "y"], 5)], 5).collect()
    assert flips.schema == S.FLIP_SCHEMA == S.polars_schema("flips")
    assert flips.columns == S.FLIPS.names
    columns = ["rule_a", "rule_b", "runs_compared", "flips", "b", "c", "sample_run_ids"]
    assert flips.select(columns).rows() == [
        ("x", "y", 1, 1, 1, 0, ["r1"]),
        ("y", "x", 1, 0, 0, 1, []),
    ]


def test_tier_words_are_spelled_once() -> None:
    from typing import get_args

    from ocp_analytics._typing import Tier

    assert S.OUTCOME_TIERS == get_args(Tier) == ("verified", "reported", "heuristic", "asserted")
    assert tuple(S.TIER_Q) == S.OUTCOME_TIERS
