"""Acceptance decisions: rules × per-run features → outcomes (SEMANTICS §3–§9); pure.

Both kinds of rule reduce to the same per-(run, rule) **summary**, and one
``_finish`` turns every summary into the output columns:

* **alternative rules** (known up front, few distinct names) are compiled
  into column expressions over one wide per-run feature table (a column per
  required name), so K rules cost K projections, not a runs × rules join;
* **recorded rules** (one per run, possibly thousands of distinct ones) are
  summarised by joining each run's exploded ``requires`` and
  ``excludes_events`` with the same latest-signal tables.

The summary columns: ``run_id``, ``rule``, ``valid`` (null: the run has no
rule), ``n_parts``, ``n_fail``, ``n_pass``, ``part_reasons`` and
``ev_reasons`` (reason words joined by :data:`SEP`), ``used_rank`` and
``ev_rank`` (tier ranks), the deciding attempt ``apos``/``aid``/``an``/``ar``,
``window_days``, ``has_events`` and ``ended_at``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import datetime

import polars as pl

from ocp_analytics.features import (
    ASSERTED,
    ATTEMPT_FIELDS,
    FAIL,
    LINK_COLUMNS,
    PASS,
    TIER_RANK,
    UNKNOWN,
    attempt_positions,
    event_counts,
    event_rows,
    latest_scores,
    latest_verdicts,
    link_attempts,
    matched_events,
    placed,
    score_state,
    unlinked,
    window_open,
)
from ocp_analytics.rules import DEFAULT_EXCLUDES, DEFAULT_WINDOW_DAYS, RECORDED, Rule
from ocp_analytics.schemas import ACCEPTANCE, OUTCOME_TIERS, TIER_Q, polars_schema

SEP = "\x1f"  # joins reasons internally; refused in alternative rules' names
OUTPUT_SCHEMA = dict(polars_schema("acceptance"))
assert list(OUTPUT_SCHEMA) == ACCEPTANCE.names
_APOS = ATTEMPT_FIELDS["pos"]

__all__ = ["OUTPUT_SCHEMA", "SEP", "TIER_RANK", "decide", "turned_by_late_event"]


def tier_word(rank: pl.Expr) -> pl.Expr:
    """The tier word of a rank (SEMANTICS §7)."""
    return rank.replace_strict(dict(enumerate(OUTCOME_TIERS)), return_dtype=pl.String)


def tier_q(rank: pl.Expr) -> pl.Expr:
    """q of a tier rank: 0.98, 0.95, 0.80, 0.70."""
    return rank.replace_strict(
        {i: TIER_Q[t] for i, t in enumerate(OUTCOME_TIERS)}, return_dtype=pl.Float64
    )


def part_reason(state: pl.Expr, name: pl.Expr, fail_word: str) -> pl.Expr:
    """Null for a passing part, else ``failed:``/``below_target:`` or ``missing:`` NAME."""
    return (
        pl.when(state == PASS)
        .then(None)
        .when(state == FAIL)
        .then(pl.format(fail_word + ":{}", name))
        .otherwise(pl.format("missing:{}", name))
    )


# --- the one finish -------------------------------------------------------------


def _finish(
    summary: pl.LazyFrame,
    as_of: datetime,
    carried: Sequence[str] = (),
    *,
    reasons: bool = True,
) -> pl.LazyFrame:
    """Summaries → ``outcome, reasons, tier, q``, the attempt at acceptance, ``window_open``.

    The combine rule of SEMANTICS §6–§9, once for every kind of rule: no
    parts is unknown, a fail beats an unknown, all parts passing accepts;
    a counted excluded event then rejects; an unreadable rule is unknown
    (``invalid_rule``), a missing one too (``no_rule``). With ``reasons``
    false the ``reasons`` column is left null (rates need none).
    """
    valid = pl.col("valid").fill_null(False)
    n_parts = pl.col("n_parts").fill_null(0)
    base = (
        pl.when(n_parts == 0)
        .then(pl.lit("unknown"))
        .when(pl.col("n_fail") > 0)
        .then(pl.lit("rejected"))
        .when(pl.col("n_pass") == n_parts)
        .then(pl.lit("accepted"))
        .otherwise(pl.lit("unknown"))
    )
    late = pl.col("ev_reasons").fill_null("") != ""
    outcome = (
        pl.when(~valid).then(pl.lit("unknown")).when(late).then(pl.lit("rejected")).otherwise(base)
    )
    joined = pl.concat_str(
        [
            pl.when(pl.col("part_reasons") != "").then(pl.col("part_reasons")),
            pl.when(late).then(pl.col("ev_reasons")),
        ],
        separator=SEP,
        ignore_nulls=True,
    )
    text = (
        pl.when(pl.col("valid").is_null())
        .then(pl.lit("no_rule"))
        .when(~valid)
        .then(pl.lit("invalid_rule"))
        .otherwise(joined.fill_null(""))
    )
    rank = (
        pl.when(valid)
        .then(pl.max_horizontal(pl.col("used_rank"), pl.col("ev_rank")))
        .fill_null(ASSERTED)
    )
    decided = (outcome == "accepted") & pl.col(_APOS).is_not_null()
    # Few distinct reason texts: split each once and join the lists back
    # (splitting per row was a third of the time of writing every row).
    if not reasons:
        summary = summary.with_columns(pl.lit(None, pl.List(pl.String)).alias("reasons"))
        return _output_columns(summary, outcome, rank, decided, as_of, carried)
    summary = summary.with_columns(text.alias("_text"))
    lists = (
        summary.select("_text")
        .unique()
        .with_columns(
            pl.when(pl.col("_text") == "")
            .then(pl.lit([], pl.List(pl.String)))
            .otherwise(pl.col("_text").str.split(SEP))
            .alias("reasons")
        )
    )
    summary = summary.join(lists, on="_text", how="left", maintain_order="left")
    return _output_columns(summary, outcome, rank, decided, as_of, carried)


def _output_columns(
    summary: pl.LazyFrame,
    outcome: pl.Expr,
    rank: pl.Expr,
    decided: pl.Expr,
    as_of: datetime,
    carried: Sequence[str],
) -> pl.LazyFrame:
    valid = pl.col("valid").fill_null(False)
    return summary.select(
        "run_id",
        "rule",
        outcome.alias("outcome"),
        "reasons",
        tier_word(rank).alias("tier"),
        tier_q(rank).alias("q"),
        pl.when(decided).then(pl.col("aid")).alias("accepted_attempt"),
        pl.when(decided).then(pl.col(_APOS)).alias("attempts_to_acceptance"),
        pl.when(decided).then(pl.col("an")).alias("accepted_attempt_n"),
        pl.when(decided).then(pl.col("ar")).alias("accepted_round"),
        (valid & window_open(pl.col("has_events"), pl.col("window_days"), as_of)).alias(
            "window_open"
        ),
        pl.lit(as_of).dt.cast_time_unit("us").alias("as_of"),
        *carried,
    ).cast({k: v for k, v in OUTPUT_SCHEMA.items()})


def turned_by_late_event() -> pl.Expr:
    """Rows a counted excluded event turned to ``rejected`` (over acceptance rows).

    Rejected, with a ``late:`` reason and no failing part (``failed:`` or
    ``below_target:``): without the event the run would have been accepted,
    or unknown when a part was missing ("accepted yesterday, reverted today").

    Examples
    --------
    >>> acc = pl.DataFrame({"outcome": ["rejected", "rejected", "accepted"],
    ...     "reasons": [["late:revert"], ["failed:tests", "late:revert"], []]})
    >>> acc.filter(turned_by_late_event()).height
    1
    """
    word = pl.element()
    late = pl.col("reasons").list.eval(word.str.starts_with("late:")).list.any()
    failing = word.str.starts_with("failed:") | word.str.starts_with("below_target:")
    return (
        (pl.col("outcome") == "rejected") & late & ~pl.col("reasons").list.eval(failing).list.any()
    )


# --- alternative rules: compiled columns ---------------------------------------------


class _Compiled:
    """The names a set of alternative rules reads, numbered for column names."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.verdicts = list(dict.fromkeys(n for r in rules for n in r.effective_requires))
        self.scores = list(dict.fromkeys(r.score.name for r in rules if r.score))
        self.events = list(dict.fromkeys(n for r in rules for n in r.effective_excludes))
        # Rules sharing excluded events and window share their event columns.
        keys = {
            k: (tuple(sorted(set(r.effective_excludes))), r.effective_window_days)
            for k, r in enumerate(rules)
            if r.effective_excludes
        }
        self.event_sets = list(dict.fromkeys(keys.values()))
        self.ei = {k: self.event_sets.index(key) for k, key in keys.items()}


