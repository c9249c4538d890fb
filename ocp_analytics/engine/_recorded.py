"""Each run's own rule (``rule = 'recorded'``), summarised for the one finish; pure.

A slice holding few distinct recorded definitions (teams share a handful of
bars) has them compiled like alternative rules (:func:`compiled_summary`,
over the wide table of ``_compiled``); past :data:`RECORDED_COMPILED_MAX`,
each run's ``requires`` and ``excludes_events`` are exploded and joined with
the latest-signal and event tables instead (:func:`recorded_summary`). Both
give the summary ``_finish`` describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ocp_analytics.engine._compiled import Compiled, alternative_summary, compiled_words
from ocp_analytics.engine._finish import NO_WORDS, Words, part_reason
from ocp_analytics.engine.features import (
    ATTEMPT_FIELDS,
    FAIL,
    PASS,
    event_counts,
    score_state,
)
from ocp_analytics.model.rules import (
    DEFAULT_EXCLUDES,
    DEFAULT_WINDOW_DAYS,
    RECORDED,
    Rule,
    ScoreTarget,
)

__all__ = [
    "RECORDED_COMPILED_MAX",
    "SEP",
    "TEXT_WORDS",
    "compiled_summary",
    "distinct_recorded",
    "recorded_summary",
]

SEP = "\x1f"  # joins reasons internally; refused in alternative rules' names
_APOS = ATTEMPT_FIELDS["pos"]

# The exploded summaries key their reasons by the texts themselves (words
# joined by SEP): one run's definition is unlike another's.
TEXT_WORDS = Words(
    ["part_reasons", "ev_reasons"],
    lambda keys: keys.with_columns(
        pl.concat_list(
            *(
                pl.when(pl.col(c) == "").then(NO_WORDS).otherwise(pl.col(c).str.split(SEP))
                for c in ("part_reasons", "ev_reasons")
            )
        ).alias("reasons")
    ),
)


def recorded_summary(
    runs: pl.LazyFrame,
    verdicts: pl.LazyFrame,
    scores: pl.LazyFrame,
    events: pl.LazyFrame,
    rules: pl.LazyFrame,
    carried: Sequence[str],
) -> pl.LazyFrame:
    """The summary of every run under its own recorded rule (``rule = 'recorded'``).

    Each run's ``requires`` and ``excludes_events`` are exploded and joined
    with the latest signals and the event rows. Its reasons are keyed as
    :data:`TEXT_WORDS` says.
    """
    ok = rules.filter(pl.col("valid"))
    parts = _exploded_parts(ok, verdicts, scores)
    ev = _exploded_events(ok, events)
    has_events = pl.col("excludes_events").is_null() | (pl.col("excludes_events").list.len() > 0)
    rule_cols = rules.select(
        "doc_id",
        "valid",
        pl.col("window_days").fill_null(DEFAULT_WINDOW_DAYS),
        has_events.alias("has_events"),
    )
    return (
        runs.join(rule_cols, on="doc_id", how="left")
        .join(parts, on="doc_id", how="left")
        .join(ev, on="doc_id", how="left")
        .with_columns(pl.lit(RECORDED).alias("rule"))
        .select(
            "run_id",
            "rule",
            "valid",
            "n_parts",
            "n_fail",
            "n_pass",
            pl.col("part_reasons").fill_null(""),
            "used_rank",
            *ATTEMPT_FIELDS.values(),
            pl.col("ev_reasons").fill_null(""),
            (pl.col("ev_reasons").fill_null("") != "").alias("late"),
            "ev_rank",
            "window_days",
            pl.col("has_events").fill_null(False),
            "ended_at",
            *carried,
        )
    )


def _exploded_parts(ok: pl.LazyFrame, verdicts: pl.LazyFrame, scores: pl.LazyFrame) -> pl.LazyFrame:
    """Per run with a valid rule: its parts' counts, reasons (joined by :data:`SEP`),
    the rank of the parts it used and its deciding attempt."""
    fields = ["doc_id", "ri", "state", "rank", "reason", *ATTEMPT_FIELDS.values()]
    req = (
        ok.select("doc_id", pl.col("requires").alias("name"))
        .with_columns(pl.int_ranges(0, pl.col("name").list.len()).alias("ri"))
        .explode(["name", "ri"])
        .filter(pl.col("name").is_not_null())
        .group_by("doc_id", "name")
        .agg(pl.col("ri").min())
        .join(verdicts, on=["doc_id", "name"], how="left")
        .with_columns(pl.col("state").fill_null(1))
        .with_columns(part_reason(pl.col("state"), pl.col("name"), "failed").alias("reason"))
        .select(fields)
    )
    score = (
        ok.filter(pl.col("score_name").is_not_null())
        .select("doc_id", pl.col("score_name").alias("name"), "score_target", "score_better")
        .join(scores, on=["doc_id", "name"], how="left")
        .with_columns(
            score_state(
                pl.col("value"), pl.col("score_target"), pl.col("score_better") == "lower"
            ).alias("state"),
            pl.lit(1 << 30, pl.Int64).alias("ri"),
        )
        .with_columns(part_reason(pl.col("state"), pl.col("name"), "below_target").alias("reason"))
        .select(fields)
    )
    state = pl.col("state")
    return (
        pl.concat([req, score])
        .group_by("doc_id")
        .agg(
            pl.len().alias("n_parts"),
            (state == FAIL).sum().alias("n_fail"),
            (state == PASS).sum().alias("n_pass"),
            pl.col("reason").sort_by("ri").drop_nulls().str.join(SEP).alias("part_reasons"),
            pl.col("rank").filter(state != 1).max().alias("used_rank"),
            pl.col(_APOS).max(),
            pl.struct("aid", "an", "ar").sort_by(_APOS, nulls_last=False).last().alias("_at"),
        )
        .unnest("_at")
    )


def _exploded_events(ok: pl.LazyFrame, events: pl.LazyFrame) -> pl.LazyFrame:
    """Per run with a counted excluded event: their reasons (joined by
    :data:`SEP`, in signal order) and the strongest tier rank."""
    excl = (
        ok.select(
            "doc_id",
            pl.col("excludes_events").fill_null(list(DEFAULT_EXCLUDES)).alias("name"),
            pl.col("window_days").fill_null(DEFAULT_WINDOW_DAYS).alias("wd"),
        )
        .explode("name")
        .filter(pl.col("name").is_not_null())
        .unique(["doc_id", "name"])
    )
    return (
        events.join(excl, on=["doc_id", "name"])
        .filter(event_counts(pl.col("wd")))
        .group_by("doc_id")
        .agg(
            pl.format("late:{}", pl.col("name"))
            .sort_by("sig_idx")
            .str.join(SEP)
            .alias("ev_reasons"),
            pl.col("rank").max().alias("ev_rank"),
        )
    )


# Recorded rules are compiled like alternative ones when a slice holds few
# distinct definitions (teams share a handful of bars); past this many, each
# run's rule is exploded and joined instead.
RECORDED_COMPILED_MAX = 64
_DEFINITION = [
    "requires",
    "score_name",
    "score_target",
    "score_better",
    "excludes_events",
    "window_days",
]


def _rule_of_row(row: dict[str, Any]) -> Rule:
    """A recorded rule's row (valid) as a :class:`Rule` named ``recorded``."""
    req, ex = row["requires"], row["excludes_events"]
    score = None
    if row["score_name"] is not None:
        score = ScoreTarget(row["score_name"], row["score_target"], row["score_better"])
    return Rule(
        name=RECORDED,
        requires=None if req is None else tuple(n for n in req if n is not None),
        score=score,
        excludes_events=None if ex is None else tuple(n for n in ex if n is not None),
        window_days=row["window_days"],
    )


