"""Ingest OCP run documents into a dataset: find, decode, flatten, write.

Bad input never aborts a batch and never vanishes: it lands in
``quarantine`` (not a readable run) or ``findings`` (a defect inside a run),
and the summary reconciles: documents read = runs (new, replaced, unchanged,
outranked) + quarantined.

Which version of a run is current
---------------------------------
A run id read again in a *later* ingest batch replaces the earlier version
(re-ingest is an update). Within *one* batch, when several documents carry
the same run id, the current version is decided by their content, never by
file names or read order:

1. the latest ``run.ended_at`` wins (a missing or unreadable one loses to
   any time);
2. on a tie, the latest ``observed_at`` among the run's signals wins (a
   re-emitted document with a late event appended is the newer one);
3. on a tie, the larger ``doc_sha256`` wins (compared on its first 15 hex
   digits; identical content is simply ``unchanged``).

A version that loses is *outranked*: it is not written when it is read after
the winner, or stays as a superseded version when it was read before it.
Either way a ``duplicate_run`` finding on the current version names it.

Re-ingest is keyed on a source's content and resolved path: a file already
ingested with the same bytes is skipped however its path is spelled.
"""

from __future__ import annotations

import os
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import StrictIngestError, hint
from ocp_analytics.ingestion.decode import decode_texts
from ocp_analytics.ingestion.sources import Digest, ReadProblem, Source, find_sources, read_chunks
from ocp_analytics.ingestion.tables import ChunkMeta, ChunkTables, build_tables, quarantine_frame
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import Store

# Documents decoded and flattened at a time. Building a chunk's tables costs
# about 30 ms of CPU whatever its size (polars plans and runs some 60 steps),
# so larger chunks cost less a document but hold more in memory: at 2M
# documents 20k chunks took 0.93x the time of 10k; 15k chunks now peak at
# 0.68 GiB, and 20k took 0.996x their time with 115 MB more (see
# benchmarks/RESULTS.md).
CHUNK_DOCS = 15_000
COMMIT_DOCS = 1_000_000
# A Parquet part is written once this many runs are held: a full chunk's runs
# make one part (a chunk has fewer runs than documents when some are
# quarantined or skipped); parts of two 15k chunks held 0.93 GiB.
PART_RUNS = CHUNK_DOCS // 2
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
    runs_outranked: int = 0  # lost to another version of the same batch; not written
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
            "runs_outranked",
            "quarantined",
            "findings",
        )
        return {k: getattr(self, k) for k in keys}


@dataclass
class IngestSummary:
    """The reconciled outcome of one ingest.

    ``documents_read == runs_new + runs_replaced + runs_unchanged + runs_outranked +
    quarantined``
    always holds (:attr:`reconciles`).
    """

    dataset: Store
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
    runs_outranked = property(lambda self: self._sum("runs_outranked"))
    quarantined = property(lambda self: self._sum("quarantined"))

    @property
    def runs_written(self) -> int:
        """Readable run documents: new + replaced + unchanged + outranked."""
        return self.runs_new + self.runs_replaced + self.runs_unchanged + self.runs_outranked

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
            f"{self.runs_unchanged:,}"
            + (f", outranked {self.runs_outranked:,}" if self.runs_outranked else "")
            + f") + quarantined {self.quarantined:,}"
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


class _Batch(D.BatchWriter):
    """A batch of ingest: the dataset's batch writer plus the run versions it wrote."""

    def __init__(self, root: Store, seq: int) -> None:
        super().__init__(root, seq)
        self.versions = _Versions()


_NO_TIME = -(2**63)
_RANK = ("e", "o", "s")
_RULE = "later run.ended_at, then later latest signal observed_at, then larger doc_sha256"