_PART_VALUES = ["rank", *ATTEMPT_FIELDS.values()]


def _named_columns(
    wide: pl.LazyFrame, long: pl.DataFrame, names: list[str], value: str, prefix: str
) -> pl.LazyFrame:
    """``wide`` with columns ``{prefix}{field}_{i}`` of the i-th name's row of ``long``.

    ``long`` has at most one row per (``doc_id``, ``name``); one left join a
    name (measured 2.4x less CPU than a pivot of every name at once).
    """
    fields = [value, *_PART_VALUES]
    for i, name in enumerate(names):
        part = long.lazy().filter(pl.col("name") == name)
        part = part.select("doc_id", *(pl.col(f).alias(f"{prefix}{f}_{i}") for f in fields))
        wide = wide.join(part, on="doc_id", how="left")
    return wide


def _wide(
    runs: pl.DataFrame,
    verdicts: pl.DataFrame | None,
    scores: pl.DataFrame | None,
    events: pl.DataFrame | None,
    c: _Compiled,
) -> pl.DataFrame:
    """The per-run feature table of the compiled rules: runs joined to each name's parts."""
    wide = runs.lazy()
    if c.verdicts:
        assert verdicts is not None
        wide = _named_columns(wide, verdicts, c.verdicts, "state", "v")
    if c.scores:
        assert scores is not None
        wide = _named_columns(wide, scores, c.scores, "value", "s")
    if events is not None:
        wide = wide.join(events.lazy(), on="doc_id", how="left")
    return wide.collect()


