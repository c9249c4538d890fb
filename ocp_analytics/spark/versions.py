"""The package's run-version rule, applied on the driver to what the ingest tasks built.

Each build task returns its parts and each run's rank keys (the package's
``ingestion.versions.ranked``; what they weigh caps one ingest call: docs/spark.md, "Scale-out
plan"). The driver labels the runs new, replaced, unchanged or outranked
source by source in read order, exactly as the one-machine ingest does, and
rewrites the few staged parts that hold documents not to be written.
"""

from __future__ import annotations

from collections import Counter
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
    """The package's run-version rule, source by source in read order, as its ingest applies it.

    Returns the staged parts to commit (rewritten without skipped documents
    where needed, plus the ``duplicate_run`` findings) and the number of
    replaced runs.
    """
    known, versions = load_run_index(root, records), Versions()
    files: list[Part] = []
    skipped: list[pl.Series] = []
    dup_rows: list[dict[str, Any]] = []
    superseding = 0
    for (_, entry), result in zip(todo, built, strict=True):
        entry.documents = result.documents
        files += result.files
        if result.ranks is None:
            continue
        ranked = result.ranks.with_columns(known.lookup(result.ranks.get_column("k")))
        status, dups = classify(ranked, versions)
        superseding += _count_statuses(entry, status, len(dups))
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


def _count_statuses(entry: SourceSummary, status: pl.DataFrame, duplicates: int) -> int:
    """A source's runs by status, and its findings; return its replaced runs."""
    n = Counter(status.get_column("status").to_list())
    entry.runs_new, entry.runs_replaced = n["new"], n["replaced"]
    entry.runs_unchanged, entry.runs_outranked = n["unchanged"], n["outranked"]
    entry.findings += duplicates
    return n["replaced"]


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
