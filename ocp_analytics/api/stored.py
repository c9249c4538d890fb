"""The readers' side of the decisions store: the evaluation loop fed from the stores.

:func:`~ocp_analytics.acceptance`, :func:`~ocp_analytics.write_acceptance`,
:func:`~ocp_analytics.rates`, :func:`~ocp_analytics.compare` and
:func:`~ocp_analytics.attempts_distribution` read a rule's rows from its
decisions store (:mod:`ocp_analytics.api.refresh`) when the store can give
the rows a full evaluation at the requested ``as_of`` gives:

- the store was refreshed at an ``as_of`` at or before the requested one,
  from a commit at or before the one read (a store ahead of the commit read,
  or refreshed at a later ``as_of``, is not used: that rule is decided from
  raw);
- its rows are kept when final, or when nothing they read can have changed
  by the requested ``as_of``; every other row is decided again (runs
  ingested or replaced since the store's commit, runs a late event
  committed since is matched to, open windows closed and signals become
  known since the row's ``as_of``: exactly what a refresh would decide
  again, :func:`~ocp_analytics.api.refresh.refresh`).

The loop is the engine's slices (:func:`~ocp_analytics.engine.evaluate.slices`),
each windowed and filtered as a full evaluation's: a stored rule's rows of a
slice are its live rows joined to the slice's runs on ``doc_id`` (which
also carries the group columns), a rule with no usable store is decided
from the slice's tables. The sinks get every rule's frame of a slice in
the same order, with the same columns and types, and every row's ``as_of``
is the requested one. :func:`observing` collects what each read reused and
decided (the CLI prints it on stderr).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from ocp_analytics.api.refresh import RefreshSummary, _decide_again, _Plan, _plans, _targets
from ocp_analytics.api.set_codes import SetCodes, coded_exprs, open_set
from ocp_analytics.engine.acceptance import CODED_TYPES, OUTPUT_SCHEMA, decide
from ocp_analytics.engine.evaluate import Sink, selected, window_slices
from ocp_analytics.engine.known import KnownNames
from ocp_analytics.engine.rates import ATT, where_conditions
from ocp_analytics.engine.run_codes import FOUND, cell_code, patched
from ocp_analytics.engine.timeaxis import in_window
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.decisions import DECISIONS_SCHEMA
from ocp_analytics.store.scan import Dataset

__all__ = ["WindowCodes", "build_columns", "observing", "run_stored", "window_codes"]

_LOG = logging.getLogger("ocp_analytics.decisions")
_STORED = frozenset(DECISIONS_SCHEMA.names)
_SEEN: ContextVar[list[RefreshSummary] | None] = ContextVar("ocp_decisions_seen", default=None)


@contextmanager
def observing() -> Iterator[list[RefreshSummary]]:
    """Collect the summary of every read of the decisions stores within the block.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> _ = oa.refresh(ds, "tests", as_of="2027-01-01")
    >>> with observing() as seen:
    ...     _ = oa.rates(ds, "tests", as_of="2027-01-02")
    >>> [str(s) for s in seen]
    ['decisions: 14 reused, 0 decided']
    """
    held: list[RefreshSummary] = []
    token = _SEEN.set(held)
    try:
        yield held
    finally:
        _SEEN.reset(token)


def _tell(summary: RefreshSummary) -> None:
    _LOG.debug("%s", summary)
    held = _SEEN.get()
    if held is not None:
        held.append(summary)


def _usable(dataset: object) -> Dataset | None:
    """``dataset`` when it is a committed dataset on disk (stores live there), else None."""
    if not isinstance(dataset, Dataset) or dataset.records is None or dataset.snapshot is None:
        return None
    return dataset


class _Live:
    """One stored rule's live rows at the requested ``as_of``: kept rows and rows decided again."""

    def __init__(self, plan: _Plan, again: pl.DataFrame | None) -> None:
        assert plan.record is not None
        # a named rule's rows all hold its name: given, not read (the recorded rule's vary)
        self.name = None if plan.target is None else plan.target.name
        kept = plan.store.scan(plan.record)
        if plan.dropped.len():
            kept = kept.filter(~pl.col("doc_id").is_in(plan.dropped.implode()))
        self.kept = kept
        self.again = again if again is not None and again.height else None

    def slice(
        self, runs: pl.DataFrame, cols: Sequence[str]
    ) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
        """The kept and decided-again rows of the runs ``runs`` (with their carried columns).

        Only the stored columns among ``cols`` are read (``as_of`` is the
        requested one, set later): a rates table reads a few narrow columns
        of the rows, not their ``run_id`` and reasons.
        """
        ids = runs.get_column("doc_id")
        lo, hi = ids.min(), ids.max()
        bounds = pl.col("doc_id").is_between(lo, hi) if ids.len() else pl.lit(False)
        given = {*runs.columns, "as_of", *(("rule",) if self.name is not None else ())}
        stored = [c for c in cols if c in _STORED and c not in given]
        read = ["doc_id", *stored]
        kept = self.kept.select(read).filter(bounds).join(runs.lazy(), on="doc_id", how="inner")
        again = None
        if self.again is not None:
            again = self.again.lazy().select(read).join(runs.lazy(), on="doc_id", how="inner")
        return kept, again