def _counted_events(ev: pl.LazyFrame, c: _Compiled, as_of: datetime) -> pl.LazyFrame:
    """Event rows that count for some event set, in ``(doc_id, sig_idx)`` order.

    Each row gets a boolean column ``c{k}`` per event set and its reason word
    ``_r``. The conditions are computed once over all rows (in an aggregation they
    would be evaluated group by group: 3x the CPU, measured at 500k runs).
    """
    conds = [
        (pl.col("name").is_in(list(names)) & event_counts(pl.lit(window_days), as_of)).alias(
            f"c{k}"
        )
        for k, (names, window_days) in enumerate(c.event_sets)
    ]
    return (
        ev.with_columns(*conds, pl.format("late:{}", pl.col("name")).alias("_r"))
        .filter(pl.any_horizontal(pl.col(f"c{k}") for k in range(len(conds))))
        .sort("doc_id", "sig_idx")
    )


def _event_columns(counted: pl.DataFrame, c: _Compiled) -> pl.DataFrame:
    """Per run: each event set's counted reasons and strongest tier rank.

    Columns ``er{k}`` (reasons in signal order) and ``ek{k}`` for event set
    ``k``; runs with no counted event are absent.

    Eager on purpose: an eager group-by keeps the rows of each group in input
    order (documented for ``DataFrame.group_by``), so the reasons need no
    per-group sort.
    """
    aggs = []
    for k in range(len(c.event_sets)):
        counts = pl.col(f"c{k}")
        aggs += [
            pl.col("_r").filter(counts).str.join(SEP).alias(f"er{k}"),
            pl.col("rank").filter(counts).max().alias(f"ek{k}"),
        ]
    return counted.group_by("doc_id").agg(aggs)


