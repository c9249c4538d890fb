"""When a stored decision is final, and which runs must be decided again; pure.

docs/dataset.md, "The decisions store". A (run, rule) row decided at an
instant of knowledge ``as_of`` is **final** when nothing that could change
it can still arrive or become visible:

- the run's window had closed by that ``as_of`` (``window_open`` false: no
  late event observed later can count any more, and the row's own
  ``window_open`` will not change);
- every signal of the run and every late event matched to it had been
  observed by then (``observed_until``, the latest ``observed_at`` among
  them, is at or before ``as_of``; a signal with no time is always known);
- no new version of the run and no newly matched late event has arrived
  since (what arrived is read from the commit records, not here).

A final row read at any later ``as_of`` is the row a full evaluation gives,
but for its ``as_of`` column. Every other row is decided again.

The rule a row was decided under is named by :func:`fingerprint`: a hash of
its canonical definition and of :data:`CONTRACT`, so a changed definition
(or a changed meaning of the figures) never reuses a row.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import orjson
import polars as pl

from ocp_analytics.model.rules import RECORDED, Rule

__all__ = [
    "CONTRACT",
    "canonical_rule",
    "changes_at",
    "fingerprint",
    "is_final",
    "observed_until",
    "redecide",
]

# The version of the acceptance contract (docs/figures.md)
# the stored rows follow: raise it whenever a figure's meaning changes, and every
# decisions store is decided again from raw.
CONTRACT = 1


def canonical_rule(rule: Rule | None) -> dict[str, Any]:
    """What decides a rule's rows, spelled one way: ``None`` is each run's recorded rule.

    Defaults are written out (``excludes_events``, ``window_days``) and
    duplicate names dropped, so two spellings of one rule are one rule; the
    free-text ``definition`` takes no part in a decision and is left out.
    The name is kept: it is the ``rule`` column of every row.

    Examples
    --------
    >>> canonical_rule(Rule.parse("tests+tests"))["requires"]
    ['tests']
    >>> canonical_rule(None)
    {'recorded': True}
    """
    if rule is None:
        return {"recorded": True}
    score = None
    if rule.score is not None:
        s = rule.score
        score = {"name": s.name, "target": s.target, "better": s.better}
    return {
        "name": rule.name,
        "requires": list(rule.effective_requires),
        "score": score,
        "excludes_events": list(rule.effective_excludes),
        "window_days": rule.effective_window_days,
    }


def fingerprint(rule: Rule | None) -> str:
    """A stable name for a rule's decisions: 16 hex digits of a SHA-256.

    Of the canonical rule (:func:`canonical_rule`; ``None``: the recorded
    rule) and :data:`CONTRACT`.

    Examples
    --------
    >>> fingerprint(Rule.parse("tests")) == fingerprint(Rule("tests", requires=("tests",)))
    True
    >>> fingerprint(Rule.parse("tests")) == fingerprint(Rule.parse("tests+review"))
    False
    >>> len(fingerprint(None))
    16
    """
    body = {"contract": CONTRACT, "rule": canonical_rule(rule)}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def rule_label(rule: Rule | None) -> str:
    """The ``rule`` column of a rule's rows (``recorded`` for each run's own)."""
    return RECORDED if rule is None else rule.name


def observed_until(
    signals: pl.LazyFrame,
    matched: pl.LazyFrame | None = None,
    *,
    after: datetime | None = None,
) -> pl.LazyFrame:
    """``doc_id, observed_until, observed_next``: the latest and earliest ``observed_at``.

    Of each run's signals and matched events.

    ``matched`` are the late events matched to the runs
    (:func:`~ocp_analytics.engine.features.matched_events`). With ``after``,
    only times after it are read: a run with none has no row, which
    :func:`is_final` reads as "everything observed" (the same answer for a
    row decided at ``after``, from far fewer rows).

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> s = pl.LazyFrame({"doc_id": [1, 1, 2, 3], "observed_at": [
    ...     datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC), None,
    ...     datetime(2026, 1, 5, tzinfo=UTC)]})
    >>> times = observed_until(s).sort("doc_id").collect()
    >>> times["observed_until"].dt.month().to_list(), times["observed_next"].dt.month().to_list()
    ([3, None, 1], [1, None, 1])
    >>> observed_until(s, after=datetime(2026, 2, 1, tzinfo=UTC)).collect()["doc_id"].to_list()
    [1]
    """
    frames = [signals.select("doc_id", "observed_at")]
    if matched is not None:
        frames.append(matched.select("doc_id", "observed_at"))
    times = pl.concat(frames)
    if after is not None:
        times = times.filter(pl.col("observed_at") > pl.lit(after))
    at = pl.col("observed_at")
    return times.group_by("doc_id").agg(
        at.max().alias("observed_until"), at.min().alias("observed_next")
    )


def changes_at(window_closes: pl.Expr, observed_next: pl.Expr) -> pl.Expr:
    """The first instant after a row's ``as_of`` at which the row may read otherwise.

    A row decided at ``as_of`` reads only the signals and matched events
    known then and whether its window is open (docs/figures.md, "as_of"),
    so it is the row of any later ``as_of`` before the earlier of: its open
    window closing (``window_closes``, null when not open) and the next
    signal or event becoming known (``observed_next``, the earliest
    ``observed_at`` after ``as_of``), unless something arrives (a new
    version, a newly matched event: read from the commits). Null: never (a
    final row).

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> d = lambda day: datetime(2026, 6, day, tzinfo=UTC)
    >>> rows = pl.DataFrame({"closes": [d(9), None, d(9), None],
    ...                      "next": [d(5), d(5), None, None]})
    >>> rows.select(changes_at(pl.col("closes"), pl.col("next"))).to_series().dt.day().to_list()
    [5, 5, 9, None]
    """
    return pl.min_horizontal(window_closes, observed_next)


def is_final(
    window_open: pl.Expr,
    observed_until: pl.Expr,
    as_of: pl.Expr | datetime,
    arrived: pl.Expr | bool = False,
) -> pl.Expr:
    """Whether a row decided at ``as_of`` is final (the module's three conditions).

    ``window_open`` is the row's; ``observed_until`` the latest time among
    the run's signals and matched events (null: none has a time, or none is
    after ``as_of``); ``arrived``: a new version of the run or a newly matched
    late event has arrived since.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> t = datetime(2026, 6, 1, tzinfo=UTC)
    >>> rows = pl.DataFrame({"window_open": [False, True, False, False],
    ...     "observed_until": [None, None, datetime(2026, 7, 1, tzinfo=UTC), t]})
    >>> final = is_final(pl.col("window_open"), pl.col("observed_until"), t)
    >>> rows.select(final).to_series().to_list()
    [True, False, False, True]
    """
    at = as_of if isinstance(as_of, pl.Expr) else pl.lit(as_of)
    seen = observed_until.is_null() | (observed_until <= at)
    came = arrived if isinstance(arrived, pl.Expr) else pl.lit(arrived)
    return (~window_open & seen & ~came).fill_null(False)


def redecide(
    pending: pl.Series,
    new: pl.Series,
    touched: pl.Series,
    gone: pl.Series,
) -> tuple[pl.Series, pl.Series]:
    """The ``doc_id`` to decide again, and those whose stored rows are superseded.

    ``pending``: stored rows that were not final when decided; ``new``:
    current run versions committed since the store's commit (new runs and
    new versions of runs); ``touched``: current runs a late event committed
    since is matched to; ``gone``: versions replaced since. Decided again:
    pending, new and touched runs that are current; superseded: those and
    the replaced versions. Both sorted, without repeats.

    Examples
    --------
    >>> s = lambda *v: pl.Series("doc_id", list(v), pl.Int64)
    >>> again, dropped = redecide(s(1, 2), s(9), s(2, 3), s(1))
    >>> again.to_list(), dropped.to_list()
    ([2, 3, 9], [1, 2, 3, 9])
    """
    cast = [x.cast(pl.Int64).rename("doc_id") for x in (pending, new, touched, gone)]
    pending_, new_, touched_, gone_ = cast
    again = pl.concat([pending_.filter(~pending_.is_in(gone_.implode())), new_, touched_])
    again = again.unique().sort()
    dropped = pl.concat([again, gone_]).unique().sort()
    return again, dropped
