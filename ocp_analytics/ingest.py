"""Ingest OCP run documents into a dataset: find, decode, flatten, write.

Bad input never aborts a batch and never vanishes: it lands in
``quarantine`` (not a readable run) or ``findings`` (a defect inside a run),
and the summary reconciles: documents read = runs written (new, replaced,
unchanged) + quarantined.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from ocp_analytics import dataset as D
from ocp_analytics import schemas as S
from ocp_analytics.decode import decode_texts
from ocp_analytics.exceptions import StrictIngestError, hint
from ocp_analytics.sources import ReadProblem, Source, find_sources, read_chunks
from ocp_analytics.tables import ChunkMeta, ChunkTables, build_tables, quarantine_frame, to_arrow

CHUNK_DOCS = 10_000
COMMIT_DOCS = 1_000_000
PART_RUNS = 20_000  # runs per Parquet part (more would hold more frames in memory)
# Threads building chunks. Measured at 200k documents: 1 worker and 20k-document
# chunks 14.3k docs/s, 703 MB; 2 workers and 10k chunks 17.6k docs/s, 694 MB.
WORKERS = min(2, os.cpu_count() or 1)


class Progress(Protocol):
    """Receives progress of a long ingest; the default does nothing."""

    def start(self, total_bytes: int) -> None: ...
    def advance(self, documents: int, nbytes: int) -> None: ...
    def stop(self) -> None: ...


class _Silent:
    def start(self, total_bytes: int) -> None:
        pass

    def advance(self, documents: int, nbytes: int) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass
class SourceSummary:
    """What one source contributed to an ingest."""

    path: str
    size: int
    sha256: str
    resolved: str = ""  # absolute resolved path: with sha256, the re-ingest key
    documents: int = 0
    runs_new: int = 0
    runs_replaced: int = 0
    runs_unchanged: int = 0
    quarantined: int = 0
    findings: int = 0
    skipped: bool = False  # already ingested with the same content

    def record(self) -> dict[str, Any]:
        """The manifest entry of this source."""
        keys = (
            "path",
            "resolved",
            "size",
            "sha256",
            "documents",
            "runs_new",
            "runs_replaced",
            "runs_unchanged",
            "quarantined",
            "findings",
        )
        return {k: getattr(self, k) for k in keys}


@dataclass
class IngestSummary:
    """The reconciled outcome of one ingest.

    ``documents_read == runs_new + runs_replaced + runs_unchanged + quarantined``
    always holds (:attr:`reconciles`).
    """

    dataset: Path
    sources: list[SourceSummary] = field(default_factory=list)
    findings_by_code: Counter[str] = field(default_factory=Counter)
    quarantine_by_code: Counter[str] = field(default_factory=Counter)
    batches: list[str] = field(default_factory=list)
    orphans_removed: int = 0
    seconds: float = 0.0

    def _sum(self, key: str) -> int:
        return sum(getattr(s, key) for s in self.sources)

    documents_read = property(lambda self: self._sum("documents"))
    runs_new = property(lambda self: self._sum("runs_new"))
    runs_replaced = property(lambda self: self._sum("runs_replaced"))
    runs_unchanged = property(lambda self: self._sum("runs_unchanged"))
    quarantined = property(lambda self: self._sum("quarantined"))

    @property
    def runs_written(self) -> int:
        """New + replaced + unchanged runs."""
        return self.runs_new + self.runs_replaced + self.runs_unchanged

    @property
    def reconciles(self) -> bool:
        """Whether documents read = runs written + quarantined."""
        return self.documents_read == self.runs_written + self.quarantined

    def __str__(self) -> str:
        if not self.sources:
            return (
                f"dataset: {self.dataset}\n"
                "sources: 0 (no document file found; nothing to do)\n"
                f"time: {self.seconds:.2f} s"
            )
        skipped = sum(s.skipped for s in self.sources)
        rate = self.documents_read / self.seconds if self.seconds else 0.0
        lines = [
            f"dataset: {self.dataset}",
            f"sources: {len(self.sources)} ({skipped} already ingested, skipped)",
            f"documents read: {self.documents_read:,} = runs written {self.runs_written:,} "
            f"(new {self.runs_new:,}, replaced {self.runs_replaced:,}, unchanged "
            f"{self.runs_unchanged:,}) + quarantined {self.quarantined:,}"
            + ("" if self.reconciles else "  ** DOES NOT RECONCILE **"),
            f"time: {self.seconds:.2f} s ({rate:,.0f} documents/s)",
        ]
        if self.quarantine_by_code:
            lines.append("quarantined by code: " + _counts(self.quarantine_by_code))
        if self.findings_by_code:
            lines.append("findings by code: " + _counts(self.findings_by_code))
        if self.orphans_removed:
            lines.append(f"removed {self.orphans_removed} part(s) left by an interrupted ingest")
        return "\n".join(lines)


def _counts(c: Counter[str]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()))


class _Batch:
    """Parts written for one batch, committed together."""

    def __init__(self, root: Path, seq: int) -> None:
        self.root, self.seq = root, seq
        self.batch_id = f"{seq:08d}-{uuid.uuid4().hex[:8]}"
        self.files: dict[str, list[str]] = {t: [] for t in S.TABLES}
        self.sources: list[SourceSummary] = []
        self.next_doc = 0
        self.parts = 0
        self.superseding = 0
        self.pending: dict[str, list[pl.DataFrame]] = {t: [] for t in S.TABLES}
        self.pending_rows = 0

    def doc_id_base(self, n: int) -> int:
        base = (self.seq << 32) + self.next_doc
        self.next_doc += n
        return base

    def write(self, frames: dict[str, pl.DataFrame], flush_rows: int) -> None:
        """Buffer a chunk's frames; write a part once ``flush_rows`` runs are held."""
        for table, frame in frames.items():
            if frame.height:
                self.pending[table].append(frame)
        self.pending_rows += frames["runs"].height if "runs" in frames else 0
        if self.pending_rows >= flush_rows:
            self.flush()

    def flush(self) -> None:
        for table, frames in self.pending.items():
            if not frames:
                continue
            rel = f"{table}/{self.batch_id}-{self.parts:05d}.parquet"
            D.write_parquet_atomic(to_arrow(pl.concat(frames), table), self.root / rel)
            self.files[table].append(rel)
        self.pending = {t: [] for t in S.TABLES}
        self.pending_rows = 0
        self.parts += 1

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.sources)

    def commit(self) -> None:
        self.flush()
        D.commit(
            self.root,
            {
                "batch_id": self.batch_id,
                "seq": self.seq,
                "committed_at": datetime.now(UTC).isoformat(),
                "files": self.files,
                "sources": [s.record() for s in self.sources],
                "superseding": self.superseding,
            },
        )


