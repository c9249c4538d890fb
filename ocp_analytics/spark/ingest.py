"""Ingest as Spark tasks: the package's reader, decoder and tables, one task per few sources.

The driver finds the sources (the package's ``find_sources``) and takes the
dataset's lock. A first job counts each source's documents so every task
knows its ``doc_id`` base; the second runs, per source, ``read_chunks`` ->
``decode_texts`` -> ``build_tables`` and writes the seven tables with the
package's writer (:mod:`ocp_analytics.spark.commit`; a task's sources share
parts), returning its parts and each run's rank keys. The driver applies the run-version rule
(:mod:`ocp_analytics.spark.versions`) and commits last: the batch is visible
only then. A failed or killed job leaves the dataset as it was; the next
ingest removes what it left, and a rerun converges.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ocp_analytics._typing import StoreLike
from ocp_analytics.ingestion.batch import CHUNK_DOCS, PART_RUNS, IngestSummary, SourceSummary
from ocp_analytics.ingestion.chunks import Chunk, Chunker, read_chunks
from ocp_analytics.ingestion.decode import decode_texts
from ocp_analytics.ingestion.quarantine import quarantine_problems
from ocp_analytics.ingestion.read import ReadProblem
from ocp_analytics.ingestion.sources import Source, find_sources
from ocp_analytics.ingestion.tables import build_tables
from ocp_analytics.ingestion.versions import ranked
from ocp_analytics.spark.commit import Built, PartWriter, commit_batch, remove_unlisted
from ocp_analytics.spark.tasks import (
    TaskHook,
    attempt_number,
    checkpoint,
    job_hook,
    run_tasks,
    settle,
)
from ocp_analytics.spark.versions import Todo, classify_sources
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TASK_BYTES = 64 << 20  # source bytes a task reads, at most (unless one file is larger)


@dataclass
class IngestJob:
    """What every ingest task needs; shipped to executors (pickled)."""

    sources: list[Source]
    staging: Store  # where tasks write parts: DATASET/_staging/BATCH/, or DATASET in a store
    batch_id: str
    groups: list[list[int]] = field(default_factory=list)  # source indexes of each task
    bases: list[int] = field(default_factory=list)  # each source's first doc_id
    hook: TaskHook | None = field(default_factory=job_hook)
    chunk_docs: int = CHUNK_DOCS  # texts a decode takes at most
    part_runs: int = PART_RUNS  # runs a part holds at least, but for a task's last

    def counts(self, task: int) -> list[int]:
        """:meth:`count` of each source of one task."""
        return [self.count(i) for i in self.groups[task]]

    def count(self, index: int) -> int:
        """Document texts of one source (each takes a ``doc_id``), by the package's reader."""
        checkpoint(self.hook, "count", index)
        return sum(len(meta.texts) for meta, _ in read_chunks(self.sources[index], CHUNK_DOCS, []))

    def builds(self, task: int) -> list[Built]:
        """Read, decode and flatten the sources of one task; their texts share chunks and parts.

        As on one machine, consecutive sources' texts fill one chunk (a
        thousand one-run files are a few ``decode_texts`` and
        ``build_tables`` calls, not a thousand) and the task's rows fill its
        parts (a part per table every ``PART_RUNS`` runs and at the end).
        Each source's texts keep the ``doc_id`` its count gave them, so its
        runs' rank keys are told apart by ``doc_id``.
        """
        group = self.groups[task]
        writer = PartWriter(self.staging, f"{self.batch_id}-t{task:05d}-a{attempt_number()}")
        build = _TaskBuild(self, writer)
        texts: list[int] = []
        for index in group:
            source = self.sources[index]
            if build.chunker.holds(source.path):  # a chunk names a path once
                build.add(build.chunker.take())
            build.reading[source.path] = index
            problems: list[ReadProblem] = []
            for chunk in build.chunker.read(source, problems):
                build.add(chunk)
            texts.append(build.chunker.added)
            if problems:
                writer.source({source.path: index})
                writer.add({"quarantine": quarantine_problems(problems, source, self.batch_id)})
            texts[-1] += len(problems)
            checkpoint(self.hook, "build", index)
        if len(build.chunker):
            build.add(build.chunker.take())
        writer.flush()
        checkpoint(self.hook, "written", task)  # every part of the task staged
        ranks = pl.concat(build.ranks) if build.ranks else None
        out = []
        for k, index in enumerate(group):
            mine = None
            if ranks is not None:
                lo = self.bases[index]
                hi = self.bases[group[k + 1]] if k + 1 < len(group) else None
                doc = pl.col("doc_id")
                mine = ranks.filter(doc >= lo if hi is None else doc.is_between(lo, hi - 1))
                mine = mine if mine.height else None
            out.append(Built(texts[k], writer.files if k == 0 else [], mine))
        return out


@dataclass
class _TaskBuild:
    """One build task's chunker, the doc_id of its next text, its parts and rank keys."""

    job: IngestJob
    writer: PartWriter
    reading: dict[str, int] = field(default_factory=dict)  # path -> source index, as read
    ranks: list[pl.DataFrame] = field(default_factory=list)
    base: int | None = None

    def __post_init__(self) -> None:
        self.chunker = Chunker(self.job.chunk_docs)

    def add(self, chunk: Chunk) -> None:
        """Decode and flatten one chunk; hand its tables to the writer."""
        meta, cut = chunk
        if self.base is None:  # the task's first text: its first source's base
            self.base = self.job.bases[self.reading[meta.paths[0]]]
        decoded = decode_texts(meta.texts, cut, raw=meta.raw)
        tables = build_tables(decoded, meta, self.base, self.job.batch_id)
        self.base += len(meta.texts)
        self.ranks.append(ranked(tables))  # what the run-version rule reads, per run
        self.writer.source({path: self.reading[path] for path in meta.paths})
        self.writer.add(tables.frames)
        if self.writer.runs >= self.job.part_runs:
            self.writer.flush()


