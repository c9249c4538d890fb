"""Ingest OCP run documents into a dataset: find, decode, flatten, write.

Bad input never aborts a batch and never vanishes: it lands in
``quarantine`` (not a readable run) or ``findings`` (a defect inside a run),
and the summary reconciles: documents read = runs (new, replaced, unchanged,
outranked) + quarantined.

Which version of a run is current, when a run id is read more than once, is
the rule of ``versions.py``. Re-ingest is keyed on a source's content and
resolved path: a file already ingested with the same bytes is skipped however
its path is spelled.

The batch loop (:class:`_Ingest`) reads chunks on the calling thread, has
workers decode and flatten them, and classifies and writes them in read
order; :func:`read_documents` runs the same decode and flattening in memory.
The texts of consecutive sources of a batch share a chunk (a folder of
one-document files is built, classified and written a chunk at a time, as
one file of the same documents is); every row keeps its own source, and
each source's counts are its own.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics._typing import Progress, Silent
from ocp_analytics.ingestion.chunks import Chunk, Chunker
from ocp_analytics.ingestion.decode import decode_texts
from ocp_analytics.ingestion.quarantine import quarantine_problems
from ocp_analytics.ingestion.read import ReadProblem
from ocp_analytics.ingestion.sources import Digest, Source, find_sources
from ocp_analytics.ingestion.spans import ChunkMeta
from ocp_analytics.ingestion.summary import SourceCounts, Summary, _counts
from ocp_analytics.ingestion.tables import ChunkTables, build_tables
from ocp_analytics.ingestion.versions import Versions, classify, ranked
from ocp_analytics.store import dataset as D
from ocp_analytics.store.run_index import load_run_index
from ocp_analytics.store.storage import Store

# Documents decoded and flattened at a time. Building a chunk's tables has a
# fixed cost whatever its size (polars plans and runs some 60 steps), so larger
# chunks cost less a document but hold more in memory: this size keeps an
# ingest within its memory bound (the figures: benchmarks/RESULTS.md, "15,000-
# document chunks").
CHUNK_DOCS = 15_000
COMMIT_DOCS = 1_000_000
# A Parquet part is written once this many runs are held: a full chunk's runs
# make one part (a chunk has fewer runs than documents when some are
# quarantined or skipped), so a part's memory is let go chunk by chunk.
PART_RUNS = CHUNK_DOCS // 2
# Threads building chunks: two keep both cores busy beside the calling thread;
# a third adds memory, not speed (benchmarks/RESULTS.md).
WORKERS = min(2, os.cpu_count() or 1)


@dataclass
class SourceSummary(SourceCounts):
    """What one source contributed to an ingest."""

    COUNTS: ClassVar[tuple[str, ...]] = (
        "documents",
        "runs_new",
        "runs_replaced",
        "runs_unchanged",
        "runs_outranked",
        "quarantined",
        "findings",
    )

    documents: int = 0
    runs_new: int = 0
    runs_replaced: int = 0
    runs_unchanged: int = 0
    runs_outranked: int = 0  # lost to another version of the same batch; not written
    findings: int = 0


@dataclass
class IngestSummary(Summary[SourceSummary]):
    """The reconciled outcome of one ingest.

    ``documents_read == runs_new + runs_replaced + runs_unchanged + runs_outranked +
    quarantined``
    always holds (:attr:`reconciles`).
    """

    READ: ClassVar[str] = "documents"
    KEPT: ClassVar[tuple[str, ...]] = (
        "runs_new",
        "runs_replaced",
        "runs_unchanged",
        "runs_outranked",
    )
    UNIT: ClassVar[str] = "document(s)"

    findings_by_code: Counter[str] = field(default_factory=Counter)
    batches: list[str] = field(default_factory=list)
    # Documents read one at a time by the decode's slow path (sanitize.py):
    # what must be (not JSON, bytes that are not UTF-8, surrogate escapes,
    # escapes that spell names, values the typed path cannot decode). The
    # rest is decoded many at a time.
    slow_path: int = 0

    documents_read = property(lambda self: self._sum("documents"))
    runs_new = property(lambda self: self._sum("runs_new"))
    runs_replaced = property(lambda self: self._sum("runs_replaced"))
    runs_unchanged = property(lambda self: self._sum("runs_unchanged"))
    runs_outranked = property(lambda self: self._sum("runs_outranked"))

    @property
    def runs_written(self) -> int:
        """Readable run documents: new + replaced + unchanged + outranked."""
        return self.runs_new + self.runs_replaced + self.runs_unchanged + self.runs_outranked

    def _reconciliation(self) -> str:
        return (
            f"documents read: {self.documents_read:,} = runs written {self.runs_written:,} "
            f"(new {self.runs_new:,}, replaced {self.runs_replaced:,}, unchanged "
            f"{self.runs_unchanged:,}"
            + (f", outranked {self.runs_outranked:,}" if self.runs_outranked else "")
            + f") + quarantined {self.quarantined:,}"
        )

    def _time(self) -> str:
        rate = self.documents_read / self.seconds if self.seconds else 0.0
        return (
            f"time: {self.seconds:.2f} s ({rate:,.0f} documents/s; "
            f"slow path: {self.slow_path:,} documents)"
        )

    def _notes(self) -> list[str]:
        return super()._notes() + self._by_code("findings by code", self.findings_by_code)

    def _quarantine_note(self) -> str:
        return f" ({_counts(self.quarantine_by_code)})"

    def __str__(self) -> str:
        if not self.sources:
            return (
                f"dataset: {self.dataset}\n"
                "sources: 0 (no document file found; nothing to do)\n"
                f"time: {self.seconds:.2f} s"
            )
        return super().__str__()


class _Batch(D.BatchWriter):
    """A batch of ingest: the dataset's batch writer plus the run versions it wrote."""

    def __init__(self, root: Store, seq: int) -> None:
        super().__init__(root, seq)
        self.versions = Versions()
        # Documents read into the batch: ``documents`` kept as a running sum,
        # which a batch of many small sources would otherwise add up after each.
        self.read = 0