class _Known:
    """The content hash of every current run, keyed by a 64-bit hash of its id.

    Held as sorted segments of at most :attr:`SEGMENT_ROWS` keys (newest
    last) plus the chunks since the last segment. A chunk is classified with
    one binary search per segment (``O(k log n)``), and sealing a segment
    sorts only its own keys, so memory stays near 16 bytes a document read
    with no large transient however big the dataset grows. Two run ids
    sharing a 64-bit hash could only make a new run count as replaced (its
    document hash differs), never drop it.
    """

    SEGMENT_ROWS = 1_000_000

    def __init__(self, frame: pl.DataFrame) -> None:
        self.segments: list[tuple[pl.Series, pl.Series]] = []  # sorted keys, their hashes
        self.delta: list[pl.DataFrame] = []
        self.delta_rows = 0
        self.add(frame)
        self.seal()

    def add(self, frame: pl.DataFrame) -> None:
        """Record (k, h) rows, later rows winning."""
        self.delta.append(frame.select("k", "h"))
        self.delta_rows += frame.height
        if self.delta_rows >= self.SEGMENT_ROWS:
            self.seal()

    def _recent(self) -> pl.DataFrame:
        return pl.concat(self.delta).unique("k", keep="last", maintain_order=True)

    def seal(self) -> None:
        """Turn the chunks since the last segment into a sorted segment."""
        if self.delta_rows:
            seg = self._recent().sort("k")
            self.segments.append((seg.get_column("k"), seg.get_column("h")))
        self.delta, self.delta_rows = [], 0

    def lookup(self, keys: pl.Series) -> pl.Series:
        """The latest content hash of each key, null when the run is new."""
        found = pl.Series("kh", [None] * keys.len(), pl.UInt64)
        if self.delta_rows:
            recent = self._recent().rename({"h": "kh"})
            found = pl.DataFrame({"k": keys}).join(
                recent, on="k", how="left", maintain_order="left"
            )["kh"]
        for seg_keys, seg_hashes in reversed(self.segments):  # newest first
            at = seg_keys.search_sorted(keys, side="left").clip(0, seg_keys.len() - 1)
            hit = seg_keys.gather(at) == keys
            found = pl.select(
                pl.coalesce(found, pl.when(hit).then(seg_hashes.gather(at)))
            ).to_series()
        return found.alias("kh")


