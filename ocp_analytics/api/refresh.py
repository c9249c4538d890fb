"""Decisions that cost what changed: ``refresh`` keeps each rule's rows in the dataset.

:func:`refresh` writes, for the recorded rule and each alternative rule, the
acceptance rows of every current run into the dataset's decisions store
(:mod:`ocp_analytics.store.decisions`), keyed by the rule's fingerprint. A
second refresh keeps the rows that are final
(:func:`ocp_analytics.engine.finality.is_final`) and decides again only the
rest: runs ingested or replaced since the store's commit, runs a late event
committed since is matched to, and rows that were not final when decided
once they may read otherwise (:func:`~ocp_analytics.engine.finality.changes_at`:
an open window closed, a signal or event became known).
A rule with no store, a changed definition (another fingerprint) or an
``as_of`` earlier than its store's is decided from raw.

:func:`decisions_or_raw` is the same reading without writing: the rows
:func:`~ocp_analytics.acceptance` gives, taken from the stores where they
exist and decided where they do not. The readers (``acceptance``, ``rates``,
``compare``, ...) read the stores the same way, a slice at a time
(:mod:`ocp_analytics.api.stored`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics.api.set_codes import night_entry, set_fingerprint, write_set
from ocp_analytics.engine.acceptance import DECIDE_READS, OUTPUT_SCHEMA, WINDOW_CLOSES, decide
from ocp_analytics.engine.evaluate import SLICE_RUNS, SLICED_TABLES, run, without_absent_links
from ocp_analytics.engine.features import matched_events
from ocp_analytics.engine.finality import (
    CONTRACT,
    canonical_rule,
    changes_at,
    fingerprint,
    is_final,
    observed_until,
    redecide,
    rule_label,
)
from ocp_analytics.engine.timeaxis import resolve_as_of
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.model.rules import Rule, resolve_rules
from ocp_analytics.store.decisions import DECISIONS_SCHEMA, DecisionStore, Generation
from ocp_analytics.store.prune import id_spans
from ocp_analytics.store.scan import Dataset, scan_dataset
from ocp_analytics.store.storage import Store

if TYPE_CHECKING:
    from ocp_analytics._typing import RulesLike, When

__all__ = ["RefreshSummary", "decisions_or_raw", "refresh"]

_DOC = "_doc_id"  # the carried doc_id (carried names start with "_")
_EMPTY = pl.Series("doc_id", [], pl.Int64)
_LAST_ID = (1 << 63) - 1
_WRITERS = 2  # stores written at once (the machine's cores: compression is the cost)
FOLD_ENTRIES = 8  # a store's chain entries before its nights are folded into one


@dataclass(frozen=True)
class RefreshSummary:
    """What a refresh (or a read of the stores) reused and decided.

    ``reused``: stored rows kept; ``decided``: rows evaluated now;
    ``from_raw``: the rules decided from raw (no store yet, a changed
    definition, or an ``as_of`` before the store's); ``snapshot``: the
    dataset commit read.

    Examples
    --------
    >>> from datetime import UTC
    >>> print(RefreshSummary(datetime(2027, 1, 1, tzinfo=UTC), 3, 9_912_000, 88_000))
    decisions: 9,912,000 reused, 88,000 decided
    """

    as_of: datetime
    snapshot: int | None
    reused: int
    decided: int
    from_raw: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"decisions: {self.reused:,} reused, {self.decided:,} decided"


@dataclass
class _Plan:
    """One rule's store and what to do with it: from raw, or again only ``again``."""

    target: Rule | None
    store: DecisionStore
    record: dict | None  # None: decide from raw
    again: pl.Series = field(default_factory=lambda: _EMPTY)
    dropped: pl.Series = field(default_factory=lambda: _EMPTY)
    reused: int = 0

    @property
    def label(self) -> str:
        return rule_label(self.target)


def _open(dataset: str | Path | Store | Dataset) -> Dataset:
    """The dataset at its newest commit (the stores follow the newest)."""
    if isinstance(dataset, Dataset):
        if dataset.records is None:
            raise DatasetError(
                hint("the decisions store needs a dataset on disk.", "pass its path.")
            )
        return _committed(dataset)
    if not isinstance(dataset, str | Path | Store):
        raise DatasetError(
            hint(
                "the decisions store needs a dataset on disk, not tables in memory.",
                "pass its path.",
            )
        )
    return _committed(scan_dataset(dataset))


def _committed(ds: Dataset) -> Dataset:
    if ds.snapshot is None:
        raise DatasetError(hint(f"{ds.path} has no commit yet.", "ingest into it first."))
    return ds


def _targets(rules: RulesLike, recorded: bool) -> list[Rule | None]:
    return ([None] if recorded else []) + list(resolve_rules(rules))


def _changes(ds: Dataset, seq: int) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Since commit ``seq``: versions committed (new), runs late events matched, versions replaced.

    A ``doc_id`` carries its batch's ``seq`` in its high 32 bits, so what
    was committed since is a range, read from the parts the manifest says
    hold it; the version a new one replaces is the newest of its run before
    that range (the one current at ``seq``). Every series holds current
    versions only (``gone`` excepted), found without resolving the version
    of every run: one read of the ``run_id`` column, for the few runs that
    need it.
    """
    first = (seq + 1) << 32
    records = [r for r in ds.records or [] if r["seq"] > seq]
    since = ds.holding([(first, _LAST_ID)], ("runs",))["runs"].filter(pl.col("doc_id") >= first)
    # a run given two versions since: its newest (no newer version is older than first)
    new = since.group_by("run_id").agg(pl.col("doc_id").max()).collect()
    batches = [r["batch_id"] for r in records if "event_sources" in r]
    matched = _EMPTY
    if batches:
        events = ds.frames["events"].filter(pl.col("batch_id").is_in(batches))
        # the artifacts naming one of these few commits, before matching (not every run's)
        commits = events.select("commit").unique().collect().get_column("commit")
        named = pl.coalesce("path", "artifact_id").is_in(commits.implode())
        arts = ds.scans["artifacts"].filter(named)
        found = matched_events(events, arts).select("doc_id").unique()
        matched = found.collect().get_column("doc_id")
    replaced = sum(int(s.get("runs_replaced") or 0) for r in records for s in r.get("sources", []))
    if not (matched.len() or (new.height and replaced)):
        return new.get_column("doc_id"), matched, _EMPTY
    # the runs of matched versions, and every version of those runs and of the new ones
    held = ds.holding(id_spans(matched), ("runs",))["runs"]
    of_matched = held.filter(pl.col("doc_id").is_in(matched.implode())).select("run_id").collect()
    wanted = pl.concat([new.get_column("run_id"), of_matched.get_column("run_id")]).unique()
    versions = (
        ds.scans["runs"]
        .filter(pl.col("run_id").is_in(wanted.implode()))
        .select("run_id", "doc_id")
        .collect()
    )
    newest = versions.group_by("run_id").agg(pl.col("doc_id").max()).get_column("doc_id")
    touched = matched.filter(matched.is_in(newest.implode()))
    gone = _EMPTY
    if new.height and replaced:
        gone = (
            versions.filter(
                pl.col("doc_id") < first, pl.col("run_id").is_in(new["run_id"].implode())
            )
            .group_by("run_id")
            .agg(pl.col("doc_id").max())
            .get_column("doc_id")
        )
    return new.get_column("doc_id"), touched, gone


def _plans(ds: Dataset, targets: list[Rule | None], when: datetime) -> list[_Plan]:
    """Each rule's plan: from raw, or the doc_ids to decide again and to drop."""
    stores = [DecisionStore(ds.path, fingerprint(t)) for t in targets]
    with ThreadPoolExecutor(_WRITERS, thread_name_prefix="ocp-plans") as pool:
        # each store's record, then the pending rows now due: small reads, side by side
        records = list(pool.map(lambda st: st.latest(), stores))
        usable = [
            r is not None
            and int(r["dataset_seq"]) <= (ds.snapshot or 0)
            and when >= datetime.fromisoformat(r["as_of"])
            for r in records
        ]

        def due(st: DecisionStore, record: dict | None, ok: bool) -> pl.Series:
            # at the store's own as_of a row not final is still the row a full evaluation
            # gives, unless its run changed since (new, touched, gone): decided again only
            # later, and then only once it may read otherwise by ``when`` (changes_at)
            if not ok or record is None or when <= datetime.fromisoformat(record["as_of"]):
                return _EMPTY
            return st.pending(record, due=when).get_column("doc_id")

        pending = pool.map(due, stores, records, usable)
        seen: dict[int, tuple[pl.Series, pl.Series, pl.Series]] = {}
        plans = []
        for target, st, record, ok, held in zip(
            targets, stores, records, usable, pending, strict=True
        ):
            if not ok or record is None:
                plans.append(_Plan(target, st, None))
                continue
            seq = int(record["dataset_seq"])
            if seq not in seen:
                seen[seq] = _changes(ds, seq)
            new, touched, gone = seen[seq]
            again, dropped = redecide(held, new, touched, gone)
            stored = int((dropped < ((seq + 1) << 32)).sum())
            plans.append(_Plan(target, st, record, again, dropped, int(record["rows"]) - stored))
    return plans


# --- deciding: the changed runs in memory, or everything a slice at a time ----------------


def _late(tables: dict[str, pl.LazyFrame], when: datetime) -> pl.LazyFrame:
    """``doc_id, observed_until, observed_next`` of the runs observed after ``when``.

    Of their signals and matched events; a run with none has no row.
    """
    matched = None
    if "events" in tables and "artifacts" in tables:
        matched = matched_events(tables["events"], tables["artifacts"])
    return observed_until(tables["signals"], matched, after=when)


def _rows(decisions: pl.DataFrame, late: pl.DataFrame) -> pl.DataFrame:
    """Decision rows (with the carried doc_id) as the store holds them, and ``changes_at``."""
    rows = decisions.rename({_DOC: "doc_id"}).join(late, on="doc_id", how="left")
    change = changes_at(pl.col(WINDOW_CLOSES), pl.col("observed_next")).alias("changes_at")
    return rows.select(*DECISIONS_SCHEMA.names, change)


def _pending(rows: pl.DataFrame) -> pl.DataFrame:
    """``doc_id, changes_at`` of the rows not final at their own ``as_of``."""
    final = is_final(pl.col("window_open"), pl.col("observed_until"), pl.col("as_of"))
    return rows.filter(~final).select("doc_id", "changes_at")


def _carry(_: pl.Schema) -> list[pl.Expr]:
    return [pl.col("doc_id").alias(_DOC)]


def _reads(table: pl.LazyFrame, cols: Sequence[str]) -> pl.LazyFrame:
    """``table``'s columns among ``cols`` (parts written before the links have none)."""
    have = table.collect_schema().names()
    return table.select(c for c in cols if c in have)


def _again_ids(plans: list[_Plan]) -> tuple[list[_Plan], pl.Series]:
    """The plans that decide some run again, and those runs' ``doc_id`` (sorted, each once)."""
    plans = [p for p in plans if p.again.len()]
    if not plans:
        return [], pl.Series("doc_id", [], pl.Int64)
    return plans, pl.concat([p.again for p in plans]).unique().sort()


def _again_tables(ds: Dataset, plans: list[_Plan]) -> dict[str, pl.LazyFrame]:
    """The tables of the runs some plan decides again, the columns the engine reads in memory.

    Empty when no plan decides a run again. Its ``signals`` hold every
    signal of those runs: the rule set's codes take their latest scores
    from them (api/set_codes.py) instead of reading the parts once more.
    """
    plans, ids = _again_ids(plans)
    if not plans:
        return {}
    keep = pl.col("doc_id").is_in(ids.implode())
    # the runs decided again are current versions: read from the parts holding them only
    held = ds.holding(id_spans(ids), SLICED_TABLES)
    tables = {t: held[t].filter(keep) for t in SLICED_TABLES}
    # decide reads signals, runs and artifacts once per feature: each read once here, the
    # columns it reads only (a few runs in many parts: decoding the parts is the cost)
    once = [t for t in DECIDE_READS if t in tables]
    read = pl.collect_all([_reads(tables[t], DECIDE_READS[t]) for t in once])
    return tables | {t: frame.lazy() for t, frame in zip(once, read, strict=True)}


def _decide_again(
    ds: Dataset,
    plans: list[_Plan],
    when: datetime,
    read: dict[str, pl.LazyFrame] | None = None,
) -> dict[str, pl.DataFrame]:
    """The rows of each plan's ``again`` runs, every rule in one pass over those runs only.

    ``read``: :func:`_again_tables` of these plans, read already.
    """
    plans, ids = _again_ids(plans)
    if not plans:
        return {}
    tables = dict(_again_tables(ds, plans) if read is None else read)
    tables["events"] = ds.frames["events"]
    tables = dict(without_absent_links(tables, ds.signal_links))
    recorded = any(p.target is None for p in plans)
    alt = [p.target for p in plans if p.target is not None]
    decided = decide(tables, alt, when, recorded=recorded, carry=_carry(pl.Schema()), closes=True)
    *frames, late = pl.collect_all([*decided, _late(tables, when)])
    out = {}
    for plan, frame in zip(sorted(plans, key=lambda p: p.target is not None), frames, strict=True):
        mine = (
            frame
            if plan.again.len() == ids.len()
            else frame.filter(pl.col(_DOC).is_in(plan.again.implode()))
        )
        out[plan.label] = _rows(mine, late)
    return out


class _Rows:
    """A sink: each rule's decisions of a slice, as stored rows, to a generation or a list."""

    columns = (*OUTPUT_SCHEMA, WINDOW_CLOSES)

    def __init__(self, late: pl.DataFrame, gens: dict[str, Generation] | None = None) -> None:
        self.late, self.gens = late, gens
        self.frames: dict[str, list[pl.DataFrame]] = {}

    def add(self, decisions: pl.DataFrame) -> None:
        if decisions.height == 0:
            return
        rows = _rows(decisions, self.late)
        label = rows.get_column("rule")[0]
        if self.gens is None:
            self.frames.setdefault(label, []).append(rows)
        else:
            self.gens[label].add(rows, _pending(rows))


def _from_raw(
    ds: Dataset,
    plans: list[_Plan],
    when: datetime,
    gens: dict[str, Generation] | None,
    slice_runs: int,
) -> dict[str, list[pl.DataFrame]]:
    """Evaluate every run for the plans' rules, a slice at a time, into ``gens`` (or kept)."""
    if not plans:
        return {}
    sink = _Rows(_late(dict(ds.frames), when).collect(), gens)
    alt = [p.target for p in plans if p.target is not None]
    recorded = any(p.target is None for p in plans)
    run(ds, alt, when, [sink], recorded=recorded, carry=_carry, slice_runs=slice_runs)
    return sink.frames


# --- the public functions ---------------------------------------------------------------


def refresh(
    dataset: str | Path | Store | Dataset,
    rules: RulesLike = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    slice_runs: int = SLICE_RUNS,
) -> RefreshSummary:
    """Bring the dataset's decisions store for ``rules`` up to its newest commit at ``as_of``.

    Each rule (and, with ``recorded``, each run's own rule) has its own
    store, ``DATASET/decisions/<fingerprint>/`` (docs/dataset.md, "The
    decisions store"). Rows that are final are kept; every other row (new
    and replaced runs, runs with a newly matched late event, windows still
    open, signals observed after the row's ``as_of``) is decided again; a
    rule with no store, or whose store was refreshed at a later ``as_of``, is
    decided from raw. Each store is written atomically: a refresh killed at
    any point leaves every store as its last refresh left it.

    Parameters
    ----------
    dataset
        The dataset's path (or a :class:`~ocp_analytics.Dataset` scanned at
        its newest commit).
    rules
        Alternative rules, as for :func:`~ocp_analytics.acceptance`.
    as_of
        The instant of knowledge the rows are decided at (now by default).
    recorded
        Keep each run's own rule (``recorded``) too.
    slice_runs
        Runs evaluated at a time when a rule is decided from raw.

    Returns
    -------
    RefreshSummary
        Rows reused and decided; printed: ``decisions: N reused, M decided``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> print(oa.refresh(ds, "tests", as_of="2027-01-01"))
    decisions: 0 reused, 14 decided
    >>> _ = oa.ingest("tests/data/examples/swarm-v02.ocp.json", ds)
    >>> print(oa.refresh(ds, "tests", as_of="2027-01-02"))
    decisions: 14 reused, 2 decided
    """
    when = resolve_as_of(as_of)
    ds = _open(dataset)
    targets = _targets(rules, recorded)
    with contextlib.ExitStack() as stack:
        # every store locked before its record is read: a vacuum deleting a store (it
        # takes the same lock) cannot do so between this plan and its generation
        for target in targets:
            stack.enter_context(DecisionStore(ds.path, fingerprint(target)).writing())
        # and the rule set's codes (api/set_codes.py), written last
        table = DecisionStore(ds.path, set_fingerprint([fingerprint(t) for t in targets]))
        stack.enter_context(table.writing())
        plans = _plans(ds, targets, when)
        gens = {p.label: p.store.start() for p in plans}
        raw = [p for p in plans if p.record is None]
        _from_raw(ds, raw, when, {p.label: gens[p.label] for p in raw}, slice_runs)
        read = _again_tables(ds, plans)
        again = _decide_again(ds, plans, when, read)
        signals = read.get("signals")
        # each store's files are its own: written side by side (pyarrow lets go of the GIL);
        # the table's night entry, when it takes one, is built beside the records' writing
        with ThreadPoolExecutor(_WRITERS, thread_name_prefix="ocp-refresh") as pool:
            added = [pool.submit(gens[k].add, rows, _pending(rows)) for k, rows in again.items()]
            for done in added:
                done.result()
            night = pool.submit(night_entry, ds, table, plans, again, when, signals)
            written = [pool.submit(_commit, p, gens[p.label], ds, when) for p in plans]
            for done in written:
                done.result()
        # the rule set's codes follow its stores' new records, every one still locked
        # (stored.py reads the stores through this module: imported here, not above)
        from ocp_analytics.api.stored import build_columns

        after = [_Plan(p.target, p.store, p.store.latest()) for p in plans]
        write_set(ds, table, plans, after, again, when, build_columns, signals, night.result())
    decided = sum(g.rows for g in gens.values())
    return RefreshSummary(
        when, ds.snapshot, sum(p.reused for p in plans), decided, _raw_labels(plans)
    )


def _raw_labels(plans: Sequence[_Plan]) -> tuple[str, ...]:
    return tuple(p.label for p in plans if p.record is None)


def _commit(plan: _Plan, gen: Generation, ds: Dataset, when: datetime) -> None:
    """Write the plan's generation record (nothing when nothing changed)."""
    record = plan.record
    unchanged = (
        record is not None
        and not gen.parts
        and not plan.dropped.len()
        and record["dataset_seq"] == ds.snapshot
        and record["as_of"] == when.isoformat()
    )
    if unchanged:
        return
    meta = {
        "contract": CONTRACT,
        "rule": canonical_rule(plan.target),
        "dataset_seq": ds.snapshot,
        "as_of": when.isoformat(),
        "rows": plan.reused + gen.rows,
        "reused": plan.reused,
        "decided": gen.rows,
    }
    written = plan.store.commit(gen, record, plan.dropped if record is not None else None, meta)
    _fold(plan.store, written)


def _fold(store: DecisionStore, record: dict) -> None:
    """Keep a store's chain short: a night adds an entry, each read filters every entry.

    Past :data:`FOLD_ENTRIES` entries, those after the first (the nights)
    become one; when the nights' rows pass half the first entry's, the
    whole chain becomes one (every live row rewritten: the store's cost
    once in many nights).
    """
    chain = record["chain"]
    if len(chain) > 1 and sum(e["rows"] for e in chain[1:]) > chain[0]["rows"] / 2:
        store.fold(record, 0)
    elif len(chain) > FOLD_ENTRIES:
        store.fold(record, 1)


def decisions_or_raw(
    dataset: str | Path | Store | Dataset,
    rules: RulesLike = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    slice_runs: int = SLICE_RUNS,
) -> tuple[pl.DataFrame, RefreshSummary]:
    """The rows :func:`~ocp_analytics.acceptance` gives, reusing the decisions stores.

    What :func:`refresh` would keep is read from the stores; the rest
    (every row of a rule with no usable store) is decided now. Nothing is
    written. The rows are those of a full evaluation at ``as_of`` (the
    ``as_of`` column included), in another order.

    Returns
    -------
    tuple[polars.DataFrame, RefreshSummary]
        The acceptance rows (``OUTPUT_SCHEMA``) and what was reused and decided.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from ocp_analytics.api.refresh import decisions_or_raw
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> _ = oa.refresh(ds, "tests", as_of="2027-01-01")
    >>> rows, summary = decisions_or_raw(ds, "tests", as_of="2027-01-01")
    >>> rows.height, summary.reused
    (14, 14)
    """
    when = resolve_as_of(as_of)
    ds = _open(dataset)
    plans = _plans(ds, _targets(rules, recorded), when)
    kept = [
        p.store.scan(p.record).filter(~pl.col("doc_id").is_in(p.dropped.implode()))
        for p in plans
        if p.record is not None
    ]
    raw = _from_raw(ds, [p for p in plans if p.record is None], when, None, slice_runs)
    fresh = [f for frames in raw.values() for f in frames]
    fresh += list(_decide_again(ds, plans, when).values())
    stored = pl.concat(kept).collect() if kept else pl.DataFrame(schema=OUTPUT_SCHEMA)
    rows = pl.concat(
        [
            f.select(list(OUTPUT_SCHEMA)).with_columns(pl.lit(when).alias("as_of"))
            for f in [stored, *fresh]
        ],
        how="vertical_relaxed",
    )
    summary = RefreshSummary(
        when, ds.snapshot, stored.height, rows.height - stored.height, _raw_labels(plans)
    )
    return rows.cast(dict(OUTPUT_SCHEMA)), summary  # type: ignore[arg-type]