def _ranked(tables: ChunkTables) -> pl.DataFrame:
    """Each run of a chunk: its hashes and the rank of its version (built on a worker)."""
    last_obs = tables["signals"].group_by("doc_id").agg(pl.col("observed_at").max().alias("o"))
    r = (
        tables["runs"]
        .select("run_id", "doc_id", "doc_sha256", "ended_at", *_WHERE)
        .join(last_obs, on="doc_id", how="left")
        .select(
            "run_id",
            "doc_id",
            "doc_sha256",
            *_WHERE,
            pl.col("run_id").hash().alias("k"),
            pl.col("doc_sha256").hash().alias("h"),
            pl.col("ended_at").dt.epoch("us").fill_null(_NO_TIME).alias("e"),
            pl.col("o").dt.epoch("us").fill_null(_NO_TIME).alias("o"),
            pl.col("doc_sha256").str.slice(0, 15).str.to_integer(base=16).alias("s"),
        )
        .sort("doc_id")
    )
    return r


_WHERE = ("source_path", "source_line", "source_index")
_VERSION_COLS = {"k": pl.UInt64, "cur": pl.Int64, "h": pl.UInt64, **dict.fromkeys(_RANK, pl.Int64)}


class _Versions:
    """The current version of every run id written in one batch, with its rank.

    ``cur`` is its ``doc_id`` (-1: the dataset's version, read again unchanged).
    Consulted only for runs that are already known or repeat within a chunk,
    so a batch of new runs costs one append a chunk.
    """

    def __init__(self) -> None:
        self.frames: list[pl.DataFrame] = []

    def current(self, keys: pl.DataFrame) -> dict[int, tuple[tuple[int, ...], int, int]]:
        """(rank, doc_id, hash) of the current version of each key seen in this batch."""
        if not self.frames:
            return {}
        seen = (
            pl.concat(self.frames)
            .join(keys, on="k", how="semi")
            .sort([*_RANK, "cur"])
            .group_by("k", maintain_order=True)
            .last()
        )
        return {r[0]: ((r[3], r[4], r[5]), r[1], r[2]) for r in seen.iter_rows()}

    def add(self, frame: pl.DataFrame) -> None:
        self.frames.append(frame.select(list(_VERSION_COLS)).cast(_VERSION_COLS))  # type: ignore[arg-type]


