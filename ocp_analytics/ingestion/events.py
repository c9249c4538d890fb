"""Late events that arrive apart from their run (docs/late-events.md): ingest and list.

An event record is an OCP signal of kind ``event`` plus the commit it
concerns (the format is in ``docs/late-events.md``)::

    {"id": "ev-1", "commit": "9f2c1e7", "kind": "event", "name": "revert",
     "value": "reverted in #812", "observed_at": "2026-12-02T09:00:00Z",
     "source": {"kind": "ci", "ref": "ci/run/5120"}, "tier": "verified"}

:func:`ingest_events` stores records in the dataset's ``events`` table. They
are matched to runs when the dataset is read, never when it is written
(:func:`ocp_analytics.engine.features.matched_events`): through each current run's
artifacts of kind ``commit`` or ``merge`` (the artifact's ``path``, else its
id). So an event may arrive before its run, and one commit shared by several
runs matches each.

Which record of an event id is stored
-------------------------------------
The first one stored wins, and a stored event never changes: a record whose
id is already stored (by an earlier call, or earlier in this one, in the
order the sources are given and read) is ``unchanged`` when its content is
the same, and is quarantined as ``conflicting_event`` (naming where the
stored one came from) when it differs. Acceptance judged yesterday is thus
never rewritten by a re-sent record; a correction needs a new event id.

Like :func:`~ocp_analytics.ingestion.batch.ingest`, a call is one batch, written atomically
(parts under temporary names, visible only when the batch's commit record
is), a source already ingested with the same content is skipped, and every
record read is either stored, ``unchanged``, or one quarantine row.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson
import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.chunks import Chunk, Chunker
from ocp_analytics.ingestion.quarantine import QuarantineRow, quarantine_frame, quarantine_problems
from ocp_analytics.ingestion.read import ReadProblem
from ocp_analytics.ingestion.sanitize import parse_json
from ocp_analytics.ingestion.sources import Source, find_sources
from ocp_analytics.ingestion.spans import ChunkMeta
from ocp_analytics.ingestion.summary import SourceCounts, Summary
from ocp_analytics.ingestion.timestamps import parse_timestamp
from ocp_analytics.model.links import COMMIT_KINDS
from ocp_analytics.store import dataset as D
from ocp_analytics.store.commits import table_files
from ocp_analytics.store.scan import Dataset, scan_dataset
from ocp_analytics.store.storage import Store

__all__ = ["EventsSummary", "ingest_events", "run_commits", "unmatched_events"]

CHUNK_RECORDS = 50_000
PART_ROWS = 200_000
# The content of an event: two records of one id are the same when these are.
CONTENT = (
    "commit",
    "kind",
    "name",
    "value_text",
    "observed_at_raw",
    "source_kind",
    "source_ref",
    "tier",
)
_EVENT_SCHEMA = S.polars_schema("events")
_ROW_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    **{c: _EVENT_SCHEMA[c] for c in ("event_id", *CONTENT, "source_line", "source_index")},
    "_pos": pl.Int64,
}
_SEEN = {"event_id": pl.String, "fp": pl.UInt64, "at_path": pl.String, "at_line": pl.Int64}


@dataclass
class EventSourceSummary(SourceCounts):
    """What one source of event records contributed."""

    COUNTS: ClassVar[tuple[str, ...]] = (
        "records",
        "events_new",
        "events_unchanged",
        "quarantined",
        "no_time",
    )

    records: int = 0
    events_new: int = 0
    events_unchanged: int = 0  # same id and content already stored (or earlier here)
    no_time: int = 0  # stored with no readable observed_at


@dataclass
class EventsSummary(Summary[EventSourceSummary]):
    """The reconciled outcome of one :func:`ingest_events` call.

    ``records_read == events_new + events_unchanged + quarantined`` always
    holds (:attr:`reconciles`).
    """

    READ: ClassVar[str] = "records"
    KEPT: ClassVar[tuple[str, ...]] = ("events_new", "events_unchanged")
    UNIT: ClassVar[str] = "event record(s)"

    batch_id: str | None = None

    records_read = property(lambda self: self._sum("records"))
    events_new = property(lambda self: self._sum("events_new"))
    events_unchanged = property(lambda self: self._sum("events_unchanged"))
    no_time = property(lambda self: self._sum("no_time"))

    def _reconciliation(self) -> str:
        return (
            f"event records read: {self.records_read:,} = events new {self.events_new:,} "
            f"+ unchanged {self.events_unchanged:,} + quarantined {self.quarantined:,}"
        )

    def _notes(self) -> list[str]:
        no_time = [
            f"events with no readable observed_at: {self.no_time:,} "
            "(stored with no time: an excluded one counts whatever the window)"
        ]
        return (no_time if self.no_time else []) + super()._notes()


# --- one record -----------------------------------------------------------------

_Problem = tuple[str, str, str | None]  # code, message, JSON path


def _text(value: Any) -> str | None:
    """A string as is; any other JSON value (but null) as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def _parse(text: str, cut: bool) -> tuple[Any, _Problem | None]:
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError as exc:
        try:  # what orjson refuses and JSON allows (integers beyond 64 bits, …)
            return parse_json(text), None
        except (ValueError, RecursionError):
            pass
        if cut:
            return None, ("truncated", "the last line ends before its JSON value does", None)
        return None, ("not_json", f"not valid JSON: {exc}", None)


