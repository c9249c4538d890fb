"""Where a signal stands among its run's attempts, and which artifacts name a commit.

Shared by ingestion (the link is stored with each signal at ingest) and the
engine (which links parts written before the link was stored): the one home
of the attempt order (docs/figures.md "The attempt at acceptance") and of
the commit kinds of late events (docs/late-events.md). Pure; imports only
polars.
"""

from __future__ import annotations

import polars as pl

# The attempt a signal names (``at_attempt``), stored in the signals table at
# ingest because it depends only on the document: the attempt's place (0 when
# ``at_attempt`` names no attempt of the run), its ``n`` and its round
# (docs/figures.md, "The attempt at acceptance").
# Null in parts written before the link was stored; engine.features.placed computes
# those from the attempts.
LINK_FIELDS = {"pos": "attempt_pos", "n": "attempt_n", "round": "attempt_round"}
LINK_COLUMNS = tuple(LINK_FIELDS.values())


COMMIT_KINDS = ("commit", "merge")


def _place(*keys: str) -> pl.Expr:
    """1-based place of each row in its run of equal ``keys`` (rows sorted by them)."""
    idx = pl.int_range(pl.len(), dtype=pl.Int64)
    new = pl.any_horizontal([pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys])
    first = new | (idx == 0)  # ne_missing is never null; row 0 of a null key
    return idx - pl.when(first).then(idx).forward_fill() + 1


def attempt_positions(attempts: pl.LazyFrame) -> pl.LazyFrame:
    """(doc_id, at_attempt) → ``pos``, ``n``, ``round`` of each attempt.

    docs/figures.md, "The attempt at acceptance".

    Attempts are ordered by ``started_at`` (unknown last), then position;
    ``pos`` is the 1-based place in that order; ``n`` falls back to the place
    among attempts of the same node. When ids repeat, the first in order wins.
    Places are counted over sorted rows, where a group starts when its key
    changes: about half the CPU of running counts over windows and a unique
    (benchmarks/RESULTS.md, "Evaluation at the floor (#12), second pass").

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> t = [datetime(2026, 1, 1, h, tzinfo=UTC) for h in (3, 1)]
    >>> att = pl.LazyFrame({"doc_id": [7, 7, 7], "attempt_id": ["b", "a", "b"],
    ...     "node": ["x", "x", "y"], "n": [None, None, 5], "round": [1, 1, 2],
    ...     "started_at": [*t, None], "att_idx": [0, 1, 2]})
    >>> attempt_positions(att).sort("pos").collect().rows()
    [(7, 'a', 1, 1, 1), (7, 'b', 2, 2, 1)]
    """
    order = pl.int_range(pl.len(), dtype=pl.Int64)
    return (
        attempts.select("doc_id", "attempt_id", "node", "n", "round", "started_at", "att_idx")
        .sort(["doc_id", "started_at", "att_idx"], nulls_last=[False, True, False])
        .with_columns(_place("doc_id").alias("pos"), order.alias("_order"))
        .sort("doc_id", "node", "_order")
        .with_columns(pl.coalesce(pl.col("n").cast(pl.Int64), _place("doc_id", "node")).alias("n"))
        .filter(pl.col("attempt_id").is_not_null())
        .sort("doc_id", "attempt_id", "_order")
        .filter(_place("doc_id", "attempt_id") == 1)
        .select("doc_id", pl.col("attempt_id").alias("at_attempt"), "pos", "n", "round")
    )


def link_attempts(signals: pl.LazyFrame, positions: pl.LazyFrame) -> pl.LazyFrame:
    """``signals`` with the link columns of the attempt each names.

    "The attempt at acceptance" in docs/figures.md.

    ``positions`` is :func:`attempt_positions` of the same runs' attempts.

    Examples
    --------
    >>> sig = pl.LazyFrame({"doc_id": [7, 7, 7], "at_attempt": ["b", "zz", None]})
    >>> pos = pl.LazyFrame({"doc_id": [7], "at_attempt": ["b"], "pos": [2], "n": [1],
    ...                     "round": [None]})
    >>> link_attempts(sig, pos).collect().rows()
    [(7, 'b', 2, 1, None), (7, 'zz', 0, None, None), (7, None, 0, None, None)]
    """
    have = set(signals.collect_schema().names())
    return (
        signals.drop([c for c in LINK_COLUMNS if c in have])
        .join(
            positions.rename(LINK_FIELDS),
            on=["doc_id", "at_attempt"],
            how="left",
            maintain_order="left",
        )
        .with_columns(pl.col("attempt_pos").fill_null(0).cast(pl.Int32))
    )