def _as_decided(
    frames: Sequence[pl.DataFrame],
    cols: Sequence[str],
    when: datetime,
    coded: bool,
    name: str | None = None,
) -> pl.DataFrame:
    """A stored rule's rows of a slice as the loop hands them: ``cols``, decision types, ``as_of``.

    ``name``: the named rule whose rows these are (its ``rule`` column is
    given, not read). With ``coded``, the
    :data:`~ocp_analytics.engine.acceptance.CODED` texts as the Enum columns
    ``decide(..., coded=True)`` gives: outcomes and tiers of all their words,
    a named rule's of its one name, the recorded rules' of the names read.
    """
    types = {c: OUTPUT_SCHEMA[c] for c in cols if c in OUTPUT_SCHEMA}
    given = [pl.lit(when, OUTPUT_SCHEMA["as_of"]).alias("as_of")]
    if coded:
        types |= {c: t for c, t in CODED_TYPES.items() if c in types}
    if name is not None:
        given.append(pl.lit(name, pl.Enum([name]) if coded else pl.String).alias("rule"))
        types.pop("rule", None)  # given of its type
    parts = [f.with_columns(given).select(cols).cast(types) for f in frames]  # type: ignore[arg-type]
    out = parts[0] if len(parts) == 1 else pl.concat(parts)
    if not coded or name is not None or "rule" not in out.columns:
        return out
    names = out.get_column("rule").drop_nulls().unique(maintain_order=True)
    return out.with_columns(pl.col("rule").cast(pl.Enum(names.to_list())))


