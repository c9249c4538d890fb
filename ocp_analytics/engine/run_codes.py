"""A window's decisions held run-major: one byte per (run, rule), the runs in one order; pure.

Read from the decisions stores (:func:`ocp_analytics.api.stored.window_codes`),
a rule's rows of a window become two columns lined up with the window's
runs: a *cell code* (:func:`cell_code`: the outcome, the evidence tier,
whether the window is open, whether acceptance came at the node's first
attempt) and the attempts to acceptance. The rates then count distinct
(group, code, attempts) rows once each, weighted by the runs they stand
for (:func:`coded_partials`), and the flips take the outcomes of every rule
at once (:func:`outcome_codes`, the vectors of
:func:`~ocp_analytics.engine.flips.vector_counts`): the same partials the
evaluation loop's sinks collect a frame at a time, from about a byte per
(run, rule) instead of a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import polars as pl

from ocp_analytics._typing import Tier
from ocp_analytics.engine.acceptance import OUTPUT_SCHEMA
from ocp_analytics.engine.flips import outcome_code
from ocp_analytics.engine.rates import ATT, partials
from ocp_analytics.schemas import OUTCOME_TIERS

__all__ = [
    "CELL",
    "FOUND",
    "cell_code",
    "cell_columns",
    "coded_partials",
    "group_index",
    "outcome_codes",
    "positions",
]

CELL = "_cell"  # the cell code's column
_GID = "_gid"  # a run's group, numbered (group_index)
FOUND = "_found"  # true where a run has a row under the rule, null where it has none
# digits of the code: outcome (x1: 0 rejected, 1 accepted, 2 unknown), tier (x4: its
# index, 7 none), window open (x32), accepted at the node's first attempt (x64)
_TIER, _OPEN, _FIRST = 4, 32, 64
_NO_TIER = 7
_OUTCOMES = {0: "rejected", 1: "accepted", 2: "unknown"}


def cell_code() -> pl.Expr:
    """A decision row's figures for the rates and flips in one UInt8 (the column ``_cell``).

    Examples
    --------
    >>> rows = pl.DataFrame({"outcome": ["accepted", "rejected"], "tier": ["reported", None],
    ...                      "window_open": [True, False], "accepted_attempt_n": [1, None]})
    >>> back = rows.select(cell_code()).select(cell_columns(pl.col("_cell")))
    >>> back.rows()
    [('accepted', 'reported', True, 1), ('rejected', None, False, None)]
    """
    # the tier by comparisons and sums: a few times faster than replace_strict over ten
    # million strings
    tier = pl.col("tier")
    hits = [(tier == word).fill_null(False).cast(pl.UInt8) for word in OUTCOME_TIERS]
    index = _NO_TIER - hits[0] * _NO_TIER  # 7 when no word matches, else the word's index
    for i, hit in enumerate(hits[1:], 1):
        index = index - hit * (_NO_TIER - i)
    first = (pl.col("accepted_attempt_n") == 1).fill_null(False).cast(pl.UInt8)
    return (
        outcome_code(pl.col("outcome"))
        + index * _TIER
        + pl.col("window_open").fill_null(False).cast(pl.UInt8) * _OPEN
        + first * _FIRST
    ).alias(CELL)


def cell_columns(code: pl.Expr) -> list[pl.Expr]:
    """The decision columns a cell code keeps: ``outcome, tier, window_open, accepted_attempt_n``.

    ``accepted_attempt_n`` is 1 when acceptance came at the node's first
    attempt and null otherwise: all the rates read of it.
    """
    tier = (code // _TIER) % 8
    return [
        (code % 4).replace_strict(_OUTCOMES, return_dtype=pl.String).alias("outcome"),
        pl.when(tier != _NO_TIER)
        .then(tier.replace_strict(dict(enumerate(OUTCOME_TIERS)), default=None))
        .cast(pl.String)
        .alias("tier"),
        ((code // _OPEN) % 2 == 1).alias("window_open"),
        pl.when((code // _FIRST) % 2 == 1).then(pl.lit(1, pl.Int64)).alias("accepted_attempt_n"),
    ]


def outcome_codes(cells: pl.Series) -> pl.Series:
    """The outcome codes of :func:`~ocp_analytics.engine.flips.outcome_code` (null stays null)."""
    return cells % 4


def group_index(groups: pl.DataFrame, keys: Sequence[str]) -> tuple[pl.Series, pl.DataFrame]:
    """Each run's group as a number (``_gid``), and the keys of each number: computed once.

    Groups are numbered 0, 1, ... in the order of their first run; a null
    key is a group like any other.

    Examples
    --------
    >>> g = pl.DataFrame({"team": ["a", None, "a", None]})
    >>> gid, table = group_index(g, ["team"])
    >>> gid.to_list(), table.sort("_gid").rows()
    ([0, 1, 0, 1], [(0, 'a'), (1, None)])
    """
    if not keys:  # one group: every run's
        gid = pl.repeat(0, groups.height, dtype=pl.UInt32, eager=True).alias(_GID)
        return gid, pl.DataFrame({_GID: [0]}, schema={_GID: pl.UInt32})
    rows = groups.select(keys).with_row_index(_GID)
    rows = rows.with_columns(pl.col(_GID).first().over(keys))
    firsts = rows.unique(_GID, maintain_order=True)
    # numbered 0, 1, ... in order of first run: small numbers pack with a cell (coded_partials)
    dense = pl.int_range(firsts.height, dtype=pl.UInt32, eager=True)
    gid = rows.get_column(_GID).replace_strict(firsts.get_column(_GID), dense)
    return gid.alias(_GID), firsts.with_columns(dense.alias(_GID))


def coded_partials(
    groups: pl.DataFrame,
    cells: pl.DataFrame,
    rule: str,
    as_of: datetime,
    keys: Sequence[str],
    index: tuple[pl.Series, pl.DataFrame] | None = None,
    min_tier: Tier | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """One rule's rate partials (:func:`~ocp_analytics.engine.rates.partials`) from its cells.

    ``groups`` holds the runs' group columns ``keys``; ``cells`` the rule's
    ``_cell`` and attempts to acceptance, lined up with them (null cell:
    the run has no row under the rule, and counts nowhere). Each distinct
    (groups, cell, attempts) row is decoded once and counted with the
    number of runs it stands for. ``index``: :func:`group_index` of
    ``groups``, when computed once for several rules; ``min_tier`` as for
    :func:`~ocp_analytics.engine.rates.partials`.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> g = pl.DataFrame({"team": ["a", "a", "b"]})
    >>> rows = pl.DataFrame({"outcome": ["accepted", "accepted", "rejected"],
    ...                      "tier": ["reported"] * 3, "window_open": [False] * 3,
    ...                      "accepted_attempt_n": [1, 1, None]})
    >>> cells = rows.select(cell_code(), pl.Series(ATT, [1, 1, None]))
    >>> c, h = coded_partials(g, cells, "tests", datetime(2027, 1, 1, tzinfo=UTC), ["team"])
    >>> c.sort("team").select("team", "runs", "accepted", "rejected").collect().rows()
    [('a', 2, 2, 0), ('b', 1, 0, 1)]
    """
    gid, table = group_index(groups, keys) if index is None else index
    frame = pl.DataFrame([gid, cells.get_column(CELL), cells.get_column(ATT)])
    # by numbers, not by the keys themselves: a few times cheaper over millions of runs
    distinct = (
        _distinct(frame.lazy(), table.height)
        .filter(pl.col(CELL).is_not_null())
        .join(table.lazy(), on=_GID, how="left")
        .drop(_GID)
        .with_columns(
            *cell_columns(pl.col(CELL)),
            pl.col(ATT).cast(pl.Int64),  # the rule set's codes keep it as small as it fits
            pl.lit(rule, pl.String).alias("rule"),
            pl.lit(as_of, OUTPUT_SCHEMA["as_of"]).alias("as_of"),
        )
    )
    return partials(distinct, keys, min_tier, weight="_runs")


def _distinct(frame: pl.LazyFrame, groups: int) -> pl.LazyFrame:
    """The distinct (``_gid``, cell, attempts) rows of ``frame`` and the runs of each (``_runs``).

    Packed into one integer per run when the group number, the cell, a
    null flag and the attempts fit in 32 bits (or 64), then grouped by it:
    about half the cost of grouping by the three columns. ``groups``: the
    group numbers run from 0 to ``groups - 1``.

    Examples
    --------
    >>> f = pl.DataFrame({"_gid": [0, 0, 1], "_cell": [1, 1, 0], ATT: [2, 2, None]},
    ...                  schema={"_gid": pl.UInt32, "_cell": pl.UInt8, ATT: pl.UInt8})
    >>> _distinct(f.lazy(), 2).sort("_gid").collect().rows()
    [(0, 1, 2, 2), (1, 0, None, 1)]
    """
    att = frame.collect_schema()[ATT]
    bits = 8 if att == pl.UInt8 else 16 if att == pl.UInt16 else None
    if bits is None:  # attempts in a wide type: the three columns
        return frame.group_by(_GID, CELL, ATT).agg(pl.len().alias("_runs"))
    # the cell (a byte; its codes need 7 bits) and a null flag above the attempts, the group
    # above them
    low = 1 << (bits + 9)
    wide = pl.UInt32 if groups * low <= 1 << 32 else pl.UInt64
    packed = (
        pl.col(_GID).cast(wide) * low
        + pl.col(CELL).cast(wide) * (1 << (bits + 1))
        + pl.col(ATT).is_null().cast(wide) * (1 << bits)
        + pl.col(ATT).fill_null(0).cast(wide)
    ).alias("_key")
    key = pl.col("_key")
    counted = frame.group_by(packed).agg(pl.len().alias("_runs"))
    return counted.select(
        (key // low).cast(pl.UInt32).alias(_GID),
        ((key // (1 << (bits + 1))) % 256).cast(pl.UInt8).alias(CELL),
        pl.when((key // (1 << bits)) % 2 == 0).then((key % (1 << bits)).cast(att)).alias(ATT),
        "_runs",
    )


def patched(base: pl.DataFrame, later: pl.DataFrame, removed: pl.Series) -> pl.DataFrame:
    """``base``'s rows but those of ``removed``, with ``later``'s rows, in ``doc_id`` order.

    How a store's live rows come together cheaply: its oldest entry read
    whole (``base``, usually millions of rows in ``doc_id`` order), then a
    night's rows (``later``, a few) put in place instead of merged: a row of
    ``later`` whose ``doc_id`` ``base`` holds takes that row's place (it
    decides that run again); the others go after ``base`` when they all
    come after it (new runs have the newest doc_ids), else the two are
    merged. ``removed`` lists the doc_ids of ``base`` no longer live (those
    decided again, and runs replaced). Both frames have the same columns,
    ``doc_id`` first, each ``doc_id`` at most once.

    Examples
    --------
    >>> base = pl.DataFrame({"doc_id": [1, 2, 3, 4], "x": ["a", "b", "c", "d"]})
    >>> later = pl.DataFrame({"doc_id": [3, 9], "x": ["C", "new"]})
    >>> patched(base, later, pl.Series([2, 3])).rows()
    [(1, 'a'), (3, 'C'), (4, 'd'), (9, 'new')]
    """
    if not base.get_column("doc_id").is_sorted():
        base = base.sort("doc_id")
    if not later.get_column("doc_id").is_sorted():
        later = later.sort("doc_id")
    ids, n = base.get_column("doc_id"), base.height
    if n == 0 or (later.height == 0 and removed.len() == 0):
        return base if later.height == 0 else pl.concat([base, later]).sort("doc_id")
    at, hit = positions(ids, removed.cast(pl.Int64).unique().sort())
    dead = at.filter(hit)
    at, held = positions(ids, later.get_column("doc_id"))
    into, rows = at.filter(held), later.filter(held)
    alive = pl.repeat(True, n, eager=True).scatter(dead, False)
    if into.len():
        if not into.is_in(dead.implode()).all():  # two live rows of one run: never patched over
            raise AssertionError("a later row decides a run whose older row is still live")
        alive = alive.scatter(into, True)
        base = base.with_columns(
            base.get_column(c).scatter(into, rows.get_column(c)) for c in base.columns[1:]
        )
    if dead.len():
        base = base.filter(alive)
    rest = later.filter(~held)
    if rest.height == 0:
        return base
    if base.height == 0 or rest.get_column("doc_id").min() > ids.max():  # type: ignore[operator]
        return pl.concat([base, rest])
    return base.merge_sorted(rest, "doc_id")


def positions(docs: pl.Series, wanted: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The position in ``docs`` (sorted, unique) of each of ``wanted``, and whether it is there.

    Where it is not, the position is 0. Both sorted (a window's runs, a
    night's rows), a join of the two in order: many times faster than a
    binary search of each over millions; else the binary search.

    Examples
    --------
    >>> at, hit = positions(pl.Series([2, 4, 6]), pl.Series([4, 5, 6]))
    >>> at.to_list(), hit.to_list()
    ([1, 0, 2], [True, False, True])
    """
    n = docs.len()
    if n == 0:
        none = pl.repeat(False, wanted.len(), eager=True)
        return pl.repeat(0, wanted.len(), dtype=pl.Int64, eager=True).alias("at"), none
    if wanted.is_sorted() and docs.is_sorted():
        left = wanted.rename("doc_id").set_sorted().to_frame()
        right = docs.rename("doc_id").set_sorted().to_frame().with_row_index("at")
        at = left.join(right, on="doc_id", how="left", maintain_order="left").get_column("at")
        return at.fill_null(0).cast(pl.Int64), at.is_not_null()
    at = docs.search_sorted(wanted).cast(pl.Int64).clip(0, n - 1)
    return at, docs.gather(at) == wanted