_Task = tuple[ChunkMeta, frozenset[int], int, str]  # texts, cut positions, doc_id base, batch
_Built = tuple[ChunkTables, pl.DataFrame]  # the tables, and their runs ranked (versions.ranked)


def _build(task: _Task) -> _Built:
    meta, cut, base, batch_id = task
    tables = build_tables(decode_texts(meta.texts, cut, raw=meta.raw), meta, base, batch_id)
    return tables, ranked(tables)


class _Ingest:
    """One ingest: chunks are built (here or by worker threads) and written in read order.

    Work that must happen in order (writing a chunk, a source's read problems,
    committing a batch) is queued as steps; a chunk's step waits for its
    tables. Counts that decide batches are taken as each source is read, so
    batches and ``doc_id`` are the same whether or not workers build chunks.
    At most ``workers + 1`` chunks are read and not yet written, so memory
    stays flat. A chunk left open by a source takes the next source's texts;
    it is closed when full, before a commit (a chunk never spans two
    batches) and at the end.
    """

    def __init__(
        self, root: Store, chunk_docs: int, commit_docs: int, workers: int, progress: Progress
    ) -> None:
        self.root, self.chunk_docs, self.commit_docs = root, chunk_docs, commit_docs
        self.n_workers, self.progress = workers, progress
        records = D.read_commits(root)
        self.summary = IngestSummary(root)
        self.summary.orphans_removed = D.remove_orphans(root, records)
        self.done: dict[str, set[str]] = {}  # resolved path -> the hashes ingested from it
        for s in (s for r in records for s in r["sources"]):
            self.done.setdefault(D.resolved_path(s), set()).add(s["sha256"])
        self.known = load_run_index(root, records)
        self.next_seq = max((r["seq"] for r in records), default=0) + 1
        self.batch = _Batch(root, self.next_seq)
        self.chunker = Chunker(chunk_docs)
        self.reading: dict[str, SourceSummary] = {}  # path -> summary, of the batch's sources
        self.steps: deque[tuple[Callable[[], None], bool]] = deque()  # (step, builds a chunk)
        self.in_flight = 0
        self.chunks = 0
        self.pool: ThreadPoolExecutor | None = None

    def run(self, sources: list[Source]) -> IngestSummary:
        self.progress.start(sum(s.size for s in sources))
        try:
            for source in sources:
                summary = SourceSummary(source.path, source.size, "", resolved=source.resolved)
                self.summary.sources.append(summary)
                # A path never ingested cannot be skipped: its hash is taken while it
                # is read. A path ingested before is hashed first: unchanged, skipped.
                digest = None if source.resolved in self.done else Digest()
                if digest is None:
                    summary.sha256 = source.sha256
                    if source.sha256 in self.done[source.resolved]:
                        summary.skipped = True
                        self.progress.advance(0, source.size)
                        continue
                self.ingest_source(source, summary, digest)
                if digest is not None:
                    summary.sha256 = digest.hexdigest(source)
                self.done.setdefault(source.resolved, set()).add(summary.sha256)
                if self.batch.read >= self.commit_docs:
                    self.commit()
            self.commit()
            self.run_steps(0)
        finally:
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)
            self.batch.close()
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

    def build(self, task: _Task, full: bool) -> Callable[[], _Built]:
        """Start building a chunk; the returned callable gives its tables.

        Workers start with the first full chunk (more are likely to follow)
        or the second chunk; a small ingest is built here, with no thread.
        """
        self.chunks += 1
        if self.pool is None and self.n_workers > 0 and (full or self.chunks > 1):
            self.pool = ThreadPoolExecutor(self.n_workers, thread_name_prefix="ocp-ingest")
        if self.pool is None:
            tables = _build(task)
            return lambda: tables
        return self.pool.submit(_build, task).result

    def ingest_source(self, source: Source, summary: SourceSummary, digest: Digest | None) -> None:
        problems: list[ReadProblem] = []
        batch = self.batch
        batch.sources.append(summary)
        if self.chunker.holds(source.path):  # a chunk names a path once (``_count``)
            self.write_later(self.chunker.take())
        self.reading[source.path] = summary
        for chunk in self.chunker.read(source, problems, digest):
            self.write_later(chunk)
        summary.documents += self.chunker.added
        if problems:
            summary.documents += len(problems)
            self.queue(partial(self.write_problems, problems, source, batch, summary), False)
        batch.read += summary.documents
        self.queue(partial(self.progress.advance, 0, source.size), False)

    def write_later(self, chunk: Chunk) -> None:
        """Start building a chunk read in this batch; queue its write."""
        meta, cut = chunk
        n, batch = len(meta.texts), self.batch
        sources = {p: self.reading[p] for p in meta.paths}
        tables = self.build((meta, cut, batch.doc_id_base(n), batch.batch_id), n >= self.chunk_docs)
        self.queue(partial(self.write_chunk, tables, batch, sources, n), True)

    def close_chunk(self) -> None:
        """Write the open chunk's texts (before a commit, and at the end)."""
        if len(self.chunker):
            self.write_later(self.chunker.take())
        self.reading = {}

    def write_problems(
        self, problems: list[ReadProblem], source: Source, batch: _Batch, summary: SourceSummary
    ) -> None:
        q = quarantine_problems(problems, source, batch.batch_id)
        batch.write({"quarantine": q}, PART_RUNS)
        summary.quarantined += q.height
        self.summary.quarantine_by_code.update(q.get_column("code").to_list())

    def write_chunk(
        self,
        built: Callable[[], _Built],
        batch: _Batch,
        sources: dict[str, SourceSummary],
        n_texts: int,
    ) -> None:
        tables, ranks = built()
        ranks = ranks.with_columns(self.known.lookup(ranks.get_column("k")))
        status, dups = classify(ranks, batch.versions)
        skip = status.filter(pl.col("status").is_in(["unchanged", "outranked"])).select("doc_id")
        frames = dict(tables.frames)
        if skip.height:
            for t in S.RUN_TABLES:
                frames[t] = frames[t].join(skip, on="doc_id", how="anti")
        if dups:
            extra = pl.DataFrame(dups, schema=S.polars_schema("findings"))
            frames["findings"] = pl.concat([frames["findings"], extra])
        _count(sources, status, frames)
        batch.superseding += int((status.get_column("status") == "replaced").sum())
        self.summary.slow_path += tables.slow_path
        self.summary.findings_by_code.update(frames["findings"].get_column("code").to_list())
        self.summary.quarantine_by_code.update(frames["quarantine"].get_column("code").to_list())
        batch.write(frames, PART_RUNS)
        current = status.filter(pl.col("status") != "outranked")
        batch.versions.add(current)
        self.known.add(current.select("k", "h"))
        self.progress.advance(n_texts, 0)

    def commit(self) -> None:
        self.close_chunk()
        if not self.batch.sources:
            return
        self.queue(self.batch.commit, False)
        self.summary.batches.append(self.batch.batch_id)
        self.next_seq += 1
        self.batch = _Batch(self.root, self.next_seq)


