"""Frame plumbing shared by the statistics: a frame type that comes back as
it went in, and grouping that also works with no group keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

OUTCOME = "outcome"
ACCEPTED = "accepted"
REJECTED = "rejected"


def over(expr: pl.Expr, by: Sequence[str]) -> pl.Expr:
    """``expr`` evaluated per group of ``by``, or over the whole frame without keys."""
    return expr.over(by) if by else expr


def join_on(left: FrameT, right: FrameT, by: Sequence[str]) -> FrameT:
    """Rows of ``left`` beside the row of ``right`` with the same ``by`` keys.

    ``right`` has one row per group; without keys it has one row in all, and
    the join is a cross join. The rows of ``left`` keep their order.
    """
    if not by:
        return left.join(right, how="cross", maintain_order="left")
    return left.join(right, on=list(by), how="left", nulls_equal=True, maintain_order="left")


def outcome_flags(outcome: str) -> tuple[pl.Expr, pl.Expr]:
    """(accepted, decided) as boolean expressions over an outcome column."""
    o = pl.col(outcome)
    return o == ACCEPTED, o.is_in([ACCEPTED, REJECTED])
