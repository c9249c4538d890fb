"""Which runs a batch replaces: the content hash of every current run, keyed by its id.

Ingest classifies each document against it (new, the same content again, or
a new version of a run); it is built once per ingest from the runs table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ocp_analytics.store.commits import table_files
from ocp_analytics.store.scan import scan_dataset
from ocp_analytics.store.storage import Store, store

__all__ = ["RunIndex", "load_run_index"]


class RunIndex:
    """The content hash of every current run, keyed by a 64-bit hash of its id.

    Held as segments sorted by key, newest last: each chunk added is one
    segment, and a segment is merged into the one before it while that one
    is at most :attr:`MERGE_FACTOR` times its size (a merge of two sorted
    segments, in linear time). So there are about ``log2(runs / chunk)``
    segments, a chunk is classified with one binary search per segment
    (``O(k log² n)``), and each run is merged ``O(log n)`` times. Memory stays
    near 16 bytes a run, with no large transient: the largest merge is the
    dataset's own size. Two run ids sharing a 64-bit hash could only make a
    new run count as replaced (its document hash differs), never drop it.
    """

    MERGE_FACTOR = 2

    def __init__(self, frame: pl.DataFrame) -> None:
        self.segments: list[pl.DataFrame] = []  # (k, h), sorted by k, unique k; newest last
        self.add(frame)

    def add(self, frame: pl.DataFrame) -> None:
        """Record (k, h) rows, later rows winning."""
        if not frame.height:
            return
        seg = frame.select("k", "h").unique("k", keep="last", maintain_order=True).sort("k")
        self.segments.append(seg)
        while (
            len(self.segments) > 1
            and self.segments[-2].height <= self.MERGE_FACTOR * self.segments[-1].height
        ):
            newer = self.segments.pop()
            self.segments.append(_merge_sorted(self.segments.pop(), newer))

    def lookup(self, keys: pl.Series) -> pl.Series:
        """The latest content hash of each key, null when the run is new."""
        found = pl.Series("kh", [None] * keys.len(), pl.UInt64)
        for seg in reversed(self.segments):  # newest first
            seg_keys, seg_hashes = seg.get_column("k"), seg.get_column("h")
            at = seg_keys.search_sorted(keys, side="left").clip(0, seg_keys.len() - 1)
            hit = seg_keys.gather(at) == keys
            found = pl.select(
                pl.coalesce(found, pl.when(hit).then(seg_hashes.gather(at)))
            ).to_series()
        return found.alias("kh")


def _merge_sorted(older: pl.DataFrame, newer: pl.DataFrame) -> pl.DataFrame:
    """Two segments of (k, h) sorted by unique k as one; a key in both keeps ``newer``'s h."""
    merged = older.merge_sorted(newer, key="k")
    k = merged.get_column("k")
    if not (k.slice(1) == k.slice(0, k.len() - 1)).any():  # sorted: repeats are neighbours
        return merged
    kept = older.join(newer.select("k"), on="k", how="anti")
    return kept.merge_sorted(newer, key="k")


def load_run_index(path: str | Path | Store, records: list[dict[str, Any]]) -> RunIndex:
    """(run id hash, content hash) of every current run already committed."""
    root = store(path)
    if not table_files(root, records, "runs"):
        return RunIndex(pl.DataFrame(schema={"k": pl.UInt64, "h": pl.UInt64}))
    runs = scan_dataset(root).runs
    return RunIndex(
        runs.select(pl.col("run_id").hash().alias("k"), pl.col("doc_sha256").hash().alias("h"))
        .sort("k")
        .collect()
    )