def _record_row(obj: Any) -> tuple[dict[str, Any] | None, _Problem | None]:
    """The ``events`` row of one parsed record, or why it is quarantined."""
    if not isinstance(obj, dict):
        what = "an array" if isinstance(obj, list) else f"a {type(obj).__name__}"
        return None, ("not_object", f"an event record is a JSON object, not {what}", "$")
    ident, commit, kind = obj.get("id"), obj.get("commit"), obj.get("kind")
    if not isinstance(ident, str) or not ident:
        return None, ("missing_event_id", "the record has no id (a non-empty string)", "$.id")
    if not isinstance(commit, str) or not commit:
        found = "no commit" if commit is None else f"commit {_text(commit)}"
        return None, (
            "missing_commit",
            f"the record has {found}; the commit it concerns is a non-empty string",
            "$.commit",
        )
    if kind != "event":
        return None, ("not_event", f"kind is {_text(kind)}, not 'event'", "$.kind")
    source = obj.get("source")
    source = source if isinstance(source, dict) else {}
    name, tier = obj.get("name"), obj.get("tier")
    return {
        "event_id": ident,
        "commit": commit,
        "kind": kind,
        "name": name if isinstance(name, str) else None,
        "value_text": _text(obj.get("value")),
        "observed_at_raw": _text(obj.get("observed_at")),
        "source_kind": _text(source.get("kind")),
        "source_ref": _text(source.get("ref")),
        "tier": tier if isinstance(tier, str) else None,
    }, None


def _chunk_rows(
    meta: ChunkMeta, cut: frozenset[int]
) -> tuple[list[dict[str, Any]], list[QuarantineRow]]:
    """Rows and quarantine entries (position, code, message, JSON path) of a chunk."""
    rows: list[dict[str, Any]] = []
    bad: list[QuarantineRow] = []
    for pos, text in enumerate(meta.texts):
        if pos in meta.raw:
            bad.append((pos, "invalid_utf8", "the record holds bytes that are not UTF-8", None))
            continue
        obj, problem = _parse(text, pos in cut)
        row = None
        if problem is None:
            row, problem = _record_row(obj)
        if problem is not None:
            bad.append((pos, *problem))
            continue
        assert row is not None
        row.update(source_line=meta.lines[pos], source_index=meta.indexes[pos], _pos=pos)
        rows.append(row)
    return rows, bad