def distinct_recorded(rules: pl.LazyFrame) -> tuple[list[Rule], pl.DataFrame] | None:
    """The distinct valid recorded rules of a slice and ``doc_id → _rid, _valid``.

    ``None`` when there are more than :data:`RECORDED_COMPILED_MAX`. Rows
    are grouped by their definition's columns (less CPU than grouping a
    JSON text of them: benchmarks/RESULTS.md, "Writer ahead, cheaper shared
    features", 2026-12-04); definitions are numbered in order of first
    appearance.
    """
    defs = rules.select("doc_id", "valid", *_DEFINITION).collect()
    groups = (
        defs.with_row_index("_i")
        .filter(pl.col("valid"))
        .group_by(_DEFINITION, maintain_order=True)
        .agg("_i")
    )
    if groups.height > RECORDED_COMPILED_MAX:
        return None
    members = groups.select("_i", pl.int_range(pl.len(), dtype=pl.UInt32).alias("_rid"))
    members = members.explode("_i")
    rid = pl.repeat(None, defs.height, dtype=pl.UInt32, eager=True)
    links = defs.select(
        "doc_id",
        rid.scatter(members.get_column("_i"), members.get_column("_rid")).alias("_rid"),
        pl.col("valid").alias("_valid"),
    )
    distinct = defs.gather(groups.get_column("_i").list.first())
    return [_rule_of_row(r) for r in distinct.iter_rows(named=True)], links


