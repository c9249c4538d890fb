"""Per-run features that acceptance reads; pure.

docs/figures.md, "Per run: the acceptance table".

The twin of ``sql/views/latest_*.sql`` and ``attempt_positions.sql``: the
signals known at ``as_of`` (:func:`known_at`), the latest verdict and the
latest numeric score of each (run, name) among them, the position of every
attempt, and the events a rule may count. Everything is keyed by ``doc_id``
(one run version); LazyFrame in, LazyFrame out.

Part states are small integers, so combining them is arithmetic:
:data:`FAIL` (0), :data:`UNKNOWN` (1), :data:`PASS` (2).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import polars as pl

from ocp_analytics.model.links import (
    COMMIT_KINDS,
    LINK_COLUMNS,
    link_attempts,
)
from ocp_analytics.schemas import OUTCOME_TIERS

FAIL, UNKNOWN, PASS = 0, 1, 2
TIER_RANK = {t: i for i, t in enumerate(OUTCOME_TIERS)}
ASSERTED = TIER_RANK["asserted"]  # the weakest tier's rank
# unknown time sorts first (docs/figures.md, "Which signal counts")
_LATEST_KEYS = ["observed_at", "sig_idx"]
# The deciding attempt of a part: its id, position, n and round
# (docs/figures.md, "The attempt at acceptance").
ATTEMPT_FIELDS = {"at_attempt": "aid", "pos": "apos", "n": "an", "round": "ar"}


def tier_rank(col: pl.Expr) -> pl.Expr:
    """Rank of a tier word (0 = verified … 3 = asserted); unknown or missing reads asserted.

    Examples
    --------
    >>> pl.select(tier_rank(pl.lit(pl.Series(["Verified", "bogus", None])))).to_series().to_list()
    [0, 3, 3]
    """
    return col.str.to_lowercase().replace_strict(TIER_RANK, default=ASSERTED, return_dtype=pl.Int8)


def verdict_state(value_text: pl.Expr) -> pl.Expr:
    """:data:`PASS`, :data:`FAIL` or :data:`UNKNOWN` of a verdict's value.

    docs/figures.md, "outcome and reasons".

    Examples
    --------
    >>> s = pl.Series(["PASS", "reject", "error", None])
    >>> pl.select(verdict_state(pl.lit(s))).to_series().to_list()
    [2, 0, 1, 1]
    """
    v = value_text.str.to_lowercase()
    return (
        pl.when(v.is_in(["accept", "pass"]))
        .then(pl.lit(PASS, pl.Int8))
        .when(v.is_in(["reject", "fail"]))
        .then(pl.lit(FAIL, pl.Int8))
        .otherwise(pl.lit(UNKNOWN, pl.Int8))
    )


def score_state(value: pl.Expr, target: pl.Expr | float, lower: pl.Expr | bool) -> pl.Expr:
    """:data:`PASS` / :data:`FAIL` of a score against its target, :data:`UNKNOWN` with none.

    Equal reaches the target; NaN never does (docs/figures.md "outcome and reasons").

    Examples
    --------
    >>> v = pl.Series([3300.0, 3700.0, None, float("nan")])
    >>> pl.select(score_state(pl.lit(v), 3600.0, True)).to_series().to_list()
    [2, 0, 1, 0]
    """
    t = target if isinstance(target, pl.Expr) else pl.lit(target)
    lo = lower if isinstance(lower, pl.Expr) else pl.lit(lower)
    reached = pl.when(lo).then(value <= t).otherwise(value >= t) & ~value.is_nan()
    return (
        pl.when(value.is_null())
        .then(pl.lit(UNKNOWN, pl.Int8))
        .when(reached)
        .then(pl.lit(PASS, pl.Int8))
        .otherwise(pl.lit(FAIL, pl.Int8))
    )


def known_at(signals: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """The signals (or late events) known at ``as_of``: none observed after it.

    docs/figures.md, "as_of" and "Which signal counts".

    ``as_of`` is the instant of knowledge: a signal of any kind whose
    ``observed_at`` is a known time after it is not yet observed and takes no
    part, as the latest verdict or score or as an excluded event. A signal
    with no readable time is always known. Applied once to the scans every
    feature reads, so the predicate reaches the Parquet reader and no rule
    filters again.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> s = pl.LazyFrame({"name": ["early", "at", "later", "untimed"], "observed_at": [
    ...     datetime(2025, 12, 20, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC),
    ...     datetime(2026, 10, 15, tzinfo=UTC), None]})
    >>> known_at(s, datetime(2026, 1, 1, tzinfo=UTC)).collect()["name"].to_list()
    ['early', 'at', 'untimed']
    """
    obs = pl.col("observed_at")
    return signals.filter(obs.is_null() | (obs <= pl.lit(as_of)))


def _latest(signals: pl.LazyFrame, kind: pl.Expr, names: Sequence[str] | None) -> pl.LazyFrame:
    """(doc_id, name) → the latest signal's value columns, tier rank and attempt link.

    "Which signal counts" in docs/figures.md.
    """
    s = signals.filter(kind)
    if names is not None:
        s = s.filter(pl.col("name").is_in(list(names)))
    # One sort, then the last row of each (run, name), found by comparing a
    # row's keys with the next row's: less CPU than a group-by sorting each
    # group, and the comparison far less than a hashed ``unique`` (see
    # benchmarks/RESULTS.md, "Writer ahead, cheaper shared features", 2026-12-04).
    link = _links(signals)
    cols = ["doc_id", "name", "value_text", "value_num", *link, "tier", *_LATEST_KEYS]
    last = pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(-1)) for k in ("doc_id", "name"))
    return (
        s.select(cols)
        .sort(["doc_id", "name", *_LATEST_KEYS])
        .filter(last)
        .select(
            "doc_id",
            "name",
            "value_text",
            "value_num",
            *link,
            tier_rank(pl.col("tier")).alias("rank"),
        )
    )


def latest_verdicts(signals: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    """(doc_id, name) → ``state``, ``rank``, ``at_attempt`` and link of the latest verdict.

    Whatever its value, the latest verdict of a name counts (docs/figures.md "Which signal counts").
    """
    latest = _latest(signals, pl.col("kind") == "verdict", names)
    state = verdict_state(pl.col("value_text")).alias("state")
    return latest.select("doc_id", "name", state, "rank", *_links(latest))


def latest_scores(signals: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    """(doc_id, name) → ``value``, ``rank``, ``at_attempt`` and link of the latest numeric score.

    Only JSON numbers count, so a later null score does not hide a measured one
    (docs/figures.md, "Which signal counts").
    """
    kind = (pl.col("kind") == "score") & pl.col("value_num").is_not_null()
    latest = _latest(signals, kind, names)
    value = pl.col("value_num").alias("value")
    return latest.select("doc_id", "name", value, "rank", *_links(latest))


def _links(frame: pl.LazyFrame) -> list[str]:
    """``at_attempt`` and the link columns ``frame`` has."""
    have = set(frame.collect_schema().names())
    return ["at_attempt", *(c for c in LINK_COLUMNS if c in have)]


def unlinked(*latest: pl.DataFrame | None) -> pl.DataFrame | None:
    """The ``doc_id`` of latest-signal rows read from parts without the link, or None."""
    frames = [f for f in latest if f is not None and f.get_column("attempt_pos").has_nulls()]
    if not frames:
        return None
    return pl.concat(
        [f.filter(pl.col("attempt_pos").is_null()).select("doc_id") for f in frames]
    ).unique()


def placed(latest: pl.DataFrame, positions: pl.DataFrame | None = None) -> pl.DataFrame:
    """Latest signals with their attempt's ``apos``, ``aid``, ``an``, ``ar``.

    "The attempt at acceptance" in docs/figures.md.

    ``aid`` is null unless ``at_attempt`` names an attempt of the run. Rows
    whose link is null (parts written before it was stored) are linked
    through ``positions`` (:func:`attempt_positions` of at least their runs).
    """
    if positions is not None:
        missing = pl.col("attempt_pos").is_null()
        relinked = link_attempts(latest.lazy().filter(missing), positions.lazy()).collect()
        latest = pl.concat([latest.filter(~missing), relinked.select(latest.columns)])
    named = pl.col("attempt_pos") > 0
    return latest.with_columns(
        pl.when(named).then(pl.col("at_attempt")).alias("aid"),
        pl.when(named).then(pl.col("attempt_pos").cast(pl.Int64)).alias("apos"),
        pl.when(named).then(pl.col("attempt_n")).alias("an"),
        pl.when(named).then(pl.col("attempt_round")).alias("ar"),
    ).drop("at_attempt", *LINK_COLUMNS)


# Matched late events sort after every signal of their run (docs/late-events.md:
# as if appended to run.signals), among themselves by time, then id.
APPENDED = 1 << 32


def matched_events(events: pl.LazyFrame, artifacts: pl.LazyFrame) -> pl.LazyFrame:
    """Late events matched to runs: ``doc_id, name, sig_idx, observed_at, tier``.

    An event concerns a commit; a run's artifacts of kind ``commit`` or
    ``merge`` name its commits (the artifact's ``path``, else its id). One
    commit shared by several runs matches each. Matching happens at read
    time, so an event may arrive before or after its run.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> art = pl.LazyFrame({"doc_id": [1, 2], "kind": ["commit", "file"],
    ...                     "path": ["abc123", "abc123"], "artifact_id": ["a", "b"]})
    >>> ev = pl.LazyFrame({"event_id": ["e1"], "commit": ["abc123"], "kind": ["event"],
    ...                    "name": ["revert"], "observed_at": [datetime(2026, 12, 1, tzinfo=UTC)],
    ...                    "tier": ["verified"]})
    >>> matched_events(ev, art).select("doc_id", "name").collect().rows()
    [(1, 'revert')]
    """
    commits = (
        artifacts.filter(pl.col("kind").is_in(COMMIT_KINDS))
        .select("doc_id", pl.coalesce("path", "artifact_id").alias("commit"))
        .filter(pl.col("commit").is_not_null())
        .unique()
    )
    order: list[pl.Expr | str] = [pl.col("observed_at").is_not_null(), "observed_at", "event_id"]
    return (
        events.filter(pl.col("kind") == "event")
        .join(commits, on="commit")
        .sort("doc_id", *order)
        .select(
            "doc_id",
            "name",
            (pl.lit(APPENDED, pl.Int64) + pl.int_range(pl.len()).over("doc_id")).alias("sig_idx"),
            "observed_at",
            "tier",
        )
    )


def event_rows(
    signals: pl.LazyFrame,
    runs: pl.LazyFrame,
    names: Sequence[str] | None = None,
    matched: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Event signals (``doc_id, name, sig_idx, observed_at, rank``) with the run's ``ended_at``.

    ``matched`` (from :func:`matched_events`) are appended to the run's own.
    """
    cols = ["doc_id", "name", pl.col("sig_idx").cast(pl.Int64), "observed_at", "tier"]
    ev = signals.filter(pl.col("kind") == "event").select(cols)
    if matched is not None:
        ev = pl.concat([ev, matched.select(cols)])
    if names is not None:
        ev = ev.filter(pl.col("name").is_in(list(names)))
    return ev.select(
        "doc_id", "name", "sig_idx", "observed_at", tier_rank(pl.col("tier")).alias("rank")
    ).join(runs.select("doc_id", "ended_at"), on="doc_id")


def event_counts(window_days: pl.Expr) -> pl.Expr:
    """Whether an excluded event counts (docs/figures.md "outcome and reasons").

    Over :func:`event_rows`.

    Within ``window_days`` of the run's end (no lower bound; an unknown end or
    time always counts). The rows are events known at ``as_of`` already
    (:func:`known_at`, applied once where the features are built).

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> ev = pl.DataFrame({"observed_at": [datetime(2026, 1, 2, tzinfo=UTC), None,
    ...     datetime(2026, 2, 1, tzinfo=UTC)], "ended_at": [datetime(2026, 1, 1, tzinfo=UTC)] * 3})
    >>> ev.select(event_counts(pl.lit(14))).to_series().to_list()
    [True, True, False]
    """
    obs, end = pl.col("observed_at"), pl.col("ended_at")
    return end.is_null() | obs.is_null() | ((obs - end) <= pl.duration(days=1) * window_days)


def window_open(has_events: pl.Expr, window_days: pl.Expr, as_of: datetime) -> pl.Expr:
    """A late event could still turn the outcome (docs/figures.md "window_open")."""
    late_enough = pl.lit(as_of) < window_closes(has_events, window_days)
    return late_enough.fill_null(False)


def window_closes(has_events: pl.Expr, window_days: pl.Expr) -> pl.Expr:
    """The instant a run's window closes (``ended_at + window_days``); null when it has none.

    None without an ``ended_at`` or when the rule excludes no event: no late
    event can turn such a run. ``window_open`` at ``as_of`` is ``as_of`` before it.
    """
    end = pl.col("ended_at")
    closes = end + pl.duration(days=1) * window_days
    return pl.when(end.is_not_null() & has_events).then(closes)