def ingest(
    spark: SparkSession,
    sources: str | Path | Sequence[str | Path],
    dataset: StoreLike,
    *,
    strict: bool = False,
) -> IngestSummary:
    """Ingest OCP run documents with Spark tasks; the same dataset the package's ingest writes.

    One task per source file (or a few small ones) runs the package's reader
    (so truncated streams, quarantine and findings are exactly as on one
    machine), ``decode_texts`` and ``build_tables``, and writes its parts into
    ``DATASET/_staging/BATCH/`` with the package's writer (in an object store,
    which has no rename: at their final keys, unlisted until the commit). A
    first, cheaper pass counts each source's documents so each task knows its
    ``doc_id`` base. The driver then applies the package's run-version rule
    (new, replaced, unchanged, outranked) source by source, moves staged parts
    into the table folders and writes the commit record last. Until then readers
    see the dataset as it was; after a failure the next ingest removes the
    leftovers, and rerunning the same command converges without duplicates.

    Every call commits one batch (the one-machine ingest starts a new batch
    every million documents).

    Parameters
    ----------
    spark
        The session (see :func:`~ocp_analytics.spark.session`).
    sources, dataset, strict
        As for :func:`ocp_analytics.ingest`; every executor must reach them.

    Returns
    -------
    IngestSummary
        The package's reconciled summary.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics import spark as osp
    >>> spark = osp.session("local[1]")
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> summary = osp.ingest(spark, "tests/data/examples/v0.3", ds)
    >>> summary.documents_read, summary.runs_new, summary.reconciles
    (7, 7, True)
    """
    start = time.perf_counter()
    specs = [sources] if isinstance(sources, str | Path) else list(sources)
    found = find_sources([store(s).uri for s in specs])
    root = D.create(dataset)
    summary = IngestSummary(root)
    with D.locked(root):
        records = D.read_commits(root)
        summary.orphans_removed = D.remove_orphans(root, records)  # _staging/ too
        todo = _todo(found, records, summary)
        if todo:
            _ingest_batch(spark, root, records, todo, summary)
    summary.seconds = time.perf_counter() - start
    if strict:
        summary.raise_if_quarantined()
    return summary


def _todo(found: list[Source], records: list[dict[str, Any]], summary: IngestSummary) -> Todo:
    """Enter every source in the summary; the ones not ingested before, in read order."""
    done = {(D.resolved_path(s), s["sha256"]) for r in records for s in r["sources"]}
    todo: Todo = []
    for source in found:
        entry = SourceSummary(source.path, source.size, source.sha256, resolved=source.resolved)
        entry.skipped = (source.resolved, source.sha256) in done
        summary.sources.append(entry)
        if not entry.skipped:
            todo.append((source, entry))
    return todo


def _ingest_batch(
    spark: SparkSession,
    root: Store,
    records: list[dict[str, Any]],
    todo: Todo,
    summary: IngestSummary,
) -> None:
    """Build every source in Spark tasks, classify on the driver, commit last.

    Local parts are staged and moved into the table folders before the
    commit; in an object store (no rename) tasks write them at their final keys, where
    they stay invisible until the commit record lists them.
    """
    seq = max((r["seq"] for r in records), default=0) + 1
    batch_id = f"{seq:08d}-{uuid.uuid4().hex[:8]}"
    staging = root if root.remote else root.child(D.STAGING, batch_id)
    staging.mkdir()
    job = IngestJob([s for s, _ in todo], staging, batch_id)
    job.groups = _groups([s.size for s, _ in todo], spark.sparkContext.defaultParallelism)
    try:
        counts = _run_counts(spark, job)
        job.bases = [(seq << 32) + n for n in itertools.accumulate([0, *counts[:-1]])]
        built = [b for part in run_tasks(spark, len(job.groups), job.builds) for b in part]
        files, superseding = classify_sources(
            root, records, todo, built, staging, batch_id, summary
        )
        commit_batch(root, staging, batch_id, seq, files, [e for _, e in todo], superseding)
        summary.batches.append(batch_id)
    except Exception:
        with contextlib.suppress(Exception):  # a stopped session has no task left to wait for
            settle(spark)  # a failed job's other tasks may still write: wait for them first
        raise
    finally:
        if root.remote:  # parts of failed attempts (or of a failed job): never listed
            with contextlib.suppress(OSError):  # best effort: the next ingest removes them
                remove_unlisted(root, batch_id, D.read_commits(root))
        else:
            root.child(D.STAGING).delete_tree()


def _run_counts(spark: SparkSession, job: IngestJob) -> list[int]:
    """Each source's document count, in source order."""
    if len(job.sources) == 1:
        return [0]  # one source: its base is the batch's first id, nothing to count
    return [n for part in run_tasks(spark, len(job.groups), job.counts) for n in part]


def _groups(sizes: list[int], cores: int) -> list[list[int]]:
    """Consecutive sources per task: about two tasks per core, or one per ``TASK_BYTES``.

    Examples
    --------
    >>> _groups([10, 10, 10, 10, 10], cores=1)
    [[0, 1, 2], [3, 4]]
    >>> _groups([1 << 30, 5], cores=1)
    [[0], [1]]
    """
    total = sum(sizes)
    tasks = min(len(sizes), max(2 * cores, math.ceil(total / TASK_BYTES)))
    target = total / max(tasks, 1)
    groups: list[list[int]] = [[]]
    held = 0
    for i, size in enumerate(sizes):
        if groups[-1] and held + size / 2 > target:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += size
    return groups
