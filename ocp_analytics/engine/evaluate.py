"""The one evaluation loop: a dataset, a slice of runs at a time, into sinks.

For each slice of documents (a ``doc_id`` range, see :func:`doc_ranges`) the
loop restricts the runs to the time window, calls :func:`evaluate_slice`
(the pure per-slice function another executor, such as Spark, runs on its
own partitions), and hands each rule's decisions to every sink: the Parquet
writer, rate partials, flip partials, report partials. Two slices are in
flight at most (see :func:`run`), so memory is bounded by the slice size,
whatever the dataset's size.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import polars as pl

from ocp_analytics.engine.acceptance import OUTPUT_SCHEMA, WINDOW_CLOSES, decide
from ocp_analytics.engine.known import KnownNames
from ocp_analytics.engine.rates import where_conditions
from ocp_analytics.engine.timeaxis import in_window
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.links import LINK_COLUMNS
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import Dataset, scan_at

if TYPE_CHECKING:
    from ocp_analytics._typing import DatasetLike

SLICE_RUNS = 500_000
SLICED_TABLES = ("runs", "signals", "attempts", "rules", "artifacts")
_LAST_ID = (1 << 63) - 1
# what matching late events to runs reads (features.matched_events)
_EVENT_COLUMNS = ["event_id", "commit", "kind", "name", "observed_at", "tier"]

Tables = Mapping[str, pl.LazyFrame]


class Sink(Protocol):
    """Receives the decisions of one rule for one slice, as a DataFrame.

    ``columns`` names the columns it reads (the loop computes only the union
    of what its sinks read: rates need no reasons). A sink may also have a
    true ``coded`` attribute: it takes ``rule``, ``outcome`` and ``tier`` as
    Enum columns (see :func:`~ocp_analytics.engine.acceptance.decide`); they are
    given so when every sink of the loop does.
    """

    @property
    def columns(self) -> Sequence[str]:
        """The decision columns the sink reads."""

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one frame of decisions."""


def evaluate_slice(
    tables: Mapping[str, pl.LazyFrame | pl.DataFrame],
    rules: Sequence[Rule],
    as_of: datetime,
    *,
    recorded: bool = True,
    carry: Sequence[pl.Expr] = (),
) -> pl.DataFrame:
    """Acceptance rows of one slice of runs, every rule at once (pure; no I/O).

    The function another executor runs on its own partition: ``tables``
    holds ``runs``, ``signals``, ``attempts`` and ``rules`` with every row of
    each run it holds (polars or Arrow-converted frames).

    Parameters
    ----------
    tables
        ``runs``, ``signals``, ``attempts``, ``rules`` in the dataset's schemas.
    rules
        Alternative rules (:class:`~ocp_analytics.Rule`).
    as_of
        The aware instant of knowledge: a signal observed after it takes no
        part (docs/figures.md, "as_of").
    recorded
        Include each run's own rule (``rule = "recorded"``).
    carry
        Named expressions over ``runs`` (names starting with ``_``) added to
        every row, for example group columns.

    Returns
    -------
    polars.DataFrame
        The columns of :func:`~ocp_analytics.engine.acceptance`, then ``carry``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from datetime import UTC, datetime
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> t = oa.scan_dataset(ds)
    >>> tables = {k: t[k].collect() for k in ("runs", "signals", "attempts", "rules")}
    >>> out = evaluate_slice(tables, [oa.Rule.parse("tests")], datetime(2027, 1, 1, tzinfo=UTC))
    >>> out.select("rule", "outcome", "attempts_to_acceptance").rows()
    [('recorded', 'accepted', 4), ('tests', 'accepted', 4)]
    """
    lazy = {k: v.lazy() for k, v in tables.items()}
    frames = decide(lazy, rules, as_of, recorded=recorded, carry=carry)
    if not frames:
        return empty_decisions(lazy["runs"], carry)
    return pl.concat(pl.collect_all(frames), how="vertical")