_MAX_CODED_PARTS = 7  # 3**7 = 2,187 combinations of part states


def _part_reasons(states: list[pl.Expr], words: list[tuple[str, str]]) -> pl.Expr:
    """The parts' reasons joined by :data:`SEP`, from one small integer per run.

    The states of a rule's parts are read as the digits of a base-3 number;
    the reasons of every combination are written once here, so no string is
    built per run (measured 4x faster than formatting them per run).
    """
    if len(states) > _MAX_CODED_PARTS:
        reasons = [
            part_reason(s, pl.lit(name), fail)
            for s, (fail, name) in zip(states, words, strict=True)
        ]
        return pl.concat_str(reasons, separator=SEP, ignore_nulls=True)
    code = pl.sum_horizontal([s.cast(pl.Int32) * 3**i for i, s in enumerate(states)])
    mapping = {}
    for combo in itertools.product((FAIL, UNKNOWN, PASS), repeat=len(states)):
        text = [
            f"{fail}:{name}" if st == FAIL else f"missing:{name}"
            for st, (fail, name) in zip(combo, words, strict=True)
            if st != PASS
        ]
        mapping[sum(st * 3**i for i, st in enumerate(combo))] = SEP.join(text)
    return code.replace_strict(mapping, return_dtype=pl.String)


def _alternative_summary(
    wide: pl.LazyFrame, r: Rule, k: int, c: _Compiled, carried: Sequence[str]
) -> pl.LazyFrame:
    """The summary of every run of ``wide`` under one compiled rule (the ``k``-th of ``c``)."""
    states: list[pl.Expr] = []
    words: list[tuple[str, str]] = []  # (fail word, name) of each part, in reason order
    cols: list[str] = []  # column-name templates of each part's fields
    for name in r.effective_requires:
        i = c.verdicts.index(name)
        states.append(pl.col(f"vstate_{i}").fill_null(1))
        words.append(("failed", name))
        cols.append(f"v{{}}_{i}")
    if r.score is not None:
        i = c.scores.index(r.score.name)
        states.append(score_state(pl.col(f"svalue_{i}"), r.score.target, r.score.better == "lower"))
        words.append(("below_target", r.score.name))
        cols.append(f"s{{}}_{i}")
    has_events = bool(r.effective_excludes)
    if cols:
        used = [
            pl.when(s != 1).then(pl.col(t.format("rank")))
            for s, t in zip(states, cols, strict=True)
        ]
        top = pl.max_horizontal([pl.col(t.format(_APOS)) for t in cols])

        def pick(field: str) -> pl.Expr:
            at_top = [pl.col(t.format(_APOS)) == top for t in cols]
            return pl.coalesce(
                [
                    pl.when(a).then(pl.col(t.format(field)))
                    for a, t in zip(at_top, cols, strict=True)
                ]
            )

        part_cols = [
            pl.lit(len(cols)).alias("n_parts"),
            pl.sum_horizontal([(s == FAIL) for s in states]).alias("n_fail"),
            pl.sum_horizontal([(s == PASS) for s in states]).alias("n_pass"),
            _part_reasons(states, words).alias("part_reasons"),
            pl.max_horizontal(used).alias("used_rank"),
            top.alias(_APOS),
            *(pick(f).alias(f) for f in ("aid", "an", "ar")),
        ]
    else:
        part_cols = [
            pl.lit(0).alias("n_parts"),
            pl.lit(0).alias("n_fail"),
            pl.lit(0).alias("n_pass"),
            pl.lit(None, pl.String).alias("part_reasons"),
            pl.lit(None, pl.Int8).alias("used_rank"),
            *(pl.lit(None).alias(f) for f in ("apos", "aid", "an", "ar")),
        ]
    return wide.select(
        "run_id",
        pl.lit(r.name).alias("rule"),
        pl.lit(True).alias("valid"),
        *part_cols,
        (pl.col(f"er{c.ei[k]}") if has_events else pl.lit(None, pl.String)).alias("ev_reasons"),
        (pl.col(f"ek{c.ei[k]}") if has_events else pl.lit(None, pl.Int8)).alias("ev_rank"),
        pl.lit(r.effective_window_days).alias("window_days"),
        pl.lit(has_events).alias("has_events"),
        "ended_at",
        *carried,
    )


