"""Which parts a read of one time window opens, chosen from the manifest before any is opened.

A reader of the runs of a window ``[since, until)`` (a run's time is its
``ended_at``, else its ``started_at``; a run with neither is outside every
window) needs:

- the ``runs`` parts whose time range (the manifest's ``time``) meets the
  window: no run of another part is in it;
- of the other tables a run's rows live in (:data:`WINDOWED`), the parts
  whose ``doc_id`` range meets a kept ``runs`` part's: every row of a run
  shares its ``doc_id``;
- for the run-version rule (the newest ``doc_id`` of a run id is its current
  version), the ``run_id`` and ``doc_id`` of every part that may hold a newer
  version of a kept run, kept or not: a run of the window replaced by a
  version outside it is no longer in the window. A newer version is written
  only by a batch that replaced runs (``superseding`` in its commit record),
  never before the batch of the version it replaces, so those are the runs
  parts of such batches from the first kept batch on.

A part whose manifest entry lacks a range (a record written before the
manifest) is kept, so an older dataset is read whole until it is rewritten.
Late events, findings and quarantine are not pruned: events are matched to
runs by commit, not ``doc_id``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.store.manifest import PartEntry, record_entries, tables_entries

__all__ = ["WINDOWED", "PartChoice", "choose_parts", "id_spans", "parts_meeting"]

# The tables a windowed read prunes: those the evaluation reads a run's rows from.
WINDOWED = ("runs", "attempts", "signals", "rules", "artifacts")
_BATCH_BITS = 32  # a batch's documents have ids seq << 32 onwards


@dataclass(frozen=True)
class PartChoice:
    """The parts a windowed read opens.

    ``files``: per table, the parts to scan (every part for a table not in
    :data:`WINDOWED`); ``versions``: the ``runs`` parts not in ``files`` whose
    ``run_id`` and ``doc_id`` the run-version rule still needs; ``resolve``:
    whether any kept run may have a newer version; ``seqs``: the batches
    whose ``runs`` parts are scanned; ``pruned``: how many parts were left
    out (``0``: the read is the whole dataset's).
    """

    files: dict[str, list[str]]
    versions: list[str]
    resolve: bool
    seqs: frozenset[int]
    pruned: int
    # every table's live entries (manifest.tables_entries), for later choices of parts
    entries: dict[str, list[PartEntry]] = field(default_factory=dict, repr=False, compare=False)


def choose_parts(
    records: list[dict[str, Any]],
    since: datetime | None,
    until: datetime | None,
    parsed: list[list[PartEntry]] | None = None,
) -> PartChoice:
    """The parts that a read of the runs in ``[since, until)`` opens (see the module docstring).

    ``parsed``: each record's :func:`~ocp_analytics.store.manifest.record_entries`,
    read already (a dataset's windows share one reading of its records).

    Examples
    --------
    Two daily batches; a window on the second day opens only its parts.

    >>> def batch(seq, day):
    ...     lo = seq << 32
    ...     t = [f"2026-05-{day:02d}T00:00:00.000000Z", f"2026-05-{day:02d}T23:00:00.000000Z"]
    ...     return {"seq": seq, "files": {"runs": [f"runs/{seq}.parquet"],
    ...             "signals": [f"signals/{seq}.parquet"]}, "parts": [
    ...             {"file": f"runs/{seq}.parquet", "table": "runs", "doc_id": [lo, lo + 9],
    ...              "time": t},
    ...             {"file": f"signals/{seq}.parquet", "table": "signals",
    ...              "doc_id": [lo, lo + 9]}]}
    >>> from datetime import UTC, datetime
    >>> records, day2 = [batch(1, 1), batch(2, 2)], datetime(2026, 5, 2, tzinfo=UTC)
    >>> c = choose_parts(records, day2, None)
    >>> c.files["runs"], c.files["signals"], c.pruned, c.resolve
    (['runs/2.parquet'], ['signals/2.parquet'], 2, False)
    """
    superseding = sorted(int(r["seq"]) for r in records if r.get("superseding", 0))
    if parsed is None:
        parsed = [record_entries(r) for r in records]
    if since is None and until is None:  # every part: no entry needs reading
        live = tables_entries(records, parsed)
        files = {t: [e.file for e in live.get(t, [])] for t in S.TABLES}
        seqs = frozenset(int(r["seq"]) for r in records if r["files"].get("runs"))
        return PartChoice(files, [], bool(superseding), seqs, 0, live)
    # the files each table lists (commits.table_files), with the entry and seq of the record
    # listing them; a batch's documents have ids from seq << 32
    seq_of = {e.file: int(r["seq"]) for r, es in zip(records, parsed, strict=True) for e in es}
    live = tables_entries(records, parsed)
    listed = {t: [(seq_of.get(e.file, -1), e) for e in live.get(t, [])] for t in S.TABLES}
    runs = listed["runs"]
    kept = [(s, e) for s, e in runs if e.may_hold_time(since, until)]
    spans = _merged([_doc_span(s, e) for s, e in kept])
    files = {
        t: [e.file for _, e in entries if t not in WINDOWED or _meets(spans, e)]
        for t, entries in listed.items()
    }
    files["runs"] = [e.file for _, e in kept]
    # a newer version of a kept run is in a batch that replaced runs, from the first kept on
    first = min((_batches(s, e)[0] for s, e in kept), default=None)
    newer = [q for q in superseding if first is not None and q >= first]
    versions = [
        e.file
        for s, e in runs
        if not e.may_hold_time(since, until) and _any_between(newer, *_batches(s, e))
    ]
    seqs = frozenset(q for s, e in kept for q in range(_batches(s, e)[0], _batches(s, e)[1] + 1))
    pruned = sum(len(v) for v in listed.values()) - sum(len(v) for v in files.values())
    return PartChoice(files, versions, bool(newer), seqs, pruned, live)


def parts_meeting(
    records: list[dict[str, Any]],
    spans: list[tuple[int, int]],
    tables: tuple[str, ...] = WINDOWED,
    live: dict[str, list[PartEntry]] | None = None,
) -> dict[str, list[str]]:
    """Per table, the parts whose ``doc_id`` range meets one of ``spans``; no part is opened.

    ``spans`` are closed ``doc_id`` ranges, sorted and disjoint
    (:func:`id_spans`). A part whose manifest entry lacks a range is kept.
    ``live``: the records' :func:`~ocp_analytics.store.manifest.tables_entries`,
    when read already.
    Readers of a known set of runs (the runs a refresh decides again) open
    these parts only.

    Examples
    --------
    >>> records = [{"seq": q, "files": {"runs": [f"runs/{q}.parquet"]}, "parts": [
    ...     {"file": f"runs/{q}.parquet", "table": "runs", "doc_id": [q << 32, (q << 32) + 9]}]}
    ...     for q in (1, 2, 3)]
    >>> parts_meeting(records, id_spans([(2 << 32) + 5]), ("runs",))
    {'runs': ['runs/2.parquet']}
    """
    live = tables_entries(records) if live is None else live
    return {t: [e.file for e in live.get(t, []) if _meets(spans, e)] for t in tables}


def id_spans(ids: Sequence[int] | pl.Series) -> list[tuple[int, int]]:
    """Sorted, disjoint closed ranges covering exactly the ``doc_id`` values ``ids``.

    Consecutive ids make one range (a batch's runs are numbered in a row),
    found without a loop over the ids.

    Examples
    --------
    >>> id_spans([7, 3, 4, 5, 9, 4])
    [(3, 5), (7, 7), (9, 9)]
    """
    s = pl.Series("id", ids, pl.Int64).unique().sort()
    start = (s.diff() != 1).fill_null(True)
    spans = (
        pl.DataFrame({"id": s, "span": start.cum_sum()})
        .group_by("span", maintain_order=True)
        .agg(pl.col("id").min().alias("lo"), pl.col("id").max().alias("hi"))
    )
    return list(zip(spans["lo"].to_list(), spans["hi"].to_list(), strict=True))


def _batches(seq: int, entry: PartEntry) -> tuple[int, int]:
    """The first and last batch whose documents a part may hold (its record's when unknown)."""
    if entry.doc_id:
        return entry.doc_id[0] >> _BATCH_BITS, entry.doc_id[1] >> _BATCH_BITS
    return seq, seq


def _any_between(sorted_seqs: list[int], lo: int, hi: int) -> bool:
    at = bisect.bisect_left(sorted_seqs, lo)
    return at < len(sorted_seqs) and sorted_seqs[at] <= hi


def _doc_span(seq: int, entry: PartEntry) -> tuple[int, int] | None:
    """A runs part's ``doc_id`` range; its batch's whole range when unknown; None if empty."""
    if entry.doc_id is None:
        return seq << _BATCH_BITS, ((seq + 1) << _BATCH_BITS) - 1
    return entry.doc_id or None


def _merged(spans: list[tuple[int, int] | None]) -> list[tuple[int, int]]:
    """Closed ranges, sorted and merged where they overlap or touch."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(s for s in spans if s is not None):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _meets(spans: list[tuple[int, int]], entry: PartEntry) -> bool:
    """Whether ``entry`` may hold a ``doc_id`` in one of the sorted, disjoint ``spans``."""
    if entry.doc_id is None:
        return True
    if not entry.doc_id or not spans:
        return False
    lo, hi = entry.doc_id
    # the last span starting at or before hi is the only one that can meet [lo, hi]
    at = bisect.bisect_right(spans, (hi, 1 << 64)) - 1
    return at >= 0 and spans[at][1] >= lo