def _resolved(record: dict[str, Any]) -> str:
    """The resolved path of a manifest source (records before it was kept: resolved now)."""
    if "resolved" in record:
        return str(record["resolved"])
    path = str(record["path"])
    return path if path == "-" else str(Path(path).resolve())


def _load_known(root: Path, records: list[dict[str, Any]]) -> _Known:
    """(run id hash, content hash) of every current run already committed."""
    if not D.table_files(root, records, "runs"):
        return _Known(pl.DataFrame(schema={"k": pl.UInt64, "h": pl.UInt64}))
    runs = D.scan_dataset(root).runs
    return _Known(
        runs.select(pl.col("run_id").hash().alias("k"), pl.col("doc_sha256").hash().alias("h"))
        .sort("k")
        .collect()
    )


def _classify(runs: pl.DataFrame, known: _Known) -> pl.DataFrame:
    """Label each run of a chunk new / replaced / unchanged against what came before."""
    r = runs.select(
        "run_id",
        "doc_id",
        pl.col("run_id").hash().alias("k"),
        pl.col("doc_sha256").hash().alias("h"),
    )
    r = r.with_columns(known.lookup(r.get_column("k"))).sort("doc_id")
    prev = pl.col("h").shift(1).over("run_id")
    ref = pl.when(prev.is_not_null()).then(prev).otherwise(pl.col("kh"))
    status = (
        pl.when(ref.is_null())
        .then(pl.lit("new"))
        .when(ref == pl.col("h"))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("replaced"))
    )
    return r.with_columns(status.alias("status"))


def _quarantine_problems(
    problems: list[ReadProblem], source: Source, batch_id: str
) -> pl.DataFrame:
    meta = ChunkMeta(
        source.path,
        [p.head for p in problems],
        [p.line for p in problems],
        [None] * len(problems),
    )
    rows: list[tuple[int, str, str, str | None]] = [
        (i, p.code, p.message, None) for i, p in enumerate(problems)
    ]
    return quarantine_frame(rows, meta, batch_id)


_Task = tuple[ChunkMeta, frozenset[int], int, str]  # texts, cut positions, doc_id base, batch


def _build(task: _Task) -> ChunkTables:
    meta, cut, base, batch_id = task
    return build_tables(decode_texts(meta.texts, cut, raw=meta.raw), meta, base, batch_id)


