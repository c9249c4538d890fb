"""The manifest of a commit: one entry per Parquet part, saying what was written.

Each commit record lists, beside ``files``, a ``parts`` array with one entry
per part, in the order the parts were written::

    "parts": [
      {"file": "runs/00000001-a139c0e4-00000.parquet", "table": "runs",
       "size": 8582, "rows": 32, "sha256": "5f1d…", "xxh3": "9c0e…",
       "doc_id": [4294967296, 4294967327],
       "time": ["2026-01-05T09:12:00.000000Z", "2026-11-30T17:45:10.250000Z"]}
    ]

- ``size``: the file's bytes; ``rows``: its row count; ``sha256``: the
  SHA-256 of the file's bytes, in hex (what ``verify`` checks); ``xxh3``:
  their XXH3-128, in hex (what every read checks first: about 3x faster
  to compute; store/read_check.py).
- ``doc_id``: the smallest and largest ``doc_id`` (tables that hold one);
  ``[]`` when no row has one.
- ``time`` (``runs`` parts): the smallest and largest run time (``ended_at``,
  else ``started_at``: :func:`ocp_analytics.engine.timeaxis.run_time`), UTC,
  ISO 8601 with microseconds; ``[]`` when no run of the part has a time (such
  runs lie outside every window).

A key that is absent means *unknown*: records written before the manifest
have no ``parts`` at all, and a reader must then open the part to learn what
it holds. Entries are computed where a part is written, from the Arrow table
and the encoded bytes (:func:`describe_part`): nothing is read back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import xxhash

__all__ = [
    "PartEntry",
    "describe_part",
    "record_entries",
    "replaced_files",
    "table_entries",
    "tables_entries",
]

# The columns whose first non-null value is a table's time, by table.
TIME_COLUMNS = {"runs": ("ended_at", "started_at")}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Span = tuple[int, int] | tuple[()]
TimeSpan = tuple[datetime, datetime] | tuple[()]


@dataclass(frozen=True)
class PartEntry:
    """What a commit record says about one part; ``None`` where it says nothing.

    ``doc_id`` and ``time`` are closed ranges ``(lo, hi)``, ``()`` when no row
    has a value, ``None`` when unknown.

    Examples
    --------
    >>> e = PartEntry.from_json({"file": "runs/a.parquet", "table": "runs", "rows": 3,
    ...                          "time": ["2026-05-01T00:00:00.000000Z",
    ...                                   "2026-05-03T00:00:00.000000Z"]})
    >>> e.rows, e.size, e.time[0].isoformat()
    (3, None, '2026-05-01T00:00:00+00:00')
    >>> e.to_json()["time"]
    ['2026-05-01T00:00:00.000000Z', '2026-05-03T00:00:00.000000Z']
    """

    file: str  # relative to the dataset root: "TABLE/NAME.parquet"
    table: str
    size: int | None = None
    rows: int | None = None
    sha256: str | None = None
    doc_id: Span | None = None
    time: TimeSpan | None = None
    # signals parts: each distinct "kind:name" of their verdicts and scores (None: unknown)
    names: tuple[str, ...] | None = None
    # XXH3-128 of the bytes, in hex: what readers check (verify checks the SHA-256)
    xxh3: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as a commit record holds it (unknown fields left out)."""
        out: dict[str, Any] = {"file": self.file, "table": self.table}
        for key in ("size", "rows", "sha256", "xxh3"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.doc_id is not None:
            out["doc_id"] = list(self.doc_id)
        if self.time is not None:
            out["time"] = [_instant_text(t) for t in self.time]
        if self.names is not None:
            out["names"] = list(self.names)
        return out

    @classmethod
    def from_json(cls, value: Any) -> PartEntry:
        """The entry of a commit record's ``parts``; :class:`ValueError` names a bad field."""
        if not isinstance(value, Mapping):
            raise ValueError(f"a part entry is {type(value).__name__}, not an object")
        file, table = value.get("file"), value.get("table")
        if not isinstance(file, str) or not isinstance(table, str):
            raise ValueError("a part entry without a text 'file' and 'table'")
        size, rows = _count(value, "size", file), _count(value, "rows", file)
        sha = value.get("sha256")
        if sha is not None and not (isinstance(sha, str) and len(sha) == 64):
            raise ValueError(f"{file}: 'sha256' is not 64 hex digits")
        xxh3 = value.get("xxh3")
        if xxh3 is not None and not (isinstance(xxh3, str) and len(xxh3) == 32):
            raise ValueError(f"{file}: 'xxh3' is not 32 hex digits")
        doc_id = _span(value.get("doc_id"), "doc_id", file)
        times = _span(value.get("time"), "time", file)
        time = None if times is None else tuple(_parse_instant(t, file) for t in times)
        for key, span in (("doc_id", doc_id), ("time", time)):
            if span and span[0] > span[1]:
                raise ValueError(f"{file}: {key!r} has its low end above its high end")
        names = value.get("names")
        if names is not None and not (
            isinstance(names, list) and all(isinstance(n, str) for n in names)
        ):
            raise ValueError(f"{file}: 'names' is not a list of texts")
        held = None if names is None else tuple(names)
        return cls(file, table, size, rows, sha, doc_id, time, held, xxh3)  # type: ignore[arg-type]

    def may_hold_doc_ids(self, lo: int, hi: int) -> bool:
        """Whether the part may hold a row with ``lo <= doc_id <= hi`` (unknown: True).

        Examples
        --------
        >>> e = PartEntry("signals/a.parquet", "signals", doc_id=(10, 20))
        >>> e.may_hold_doc_ids(0, 9), e.may_hold_doc_ids(20, 30)
        (False, True)
        >>> PartEntry("signals/b.parquet", "signals").may_hold_doc_ids(0, 1)  # unknown
        True
        """
        if self.doc_id is None:
            return True
        if not self.doc_id:
            return False
        first, last = self.doc_id
        return first <= hi and last >= lo

    def may_hold_time(self, since: datetime | None, until: datetime | None) -> bool:
        """Whether the part may hold a run with ``since <= time < until`` (unknown: True).

        Examples
        --------
        >>> day = datetime(2026, 5, 1, tzinfo=UTC)
        >>> e = PartEntry("runs/a.parquet", "runs", time=(day, day + timedelta(days=2)))
        >>> e.may_hold_time(day + timedelta(days=3), None), e.may_hold_time(None, day)
        (False, False)
        >>> e.may_hold_time(day + timedelta(days=2), None)
        True
        >>> PartEntry("runs/b.parquet", "runs").may_hold_time(day, None)  # unknown
        True
        """
        if self.time is None:
            return True
        if not self.time:
            return False
        lo, hi = self.time
        return (since is None or hi >= since) and (until is None or lo < until)


def describe_part(
    table: pa.Table, data: bytes | memoryview | pa.Buffer, name: str, file: str
) -> PartEntry:
    """The manifest entry of ``table`` written as ``data`` (its Parquet bytes) to ``file``.

    ``name`` is the dataset table the part belongs to.

    Examples
    --------
    >>> t = pa.table({"doc_id": [7, 3, 5]})
    >>> e = describe_part(t, b"PAR1", "rules", "rules/x.parquet")
    >>> e.size, e.rows, e.doc_id, e.time, e.sha256[:12]
    (4, 3, (3, 7), None, 'fbc62d3b5113')
    """
    doc_id = _min_max(table["doc_id"]) if "doc_id" in table.column_names else None
    time: TimeSpan | None = None
    if name in TIME_COLUMNS:
        column = pc.coalesce(*(table[c] for c in TIME_COLUMNS[name]))
        time = _as_instants(_min_max(column.cast(pa.int64())))
    view = memoryview(data)
    sha, fast = hashlib.sha256(view).hexdigest(), xxhash.xxh3_128_hexdigest(view)
    held = signal_names(table) if name == "signals" else None
    return PartEntry(file, name, view.nbytes, table.num_rows, sha, doc_id, time, held, fast)


def names_held(entries: list[PartEntry], files: list[str]) -> set[tuple[str, str]] | None:
    """Every (kind, name) the ``signals`` parts ``files`` hold, from their ``entries``.

    ``None`` when one of them lists no names (written before entries did,
    or holding more than :data:`MAX_NAMES`).

    Examples
    --------
    >>> e = [PartEntry("signals/a", "signals", names=("verdict:tests",)), PartEntry("signals/b", "signals")]
    >>> names_held(e, ["signals/a"]), names_held(e, ["signals/a", "signals/b"])
    ({('verdict', 'tests')}, None)
    """  # noqa: E501
    read = set(files)
    held: set[tuple[str, str]] = set()
    for entry in entries:
        if entry.file not in read:
            continue
        if entry.names is None:
            return None
        for text in entry.names:
            kind, _, name = text.partition(":")
            held.add((kind, name))
    return held


#: Past this many distinct names a signals part's entry lists none (readers then read them).
MAX_NAMES = 512
_NAMED_KINDS = ("verdict", "score")


def signal_names(table: pa.Table) -> tuple[str, ...] | None:
    """Each distinct ``kind:name`` of the verdicts and scores of a ``signals`` part, sorted.

    What a reader needs to know that no run of the part carries a name a
    rule mentions without reading the part (``engine.known``); ``None`` when
    there are more than :data:`MAX_NAMES`.

    Examples
    --------
    >>> t = pa.table({"kind": ["verdict", "score", "event", "verdict"],
    ...               "name": ["tests", "runtime_s", "revert", "tests"]})
    >>> signal_names(t)
    ('score:runtime_s', 'verdict:tests')
    """
    if "kind" not in table.column_names or "name" not in table.column_names:
        return None
    kind, name = (table[c].cast(pa.string()) for c in ("kind", "name"))
    named = pc.and_(pc.is_in(kind, pa.array(_NAMED_KINDS)), pc.is_valid(name))
    text = pc.binary_join_element_wise(kind.filter(named), name.filter(named), ":")
    distinct = pc.unique(text).to_pylist()
    return None if len(distinct) > MAX_NAMES else tuple(sorted(distinct))


def record_entries(record: Mapping[str, Any]) -> list[PartEntry]:
    """One entry per file a commit record lists, in its order; unknown fields ``None``.

    A record without ``parts`` (written before the manifest), or an entry that
    cannot be read, gives entries holding only the file and its table.

    Examples
    --------
    >>> r = {"files": {"runs": ["runs/a.parquet"], "signals": ["signals/b.parquet"]},
    ...      "parts": [{"file": "runs/a.parquet", "table": "runs", "rows": 2}]}
    >>> [(e.file, e.rows) for e in record_entries(r)]
    [('runs/a.parquet', 2), ('signals/b.parquet', None)]
    """
    known: dict[tuple[str, str], PartEntry] = {}
    parts = record.get("parts")
    for value in parts if isinstance(parts, list) else ():
        try:
            entry = PartEntry.from_json(value)
        except ValueError:
            continue
        known[entry.table, entry.file] = entry
    files = record.get("files")
    out = []
    for table, listed in (files if isinstance(files, Mapping) else {}).items():
        for file in listed if isinstance(listed, list) else ():
            key = (str(table), str(file))
            out.append(known.get(key) or PartEntry(key[1], key[0]))
    return out


def table_entries(records: list[dict[str, Any]], table: str) -> list[PartEntry]:
    """The entries of a table's live parts as of the last of ``records``, in reading order.

    A record's parts are added after those of the records before it; a
    record that ``replaces`` parts (a compaction: :func:`replaced_files`)
    drops them and puts its own parts where the first of them stood, so the
    parts keep the order of the batches their rows came from.

    Examples
    --------
    >>> r = {"files": {"runs": ["runs/a.parquet"], "signals": ["signals/b.parquet"]}}
    >>> [e.file for e in table_entries([r, r], "runs")]
    ['runs/a.parquet', 'runs/a.parquet']
    >>> c = {"files": {"runs": ["runs/c.parquet"]}, "replaces": {"runs": ["runs/a.parquet"]}}
    >>> d = {"files": {"runs": ["runs/d.parquet"]}}
    >>> [e.file for e in table_entries([r, d, c], "runs")]
    ['runs/c.parquet', 'runs/d.parquet']
    """
    return tables_entries(records).get(table, [])


def tables_entries(
    records: list[dict[str, Any]], parsed: list[list[PartEntry]] | None = None
) -> dict[str, list[PartEntry]]:
    """:func:`table_entries` of every table, each record read once.

    ``parsed``: each record's :func:`record_entries`, read already.

    Examples
    --------
    >>> r = {"files": {"runs": ["runs/a.parquet"], "signals": ["signals/b.parquet"]}}
    >>> {t: [e.file for e in es] for t, es in tables_entries([r]).items()}
    {'runs': ['runs/a.parquet'], 'signals': ['signals/b.parquet']}
    """
    out: dict[str, list[PartEntry]] = {}
    for k, r in enumerate(records):
        new: dict[str, list[PartEntry]] = {}
        for e in record_entries(r) if parsed is None else parsed[k]:
            new.setdefault(e.table, []).append(e)
        replaced = replaced_files(r)
        for table in [*new, *(t for t in replaced if t not in new)]:
            have = out.setdefault(table, [])
            gone = set(replaced.get(table, ()))
            if not gone:
                have.extend(new.get(table, ()))
                continue
            at = next((i for i, e in enumerate(have) if e.file in gone), len(have))
            out[table] = [
                *(e for e in have[:at] if e.file not in gone),
                *new.get(table, ()),
                *(e for e in have[at:] if e.file not in gone),
            ]
    return out


def replaced_files(record: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per table, the parts a record replaces from its own ``seq`` on (``{}``: none).

    A compaction's record lists under ``replaces`` the parts its own parts
    rewrite: snapshots before it still read them, snapshots from it on read
    its parts instead. Anything that is not a table -> list of text is
    ignored here (``verify`` names it).

    Examples
    --------
    >>> replaced_files({"replaces": {"runs": ["runs/a.parquet"], "x": 3}})
    {'runs': ['runs/a.parquet']}
    """
    value = record.get("replaces")
    if not isinstance(value, Mapping):
        return {}
    return {
        str(t): [str(f) for f in fs]
        for t, fs in value.items()
        if isinstance(fs, list) and all(isinstance(f, str) for f in fs)
    }


# --- the values of an entry ------------------------------------------------------------


def _min_max(column: pa.ChunkedArray | pa.Array) -> Span:
    found = pc.min_max(column).as_py()
    return () if found["min"] is None else (int(found["min"]), int(found["max"]))


def _as_instants(span: Span) -> TimeSpan | None:
    """Microseconds since the epoch as instants; unknown (None) past ``datetime``'s range."""
    try:
        return tuple(_EPOCH + timedelta(microseconds=us) for us in span)  # type: ignore[return-value]
    except OverflowError:
        return None


def _instant_text(t: datetime) -> str:
    """An instant as the manifest writes it: UTC, microseconds, ``Z``.

    Examples
    --------
    >>> _instant_text(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC))
    '0999-01-02T03:04:05.000000Z'
    """
    return t.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _parse_instant(value: Any, file: str) -> datetime:
    if isinstance(value, str):
        try:
            t = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if t.tzinfo is not None:
                return t.astimezone(UTC)
    raise ValueError(f"{file}: 'time' holds {value!r}, not an ISO 8601 instant in UTC")


def _count(value: Mapping[str, Any], key: str, file: str) -> int | None:
    n = value.get(key)
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{file}: {key!r} is {n!r}, not a count")
    return n


def _span(value: Any, key: str, file: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) not in (0, 2):
        raise ValueError(f"{file}: {key!r} is {value!r}, not [lo, hi] or []")
    if key == "doc_id" and any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise ValueError(f"{file}: 'doc_id' is {value!r}, not two integers")
    return tuple(value)