def empty_decisions(runs: pl.LazyFrame, carry: Sequence[pl.Expr] = ()) -> pl.DataFrame:
    """No rows, with the decision columns and the carried ones."""
    carried = runs.select(*carry).collect_schema() if carry else pl.Schema()
    return pl.DataFrame(schema={**OUTPUT_SCHEMA, **carried})


def open_tables(
    dataset: DatasetLike, snapshot: Snapshot = None
) -> tuple[Tables, pl.DataFrame | None, Tables | None, Mapping[int, bool]]:
    """The tables of ``dataset`` (at ``snapshot``), its manifest, unfiltered scans, signal links.

    The scans are given only when some run versions were superseded (the
    tables then filter them out); in-memory tables have no manifest. The
    last item maps the ``seq`` of each batch with signals to whether they
    carry the attempt link (:attr:`Dataset.signal_links`).
    """
    ds = scan_at(dataset, snapshot)
    if not isinstance(ds, Dataset):
        return {k: v.lazy() for k, v in ds.items()}, None, None, {}
    superseded = ds.versions_of is not None  # the frames filter replaced versions out
    return ds.frames, ds.manifest, ds.scans if superseded else None, ds.signal_links


def without_absent_links(
    tables: Tables, links: Mapping[int, bool], lo: int = 0, hi: int = _LAST_ID
) -> Tables:
    """``tables`` without the signals' link columns when no batch of ``[lo, hi)`` wrote them.

    Parts written before the link read it as null; with the columns gone,
    :func:`~ocp_analytics.engine.acceptance.decide` links every signal from the
    attempts in its one pass, as it did before the link was stored.
    """
    seqs = [s for s in links if lo >> 32 <= s <= (hi - 1) >> 32]
    if not seqs or any(links[s] for s in seqs):
        return tables
    return {**tables, "signals": tables["signals"].drop(LINK_COLUMNS)}


def doc_ranges(manifest: pl.DataFrame | None, size: int = SLICE_RUNS) -> list[tuple[int, int]]:
    """Half-open ``doc_id`` ranges, each holding at most ``size`` documents.

    Documents of batch ``seq`` have ids ``seq << 32`` onward, one per
    document read, so the manifest's per-batch document counts place the cuts
    without reading any data; small consecutive batches share a range. The
    ranges cover every id (the first starts at 0, the last is open-ended).
    An empty list means: evaluate everything at once.

    Examples
    --------
    Batches 1, 2 and 3 with 5, 2 and 4 documents, at most 6 a range: the cut
    falls after the first document of batch 2.

    >>> m = pl.DataFrame({"seq": [1, 2, 3], "documents": [5, 2, 4]})
    >>> [(lo >> 32, lo % (1 << 32)) for lo, _ in doc_ranges(m, 6)]
    [(0, 0), (2, 1)]
    """
    if size < 1:
        raise OcpAnalyticsError(hint(f"slice_runs must be at least 1, not {size}.", "use 500000."))
    if manifest is None or manifest.height == 0:
        return []
    per_batch = manifest.group_by("seq").agg(pl.col("documents").sum()).sort("seq")
    cuts: list[int] = []
    held = 0
    for seq, docs in per_batch.iter_rows():
        start = 0
        while start < docs:
            take = min(docs - start, size - held)
            start += take
            held += take
            if held >= size:
                cuts.append((int(seq) << 32) + start)
                held = 0
    bounds = [0, *cuts[: -1 if held == 0 and cuts else None], _LAST_ID]
    return list(itertools.pairwise(bounds))