class _Ingest:
    """One ingest: chunks are built (here or by worker threads) and written in read order.

    Work that must happen in order (writing a chunk, a source's read problems,
    committing a batch) is queued as steps; a chunk's step waits for its
    tables. Counts that decide batches are taken when a chunk is read, so
    batches and ``doc_id`` are the same whether or not workers build chunks.
    At most ``workers + 1`` chunks are read and not yet written, so memory
    stays flat.
    """

    def __init__(
        self, root: Path, chunk_docs: int, commit_docs: int, workers: int, progress: Progress
    ) -> None:
        self.root, self.chunk_docs, self.commit_docs = root, chunk_docs, commit_docs
        self.n_workers, self.progress = workers, progress
        records = D.read_commits(root)
        self.summary = IngestSummary(root)
        self.summary.orphans_removed = D.remove_orphans(root, records)
        self.done = {(_resolved(s), s["sha256"]) for r in records for s in r["sources"]}
        self.known = _load_known(root, records)
        self.next_seq = max((r["seq"] for r in records), default=0) + 1
        self.batch = _Batch(root, self.next_seq)
        self.steps: deque[tuple[Callable[[], None], bool]] = deque()  # (step, builds a chunk)
        self.in_flight = 0
        self.chunks = 0
        self.pool: ThreadPoolExecutor | None = None

    def run(self, sources: list[Source]) -> IngestSummary:
        self.progress.start(sum(s.size for s in sources))
        try:
            for source in sources:
                summary = SourceSummary(
                    source.path, source.size, source.sha256, resolved=source.resolved
                )
                self.summary.sources.append(summary)
                if (source.resolved, source.sha256) in self.done:
                    summary.skipped = True
                    self.progress.advance(0, source.size)
                    continue
                self.ingest_source(source, summary)
                self.done.add((source.resolved, source.sha256))
                if self.batch.documents >= self.commit_docs:
                    self.commit()
            self.commit()
            self.run_steps(0)
        finally:
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)
        self.progress.stop()
        return self.summary

    def run_steps(self, max_in_flight: int) -> None:
        """Run queued steps, oldest first, until at most ``max_in_flight`` chunks are."""
        while self.steps and (self.in_flight > max_in_flight or not self.steps[0][1]):
            step, builds = self.steps.popleft()
            self.in_flight -= builds
            step()

    def queue(self, step: Callable[[], None], builds: bool) -> None:
        """Queue a step; run what is due (everything when there are no workers)."""
        self.steps.append((step, builds))
        self.in_flight += builds
        self.run_steps(self.n_workers if self.pool else 0)

    def build(self, task: _Task) -> Callable[[], ChunkTables]:
        """Start building a chunk; the returned callable gives its tables.

        The first chunk is built here; workers start with the second one.
        """
        self.chunks += 1
        if self.pool is None and self.n_workers > 0 and self.chunks > 1:
            self.pool = ThreadPoolExecutor(self.n_workers, thread_name_prefix="ocp-ingest")
        if self.pool is None:
            tables = _build(task)
            return lambda: tables
        return self.pool.submit(_build, task).result

    def ingest_source(self, source: Source, summary: SourceSummary) -> None:
        problems: list[ReadProblem] = []
        batch = self.batch
        batch.sources.append(summary)
        for meta, cut in read_chunks(source, self.chunk_docs, problems):
            n = len(meta.texts)
            summary.documents += n
            tables = self.build((meta, cut, batch.doc_id_base(n), batch.batch_id))
            self.queue(partial(self.write_chunk, tables, batch, summary, n), True)
        if problems:
            summary.documents += len(problems)
            self.queue(partial(self.write_problems, problems, source, batch, summary), False)
        self.queue(partial(self.progress.advance, 0, source.size), False)

    def write_problems(
        self, problems: list[ReadProblem], source: Source, batch: _Batch, summary: SourceSummary
    ) -> None:
        q = _quarantine_problems(problems, source, batch.batch_id)
        batch.write({"quarantine": q}, PART_RUNS)
        summary.quarantined += q.height
        self.summary.quarantine_by_code.update(q.get_column("code").to_list())

    def write_chunk(
        self,
        built: Callable[[], ChunkTables],
        batch: _Batch,
        summary: SourceSummary,
        n_texts: int,
    ) -> None:
        tables = built()
        status = _classify(tables["runs"], self.known)
        unchanged = status.filter(pl.col("status") == "unchanged").select("doc_id")
        frames = dict(tables.frames)
        if unchanged.height:
            for t in S.RUN_TABLES:
                frames[t] = frames[t].join(unchanged, on="doc_id", how="anti")
        counts = Counter(status.get_column("status").to_list())
        summary.runs_new += counts["new"]
        summary.runs_replaced += counts["replaced"]
        summary.runs_unchanged += counts["unchanged"]
        summary.quarantined += frames["quarantine"].height
        summary.findings += frames["findings"].height
        batch.superseding += counts["replaced"]
        self.summary.findings_by_code.update(frames["findings"].get_column("code").to_list())
        self.summary.quarantine_by_code.update(frames["quarantine"].get_column("code").to_list())
        batch.write(frames, PART_RUNS)
        self.known.add(status.select("k", "h"))
        self.progress.advance(n_texts, 0)

    def commit(self) -> None:
        if not self.batch.sources:
            return
        self.queue(self.batch.commit, False)
        self.summary.batches.append(self.batch.batch_id)
        self.next_seq += 1
        self.batch = _Batch(self.root, self.next_seq)