def _fingerprint() -> pl.Expr:
    return pl.struct([pl.col(c) for c in CONTENT]).hash().alias("fp")


# --- one call -------------------------------------------------------------------


class _EventBatch(D.BatchWriter):
    """The dataset's batch writer for one ingest-events call, and the event ids it knows."""

    def __init__(self, root: Store, seq: int, seen: pl.DataFrame) -> None:
        super().__init__(root, seq)
        self.seen = seen

    def add(self, table: str, frame: pl.DataFrame) -> None:
        """Hold a frame of ``events`` or ``quarantine``; a part every ``PART_ROWS`` rows."""
        self.write({table: frame}, PART_ROWS, rows=frame.height)

    def commit_events(self, sources: list[EventSourceSummary]) -> None:
        """Commit: no run sources (the manifest), the event sources beside them."""
        self.commit({"event_sources": [s.record() for s in sources]})


def _stored(root: Store, records: list[dict[str, Any]]) -> pl.DataFrame:
    """Id, content fingerprint and origin of every stored event."""
    files = table_files(root, records, "events")
    if not files:
        return pl.DataFrame(schema=_SEEN)
    events = scan_dataset(root).events
    return (
        events.select(
            "event_id",
            _fingerprint(),
            pl.col("source_path").alias("at_path"),
            pl.col("source_line").alias("at_line"),
        )
        .collect()
        .unique("event_id", keep="first", maintain_order=True)
    )