# --- recorded rules: explode and join ---------------------------------------------------


def _recorded_summary(
    runs: pl.LazyFrame,
    verdicts: pl.LazyFrame,
    scores: pl.LazyFrame,
    events: pl.LazyFrame,
    rules: pl.LazyFrame,
    as_of: datetime,
    carried: Sequence[str],
) -> pl.LazyFrame:
    """The summary of every run under its own recorded rule (``rule = 'recorded'``)."""
    ok = rules.filter(pl.col("valid"))
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
    parts = (
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
    ev = (
        events.join(excl, on=["doc_id", "name"])
        .filter(event_counts(pl.col("wd"), as_of))
        .group_by("doc_id")
        .agg(
            pl.format("late:{}", pl.col("name"))
            .sort_by("sig_idx")
            .str.join(SEP)
            .alias("ev_reasons"),
            pl.col("rank").max().alias("ev_rank"),
        )
    )
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
            "part_reasons",
            "used_rank",
            *ATTEMPT_FIELDS.values(),
            "ev_reasons",
            "ev_rank",
            "window_days",
            pl.col("has_events").fill_null(False),
            "ended_at",
            *carried,
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


def _rule_of_row(row: dict) -> Rule:
    """A recorded rule's row (valid) as a :class:`Rule` named ``recorded``."""
    from ocp_analytics.rules import ScoreTarget

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


def _distinct_recorded(rules: pl.LazyFrame) -> tuple[list[Rule], pl.DataFrame] | None:
    """The distinct valid recorded rules of a slice and ``doc_id → _rid, _valid``.

    ``None`` when there are more than :data:`RECORDED_COMPILED_MAX`.
    """
    key = pl.struct(_DEFINITION).struct.json_encode().alias("_def")
    defs = rules.select("doc_id", "valid", *_DEFINITION, key).collect()
    valid = defs.filter(pl.col("valid"))
    distinct = valid.unique("_def", keep="first", maintain_order=True)
    if distinct.height > RECORDED_COMPILED_MAX:
        return None
    numbered = distinct.select("_def").with_row_index("_rid")
    links = defs.join(numbered, on="_def", how="left").select(
        "doc_id",
        pl.when(pl.col("valid")).then(pl.col("_rid")).alias("_rid"),
        pl.col("valid").alias("_valid"),
    )
    return [_rule_of_row(r) for r in distinct.iter_rows(named=True)], links


def _unruled_summary(wide: pl.LazyFrame, carried: Sequence[str]) -> pl.LazyFrame:
    """Runs with no recorded rule (``_valid`` null) or an unreadable one (false)."""
    return wide.select(
        "run_id",
        pl.lit(RECORDED).alias("rule"),
        pl.col("_valid").alias("valid"),
        pl.lit(0).alias("n_parts"),
        pl.lit(0).alias("n_fail"),
        pl.lit(0).alias("n_pass"),
        pl.lit(None, pl.String).alias("part_reasons"),
        pl.lit(None, pl.Int8).alias("used_rank"),
        *(pl.lit(None).alias(f) for f in ("apos", "aid", "an", "ar")),
        pl.lit(None, pl.String).alias("ev_reasons"),
        pl.lit(None, pl.Int8).alias("ev_rank"),
        pl.lit(DEFAULT_WINDOW_DAYS).alias("window_days"),
        pl.lit(False).alias("has_events"),
        "ended_at",
        *carried,
    )


# --- one slice: tables in, decisions out -------------------------------------------------


def _carried(carry: Sequence[pl.Expr]) -> list[str]:
    names = [e.meta.output_name() for e in carry]
    clash = [n for n in names if not n.startswith("_")]
    if clash:
        raise ValueError(f"carried columns must be named with a leading '_': {clash}")
    return names


def decide(
    tables: Mapping[str, pl.LazyFrame],
    rules: Sequence[Rule],
    as_of: datetime,
    *,
    recorded: bool = True,
    carry: Sequence[pl.Expr] = (),
    reasons: bool = True,
) -> list[pl.LazyFrame]:
    """Acceptance rows of one set of runs: a frame for the recorded rules, one per rule.

    ``tables`` holds ``runs``, ``signals``, ``attempts`` and ``rules`` (every
    row of a run together), and optionally ``events`` (late events,
    SEMANTICS §11) with the runs' ``artifacts`` they are matched through. The
    shared features are computed once and held in memory; each returned
    frame is lazy over them, so a writer can collect one rule's rows at a
    time. ``carry`` are named expressions over ``runs`` (for example group
    columns) added to every row; their names start with ``_`` so they cannot
    shadow a column the evaluation reads. With ``reasons`` false the
    ``reasons`` column is left null.
    """
    carried = _carried(carry)
    runs, signals, attempts = tables["runs"], tables["signals"], tables["attempts"]
    own = _distinct_recorded(tables["rules"]) if recorded else None
    compiled = list(rules) + (own[0] if own else [])
    c = _Compiled(compiled)
    exploded = recorded and own is None  # every name may be needed
    # The attempt each signal names is stored at ingest; signals read without
    # the link columns (parts written before them) are linked here.
    linked = set(LINK_COLUMNS) <= set(signals.collect_schema().names())
    run_query = runs.select("doc_id", "run_id", "ended_at", *carry)
    if own is not None:
        run_query = run_query.join(own[1].lazy(), on="doc_id", how="left")
    positions = attempt_positions(attempts)  # read only when some signal is not linked

    def link(latest: pl.LazyFrame) -> pl.LazyFrame:
        return latest if linked else link_attempts(latest, positions)

    queries = [
        run_query,
        link(latest_verdicts(signals, None if exploded else c.verdicts))
        if exploded or c.verdicts
        else None,
        link(latest_scores(signals, None if exploded else c.scores))
        if exploded or c.scores
        else None,
    ]
    late = None
    if tables.get("events") is not None and tables.get("artifacts") is not None:
        late = matched_events(tables["events"], tables["artifacts"])
    ev = event_rows(signals, runs, None if exploded else c.events, late)
    if c.event_sets:
        queries.append(_counted_events(ev, c, as_of))
    done = pl.collect_all([q for q in queries if q is not None])
    it = iter(done)
    run_rows = next(it)
    verdicts = next(it) if queries[1] is not None else None
    scores = next(it) if queries[2] is not None else None
    events = _event_columns(next(it), c) if c.event_sets else None
    docs = unlinked(verdicts, scores)
    held = None
    if docs is not None:  # old parts beside new ones: link their runs only
        held = attempt_positions(attempts.join(docs.lazy(), on="doc_id", how="semi")).collect()
    verdicts = placed(verdicts, held) if verdicts is not None else None
    scores = placed(scores, held) if scores is not None else None
    wide = _wide(run_rows, verdicts, scores, events, c).lazy()
    frames: list[pl.LazyFrame] = []
    if exploded:
        assert verdicts is not None and scores is not None
        summary = _recorded_summary(
            run_rows.lazy(), verdicts.lazy(), scores.lazy(), ev, tables["rules"], as_of, carried
        )
        frames.append(_finish(summary, as_of, carried, reasons=reasons))
    elif own is not None:
        rid = pl.col("_rid")
        parts = [_unruled_summary(wide.filter(rid.is_null()), carried)]
        parts += [
            _alternative_summary(wide.filter(rid == j), r, len(rules) + j, c, carried)
            for j, r in enumerate(own[0])
        ]
        summary = pl.concat(parts, how="vertical_relaxed")
        frames.append(_finish(summary, as_of, carried, reasons=reasons))
    for k, r in enumerate(rules):
        summary = _alternative_summary(wide, r, k, c, carried)
        frames.append(_finish(summary, as_of, carried, reasons=reasons))
    return frames
