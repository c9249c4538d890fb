"""The package's run-version rule, applied on the driver to what the ingest tasks built.

Each build task returns its parts and each run's rank keys (the package's
``ingestion.versions.ranked``; what they weigh caps one ingest call: docs/spark.md, "Scale-out
plan"). The driver labels the runs new, replaced, unchanged or outranked in
read order, a run of sources at a time, exactly as the one-machine ingest
does a chunk, and rewrites the few staged parts that hold documents not to
be written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.batch import SourceSummary
from ocp_analytics.ingestion.sources import Source
from ocp_analytics.ingestion.versions import Versions, classify
from ocp_analytics.spark.commit import Built, Part, PartWriter, drop_skipped
from ocp_analytics.store.run_index import load_run_index
from ocp_analytics.store.storage import Store

if TYPE_CHECKING:
    from ocp_analytics.ingestion.batch import IngestSummary


Todo = list[tuple[Source, SourceSummary]]  # the sources to ingest, in read order


def classify_sources(
    root: Store,
    records: list[dict[str, Any]],
    todo: Todo,
    built: list[Built],
    staging: Store,
    batch_id: str,
    summary: IngestSummary,
) -> tuple[list[Part], int]:
    """The package's run-version rule, in read order, as its ingest applies it.

    Returns the staged parts to commit (rewritten without skipped documents
    where needed, plus the ``duplicate_run`` findings) and the number of
    replaced runs.
    """
    known, versions = load_run_index(root, records), Versions()
    files: list[Part] = []
    skipped: list[pl.Series] = []
    dup_rows: list[dict[str, Any]] = []
    superseding = 0
    for run in _read_runs(todo, built):
        sources = {source.path: entry for (source, entry), _ in run}
        for (_, entry), result in run:
            entry.documents = result.documents
            files += result.files
        frames = [result.ranks for _, result in run if result.ranks is not None]
        if not frames:
            continue
        ranks = pl.concat(frames)  # read order: the rule applied as to one chunk's runs
        ranked = ranks.with_columns(known.lookup(ranks.get_column("k")))
        status, dups = classify(ranked, versions)
        superseding += _count_statuses(sources, status, dups)
        skip = status.filter(pl.col("status").is_in(["unchanged", "outranked"]))["doc_id"]
        skipped.append(skip)
        dup_rows += dups
        current = status.filter(pl.col("status") != "outranked")
        versions.add(current)
        known.add(current.select("k", "h"))
    skip_ids = pl.concat(skipped) if skipped else pl.Series("doc_id", [], pl.Int64)
    files = drop_skipped(staging, files, skip_ids)
    if dup_rows:
        files += _duplicate_findings(staging, batch_id, dup_rows)
    _count_codes(todo, files, summary)
    return files, superseding


def _read_runs(
    todo: Todo, built: list[Built]
) -> Iterator[list[tuple[tuple[Source, SourceSummary], Built]]]:
    """Consecutive sources with their builds, each display path once in a run of them.

    The run-version rule takes a run of sources at once, as the one-machine
    ingest takes a chunk of them (one call, not one per source: 2,000
    one-document files were 2,000 index lookups); its rows tell the sources
    apart by ``source_path``.
    """
    run: list[tuple[tuple[Source, SourceSummary], Built]] = []
    held: set[str] = set()
    for item, result in zip(todo, built, strict=True):
        if item[0].path in held:
            yield run
            run, held = [], set()
        run.append((item, result))
        held.add(item[0].path)
    if run:
        yield run


def _count_statuses(
    sources: dict[str, SourceSummary], status: pl.DataFrame, dups: list[dict[str, Any]]
) -> int:
    """Each source's runs by status, and its ``duplicate_run`` findings; the replaced runs."""
    n = status.group_by("source_path", "status").len()
    for path, code, count in n.iter_rows():
        entry = sources[path]
        setattr(entry, f"runs_{code}", getattr(entry, f"runs_{code}") + count)
    for path, count in Counter(d["source_path"] for d in dups).items():
        sources[path].findings += count
    return int(n.filter(pl.col("status") == "replaced").get_column("len").sum())


def _duplicate_findings(staging: Store, batch_id: str, rows: list[dict[str, Any]]) -> list[Part]:
    """The driver's ``duplicate_run`` findings, written as a part of their own."""
    frame = pl.DataFrame(rows, schema=S.polars_schema("findings"))
    writer = PartWriter(staging, f"{batch_id}-duplicates")
    writer.add({"findings": frame})
    writer.flush()
    return writer.files


def _count_codes(todo: Todo, files: list[Part], summary: IngestSummary) -> None:
    """Quarantine and findings counts per source and by code, from the committed parts."""
    by_table: dict[str, list[pl.DataFrame]] = {}
    for f in files:
        if f.table in ("quarantine", "findings") and f.codes is not None:
            by_table.setdefault(f.table, []).append(f.codes)
    for table, frames in by_table.items():
        codes = pl.concat(frames, how="diagonal")["code"].to_list()
        target = summary.quarantine_by_code if table == "quarantine" else summary.findings_by_code
        target.update(codes)
    _per_source(todo, files)


def _per_source(todo: Todo, files: list[Part]) -> None:
    """Per-source quarantined and findings counts, by each row's ``source_path``.

    A part names the sources it holds rows of (two shown by one path never
    share one), so each row's path gives its source.
    """
    for f in files:
        if f.table not in ("quarantine", "findings") or f.codes is None or not f.sources:
            continue  # the driver's duplicate_run findings are counted already
        rows = f.codes.group_by("source_path").len().iter_rows()
        for path, n in rows:
            entry = todo[f.sources[path]][1]
            if f.table == "quarantine":
                entry.quarantined += n
            else:
                entry.findings += n
