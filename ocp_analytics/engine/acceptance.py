"""Acceptance decisions: rules × per-run features → outcomes; pure.

docs/figures.md, "Per run: the acceptance table".

Both kinds of rule reduce to the same per-(run, rule) **summary**, and one
finish (``_finish``) turns every summary into the output columns:

* **alternative rules** (known up front, few distinct names) are compiled
  into column expressions over one wide per-run feature table (a column per
  required name), so K rules cost K projections, not a runs × rules join
  (``_compiled``);
* **recorded rules** (one per run, possibly thousands of distinct ones) are
  compiled the same way when a slice holds few distinct definitions, else
  summarised by joining each run's exploded ``requires`` and
  ``excludes_events`` with the same latest-signal tables (``_recorded``).

:func:`decide` computes the shared features of a slice once and hands each
rule's summary to the finish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import polars as pl

from ocp_analytics.engine._compiled import (
    Compiled,
    alternative_summary,
    compiled_words,
    counted_events,
    event_columns,
    wide_features,
)
from ocp_analytics.engine._finish import (
    CODED,
    CODED_TYPES,
    OUTPUT_SCHEMA,
    WINDOW_CLOSES,
    Words,
    enum_words,
    finish,
)
from ocp_analytics.engine._recorded import (
    SEP,
    TEXT_WORDS,
    compiled_summary,
    distinct_recorded,
    recorded_summary,
)
from ocp_analytics.engine.features import (
    TIER_RANK,
    event_rows,
    known_at,
    latest_scores,
    latest_verdicts,
    matched_events,
    placed,
    unlinked,
)
from ocp_analytics.model.links import LINK_COLUMNS, attempt_positions, link_attempts
from ocp_analytics.model.rules import RECORDED, Rule

#: The columns :func:`decide` (with its caller's late-event reads, ``finality.observed_until``)
#: reads of the tables it scans more than once. A caller deciding a few runs held in many parts
#: reads these once, into memory, instead of decoding those parts once per feature
#: (``api.refresh``); ``tests/test_refresh.py`` holds the rows to those of the full tables.
DECIDE_READS: Mapping[str, tuple[str, ...]] = {
    "runs": ("run_id", "doc_id", "ended_at"),
    "signals": (
        "doc_id",
        "sig_idx",
        "kind",
        "name",
        "value_text",
        "value_num",
        "at_attempt",
        *LINK_COLUMNS,
        "observed_at",
        "tier",
    ),
    "artifacts": ("doc_id", "artifact_id", "path", "kind"),
}

__all__ = [
    "CODED",
    "CODED_TYPES",
    "DECIDE_READS",
    "OUTPUT_SCHEMA",
    "SEP",
    "TIER_RANK",
    "WINDOW_CLOSES",
    "decide",
    "enum_words",
    "turned_by_late_event",
]


def decide(
    tables: Mapping[str, pl.LazyFrame],
    rules: Sequence[Rule],
    as_of: datetime,
    *,
    recorded: bool = True,
    carry: Sequence[pl.Expr] = (),
    reasons: bool = True,
    coded: bool = False,
    closes: bool = False,
) -> list[pl.LazyFrame]:
    """Acceptance rows of one set of runs: a frame for the recorded rules, one per rule.

    The shared features are computed once and held in memory; each returned
    frame is lazy over them, so a writer can collect one rule's rows at a
    time.

    Parameters
    ----------
    tables
        ``runs``, ``signals``, ``attempts`` and ``rules`` (every row of a run
        together), and optionally ``events`` (late events, docs/late-events.md)
        with the runs' ``artifacts`` they are matched through.
    rules
        Alternative rules, one frame each, after the recorded rules' frame.
    as_of
        The aware instant of knowledge: a signal or late event observed
        after it takes no part (docs/figures.md "as_of"); windows still
        open at it are marked (docs/figures.md "window_open").
    recorded
        Begin with a frame of each run under its own rule (``recorded``).
    carry
        Named expressions over ``runs`` (for example group columns) added to
        every row; their names start with ``_`` so they cannot shadow a
        column the evaluation reads.
    reasons
        False: the ``reasons`` column is left null (rates need none).
    coded
        The texts of :data:`CODED` as Enum columns (the same words; each
        frame's ``rule`` an Enum of its one name); ``reasons`` may then be a
        list of Enum words.
    closes
        A column ``_window_closes`` before the carried ones: the instant an
        open window closes (null when it is not open), which the decisions
        store reads to know when a row may change.

    Returns
    -------
    list of polars.LazyFrame
        The columns of :data:`OUTPUT_SCHEMA`, then ``carry``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from datetime import UTC, datetime
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> tables = oa.scan_dataset(ds).frames
    >>> own, tests = decide(tables, [oa.Rule.parse("tests")], datetime(2027, 1, 1, tzinfo=UTC))
    >>> tests.select("rule", "outcome", "reasons", "tier").collect().rows()
    [('tests', 'accepted', [], 'verified')]
    """
    carried = _carried(carry)
    own = distinct_recorded(tables["rules"]) if recorded else None
    c = Compiled([*rules, *(own[0] if own else [])])
    exploded = recorded and own is None  # every name may be needed
    shared = _shared_features(tables, c, as_of, carry, None if own is None else own[1], exploded)

    def done(summary: pl.LazyFrame, words: Words, name: str) -> pl.LazyFrame:
        return finish(
            summary,
            as_of,
            carried,
            words,
            reasons=reasons,
            rule=name if coded else None,
            closes=closes,
        )

    frames: list[pl.LazyFrame] = []
    if recorded:
        own_rules = None if own is None else own[0]
        summary, words = _own_summary(tables, own_rules, len(rules), c, shared, carried, reasons)
        frames.append(done(summary, words, RECORDED))
    for k, r in enumerate(rules):
        words, offsets = compiled_words([(k, r)], c, shared.late_words, wanted=reasons)
        offset = None if offsets is None else offsets[0]
        frames.append(
            done(alternative_summary(shared.wide, r, k, c, carried, offset=offset), words, r.name)
        )
    return frames


def _own_summary(
    tables: Mapping[str, pl.LazyFrame],
    definitions: list[Rule] | None,
    first: int,
    c: Compiled,
    shared: _Shared,
    carried: Sequence[str],
    reasons: bool,
) -> tuple[pl.LazyFrame, Words]:
    """Each run under its own rule, and how the summary names its reasons.

    Compiled when the slice's distinct ``definitions`` are few (the
    ``first``-th rule of ``c`` onward), else exploded and joined (``None``).
    """
    if definitions is not None:
        return compiled_summary(
            shared.wide, definitions, first, c, shared.late_words, carried, wanted=reasons
        )
    assert shared.verdicts is not None and shared.scores is not None
    summary = recorded_summary(
        shared.runs.lazy(),
        shared.verdicts.lazy(),
        shared.scores.lazy(),
        shared.events,
        tables["rules"],
        carried,
    )
    return summary, TEXT_WORDS


def _carried(carry: Sequence[pl.Expr]) -> list[str]:
    names = [e.meta.output_name() for e in carry]
    clash = [n for n in names if not n.startswith("_")]
    if clash:
        raise ValueError(f"carried columns must be named with a leading '_': {clash}")
    return names


class _Shared(NamedTuple):
    """What every rule of a slice reads, computed once (see :func:`_shared_features`)."""

    runs: pl.DataFrame  # doc_id, run_id, ended_at, the carried columns[, _rid, _valid]
    verdicts: pl.DataFrame | None  # latest verdicts, placed (features.placed)
    scores: pl.DataFrame | None  # latest scores, placed
    events: pl.LazyFrame  # event rows (features.event_rows), late events appended
    wide: pl.LazyFrame  # the compiled rules' feature table (_compiled.wide_features)
    late_words: list[pl.Series]  # each event set's word lists (_compiled.event_columns)


def _shared_features(
    tables: Mapping[str, pl.LazyFrame],
    c: Compiled,
    as_of: datetime,
    carry: Sequence[pl.Expr],
    own: pl.DataFrame | None,
    exploded: bool,
) -> _Shared:
    """The features of the names ``c`` reads (every name when ``exploded``), collected at once.

    Only the signals and late events known at ``as_of`` are read
    (docs/figures.md "as_of"): filtered here, once, so the predicate reaches the scan and every
    feature (latest verdicts, latest scores, event rows) reads the same
    rows. ``own`` maps ``doc_id`` to the run's recorded definition (``_rid``,
    ``_valid``) when those are compiled.
    """
    runs, signals = tables["runs"], known_at(tables["signals"], as_of)
    # The attempt each signal names is stored at ingest; signals read without
    # the link columns (parts written before them) are linked here.
    linked = set(LINK_COLUMNS) <= set(signals.collect_schema().names())
    run_query = runs.select("doc_id", "run_id", "ended_at", *carry)
    if own is not None:
        run_query = run_query.join(own.lazy(), on="doc_id", how="left")
    # read only when some signal is not linked
    positions = attempt_positions(tables["attempts"])

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
        late = matched_events(known_at(tables["events"], as_of), tables["artifacts"])
    ev = event_rows(signals, runs, None if exploded else c.events, late)
    if c.event_sets:
        queries.append(counted_events(ev, c))
    # The in-memory engine: the latest rows' sort and neighbour comparison
    # take less CPU there than in the streaming engine (benchmarks/RESULTS.md,
    # "Writer ahead, cheaper shared features", 2026-12-04).
    done = iter(pl.collect_all([q for q in queries if q is not None], engine="in-memory"))
    run_rows = next(done)
    verdicts = next(done) if queries[1] is not None else None
    scores = next(done) if queries[2] is not None else None
    events, late_words = event_columns(next(done), c) if c.event_sets else (None, [])
    verdicts, scores = _placed(verdicts, scores, tables["attempts"])
    wide = wide_features(run_rows, verdicts, scores, events, c).lazy()
    return _Shared(run_rows, verdicts, scores, ev, wide, late_words)


def _placed(
    verdicts: pl.DataFrame | None, scores: pl.DataFrame | None, attempts: pl.LazyFrame
) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """The latest verdicts and scores with their attempt's place (``features.placed``).

    Rows read from parts written before the link was stored (old parts beside
    new ones) are linked from the attempts of their runs only.
    """
    docs = unlinked(verdicts, scores)
    held = None
    if docs is not None:
        held = attempt_positions(attempts.join(docs.lazy(), on="doc_id", how="semi")).collect()
    return (
        placed(verdicts, held) if verdicts is not None else None,
        placed(scores, held) if scores is not None else None,
    )


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
    word = pl.element().cast(pl.String)  # the words may be Enum (decide(..., coded=True))
    late = pl.col("reasons").list.eval(word.str.starts_with("late:")).list.any()
    failing = word.str.starts_with("failed:") | word.str.starts_with("below_target:")
    return (
        (pl.col("outcome") == "rejected") & late & ~pl.col("reasons").list.eval(failing).list.any()
    )
