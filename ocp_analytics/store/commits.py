"""The commit records of a dataset: what each batch wrote, and the dataset as of any of them.

One JSON record per batch, ``_batches/NNNNNNNN.json`` (``NNNNNNNN`` its
``seq``), written last and atomically: a batch is visible from the moment its
record exists, and readers read only the parts records list. A record holds
``batch_id``, ``seq``, ``committed_at``, ``files`` (table -> parts), ``sources``
(run sources: path, size, SHA-256, counts), ``event_sources`` (a batch of
late events), ``superseding`` and ``parts`` (the manifest: store/manifest.py).
A compaction's record (``kind``: ``compact``) has no sources and lists under
``replaces`` the parts its own parts rewrite (store/maintenance.py).

Records only accumulate, so the records up to one ``seq`` are the dataset
exactly as it was when that batch committed (late events included: they are
batches too; a compaction replaces parts only from its own ``seq`` on).
:func:`read_commits` takes such a *snapshot*: a ``seq``, or an instant (the
last commit at or before it). A vacuum deletes the parts only snapshots
before some ``seq`` read, and says so in ``_vacuum.json`` (:data:`VACUUMS`);
a snapshot before that ``seq`` is then refused (:func:`oldest_readable`).
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeAlias

import orjson
import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.manifest import record_entries, table_entries
from ocp_analytics.store.storage import Store, store

__all__ = [
    "BATCHES",
    "SIGNAL_LINKS",
    "STAGING",
    "VACUUMS",
    "Snapshot",
    "commit",
    "commit_log",
    "manifest_frame",
    "oldest_readable",
    "read_commits",
    "read_vacuums",
    "record_names",
    "remove_orphans",
    "select_snapshot",
    "table_files",
]

BATCHES = "_batches"
STAGING = "_staging"  # parts of a Spark ingest before its commit
# In the commit record of every batch written since the signals table carries
# the attempt each signal names (features.LINK_COLUMNS).
SIGNAL_LINKS = "signal_links"
# What each vacuum deleted, and the oldest snapshot it left readable (a JSON list).
VACUUMS = "_vacuum.json"

Snapshot: TypeAlias = int | datetime | str | None
"""Which commit to read up to: a ``seq``; an instant, aware or naive (UTC), or
its ISO 8601 text (the last commit at or before it); a ``seq`` as text
(``"12"``); ``None`` for the latest."""


def record_names(root: Store) -> list[str]:
    """The names of the commit records in ``_batches/``, oldest first."""
    names = root.child(BATCHES).names()
    return sorted(n for n in names if n.endswith(".json") and not n.startswith("."))


def read_commits(
    path: str | Path | Store, snapshot: Snapshot = None, *, readable: bool = True
) -> list[dict[str, Any]]:
    """Every committed batch record, oldest first; up to ``snapshot`` when given.

    A record that is not a JSON object holding ``seq`` and ``files`` raises
    a :class:`~ocp_analytics.exceptions.DatasetError` naming it (see
    :func:`~ocp_analytics.store.verify.verify`); with a ``seq`` as the
    snapshot, records after it are not read. A snapshot no commit matches
    raises a ``DatasetError`` (:func:`select_snapshot`), and so does one
    older than a vacuum (its parts are deleted), unless ``readable`` is
    ``False`` (the records themselves are wanted, not the data: ``log``).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/solo.ocp.json", out)
    >>> _ = oa.ingest("tests/data/examples/v0.3/swarm.ocp.json", out)
    >>> [r["seq"] for r in read_commits(out)], [r["seq"] for r in read_commits(out, 1)]
    ([1, 2], [1])
    """
    root = store(path)
    names = record_names(root)
    wanted = _parse_snapshot(snapshot)
    if isinstance(wanted, int):  # the records after it are not read
        seqs = [s for n in names if (s := _seq_of(n)) is not None]
        if wanted not in seqs:
            raise _no_commit(wanted, seqs, str(root))
        names = [n for n in names if (s := _seq_of(n)) is None or s <= wanted]
    records = [_read_record(root, name) for name in names]
    if wanted is None:
        return records
    records = select_snapshot(records, wanted, str(root))
    if readable:
        _refuse_vacuumed(root, snapshot, records[-1]["seq"])
    return records


def _seq_of(name: str) -> int | None:
    stem = name.removesuffix(".json")
    return int(stem) if stem.isdigit() else None


def _read_record(root: Store, name: str) -> dict[str, Any]:
    try:
        record = orjson.loads(root.child(BATCHES, name).read_bytes())
    except orjson.JSONDecodeError as exc:
        problem = f"is not valid JSON ({exc})"
    else:
        if isinstance(record, dict) and isinstance(record.get("files"), dict) and "seq" in record:
            return record
        problem = "is not an object holding 'seq' and 'files'"
    raise DatasetError(
        f"the commit record {BATCHES}/{name} of {str(root)!r} {problem}. "
        f"Hint: run `ocp-analytics verify {root}`."
    )


# --- snapshots ---------------------------------------------------------------------------


def select_snapshot(
    records: list[dict[str, Any]], snapshot: Snapshot, where: str | None = None
) -> list[dict[str, Any]]:
    """The records up to ``snapshot``, oldest first: the dataset as that commit left it.

    A ``seq`` must be a commit's; an instant selects the last commit (by
    ``seq``) whose ``committed_at`` is at or before it. Anything else raises
    a :class:`~ocp_analytics.exceptions.DatasetError` saying which commits
    there are; ``where`` names the dataset in it.

    Examples
    --------
    >>> rs = [{"seq": 1, "committed_at": "2026-12-01T02:00:00+00:00"},
    ...       {"seq": 2, "committed_at": "2026-12-02T02:00:00+00:00"}]
    >>> [r["seq"] for r in select_snapshot(rs, "2026-12-01T23:00:00Z")]
    [1]
    >>> [r["seq"] for r in select_snapshot(rs, "2")]
    [1, 2]
    >>> select_snapshot(rs, 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ocp_analytics.exceptions.DatasetError: the dataset has no commit 3 (its commits are 1 to 2)...
    """
    wanted = _parse_snapshot(snapshot)
    if wanted is None:
        return records
    seqs = [r["seq"] for r in records]
    if isinstance(wanted, int):
        if wanted not in seqs:
            raise _no_commit(wanted, seqs, where)
        return [r for r in records if r["seq"] <= wanted]
    before = [r["seq"] for r in records if _committed_at(r, where) <= wanted]
    if not before:
        raise _no_commit(wanted, seqs, where)
    return [r for r in records if r["seq"] <= max(before)]


def _parse_snapshot(snapshot: Snapshot) -> int | datetime | None:
    """A seq, an instant in UTC, or None; text that is neither raises ``DatasetError``."""
    if snapshot is None or isinstance(snapshot, datetime):
        return _utc(snapshot) if snapshot is not None else None
    if isinstance(snapshot, int) and not isinstance(snapshot, bool):
        return snapshot
    text = str(snapshot).strip()
    if text.isdigit():
        return int(text)
    try:
        return _utc(datetime.fromisoformat(text))
    except ValueError:
        raise DatasetError(
            hint(
                f"cannot read the snapshot {snapshot!r} as a commit's seq or an instant.",
                "give a seq (12), or an instant in ISO 8601 (2026-12-01T00:00:00Z, 2026-12-01).",
            )
        ) from None


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _committed_at(record: dict[str, Any], where: str | None) -> datetime:
    try:
        return _utc(datetime.fromisoformat(record["committed_at"]))
    except (KeyError, TypeError, ValueError):
        raise DatasetError(
            f"the commit record {BATCHES}/{record['seq']:08d}.json of {_name(where)} has no "
            f"readable committed_at. Hint: run `ocp-analytics verify {where or 'DATASET'}`."
        ) from None


def _name(where: str | None) -> str:
    return "the dataset" if where is None else repr(where)


def _no_commit(wanted: int | datetime, seqs: list[int], where: str | None) -> DatasetError:
    """The error of a snapshot no commit matches, saying which commits there are."""
    what = (
        f"commit {wanted}"
        if isinstance(wanted, int)
        else f"commit at or before {wanted:%Y-%m-%dT%H:%M:%S.%fZ}"
    )
    message = f"{_name(where)} has no {what}"
    command = f"ocp-analytics log {where or 'DATASET'}"
    if not seqs:
        return DatasetError(hint(f"{message}: it has no commit yet.", "ingest into it first."))
    message += f" (its commits are {min(seqs)} to {max(seqs)})."
    if isinstance(wanted, int) and min(seqs) < wanted < max(seqs):  # its record is gone
        fix = f"its commit record is missing: run `ocp-analytics verify {where or 'DATASET'}`."
    else:
        fix = f"list them with `{command}`."
    return DatasetError(hint(message, fix))


# --- what vacuums left -----------------------------------------------------------------


def read_vacuums(path: str | Path | Store) -> list[dict[str, Any]]:
    """The dataset's vacuums, oldest first (``[]``: never vacuumed).

    Each is ``{"at", "older_than", "oldest_snapshot", "deleted", "bytes"}``:
    when it ran, the instant it kept every snapshot from, the oldest
    snapshot it left readable, the parts it deleted and their bytes.
    """
    target = store(path).child(VACUUMS)
    if not target.is_file():
        return []
    try:
        found = orjson.loads(target.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DatasetError(
            hint(f"{target.uri} is not valid JSON ({exc}).", "restore it from a copy.")
        ) from None
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def oldest_readable(path: str | Path | Store) -> tuple[int, str] | None:
    """The oldest snapshot every vacuum left readable, and when the last that moved it ran.

    ``None`` when no vacuum deleted anything: every snapshot is readable.

    Examples
    --------
    >>> import tempfile
    >>> oldest_readable(tempfile.mkdtemp()) is None
    True
    """
    found = [
        (int(v["oldest_snapshot"]), str(v.get("at")))
        for v in read_vacuums(path)
        if isinstance(v.get("oldest_snapshot"), int)
    ]
    return max(found, default=None)


def _refuse_vacuumed(root: Store, snapshot: Snapshot, seq: int) -> None:
    """Raise when the snapshot (commit ``seq``) reads parts a vacuum deleted."""
    oldest = oldest_readable(root)
    if oldest is None or seq >= oldest[0]:
        return
    first, at = oldest
    with contextlib.suppress(ValueError):
        at = f"{_utc(datetime.fromisoformat(at)):%Y-%m-%dT%H:%M:%SZ}"
    asked = str(snapshot) if str(snapshot).strip() == str(seq) else f"{snapshot} (commit {seq})"
    raise DatasetError(
        hint(
            f"snapshot {asked} is older than the vacuum of {at}: its parts are deleted; "
            f"the oldest readable snapshot is {first}.",
            f"read snapshot {first} or later (`ocp-analytics log {root}` lists the commits).",
        )
    )


# --- writing records, and what they list ------------------------------------------------


def commit(path: str | Path | Store, record: dict[str, Any]) -> None:
    """Make a batch visible: write its record atomically, last.

    In an object store the record is created only if absent (a conditional PUT), so two
    writers can never both take the same ``seq``.
    """
    root = store(path)
    target = root.child(BATCHES, f"{record['seq']:08d}.json")
    # a compaction says False: its parts hold rows of batches with and without the link
    links = record.get(SIGNAL_LINKS, True)
    data = orjson.dumps({**record, SIGNAL_LINKS: links}, option=orjson.OPT_INDENT_2)
    if not root.remote:
        target.write_bytes(data)
    elif not target.create_exclusive(data):
        raise DatasetError(
            hint(
                f"batch {record['seq']} of {str(root)!r} was committed by another writer.",
                "run the ingest again: sources already committed are skipped.",
            )
        )


def remove_orphans(path: str | Path | Store, records: list[dict[str, Any]]) -> int:
    """Delete parts no committed record lists (left by a crash); count them.

    A Spark ingest stages its parts under ``_staging/`` before its commit;
    what a killed job left there is removed (and counted) too.
    """
    root = store(path)
    listed = {f for r in records for files in r["files"].values() for f in files}
    staging = root.child(STAGING)
    removed = 0
    if staging.is_dir():
        removed += sum(1 for _ in staging.files())
        staging.delete_tree()
    for table in S.TABLES:
        for name in root.child(table).names():  # none for a table added since
            rel = f"{table}/{name}"
            if name.endswith(".tmp") or rel not in listed:
                root.child(table, name).delete()
                removed += 1
    return removed


def table_files(root: Store, records: list[dict[str, Any]], table: str) -> list[str]:
    """The live part files of a table as of the last record, relative to the dataset root.

    Each record's parts, less those a later compaction of ``records``
    replaced (:func:`~ocp_analytics.store.manifest.table_entries`).
    """
    return [e.file for e in table_entries(records, table)]


_MANIFEST_SCHEMA = {
    "batch_id": pl.String,
    "seq": pl.Int64,
    "committed_at": pl.String,
    "path": pl.String,
    "resolved": pl.String,
    "size": pl.Int64,
    "sha256": pl.String,
    "documents": pl.Int64,
    "runs_new": pl.Int64,
    "runs_replaced": pl.Int64,
    "runs_unchanged": pl.Int64,
    "runs_outranked": pl.Int64,
    "quarantined": pl.Int64,
    "findings": pl.Int64,
}


def manifest_frame(records: list[dict[str, Any]]) -> pl.DataFrame:
    """One row per ingested source: path, size, hash, batch and counts."""
    rows = [
        {"batch_id": r["batch_id"], "seq": r["seq"], "committed_at": r["committed_at"], **s}
        for r in records
        for s in r["sources"]
    ]
    return pl.DataFrame(rows, schema=_MANIFEST_SCHEMA)


# --- the log ----------------------------------------------------------------------------

_LOG_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "seq": pl.Int64,
    "committed_at": pl.String,
    "batch_id": pl.String,
    "kind": pl.String,
    "sources": pl.List(pl.String),
    "documents": pl.Int64,
    "runs_new": pl.Int64,
    "runs_replaced": pl.Int64,
    "runs_unchanged": pl.Int64,
    "events_new": pl.Int64,
    "quarantined": pl.Int64,
    "parts": pl.Int64,
    "bytes": pl.Int64,
}

# the counts of the log, summed over a record's sources and event sources
_COUNTS = ("documents", "runs_new", "runs_replaced", "runs_unchanged", "events_new", "quarantined")


def commit_log(records: list[dict[str, Any]]) -> pl.DataFrame:
    """One row per commit record: seq, time, batch, its sources and what they added.

    ``kind`` is ``runs`` (an ingest), ``events`` (an ingest of late
    events) or ``compact`` (a compaction); ``sources`` their paths; the counts are summed over them
    (``documents`` read, ``events_new`` stored). ``parts`` and ``bytes`` are
    the parts the batch wrote and their size, ``bytes`` null for a record
    written before the manifest.

    Examples
    --------
    >>> r = {"seq": 1, "committed_at": "2026-12-01T00:00:00+00:00", "batch_id": "00000001-ab",
    ...      "files": {"runs": ["runs/a.parquet"]}, "parts": [{"file": "runs/a.parquet",
    ...      "table": "runs", "size": 900}], "sources": [{"path": "a.json", "documents": 3,
    ...      "runs_new": 3}]}
    >>> commit_log([r]).select("seq", "kind", "sources", "documents", "parts", "bytes").rows()
    [(1, 'runs', ['a.json'], 3, 1, 900)]
    """
    rows = []
    for r in records:
        sources = [*r.get("sources", []), *r.get("event_sources", [])]
        sizes = [e.size for e in record_entries(r)]
        rows.append(
            {
                "seq": r["seq"],
                "committed_at": r.get("committed_at"),
                "batch_id": r.get("batch_id"),
                "kind": _kind(r),
                "sources": [str(s.get("path")) for s in sources],
                **{k: sum(int(s.get(k) or 0) for s in sources) for k in _COUNTS},
                "parts": len(sizes),
                "bytes": None if None in sizes else sum(s or 0 for s in sizes),
            }
        )
    return pl.DataFrame(rows, schema=_LOG_SCHEMA)


def _kind(record: dict[str, Any]) -> str:
    if "event_sources" in record:
        return "events"
    return "compact" if record.get("kind") == "compact" else "runs"