def _count(
    sources: dict[str, SourceSummary], status: pl.DataFrame, frames: dict[str, pl.DataFrame]
) -> None:
    """Add a chunk's runs (by status), quarantine rows and findings to their sources' counts.

    A chunk names each source path once, so ``source_path`` tells its rows apart.
    """
    groups = status.group_by("source_path", "status").len().iter_rows()
    counts = [(path, f"runs_{code}", n) for path, code, n in groups]
    for table, name in (("quarantine", "quarantined"), ("findings", "findings")):
        rows = frames[table].group_by("source_path").len().iter_rows()
        counts += [(path, name, n) for path, n in rows]
    for path, name, n in counts:
        setattr(sources[path], name, getattr(sources[path], name) + n)


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
        standard input (a stream of JSON values: NDJSON, pretty-printed
        documents, arrays). ``.json`` (one document or an array), ``.ndjson``
        / ``.jsonl`` (one per line), each optionally ``.gz`` or ``.zst``. A
        folder holding no document file is no source: the ingest does nothing
        (the dataset is still created) and succeeds. A file already ingested
        with the same content (and resolved path) is skipped.
    dataset
        The dataset folder. A run id read more than once in one batch (the
        whole call, unless it reads more than ``commit_docs`` documents)
        resolves by the rule of :mod:`~ocp_analytics.ingestion.versions`; a
        later batch replaces an earlier one.
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
    >>> s.documents_read, s.runs_new, s.quarantined, s.reconciles, s.slow_path
    (7, 7, 0, True, 0)
    """
    start = time.perf_counter()
    found = find_sources(sources)
    root = D.create(dataset)
    with D.locked(root):
        job = _Ingest(root, chunk_docs, commit_docs, workers, progress or Silent())
        summary = job.run(found)
    summary.seconds = time.perf_counter() - start
    _warn_sources_without_a_run(summary)
    if strict:
        summary.raise_if_quarantined()
    return summary


def _warn_sources_without_a_run(summary: IngestSummary) -> None:
    """Warn for each source read whose every text was quarantined: it holds no OCP run.

    ``ingest README.md`` is not an error (every line is kept in quarantine,
    nothing is lost), but a reader should not have to count to notice it.
    """
    for src in summary.sources:
        if not src.skipped and src.documents and src.quarantined == src.documents:
            warnings.warn(
                f"{src.path} holds no OCP run document: all {src.documents:,} of its texts "
                "were quarantined. Hint: check the path; see the quarantine table for why.",
                stacklevel=3,
            )


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
    texts = [d if isinstance(d, str) else _dumps(d) for d in documents]
    raw: dict[int, str] = {}
    for i, t in enumerate(texts):
        try:
            t.encode()
        except UnicodeEncodeError:  # a Python string holding surrogates
            raw[i], texts[i] = t, t.encode("utf-8", "replace").decode()
    meta = ChunkMeta([source], texts, list(range(1, len(texts) + 1)), [None] * len(texts), raw)
    tables = build_tables(decode_texts(texts, raw=raw), meta, 0, "memory")
    return {name: frame.lazy() for name, frame in tables.frames.items()}


def _dumps(doc: Any) -> str:
    """A document as JSON text; what orjson refuses (surrogates, big integers) as escapes."""
    import json

    import orjson

    try:
        return orjson.dumps(doc).decode()
    except TypeError:
        return json.dumps(doc)