def run_stored(
    ds: object,
    rules: Sequence[Rule],
    as_of: datetime,
    sinks: Sequence[Sink],
    *,
    recorded: bool,
    since: datetime | None,
    until: datetime | None,
    where: Sequence[str],
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None,
    slice_runs: int,
    known: KnownNames | None,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshSummary | None:
    """The loop of :func:`~ocp_analytics.engine.evaluate.run`, stored rules read from their stores.

    Returns None, having done nothing, when ``ds`` is not a committed
    dataset on disk or no rule has a usable store (the caller runs the
    ordinary loop); else the summary of what was reused and decided.
    """
    dataset = _usable(ds)
    if dataset is None:
        return None
    targets = _targets(list(rules), recorded)
    plans = _plans(dataset, targets, as_of)
    if all(p.record is None for p in plans):
        return None
    again = _decide_again(dataset, plans, as_of)
    lives = {p.label: _Live(p, again.get(p.label)) for p in plans if p.record is not None}
    raw = [p for p in plans if p.record is None]
    raw_alt = [p.target for p in raw if p.target is not None]
    raw_recorded = any(p.target is None for p in raw)
    wanted = list(dict.fromkeys(c for s in sinks for c in s.columns))
    coded = bool(sinks) and all(getattr(s, "coded", False) for s in sinks)
    counts = [0, 0]  # reused, decided
    parts = window_slices(dataset, slice_runs, since, until, known)
    for i, (tables, exprs) in enumerate(selected(parts, since, until, where, carry, known), 1):
        carried = [e.meta.output_name() for e in exprs]
        cols = [c for c in wanted if c in OUTPUT_SCHEMA] + carried
        # run ids once from the slice's runs, not once a rule from each store
        ids = ["run_id"] if "run_id" in cols and "run_id" not in carried else []
        runs = tables["runs"].select("doc_id", *ids, *exprs).collect()
        decided = iter(
            decide(
                tables,
                raw_alt,
                as_of,
                recorded=raw_recorded,
                carry=exprs,
                reasons="reasons" in cols,
                coded=coded,
            )
            if raw
            else []
        )
        for plan in plans:
            if plan.record is None:
                frame = next(decided).select(cols).collect()
                counts[1] += frame.height
            else:
                frame = _stored_slice(lives[plan.label], runs, cols, as_of, coded, counts)
            for sink in sinks:
                sink.add(frame)
        if progress is not None:
            progress(i, len(parts))
    summary = RefreshSummary(
        as_of,
        dataset.snapshot,
        counts[0],
        counts[1],
        tuple(p.label for p in raw),
    )
    _tell(summary)
    return summary


def _stored_slice(
    live: _Live,
    runs: pl.DataFrame,
    cols: Sequence[str],
    when: datetime,
    coded: bool,
    counts: list[int],
) -> pl.DataFrame:
    """One stored rule's frame of a slice; ``counts`` [reused, decided] are added to."""
    kept, again = live.slice(runs, cols)
    frames = pl.collect_all([kept, *([] if again is None else [again])])
    counts[0] += frames[0].height
    counts[1] += sum(f.height for f in frames[1:])
    return _as_decided(frames, cols, when, coded, live.name)


# --- the window run-major: a byte per (run, rule) --------------------------------------


@dataclass
class WindowCodes:
    """A window's decisions read from the stores, lined up with its runs.

    ``runs``: the window's runs (``doc_id``, ``run_id`` unless not asked
    for, and the carried columns) in ``doc_id`` order. :meth:`rules` reads each rule's rows in
    turn, so one rule's cells are held at a time.
    """

    runs: pl.DataFrame
    plans: list[_Plan]
    again: dict[str, pl.DataFrame]
    as_of: datetime
    snapshot: int | None
    # the rule set's codes (api/set_codes.py), when refresh keeps them for these stores
    table: SetCodes | None = None

    def rules(self) -> Iterator[tuple[str, pl.DataFrame]]:
        """Each rule's label with its ``_cell`` and attempts to acceptance, lined up with ``runs``.

        Once every rule was read, what was reused and decided is said
        (:func:`observing`).
        """
        return self.columns(lambda _: [cell_code(), pl.col(ATT)])

    def columns(
        self, exprs: Callable[[Rule | None], Sequence[pl.Expr]]
    ) -> Iterator[tuple[str, pl.DataFrame]]:
        """Each rule's label with the columns ``exprs(rule)`` of its rows, lined up with ``runs``.

        The expressions read stored columns (the recorded rule's is None);
        a run with no row under the rule has nulls, and ``_found`` tells it
        (true: a row). What was reused and decided is said once every rule
        was read (:func:`observing`).
        """
        ids = self.runs.get_column("doc_id")
        counts = [0, 0]  # reused, decided
        for plan in self.plans:
            read = [pl.lit(True).alias(FOUND), *exprs(plan.target)]
            names = [e.meta.output_name() for e in read]
            again = self.again.get(plan.label)
            if self.table is None or not self.table.keeps(plan.label, names):
                yield plan.label, _rule_columns(plan, again, ids, counts, read)
                continue
            # the rule set's table: the same columns, with no read of the rule's store
            cols, decided = self.table.columns(plan.label, ids, again, plan.target, names)
            found = cols.height - cols.get_column(FOUND).null_count()
            counts[0] += found - decided
            counts[1] += decided
            yield plan.label, cols.select(names)
        _tell(RefreshSummary(self.as_of, self.snapshot, counts[0], counts[1], ()))


def window_codes(
    ds: object,
    rules: Sequence[Rule],
    as_of: datetime,
    *,
    recorded: bool,
    since: datetime | None,
    until: datetime | None,
    where: Sequence[str],
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None,
    slice_runs: int,
    known: KnownNames | None,
    run_ids: bool = True,
) -> WindowCodes | None:
    """Every rule's rows of the window from its store, run-major; None when a rule has no store.

    The rows are those :func:`run_stored` hands its sinks (kept rows of
    the window's runs, and rows decided again), read a rule at a time over
    the whole window: a rule's live rows are read once, coded
    (:func:`~ocp_analytics.engine.run_codes.cell_code`) and lined up with
    the runs, instead of read and joined once a slice. Returns None, having
    read no row, when ``ds`` is not a committed dataset on disk or some
    rule would be decided from raw (the caller runs the loop). The window's
    runs are read from the ``runs`` parts alone (:func:`_window_runs`).
    ``run_ids``: keep the runs' ``run_id`` (the flips' samples; a sweep
    needs none).
    """
    dataset = _usable(ds)
    if dataset is None:
        return None
    plans = _plans(dataset, _targets(list(rules), recorded), as_of)
    if not plans or any(p.record is None for p in plans):
        return None
    runs = _window_runs(dataset, since, until, where, carry, slice_runs, known, run_ids)
    # decided again once the window has runs: else the caller's loop would decide them twice
    again = _decide_again(dataset, plans, as_of)
    return WindowCodes(runs, plans, again, as_of, dataset.snapshot, open_set(dataset, plans))


def build_columns(plans: Sequence[_Plan], ids: pl.Series) -> Iterator[tuple[int, pl.DataFrame]]:
    """Each plan's position and its coded columns (:func:`.set_codes.coded_exprs`) from its store.

    Lined up with ``ids`` (sorted), a rule at a time: how ``refresh``
    builds a rule set's whole table (:func:`.set_codes.write_set`).
    """
    counts = [0, 0]
    for i, plan in enumerate(plans):
        read = [pl.lit(True).alias(FOUND), *coded_exprs(plan.target)]
        yield i, _rule_columns(plan, None, ids, counts, read).drop(FOUND)


def _window_runs(
    dataset: Dataset,
    since: datetime | None,
    until: datetime | None,
    where: Sequence[str],
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None,
    slice_runs: int,
    known: KnownNames | None,
    run_ids: bool,
) -> pl.DataFrame:
    """The runs of the window meeting ``where``, current versions, in ``doc_id`` order.

    The rows :func:`~ocp_analytics.engine.evaluate.selected` keeps of the
    slices, read from the ``runs`` parts only: the slices would open (and
    hash) every table's parts, none of which the codes need. ``known`` is
    told what the slices would tell it: the names the manifest holds, then
    the signals of the window's runs ``slice_runs`` runs at a time until
    every name was seen or ruled out (usually the first).
    """
    ds = dataset.within(since, until)
    if known is not None:
        known.rule_out(ds.signal_names())
    # as the slices take replaced versions out: from the scans, against the shared read
    stale = ds.superseded()
    runs = (
        ds.frames["runs"]
        if stale is None
        else ds.scans["runs"].join(stale.lazy(), on="doc_id", how="anti")
    )
    schema = runs.collect_schema()
    exprs = carry(schema) if carry else ()
    window = in_window(since, until)
    conds = [*([] if window is None else [window]), *where_conditions(where, schema)]
    cols = [
        pl.col("doc_id"),
        *([pl.col("run_id")] if run_ids else []),
        *(e for e in exprs if e.meta.output_name() != "run_id"),
    ]
    found = (runs.filter(*conds) if conds else runs).select(cols).collect()
    found = found if found.get_column("doc_id").is_sorted() else found.sort("doc_id")
    if known is not None and not known.done:
        signals = ds.current("signals").select("doc_id", "kind", "name")
        ids = found.get_column("doc_id")
        for lo in range(0, ids.len(), slice_runs):
            some = ids.slice(lo, slice_runs)
            held = signals.filter(pl.col("doc_id").is_between(some.min(), some.max()))
            known.add(held.join(some.to_frame().lazy(), on="doc_id", how="semi"))
            if known.done:
                break
    return found


def _rule_columns(
    plan: _Plan,
    again: pl.DataFrame | None,
    ids: pl.Series,
    counts: list[int],
    exprs: Sequence[pl.Expr],
) -> pl.DataFrame:
    """One stored rule's ``exprs`` over its live rows, lined up with the runs ``ids`` (sorted)."""
    assert plan.record is not None
    bounds = pl.col("doc_id").is_between(ids.min(), ids.max()) if ids.len() else pl.lit(False)
    cols = [pl.col("doc_id"), *exprs]
    entries = plan.store.entries(plan.record)
    if not entries:
        entries = [
            (pl.DataFrame(DECISIONS_SCHEMA.empty_table()).lazy(), pl.Series("doc_id", [], pl.Int64))
        ]
    # the oldest entry whole, its rows no longer live taken out by position (patched); the
    # later entries' live rows (a night's: few) filtered here
    (first, gone), *rest = entries
    dropped = plan.dropped.implode()
    read = [first.filter(bounds).select(cols)] + [
        f.filter(
            bounds, ~pl.col("doc_id").is_in(later.implode()), ~pl.col("doc_id").is_in(dropped)
        ).select(cols)
        for f, later in rest
    ]
    # streamed: each rule's columns computed a batch at a time (faster, and a quarter the memory)
    base, *more = pl.collect_all(read, engine="streaming")
    decided = 0
    if again is not None and again.height:
        mine = again.lazy().filter(bounds).select(cols).collect()
        decided = int(mine.get_column("doc_id").is_in(ids.implode()).sum())
        more.append(mine)
    later = pl.concat(more) if more else base.clear()
    rows = patched(base, later, pl.concat([gone, plan.dropped]))
    if rows.height != ids.len() or not rows.get_column("doc_id").equals(ids):
        rows = ids.to_frame().join(rows, on="doc_id", how="left", maintain_order="left")
    if rows.height != ids.len():  # a doc_id twice among a rule's live rows: never lined up
        raise AssertionError(f"the rows of {plan.label!r} repeat a run version")
    found = rows.height - rows.get_column(FOUND).null_count()
    counts[0] += found - decided
    counts[1] += decided
    return rows.drop("doc_id")