def compiled_summary(
    wide: pl.LazyFrame,
    definitions: Sequence[Rule],
    first: int,
    c: Compiled,
    late_words: Sequence[pl.Series],
    carried: Sequence[str],
    *,
    wanted: bool = True,
) -> tuple[pl.LazyFrame, Words]:
    """The summary of every run under its recorded rule, compiled, and how it names reasons.

    ``definitions`` are the slice's distinct ones (:func:`distinct_recorded`),
    the ``first``-th rule of ``c`` onward; ``wide`` has each run's ``_rid``
    (its definition's number) and ``_valid``. ``wanted``: reasons are asked for.
    """
    rid = pl.col("_rid")
    numbered = [(first + j, r) for j, r in enumerate(definitions)]
    words, offsets = compiled_words(numbered, c, late_words, rid=True, wanted=wanted)
    n_codes = sum(k.startswith("_pc") for k in words.keys)
    parts = [_unruled_summary(wide.filter(rid.is_null()), carried, words.keys)]
    parts += [
        alternative_summary(
            wide.filter(rid == j),
            r,
            k,
            c,
            carried,
            n_codes=n_codes,
            rid=j,
            offset=None if offsets is None else offsets[j],
        )
        for j, (k, r) in enumerate(numbered)
    ]
    return pl.concat(parts, how="vertical_relaxed"), words


def _unruled_summary(
    wide: pl.LazyFrame, carried: Sequence[str], keys: Sequence[str]
) -> pl.LazyFrame:
    """Runs with no recorded rule (``_valid`` null) or an unreadable one (false).

    ``keys`` name the reason columns of the frame it joins (see :class:`Words`);
    they are 0 here: ``finish`` names these runs' reasons from ``valid``.
    """
    return wide.select(
        "run_id",
        pl.lit(RECORDED).alias("rule"),
        pl.col("_valid").alias("valid"),
        pl.lit(0).alias("n_parts"),
        pl.lit(0).alias("n_fail"),
        pl.lit(0).alias("n_pass"),
        pl.lit(None, pl.Int8).alias("used_rank"),
        *(pl.lit(None).alias(f) for f in ("apos", "aid", "an", "ar")),
        *(pl.lit(0, pl.Int64).alias(k) for k in keys),
        pl.lit(False).alias("late"),
        pl.lit(None, pl.Int8).alias("ev_rank"),
        pl.lit(DEFAULT_WINDOW_DAYS).alias("window_days"),
        pl.lit(False).alias("has_events"),
        "ended_at",
        *carried,
    )