def ingest(
    sources: str | Path | Sequence[str | Path],
    dataset: str | Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    chunk_docs: int = CHUNK_DOCS,
    commit_docs: int = COMMIT_DOCS,
    workers: int = WORKERS,
) -> IngestSummary:
    """Ingest OCP run documents into a Parquet dataset (created if needed).

    Parameters
    ----------
    sources
        Files, folders (searched recursively), glob patterns, or ``"-"`` for
        standard input. ``.json`` (one document or an array), ``.ndjson`` /
        ``.jsonl`` (one per line), each optionally ``.gz`` or ``.zst``.
    dataset
        The dataset folder.
    strict
        Raise :class:`~ocp_analytics.exceptions.StrictIngestError` (after
        committing) when any document was quarantined.
    progress
        Receives progress; silent by default.
    chunk_docs, commit_docs
        Documents decoded at a time, and documents after which a batch is
        committed (at the next source boundary).
    workers
        Threads that decode and flatten chunks while the calling thread reads,
        classifies and writes them (polars, DuckDB and hashing release the
        GIL). ``0``: all in the calling thread. Started only once a second
        chunk is read; the dataset is the same for any number. Each worker
        holds one more chunk in memory. By default one per core, at most 2.

    Returns
    -------
    IngestSummary
        Reconciled counts per source, findings and quarantine by code.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> s = oa.ingest("tests/data/examples/v0.3", tempfile.mkdtemp() + "/ds")
    >>> s.documents_read, s.runs_new, s.quarantined, s.reconciles
    (7, 7, 0, True)
    """
    start = time.perf_counter()
    specs = [sources] if isinstance(sources, str | Path) else list(sources)
    found = find_sources(specs)
    root = D.create(dataset)
    with D.locked(root):
        job = _Ingest(root, chunk_docs, commit_docs, workers, progress or _Silent())
        summary = job.run(found)
    summary.seconds = time.perf_counter() - start
    if strict and summary.quarantined:
        raise StrictIngestError(
            hint(
                f"{summary.quarantined} document(s) were quarantined "
                f"({_counts(summary.quarantine_by_code)}).",
                "inspect them with scan_dataset(path).quarantine; the rest was ingested.",
            )
        )
    return summary


def read_documents(
    documents: list[str] | list[dict[str, Any]], *, source: str = "<memory>"
) -> dict[str, pl.LazyFrame]:
    """Flatten documents held in memory into the dataset's tables (no disk).

    The same decoding, quarantine and findings as :func:`ingest`; useful for
    tests and notebooks. Every document is kept as given (no replacement).

    Examples
    --------
    >>> import ocp_analytics as oa
    >>> t = read_documents(['{"ocp": "0.3", "run": {"id": "r1"}}', "not json"])
    >>> t["runs"].select("run_id").collect().rows(), t["quarantine"].select("code").collect().rows()
    ([('r1',)], [('not_json',)])
    """
    import orjson

    texts = [d if isinstance(d, str) else orjson.dumps(d).decode() for d in documents]
    meta = ChunkMeta(source, texts, list(range(1, len(texts) + 1)), [None] * len(texts))
    tables = build_tables(decode_texts(texts), meta, 0, "memory")
    return {name: frame.lazy() for name, frame in tables.frames.items()}