def slices(
    dataset: DatasetLike,
    size: int = SLICE_RUNS,
    snapshot: Snapshot = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[Tables]:
    """The dataset's tables (at ``snapshot``), a ``doc_id`` range at a time (:func:`doc_ranges`).

    Every run's signals, attempts and rule share its ``doc_id``, so each slice
    is evaluated on its own and the results are exact. Parquet statistics on
    ``doc_id`` let each slice read only its own row groups. Superseded run
    versions are found once (a usually short list of ids) and removed from
    each slice, so no slice reads the whole dataset.

    With a window (``since``, ``until``), the parts the manifest says hold no
    run of it are not opened (:meth:`Dataset.within`), and only the batches
    of the parts read are cut into ranges: the slices hold every run of the
    window, and may hold others (:func:`windowed` removes them).
    """
    ds = scan_at(dataset, snapshot)
    if not isinstance(ds, Dataset):
        yield {k: v.lazy() for k, v in ds.items()}
        return
    ds = ds.within(since, until)
    frames, manifest, links = ds.frames, ds.manifest, ds.signal_links
    if ds.parts is not None and ds.parts.pruned:
        manifest = manifest.filter(pl.col("seq").is_in(sorted(ds.parts.seqs)))
    ranges = doc_ranges(manifest, size)
    if len(ranges) <= 1:
        yield without_absent_links(frames, links)
        return
    if "events" in frames:  # read once, not once a slice: every slice matches against all
        frames = {**frames, "events": frames["events"].select(_EVENT_COLUMNS).collect().lazy()}
    stale = ds.superseded()
    if stale is not None:  # each slice removes its own stale versions from the unfiltered scans
        frames = {**ds.scans, "events": frames["events"]} if "events" in frames else ds.scans
    for lo, hi in ranges:
        keep = pl.col("doc_id").is_between(lo, hi, closed="left")
        part = {t: f.filter(keep) if t in SLICED_TABLES else f for t, f in frames.items()}
        if stale is not None:
            old = stale.filter(keep).lazy()
            for t in SLICED_TABLES:
                part[t] = part[t].join(old, on="doc_id", how="anti")
        yield without_absent_links(part, links, lo, hi)


def windowed(
    tables: Tables,
    since: datetime | None,
    until: datetime | None,
    where: Sequence[pl.Expr] = (),
) -> Tables:
    """The tables restricted to runs whose time falls in ``[since, until)`` and that meet ``where``.

    ``where``: conditions over ``runs`` (see
    :func:`~ocp_analytics.engine.rates.where_conditions`), all of them met.
    """
    window = in_window(since, until)
    conds = ([] if window is None else [window]) + list(where)
    if not conds:
        return tables
    runs = tables["runs"].filter(*conds)
    keep = runs.select("doc_id")
    out = dict(tables)
    out["runs"] = runs
    for t in SLICED_TABLES[1:]:
        out[t] = tables[t].join(keep, on="doc_id", how="semi")
    return out


def names_held(
    dataset: DatasetLike, since: datetime | None, until: datetime | None
) -> set[tuple[str, str]] | None:
    """Every (kind, name) of a verdict or score the parts a window reads hold; None: not known.

    Read from the manifest (:meth:`~ocp_analytics.store.scan.Dataset.signal_names`),
    for :meth:`~ocp_analytics.engine.known.KnownNames.rule_out`.
    """
    ds = scan_at(dataset)
    return ds.within(since, until).signal_names() if isinstance(ds, Dataset) else None


def window_slices(
    dataset: DatasetLike,
    slice_runs: int,
    since: datetime | None,
    until: datetime | None,
    known: KnownNames | None,
) -> list[Tables]:
    """The slices of the runs in ``[since, until)``, ``known`` told first what the window holds.

    What every loop over a window's slices (:func:`slices`) starts with: the
    dataset scanned once, for the names its manifest lists (:func:`names_held`,
    handed to ``known``) and then for its slices.
    """
    ds = scan_at(dataset)
    if known is not None:
        known.rule_out(names_held(ds, since, until))
    return list(slices(ds, slice_runs, since=since, until=until))


def selected(
    parts: Iterable[Tables],
    since: datetime | None,
    until: datetime | None,
    where: Sequence[str] = (),
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None,
    known: KnownNames | None = None,
) -> Iterator[tuple[Tables, Sequence[pl.Expr]]]:
    """Each slice of ``parts`` kept to the window and ``where`` (:func:`windowed`), with ``carry``.

    The ``where`` filters and the carried expressions are read once, against
    the first slice's ``runs`` schema; ``known`` is handed each slice's
    signals. What every loop over slices of runs shares (this module's
    :func:`run`, the sweep's, the decisions store's).
    """
    exprs: Sequence[pl.Expr] | None = None
    conds: Sequence[pl.Expr] = ()
    for frames in parts:
        if exprs is None:
            schema = frames["runs"].collect_schema()
            exprs = carry(schema) if carry else ()
            conds = where_conditions(where, schema)
        tables = windowed(frames, since, until, conds)
        if known is not None:
            known.add(tables["signals"])
        yield tables, exprs


def _hand_over(frames: Sequence[pl.LazyFrame], cols: Sequence[str], sinks: Sequence[Sink]) -> None:
    """Collect each rule's decisions of one slice and give them to every sink, in order."""
    for frame in frames:
        # a projection over in-memory features: the in-memory engine spends
        # less CPU here than the streaming one (benchmarks/RESULTS.md,
        # "Evaluation at the floor (#12), second pass")
        decisions = frame.select(cols).collect(engine="in-memory")
        for sink in sinks:
            sink.add(decisions)


def run(
    dataset: DatasetLike,
    rules: Sequence[Rule],
    as_of: datetime,
    sinks: Sequence[Sink],
    *,
    recorded: bool = True,
    since: datetime | None = None,
    until: datetime | None = None,
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None,
    slice_runs: int = SLICE_RUNS,
    progress: Callable[[int, int], None] | None = None,
    where: Sequence[str] = (),
    known: KnownNames | None = None,
) -> None:
    """Evaluate ``dataset`` a slice at a time and hand every rule's decisions to ``sinks``.

    ``carry`` builds the carried expressions from the ``runs`` schema (for
    group columns). Only the columns the sinks read are computed. ``where``
    keeps the runs meeting every filter (``label.KEY=VALUE``,
    ``COLUMN=VALUE``), as the window does; ``known`` is handed the signals
    of the runs kept (the names rules mention that no run carries).

    Two slices are in flight at most: while one thread collects a slice's
    rules and hands them to the sinks (always from that one thread, slice
    after slice, rule after rule), this one computes the next slice's shared
    features. Both release the GIL in polars, so the two cores stay busy
    (otherwise one core idles through the shared work: benchmarks/RESULTS.md,
    "Two slices in flight, ...", 2026-12-04).
    """
    wanted = list(dict.fromkeys(c for s in sinks for c in s.columns))
    coded = bool(sinks) and all(getattr(s, "coded", False) for s in sinks)
    closes = WINDOW_CLOSES in wanted  # a sink asks when open windows close
    parts = window_slices(dataset, slice_runs, since, until, known)
    # Leaving the pool waits for a hand-over still running, also when the
    # loop raises (that error wins; the hand-over's, if any, stays unread).
    with ThreadPoolExecutor(1, thread_name_prefix="ocp-rules") as pool:
        handing: Future[None] | None = None
        for i, (tables, exprs) in enumerate(selected(parts, since, until, where, carry, known), 1):
            carried = [e.meta.output_name() for e in exprs]
            cols = [c for c in wanted if c in OUTPUT_SCHEMA] + [WINDOW_CLOSES] * closes + carried
            decided = decide(
                tables,
                rules,
                as_of,
                recorded=recorded,
                carry=exprs,
                reasons="reasons" in cols,
                coded=coded,
                closes=closes,
            )
            if handing is not None:
                handing.result()  # the previous slice is in the sinks (or raises)
                if progress is not None:
                    progress(i - 1, len(parts))
            handing = pool.submit(_hand_over, decided, cols, sinks)
        if handing is not None:
            handing.result()
            if progress is not None:
                progress(len(parts), len(parts))
