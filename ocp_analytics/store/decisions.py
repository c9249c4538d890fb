"""The decisions store: a rule's acceptance rows kept in the dataset, refreshed by generations.

Layout (docs/dataset.md, "The decisions store")::

    DATASET/decisions/<fingerprint>/
      _generations/NNNNNNNN.json   one record per refresh, written last and atomically
      parts/G-<id>-NNNNN.parquet   rows decided by generation G (DECISIONS columns)
      ids/G-<id>-superseded.parquet  doc_ids whose older rows generation G replaces
      ids/G-<id>-pending.parquet     G's rows not final when decided: doc_id, changes_at

One folder per rule (``<fingerprint>`` names its canonical definition: see
:mod:`ocp_analytics.engine.finality`). A record holds ``generation``,
``dataset_seq`` (the dataset commit the rows were decided from), ``as_of``,
``rows`` (live rows) and the ``chain``: one entry per generation since the
last build from raw, each with its ``parts``, ``superseded`` and ``pending``
files. A row of entry ``i`` is live unless a later entry supersedes its
``doc_id``. As with a dataset batch, a generation's files are written first
under names no reader lists, its record last: a refresh killed at any point
leaves the store as its last record says, and the next refresh deletes what
the killed one left. This module knows bytes and records only; what a row
means, and when it is final, is the engine's.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.damage import REPAIR_STORE, Damage, damage_error
from ocp_analytics.store.dataset import locked, write_encoded
from ocp_analytics.store.manifest import PartEntry
from ocp_analytics.store.read_check import first_damaged
from ocp_analytics.store.storage import Store

__all__ = [
    "DECISIONS",
    "DECISIONS_SCHEMA",
    "DecisionStore",
    "Generation",
    "about",
    "chain_files",
    "evict_stores",
    "file_entries",
]

DECISIONS = "decisions"
GENERATIONS = "_generations"

# The acceptance columns, the run version each row decides (doc_id) and the
# latest observed_at among its signals and matched events, when after as_of.
DECISIONS_SCHEMA = pa.schema(
    [
        *S.ACCEPTANCE,
        pa.field("doc_id", pa.int64(), nullable=False),
        pa.field("observed_until", S.TS),
    ]
)
_IDS = pa.schema([pa.field("doc_id", pa.int64(), nullable=False)])
# a pending row's doc_id and the instant it may change (null: not known, decide it again)
_PENDING = pa.schema([pa.field("doc_id", pa.int64(), nullable=False), pa.field("changes_at", S.TS)])
_NONE = pl.Series("doc_id", [], pl.Int64)
_NO_PENDING = pl.DataFrame(_PENDING.empty_table())


class Generation:
    """The files of one refresh of one store, written before its record.

    Parts are written as they come (:meth:`add`); the ids files and the
    record by :meth:`DecisionStore.commit`.
    """

    def __init__(self, store: DecisionStore, number: int) -> None:
        self.store, self.number = store, number
        self.prefix = f"{number:08d}-{uuid.uuid4().hex[:8]}"
        self.parts: list[str] = []
        self.rows = 0
        self.pending: list[pl.DataFrame] = []
        # each file written: bytes, rows and SHA-256, for ``verify`` (store_files)
        self.files: list[dict[str, Any]] = []

    def add(self, rows: pl.DataFrame, pending: pl.DataFrame) -> None:
        """Write ``rows`` (DECISIONS columns) as one part; remember its ``pending`` rows.

        ``pending``: ``doc_id, changes_at`` of the rows not final.
        """
        self.pending.append(pending.select(_PENDING.names).cast(_NO_PENDING.schema))
        if rows.height == 0:
            return
        rel = f"parts/{self.prefix}-{len(self.parts):05d}.parquet"
        table = rows.select(DECISIONS_SCHEMA.names).to_arrow().cast(DECISIONS_SCHEMA)
        self._write(table, rel)
        self.parts.append(rel)
        self.rows += rows.height

    def add_frame(self, rows: pl.DataFrame) -> None:
        """Write ``rows`` as one part, their columns as they are (a rule set's codes)."""
        if rows.height == 0:
            return
        rel = f"parts/{self.prefix}-{len(self.parts):05d}.parquet"
        self._write(rows.to_arrow(), rel)
        self.parts.append(rel)
        self.rows += rows.height

    def _write(self, table: pa.Table, rel: str) -> None:
        """Write ``table`` at ``rel`` atomically; encoded in memory, hashed from those bytes."""
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        data = sink.getvalue()
        write_encoded(self.store.root.child(rel), data)
        view = memoryview(data)
        digest, fast = hashlib.sha256(view).hexdigest(), xxhash.xxh3_128_hexdigest(view)
        self.files.append(
            {
                "file": rel,
                "bytes": data.size,
                "rows": table.num_rows,
                "sha256": digest,
                "xxh3": fast,
            }
        )

    def ids_file(self, ids: pl.Series | pl.DataFrame, kind: str) -> str | None:
        """Write ``ids`` (or pending rows) as the generation's ``kind`` file; None if empty."""
        if len(ids) == 0:
            return None
        rel = f"ids/{self.prefix}-{kind}.parquet"
        if isinstance(ids, pl.DataFrame):
            table = ids.to_arrow().cast(_PENDING)
        else:
            table = pa.table({"doc_id": ids.cast(pl.Int64).to_arrow()}).cast(_IDS)
        self._write(table, rel)
        return rel


class DecisionStore:
    """One rule's stored decisions in a dataset: ``DATASET/decisions/<fingerprint>/``.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> s = DecisionStore(store(tempfile.mkdtemp()), "0123456789abcdef")
    >>> s.latest() is None, s.root.name
    (True, '0123456789abcdef')
    """

    def __init__(self, dataset: Store, fingerprint: str) -> None:
        self.dataset = dataset
        self.fingerprint = fingerprint
        self.root = dataset.child(DECISIONS, fingerprint)

    # --- records --------------------------------------------------------------------

    def records(self) -> list[str]:
        """The names of the generation records, oldest first."""
        names = self.root.child(GENERATIONS).names()
        return sorted(n for n in names if n.endswith(".json") and n[:-5].isdigit())

    def latest(self) -> dict[str, Any] | None:
        """The newest generation's record; None when the store was never written."""
        names = self.records()
        if not names:
            return None
        target = self.root.child(GENERATIONS, names[-1])
        try:
            record = orjson.loads(target.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise DatasetError(
                hint(
                    f"the decisions record {target.uri} is not valid JSON ({exc}).",
                    f"delete the folder {self.root.uri}: the next refresh decides it again.",
                )
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("chain"), list):
            raise DatasetError(
                hint(
                    f"the decisions record {target.uri} holds no chain of parts.",
                    f"delete the folder {self.root.uri}: the next refresh decides it again.",
                )
            )
        return record

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's lock (one refresh at a time), its folders made, leftovers removed."""
        for name in ("", GENERATIONS, "parts", "ids"):
            (self.root.child(name) if name else self.root).mkdir()
        with locked(self.root):
            self.remove_unlisted(self.latest())
            yield

    def start(self) -> Generation:
        """A new generation, numbered after every record written."""
        names = self.records()
        return Generation(self, int(names[-1][:-5]) + 1 if names else 1)

    def commit(
        self,
        gen: Generation,
        previous: dict[str, Any] | None,
        superseded: pl.Series | None,
        meta: dict[str, Any],
    ) -> dict[str, Any]:
        """Write ``gen``'s ids files, then its record: the generation becomes the store's.

        ``previous`` is the record the generation follows (None: it starts
        a new chain, every earlier row replaced); ``superseded`` the doc_ids
        whose rows in ``previous``'s chain it replaces; ``meta`` the fields
        the caller keeps (``dataset_seq``, ``as_of``, ``rule``, ``rows``, ...).
        """
        pending = pl.concat([_NO_PENDING, *gen.pending]).unique("doc_id").sort("doc_id")
        entry = {
            "parts": gen.parts,
            "rows": gen.rows,
            "superseded": None if superseded is None else gen.ids_file(superseded, "superseded"),
            "pending": gen.ids_file(pending, "pending"),
        }
        entry["files"] = gen.files  # after the ids files: every file the entry lists
        chain = [] if previous is None else list(previous["chain"])
        record = {
            "generation": gen.number,
            "fingerprint": self.fingerprint,
            **meta,
            "committed_at": datetime.now(UTC).isoformat(),
            "chain": [*chain, entry],
        }
        data = orjson.dumps(record, option=orjson.OPT_INDENT_2)
        target = self.root.child(GENERATIONS, f"{gen.number:08d}.json")
        if not target.create_exclusive(data):
            raise DatasetError(
                hint(
                    f"generation {gen.number} of {self.root.uri} was written by another refresh.",
                    "run the refresh again.",
                )
            )
        return record

    def fold(self, record: dict[str, Any], start: int) -> dict[str, Any]:
        """Write the chain's entries from ``start`` on as one entry: a new generation.

        The live rows of those entries are rewritten (a part per part read,
        so memory stays that of a part), their ``superseded`` ids joined
        (they concern the entries before ``start``; none when ``start`` is
        0) and their live ``pending`` ids kept. The rows the store gives are
        the same; reading them costs one entry's files and filters instead
        of many. Written like a refresh's generation: files first, the
        record last; a fold killed at any point leaves the store as it was.
        """
        chain = record["chain"]
        later = self._later_superseded(record)
        self.check(record, "parts")
        gen = self.start()
        for entry, dead in zip(chain[start:], later[start:], strict=True):
            for part in entry["parts"]:
                rows = pl.read_parquet(
                    self.root.child(part).uri, storage_options=self.root.storage_options()
                )
                gen.add(rows.filter(~pl.col("doc_id").is_in(dead.implode())), _NO_PENDING)
        ids = [self._ids(e.get("superseded")) for e in chain[start:]] if start else []
        superseded = pl.concat([_NONE, *ids]).unique().sort()
        # the live pending rows of those entries: a later entry's ids only concern earlier ones
        gen.pending = [self.pending({"chain": chain[start:]})]
        meta = {k: v for k, v in record.items() if k not in ("generation", "chain", "committed_at")}
        previous = {**record, "chain": chain[:start]}
        return self.commit(gen, previous, superseded if start else None, {**meta, "folded": True})

    # --- reading --------------------------------------------------------------------

    def _ids(self, rel: str | None) -> pl.Series:
        if rel is None:
            return _NONE
        return pl.read_parquet(
            self.root.child(rel).uri, storage_options=self.root.storage_options()
        ).get_column("doc_id")

    def check(self, record: dict[str, Any], kind: str) -> None:
        """Raise the one-line error on the first ``kind`` file of ``record`` that it does not match.

        ``kind``: ``parts``, ``superseded`` or ``pending``. Every read of the
        store goes through here first for the files it opens
        (:mod:`~ocp_analytics.store.read_check`): each hashed once a
        process, against the bytes and checksum its record keeps; a refresh
        that reads the ids files hashes no part.
        """
        folder = f"{DECISIONS}/{self.fingerprint}"
        wanted = set()
        for entry in record["chain"]:
            listed = entry.get(kind)
            wanted |= set(listed if isinstance(listed, list) else [listed])
        found = first_damaged(self.root, [e for e in file_entries(record) if e.file in wanted])
        if found is not None:
            entry, problem = found
            damage = Damage(f"{folder}/{entry.file}", f"{problem} ({about(record)})", DECISIONS)
            raise damage_error(str(self.dataset), [damage], "decisions store file")

    def _later_superseded(self, record: dict[str, Any]) -> list[pl.Series]:
        """For each chain entry, the doc_ids some later entry supersedes (files checked first)."""
        self.check(record, "superseded")
        chain = record["chain"]
        later: list[pl.Series] = [_NONE] * len(chain)
        acc = _NONE
        for i in range(len(chain) - 1, -1, -1):
            later[i] = acc
            acc = pl.concat([acc, self._ids(chain[i].get("superseded"))])
        return later

    def scan(self, record: dict[str, Any]) -> pl.LazyFrame:
        """The live rows of ``record`` (DECISIONS columns), lazily (its parts checked first)."""
        frames = self.scans(record)
        if not frames:
            return pl.DataFrame(DECISIONS_SCHEMA.empty_table()).lazy()
        return pl.concat(frames)

    def scans(self, record: dict[str, Any]) -> list[pl.LazyFrame]:
        """The live rows of each chain entry with rows, oldest first (its parts checked first).

        Together, the rows of :meth:`scan`.
        """
        return [
            rows.filter(~pl.col("doc_id").is_in(later.implode())) if len(later) else rows
            for rows, later in self.entries(record)
        ]

    def entries(self, record: dict[str, Any]) -> list[tuple[pl.LazyFrame, pl.Series]]:
        """Each chain entry with rows: all its rows, and the doc_ids later entries supersede.

        A row of an entry is live unless its ``doc_id`` is among the second
        (:meth:`scans` filters them). The parts are checked first.
        """
        self.check(record, "parts")
        out = []
        for entry, later in zip(record["chain"], self._later_superseded(record), strict=True):
            if not entry["parts"]:
                continue
            rows = pl.scan_parquet(
                [self.root.child(p).uri for p in entry["parts"]],
                storage_options=self.root.storage_options(),
                glob=False,
            )
            out.append((rows, later))
        return out

    def _pending(self, rel: str | None, due: datetime | None = None) -> pl.DataFrame:
        """A pending file's rows (with ``due``, those whose ``changes_at`` has come by then).

        ``changes_at`` is null where the file has none (written before it
        was kept): such a row is always due.
        """
        if rel is None:
            return _NO_PENDING
        rows = pl.scan_parquet(
            self.root.child(rel).uri, storage_options=self.root.storage_options(), glob=False
        )
        if "changes_at" not in rows.collect_schema().names():
            rows = rows.with_columns(pl.lit(None).alias("changes_at"))
        rows = rows.select(_PENDING.names).cast(_NO_PENDING.schema)
        if due is not None:
            at = pl.col("changes_at")
            rows = rows.filter(at.is_null() | (at <= pl.lit(due)))
        return rows.collect()

    def pending(self, record: dict[str, Any], due: datetime | None = None) -> pl.DataFrame:
        """``doc_id, changes_at`` of the live rows that were not final when decided.

        With ``due``, only those that may read otherwise by then (``changes_at``
        at or before it, or unknown): the rows a refresh at ``due`` decides again.
        """
        self.check(record, "pending")
        out = [
            rows.filter(~pl.col("doc_id").is_in(later.implode()))
            for entry, later in zip(record["chain"], self._later_superseded(record), strict=True)
            if len(rows := self._pending(entry.get("pending"), due))
        ]
        return pl.concat([_NO_PENDING, *out]).unique("doc_id").sort("doc_id")

    # --- what no record lists ----------------------------------------------------------

    def remove_unlisted(self, record: dict[str, Any] | None) -> int:
        """Delete files the newest record does not list (a killed refresh's, a replaced chain's).

        Records before it are kept (they are small) but their rows may be
        gone: only the newest record is read. Returns the files deleted.
        """
        listed = {rel for _, rel in chain_files(record)} if record is not None else set()
        removed = 0
        for folder in ("parts", "ids"):
            for name in self.root.child(folder).names():
                if f"{folder}/{name}" not in listed:
                    with contextlib.suppress(OSError):
                        self.root.child(folder, name).delete()
                        removed += 1
        for name in self.root.child(GENERATIONS).names():
            if name.endswith(".tmp"):
                self.root.child(GENERATIONS, name).delete()
        return removed

    # --- eviction --------------------------------------------------------------------

    def evict(self) -> int:
        """Delete the store's records, the newest last, then its files; the bytes freed.

        The caller holds the store's lock. Records go oldest first, so until
        the newest goes the store reads as its newest record says; from then
        on it has no record (a reader decides from raw, a refresh starts
        again from raw and removes what is left). The folder and its lock
        file stay: a refresh starting meanwhile takes the same lock.
        """
        freed = 0
        for name in self.records():
            target = self.root.child(GENERATIONS, name)
            freed += target.size()
            target.delete()
        for folder in ("parts", "ids", GENERATIONS):
            for target in list(self.root.child(folder).files()):
                freed += target.size()
                target.delete()
        return freed


def chain_files(record: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Each file a store's record lists (parts, superseded and pending ids), with its entry.

    Raises on a chain of the wrong shapes (``verify`` names such a record).

    Examples
    --------
    >>> r = {"chain": [{"parts": ["parts/a.parquet"], "superseded": None, "pending": "ids/p"}]}
    >>> [rel for _, rel in chain_files(r)]
    ['parts/a.parquet', 'ids/p']
    """
    for entry in record["chain"]:
        listed = [*(entry.get("parts") or []), entry.get("superseded"), entry.get("pending")]
        yield from ((entry, rel) for rel in listed if isinstance(rel, str))


def file_entries(record: dict[str, Any], folder: str = "") -> list[PartEntry]:
    """What ``record`` says of each file it lists: bytes, rows, checksums (``None``: not said).

    ``file`` is relative to the store, or under ``folder`` when given.
    Raises on a chain of the wrong shapes, as :func:`chain_files`.

    Examples
    --------
    >>> r = {"chain": [{"parts": ["parts/a.parquet"], "pending": "ids/p",
    ...                 "files": [{"file": "parts/a.parquet", "bytes": 9, "rows": 2}]}]}
    >>> [(e.file, e.size, e.rows) for e in file_entries(r, "decisions/f")]
    [('decisions/f/parts/a.parquet', 9, 2), ('decisions/f/ids/p', None, None)]
    """
    out = []
    for entry, rel in chain_files(record):
        described = [f for f in entry.get("files") or [] if isinstance(f, dict)]
        said = next((f for f in described if f.get("file") == rel), {})
        size, rows, sha, fast = (said.get(k) for k in ("bytes", "rows", "sha256", "xxh3"))
        out.append(
            PartEntry(
                f"{folder}/{rel}" if folder else rel,
                DECISIONS,
                size if isinstance(size, int) else None,
                rows if isinstance(rows, int) else None,
                sha if isinstance(sha, str) else None,
                xxh3=fast if isinstance(fast, str) else None,
            )
        )
    return out


def about(record: dict[str, Any]) -> str:
    """What a store's damaged file belongs to, and what that costs: said after its problem.

    Examples
    --------
    >>> print(about({"rule": {"name": "tests"}}))
    the decisions store of rule 'tests': `verify --repair` deletes it, the next refresh builds it again
    """  # noqa: E501
    rule: Any = record.get("rule")
    label = str(rule.get("name", "recorded")) if isinstance(rule, dict) else "?"
    return f"the decisions store of rule {label!r}{REPAIR_STORE}"


def _written_at(record: dict[str, Any] | None) -> datetime | None:
    text = None if record is None else record.get("committed_at")
    if not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:  # not a time: the record is not one a refresh wrote
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def evict_stores(dataset: Store, cutoff: datetime, newest: int) -> tuple[int, int]:
    """Delete the decisions stores no refresh has written since ``cutoff``: (stores, bytes).

    A store is a cache of what a full evaluation gives: one deleted is
    decided from raw by its readers, and built again by its next refresh. A
    store whose newest generation was written before ``cutoff`` from a
    commit before the dataset's ``newest`` (the rules of a rule set no
    longer refreshed: a refresh after a later commit writes a generation),
    or with files but no readable record (left by a killed refresh or
    eviction), is deleted (:meth:`DecisionStore.evict`); one a refresh
    holds is left alone.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> evict_stores(store(tempfile.mkdtemp()), datetime.now(UTC), 0)
    (0, 0)
    """
    count = freed = 0
    for name in sorted(dataset.child(DECISIONS).names()):
        st = DecisionStore(dataset, name)
        if not st.root.is_dir():
            continue
        try:
            with locked(st.root):
                try:
                    record = st.latest()
                except DatasetError:  # an unreadable record: the store is unusable
                    record = None
                written = _written_at(record)
                current = record is not None and record.get("dataset_seq") == newest
                if written is not None and (written >= cutoff or current):
                    continue
                if size := st.evict():
                    count, freed = count + 1, freed + size
        except DatasetError:  # a refresh is writing it: it is being kept
            continue
    return count, freed