def _classify(r: pl.DataFrame, versions: _Versions) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Label each run new / replaced / unchanged / outranked (see the module docstring).

    Returns the runs with ``status`` and ``cur`` (the current version's
    ``doc_id`` after this one), and the ``duplicate_run`` findings.
    """
    kh, h = pl.col("kh"), pl.col("h")
    status = (
        pl.when(kh.is_null())
        .then(pl.lit("new"))
        .when(kh == h)
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("replaced"))
    )
    cur = pl.when(status == "unchanged").then(pl.lit(-1)).otherwise(pl.col("doc_id"))
    r = r.with_columns(status.alias("status")).with_columns(cur.alias("cur"))
    dup = r.get_column("k").is_duplicated()
    keys = r.filter(kh.is_not_null() | dup).select("k").unique()
    state = versions.current(keys) if keys.height else {}
    compete = set(state) | set(r.filter(dup).get_column("k").to_list())
    if not compete:
        return r, []
    return _compete(r, state, compete)


def _compete(
    r: pl.DataFrame, state: dict[int, tuple[tuple[int, ...], int, int]], compete: set[int]
) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """The per-document slow path for run ids read more than once in a batch."""
    statuses = r.get_column("status").to_list()
    curs = r.get_column("cur").to_list()
    findings: list[dict[str, Any]] = []
    for i, row in enumerate(r.iter_rows(named=True)):
        k = row["k"]
        if k not in compete:
            continue
        rank = tuple(row[c] for c in _RANK)
        have = state.get(k)
        if have is None:
            state[k] = (rank, curs[i], row["h"])
            continue
        best, best_doc, best_h = have
        if row["h"] == best_h:
            statuses[i], curs[i] = "unchanged", best_doc
        elif rank > best:
            statuses[i] = "replaced"
            state[k] = (rank, row["doc_id"], row["h"])
            other = f"doc_id {best_doc}" if best_doc >= 0 else "the dataset's version"
            findings.append(
                _duplicate(
                    row,
                    row["doc_id"],
                    f"another document of this run in the same ingest ({other}) is outranked "
                    f"by this one ({_RULE}); it stays only as a superseded version",
                )
            )
        else:
            statuses[i], curs[i] = "outranked", best_doc
            if best_doc >= 0:
                findings.append(
                    _duplicate(
                        row,
                        best_doc,
                        "the document of this run at this finding's source_path and line "
                        f"(doc_sha256 {row['doc_sha256'][:16]}…) is outranked by the current "
                        f"version ({_RULE}); it is not written",
                    )
                )
    out = r.with_columns(
        pl.Series("status", statuses, dtype=pl.String), pl.Series("cur", curs, dtype=pl.Int64)
    )
    return out, findings


def _duplicate(row: dict[str, Any], doc_id: int, message: str) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "doc_id": doc_id,
        "code": "duplicate_run",
        "json_path": "$.run.id",
        "message": message,
        **{c: row[c] for c in _WHERE},
    }


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


_Built = tuple[ChunkTables, pl.DataFrame]  # the tables, and their runs ranked (_ranked)


def _build(task: _Task) -> _Built:
    meta, cut, base, batch_id = task
    tables = build_tables(decode_texts(meta.texts, cut, raw=meta.raw), meta, base, batch_id)
    return tables, _ranked(tables)


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
        self.known = D.load_run_index(root, records)
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
                if self.batch.documents >= self.commit_docs:
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
        for meta, cut in read_chunks(source, self.chunk_docs, problems, digest):
            n = len(meta.texts)
            summary.documents += n
            tables = self.build(
                (meta, cut, batch.doc_id_base(n), batch.batch_id), n >= self.chunk_docs
            )
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
        built: Callable[[], _Built],
        batch: _Batch,
        summary: SourceSummary,
        n_texts: int,
    ) -> None:
        tables, ranked = built()
        ranked = ranked.with_columns(self.known.lookup(ranked.get_column("k")))
        status, dups = _classify(ranked, batch.versions)
        skip = status.filter(pl.col("status").is_in(["unchanged", "outranked"])).select("doc_id")
        frames = dict(tables.frames)
        if skip.height:
            for t in S.RUN_TABLES:
                frames[t] = frames[t].join(skip, on="doc_id", how="anti")
        if dups:
            extra = pl.DataFrame(dups, schema=S.polars_schema("findings"))
            frames["findings"] = pl.concat([frames["findings"], extra])
        counts = Counter(status.get_column("status").to_list())
        summary.runs_new += counts["new"]
        summary.runs_replaced += counts["replaced"]
        summary.runs_unchanged += counts["unchanged"]
        summary.runs_outranked += counts["outranked"]
        summary.quarantined += frames["quarantine"].height
        summary.findings += frames["findings"].height
        batch.superseding += counts["replaced"]
        self.summary.findings_by_code.update(frames["findings"].get_column("code").to_list())
        self.summary.quarantine_by_code.update(frames["quarantine"].get_column("code").to_list())
        batch.write(frames, PART_RUNS)
        current = status.filter(pl.col("status") != "outranked")
        batch.versions.add(current)
        self.known.add(current.select("k", "h"))
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
        standard input (a stream of JSON values: NDJSON, pretty-printed
        documents, arrays). ``.json`` (one document or an array), ``.ndjson``
        / ``.jsonl`` (one per line), each optionally ``.gz`` or ``.zst``. A
        folder holding no document file is no source: the ingest does nothing
        (the dataset is still created) and succeeds. A file already ingested
        with the same content (and resolved path) is skipped.
    dataset
        The dataset folder. A run id read more than once in one batch (the
        whole call, unless it reads more than ``commit_docs`` documents)
        resolves by the rule in this module's docstring; a later batch
        replaces an earlier one.
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
    texts = [d if isinstance(d, str) else _dumps(d) for d in documents]
    raw: dict[int, str] = {}
    for i, t in enumerate(texts):
        try:
            t.encode()
        except UnicodeEncodeError:  # a Python string holding surrogates
            raw[i], texts[i] = t, t.encode("utf-8", "replace").decode()
    meta = ChunkMeta(source, texts, list(range(1, len(texts) + 1)), [None] * len(texts), raw)
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
