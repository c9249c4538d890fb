"""The one finish: per-(run, rule) summaries into decisions; pure.

docs/figures.md, "Per run: the acceptance table".

Every kind of rule (compiled, see ``_compiled``; or exploded, see
``_recorded``) reduces to the same **summary**, and :func:`finish` turns
each into the output columns (:data:`OUTPUT_SCHEMA`). The summary columns:
``run_id``, ``rule``, ``valid`` (null: the run has no rule), ``n_parts``,
``n_fail``, ``n_pass``, ``late`` (a counted excluded event), ``used_rank``
and ``ev_rank`` (tier ranks), the deciding attempt ``apos``/``aid``/``an``/
``ar``, ``window_days``, ``has_events``, ``ended_at``, and the columns its
reason words are keyed by (see :class:`Words`).

Also the words themselves: tiers, outcomes and a part's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

import polars as pl

from ocp_analytics.engine.features import (
    ASSERTED,
    ATTEMPT_FIELDS,
    FAIL,
    PASS,
    window_closes,
    window_open,
)
from ocp_analytics.schemas import OUTCOME_TIERS, TIER_Q, polars_schema

__all__ = [
    "CODED",
    "NO_WORDS",
    "OUTPUT_SCHEMA",
    "WINDOW_CLOSES",
    "Words",
    "enum_words",
    "finish",
    "part_reason",
    "tier_q",
    "tier_word",
]

# The decisions' columns: derived from the declared schema (schemas.ACCEPTANCE).
OUTPUT_SCHEMA = dict(polars_schema("acceptance"))
# finish(..., closes=True): when an open window closes (the instant a row may change)
WINDOW_CLOSES = "_window_closes"
CODED = ("rule", "outcome", "tier")  # the texts decide(..., coded=True) gives as Enum
_APOS = ATTEMPT_FIELDS["pos"]

# Per-row words and numbers of a small integer code are gathered from a
# short literal: about half the CPU of ``replace_strict`` or a when/then
# chain (benchmarks/RESULTS.md, "... cheaper output words", 2026-12-04).
_TIER_WORDS = pl.Series(OUTCOME_TIERS, dtype=pl.String)
_TIER_QS = pl.Series([TIER_Q[t] for t in OUTCOME_TIERS], dtype=pl.Float64)
_OUTCOMES = pl.Series(["accepted", "rejected", "unknown"], dtype=pl.String)
# The same words as Enum columns, for a sink that takes texts dictionary-coded
# (``decide(..., coded=True)``): the Parquet writer writes a dictionary column's
# codes as they are instead of hashing each row's text (benchmarks/RESULTS.md,
# "Two slices in flight, texts handed over without a copy", 2026-12-04).
_TIER_ENUM = _TIER_WORDS.cast(pl.Enum(OUTCOME_TIERS))
_OUTCOME_ENUM = _OUTCOMES.cast(pl.Enum(_OUTCOMES.to_list()))
CODED_TYPES = {"outcome": _OUTCOME_ENUM.dtype, "tier": _TIER_ENUM.dtype}  # a rule's: its name
NO_WORDS = pl.lit([], pl.List(pl.String))  # the reasons of a part that passes
_NOT_APPLICABLE = pl.Series([["no_rule"], ["invalid_rule"]], dtype=pl.List(pl.String))


def enum_words(lists: pl.Series) -> pl.Series:
    """Lists of words as lists of an Enum of their distinct words (first seen first).

    Examples
    --------
    >>> enum_words(pl.Series([["failed:tests"], [], ["late:revert", "failed:tests"]])).dtype
    List(Enum(categories=['failed:tests', 'late:revert']))
    """
    words = lists.explode().drop_nulls().unique(maintain_order=True)
    return lists.cast(pl.List(pl.Enum(words.to_list())))


def tier_word(rank: pl.Expr) -> pl.Expr:
    """The tier word of a rank (docs/figures.md "tier and q").

    Examples
    --------
    >>> pl.select(tier_word(pl.lit(pl.Series([0, 3, None], dtype=pl.Int8)))).to_series().to_list()
    ['verified', 'asserted', None]
    """
    return pl.lit(_TIER_WORDS).gather(rank)


def tier_q(rank: pl.Expr) -> pl.Expr:
    """q of a tier rank: 0.98, 0.95, 0.80, 0.70.

    Examples
    --------
    >>> pl.select(tier_q(pl.lit(pl.Series([0, 2], dtype=pl.Int8)))).to_series().to_list()
    [0.98, 0.8]
    """
    return pl.lit(_TIER_QS).gather(rank)


def part_reason(state: pl.Expr, name: pl.Expr, fail_word: str) -> pl.Expr:
    """Null for a passing part, else ``failed:``/``below_target:`` or ``missing:`` NAME.

    Examples
    --------
    >>> states = pl.lit(pl.Series([PASS, FAIL, 1], dtype=pl.Int8))
    >>> pl.select(part_reason(states, pl.lit("tests"), "failed")).to_series().to_list()
    [None, 'failed:tests', 'missing:tests']
    """
    return (
        pl.when(state == PASS)
        .then(None)
        .when(state == FAIL)
        .then(pl.format(fail_word + ":{}", name))
        .otherwise(pl.format("missing:{}", name))
    )


class Words(NamedTuple):
    """How a planner's summaries name their reasons.

    Either a dense table: ``lut`` holds the word lists of every outcome the
    rule can have, and the summary's ``_ix`` column indexes it (a gather, no
    string built per run); or keys: ``keys`` are non-null columns of the
    summary that determine a row's words and ``words`` adds the ``reasons``
    column to a frame of distinct keys, joined back (for rules of too many
    parts or event combinations to list).
    """

    keys: list[str]
    words: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    lut: pl.Series | None = None


def finish(
    summary: pl.LazyFrame,
    as_of: datetime,
    carried: Sequence[str],
    words: Words,
    *,
    reasons: bool = True,
    rule: str | None = None,
    closes: bool = False,
) -> pl.LazyFrame:
    """Summaries → ``outcome, reasons, tier, q``, the attempt at acceptance, ``window_open``.

    The combine rule of docs/figures.md "outcome and reasons", once for every kind of rule: no
    parts is unknown, a fail beats an unknown, all parts passing accepts;
    a counted excluded event (``late``) then rejects; an unreadable rule is
    unknown (``invalid_rule``), a missing one too (``no_rule``). With
    ``reasons`` false the ``reasons`` column is left null (rates need none).
    With ``closes``, a last column :data:`WINDOW_CLOSES`: when an open
    window closes (null when the window is not open).
    With ``rule`` (the name every row of the summary has), the texts of
    :data:`CODED` are Enum columns, and so are the reasons' words where they
    come from a table of outcomes (``words.lut``); the rest is as
    :data:`OUTPUT_SCHEMA` says.
    """
    valid = pl.col("valid").fill_null(False)
    n_parts = pl.col("n_parts").fill_null(0)
    late = pl.col("late").fill_null(False)
    failed = (n_parts > 0) & (pl.col("n_fail") > 0).fill_null(False)
    rejected = valid & (late | failed)
    accepted = (
        valid & ~late & (n_parts > 0) & ~failed & (pl.col("n_pass") == n_parts).fill_null(False)
    )
    code = pl.when(accepted).then(0).when(rejected).then(1).otherwise(2)
    outcome = pl.lit(_OUTCOMES if rule is None else _OUTCOME_ENUM).gather(code)
    rank = (
        pl.when(valid)
        .then(pl.max_horizontal(pl.col("used_rank"), pl.col("ev_rank")))
        .fill_null(ASSERTED)
    )
    decided = accepted & pl.col(_APOS).is_not_null()
    if not reasons:
        summary = summary.with_columns(pl.lit(None, pl.List(pl.String)).alias("reasons"))
    elif words.lut is not None:
        summary = _reasons_from_table(summary, words.lut, coded=rule is not None)
    else:
        summary = _reasons_by_key(summary, words)
    return _output_columns(summary, outcome, rank, decided, as_of, carried, rule, closes)


def _said(otherwise: pl.Expr) -> pl.Expr:
    """The row of :data:`_NOT_APPLICABLE`: 0 without a rule, 1 for an unreadable one.

    ``otherwise`` for a run with a readable rule.
    """
    valid = pl.col("valid")
    return (
        pl.when(valid.is_null()).then(0).when(~valid.fill_null(False)).then(1).otherwise(otherwise)
    )


def _reasons_from_table(summary: pl.LazyFrame, lut: pl.Series, *, coded: bool) -> pl.LazyFrame:
    """``reasons`` gathered from the table of outcomes ``lut`` at the summary's ``_ix``.

    With ``coded``, the words are an Enum of this table's words.
    """
    lut = pl.concat([_NOT_APPLICABLE, lut], rechunk=True)
    if coded:
        lut = enum_words(lut)
    index = _said(pl.col("_ix") + len(_NOT_APPLICABLE))
    return summary.with_columns(pl.lit(lut).gather(index).alias("reasons"))


def _reasons_by_key(summary: pl.LazyFrame, words: Words) -> pl.LazyFrame:
    """``reasons`` by the summary's keys: the words of each distinct key are
    made once and joined back (rows sharing a key share their words)."""
    assert words.words is not None
    keys = ["_say", *words.keys]
    summary = summary.with_columns(_said(pl.lit(-1)).cast(pl.Int8).alias("_say"))
    distinct = summary.select(keys).unique()
    said = pl.col("_say")
    lists = pl.concat(
        [
            words.words(distinct.filter(said < 0)),
            distinct.filter(said >= 0).with_columns(
                pl.lit(_NOT_APPLICABLE).gather(said).alias("reasons")
            ),
        ]
    )
    return summary.join(lists, on=keys, how="left", maintain_order="left")


def _output_columns(
    summary: pl.LazyFrame,
    outcome: pl.Expr,
    rank: pl.Expr,
    decided: pl.Expr,
    as_of: datetime,
    carried: Sequence[str],
    rule: str | None = None,
    closes: bool = False,
) -> pl.LazyFrame:
    valid = pl.col("valid").fill_null(False)
    coded = rule is not None
    is_open = valid & window_open(pl.col("has_events"), pl.col("window_days"), as_of)
    ends = pl.when(is_open).then(window_closes(pl.col("has_events"), pl.col("window_days")))
    extra = [ends.dt.cast_time_unit("us").alias(WINDOW_CLOSES)] if closes else []
    tier = pl.lit(_TIER_ENUM).gather(rank) if coded else tier_word(rank)
    return summary.select(
        "run_id",
        pl.lit(rule, pl.Enum([rule])).alias("rule") if rule is not None else pl.col("rule"),
        outcome.alias("outcome"),
        "reasons",
        tier.alias("tier"),
        tier_q(rank).alias("q"),
        pl.when(decided).then(pl.col("aid")).alias("accepted_attempt"),
        pl.when(decided).then(pl.col(_APOS)).alias("attempts_to_acceptance"),
        pl.when(decided).then(pl.col("an")).alias("accepted_attempt_n"),
        pl.when(decided).then(pl.col("ar")).alias("accepted_round"),
        is_open.alias("window_open"),
        pl.lit(as_of).dt.cast_time_unit("us").alias("as_of"),
        *extra,
        *carried,
    ).cast({k: v for k, v in OUTPUT_SCHEMA.items() if not (coded and k in (*CODED, "reasons"))})