def _classify(frame: pl.DataFrame, batch: _EventBatch) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split a chunk's rows into new events and conflicts (unchanged ones are dropped).

    Returns the new rows, and the conflicting rows with where the stored
    record came from (``at_path``, ``at_line``).
    """
    first = pl.col("event_id").is_first_distinct()
    joined = (
        frame.with_columns(_fingerprint())
        .join(
            batch.seen.rename({"fp": "known_fp"}), on="event_id", how="left", maintain_order="left"
        )
        .with_columns((pl.col("known_fp").is_null() & first).alias("_new"))
        .with_columns(  # an id first read in this chunk: its first record is the known one
            pl.coalesce("known_fp", pl.col("fp").first().over("event_id")).alias("known_fp"),
            pl.coalesce("at_path", pl.col("source_path").first().over("event_id")).alias("at_path"),
            pl.coalesce("at_line", pl.col("source_line").first().over("event_id")).alias("at_line"),
        )
    )
    new = joined.filter("_new")
    conflicts = joined.filter(~pl.col("_new") & (pl.col("fp") != pl.col("known_fp")))
    seen = new.select("event_id", "fp", pl.col("source_path").alias("at_path"), "source_line")
    batch.seen = pl.concat([batch.seen, seen.rename({"source_line": "at_line"})])
    return new.select(_EVENT_SCHEMA.names()), conflicts


def _conflict_entries(conflicts: pl.DataFrame) -> list[QuarantineRow]:
    out: list[QuarantineRow] = []
    for r in conflicts.iter_rows(named=True):
        where = f"{r['at_path']}:{r['at_line']}" if r["at_line"] is not None else r["at_path"]
        out.append(
            (
                r["_pos"],
                "conflicting_event",
                f"event id {r['event_id']!r} is already stored with other content (from "
                f"{where}); the first stored record wins: give a correction a new id",
                "$.id",
            )
        )
    return out


def _ingest_chunk(
    chunk: Chunk, batch: _EventBatch, parts: dict[str, EventSourceSummary]
) -> Counter[str]:
    """Classify and hold one chunk's records (of one source or several); count them per source.

    Consecutive sources share chunks (:class:`~ocp_analytics.ingestion.chunks.Chunker`):
    a feed of one event per file pays a chunk's fixed cost once per chunk,
    not once per file. Each row keeps its own source's path, and the
    counts of :class:`EventSourceSummary` are added to its source's.
    """
    meta, cut = chunk
    codes: Counter[str] = Counter()
    rows, bad = _chunk_rows(meta, cut)
    if rows:
        frame = (
            pl.DataFrame(rows, schema=_ROW_SCHEMA)
            .with_columns(
                parse_timestamp(pl.col("observed_at_raw")).alias("observed_at"),
                pl.lit(batch.batch_id).alias("batch_id"),
                meta.source_paths([r["_pos"] for r in rows]),
            )
            .select(*_EVENT_SCHEMA.names(), "_pos")
            .cast(dict(_EVENT_SCHEMA))  # type: ignore[arg-type]
        )
        new, conflicts = _classify(frame, batch)
        bad += _conflict_entries(conflicts)
        batch.add("events", new)
        read, held, clash = (f.group_by("source_path").len() for f in (frame, new, conflicts))
        for path, n in read.iter_rows():
            parts[path].events_unchanged += n
        for path, n in held.iter_rows():
            parts[path].events_new += n
            parts[path].events_unchanged -= n
        for path, n in clash.iter_rows():  # quarantined below, with the chunk's other rows
            parts[path].events_unchanged -= n
        untimed = new.filter(pl.col("observed_at").is_null()).group_by("source_path").len()
        for path, n in untimed.iter_rows():
            parts[path].no_time += n
    if bad:
        q = quarantine_frame(sorted(bad), meta, batch.batch_id)
        batch.add("quarantine", q)
        for path, n in q.group_by("source_path").len().iter_rows():
            parts[path].quarantined += n
        codes.update(q["code"].to_list())
    return codes


def _read_problems(
    source: Source, problems: list[ReadProblem], part: EventSourceSummary, batch: _EventBatch
) -> Counter[str]:
    """Quarantine what of ``source`` is no record text (a cut stream, an empty file...)."""
    if not problems:
        return Counter()
    q = quarantine_problems(problems, source, batch.batch_id)
    batch.add("quarantine", q)
    part.records += q.height
    part.quarantined += q.height
    return Counter(q["code"].to_list())


def ingest_events(
    sources: str | Path | Sequence[str | Path],
    dataset: str | Path,
    *,
    strict: bool = False,
) -> EventsSummary:
    """Ingest late event records into the dataset's ``events`` table (created if needed).

    Parameters
    ----------
    sources
        Files, folders, glob patterns or ``"-"`` (standard input), read as
        :func:`~ocp_analytics.ingestion.batch.ingest` reads them: ``.ndjson``/``.jsonl`` a
        record a line, ``.json`` a record or an array, optionally ``.gz`` or
        ``.zst``. A source already ingested with the same content is skipped.
    dataset
        The dataset folder.
    strict
        Raise :class:`~ocp_analytics.exceptions.StrictIngestError` (after
        committing) when any record was quarantined.

    Returns
    -------
    EventsSummary
        Counts per source; ``records_read = events_new + events_unchanged +
        quarantined``. An event id already stored keeps its first record (see
        this module's docstring).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> s = oa.ingest_events("tests/data/events/example-events.ndjson", ds)
    >>> s.records_read, s.events_new, s.quarantined
    (3, 3, 0)
    >>> oa.ingest_events("tests/data/events/example-events.ndjson", ds).events_new
    0
    """
    start = time.perf_counter()
    found = find_sources(sources)
    root = D.create(dataset)
    summary = EventsSummary(root)
    with D.locked(root):
        records = D.read_commits(root)
        summary.orphans_removed = D.remove_orphans(root, records)
        done = {(s["resolved"], s["sha256"]) for r in records for s in r.get("event_sources", [])}
        seq = max((r["seq"] for r in records), default=0) + 1
        batch = _EventBatch(root, seq, _stored(root, records))
        chunker, parts = Chunker(CHUNK_RECORDS), dict[str, EventSourceSummary]()
        codes = summary.quarantine_by_code
        try:
            for source in found:
                part = EventSourceSummary(source.path, source.size, source.sha256, source.resolved)
                summary.sources.append(part)
                if (source.resolved, source.sha256) in done:
                    part.skipped = True
                    continue
                if chunker.holds(source.path):  # an earlier source shown by the same path
                    codes.update(_ingest_chunk(chunker.take(), batch, parts))
                parts[source.path] = part
                problems: list[ReadProblem] = []
                for chunk in chunker.read(source, problems):
                    codes.update(_ingest_chunk(chunk, batch, parts))
                part.records += chunker.added
                codes.update(_read_problems(source, problems, part, batch))
                done.add((source.resolved, source.sha256))
            if len(chunker):
                codes.update(_ingest_chunk(chunker.take(), batch, parts))
            ingested = [s for s in summary.sources if not s.skipped]
            if ingested:
                batch.commit_events(ingested)
                summary.batch_id = batch.batch_id
        finally:
            batch.close()
    summary.seconds = time.perf_counter() - start
    if strict:
        summary.raise_if_quarantined()
    return summary


# --- matching -------------------------------------------------------------------


def run_commits(artifacts: pl.LazyFrame) -> pl.LazyFrame:
    """``doc_id, run_id, commit`` of every run's ``commit`` / ``merge`` artifacts.

    docs/late-events.md, "How an event finds its runs".

    The commit is the artifact's ``path``, else its id; the same rule as
    :func:`ocp_analytics.engine.features.matched_events`.
    """
    return _artifact_commits(artifacts).unique()


def _artifact_commits(artifacts: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`run_commits` before duplicates are dropped (a filter, so it streams)."""
    return (
        artifacts.filter(pl.col("kind").is_in(COMMIT_KINDS))
        .select("doc_id", "run_id", pl.coalesce("path", "artifact_id").alias("commit"))
        .filter(pl.col("commit").is_not_null())
    )


EventsInput = str | Path | Store | Dataset | Mapping[str, pl.DataFrame | pl.LazyFrame]


def _tables(dataset: EventsInput) -> Mapping[str, pl.LazyFrame]:
    if isinstance(dataset, Mapping):
        return {k: v.lazy() for k, v in dataset.items()}
    return dataset.frames if isinstance(dataset, Dataset) else scan_dataset(dataset).frames


def unmatched_events(dataset: EventsInput) -> pl.LazyFrame:
    """Stored events whose commit names no current run's ``commit``/``merge`` artifact.

    They count for no run (yet): a run naming the commit may still arrive,
    and is matched when it does. Sorted by ``observed_at`` (unknown first),
    then ``event_id``.

    Parameters
    ----------
    dataset
        A dataset folder, a :class:`~ocp_analytics.Dataset`, or a mapping
        of tables holding ``events`` and ``artifacts``.

    Returns
    -------
    polars.LazyFrame
        The ``events`` columns of the unmatched events.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest_events("tests/data/events/example-events.ndjson", ds)
    >>> oa.unmatched_events(ds).select("event_id").collect()["event_id"].to_list()
    ['ev-2', 'ev-1', 'ev-3']
    >>> _ = oa.ingest("tests/data/examples/late-revert.ocp.json", ds)
    >>> oa.unmatched_events(ds).select("event_id", "commit").collect().rows()
    [('ev-3', '0d1e2f3')]
    """
    tables = _tables(dataset)
    events = tables.get("events")
    if events is None:
        return pl.LazyFrame(schema=_EVENT_SCHEMA)
    # Only the run commits some event names: the anti-join then holds those
    # (at most one per event), not every run's commit (which grows with the
    # runs: benchmarks/RESULTS.md, late events at 10M runs).
    named = events.select("commit").unique()
    commits = (
        _artifact_commits(tables["artifacts"])
        .join(named, on="commit", how="semi")
        .select("commit")
        .unique()
    )
    return events.join(commits, on="commit", how="anti").sort(
        pl.col("observed_at").is_not_null(), "observed_at", "event_id"
    )
