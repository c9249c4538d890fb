"""The integrity of a dataset: every listed part against its manifest entry.

:func:`verify` checks each commit record's shape and each part its records
list (exists, size, SHA-256, a readable Parquet footer, row count), and
returns one :class:`Damage` per damaged file, naming the batch and the
sources that wrote it. Parts of records written before the manifest
(``store/manifest.py``) are checked for what such records allow: existence
and a readable footer.

:func:`damaged_parts` is for the other commands: around a read, it turns the
error polars, pyarrow or DuckDB raise on a damaged part (a ``ComputeError``,
``ArrowInvalid``, ``OSError``, a Rust ``PanicException``), which seldom names
the file, into a one-line :class:`~ocp_analytics.exceptions.DatasetError`
that does, found by the same checks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from polars.exceptions import ComputeError, PanicException

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, OcpAnalyticsError, SqlSetupError
from ocp_analytics.store import empty_tables
from ocp_analytics.store.commits import BATCHES, oldest_readable, record_names
from ocp_analytics.store.damage import REPAIR_STORE, Damage, blame, damage_error, has_path
from ocp_analytics.store.dataset import open_existing
from ocp_analytics.store.decisions import DECISIONS, DecisionStore, about, file_entries
from ocp_analytics.store.empty_tables import SCHEMA_DIR
from ocp_analytics.store.maintenance import files_read_from
from ocp_analytics.store.manifest import PartEntry, record_entries
from ocp_analytics.store.read_check import FLIPPED, file_sha256, wrong_size
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from ocp_analytics._typing import StoreLike

__all__ = [
    "Checked",
    "Damage",
    "check",
    "damaged_parts",
    "part_problem",
    "record_problems",
    "verify",
]

_WORKERS = 4  # parts checked at once (hashing releases the GIL; remote reads wait)


@dataclass(frozen=True)
class Checked:
    """What :func:`check` read, and the damage it found.

    ``parts``, ``bytes`` and ``rows`` count the listed parts, the bytes of
    those found and the rows their footers hold.
    """

    damages: list[Damage]
    records: int
    parts: int
    bytes: int
    rows: int
    checksums: bool
    store_files: int = 0  # the files of the decisions stores' newest records

    def __str__(self) -> str:
        what = "sizes, SHA-256, footers and rows" if self.checksums else "sizes, footers and rows"
        stores = f" and {_count(n, 'decisions store file')}" if (n := self.store_files) else ""
        return (
            f"{_count(self.records, 'commit record')}, {_count(self.parts, 'part')}{stores} "
            f"({self.bytes:,} bytes, {_count(self.rows, 'row')}) checked: {what}"
        )


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def verify(dataset: StoreLike, *, checksums: bool = True) -> list[Damage]:
    """Check every commit record and every part it lists; one :class:`Damage` per damaged file.

    Parameters
    ----------
    dataset
        The dataset: a local path, an ``s3://`` or ``abfss://`` URI, or a
        :class:`~ocp_analytics.store.storage.Store`.
    checksums
        Hash every part (reads every byte; ``False`` reads sizes and footers only).

    Returns
    -------
    list[Damage]
        Empty when the dataset is whole: records first, then parts, in commit order.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile, pathlib
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> verify(out)
    []
    >>> part = next(pathlib.Path(out, "signals").glob("*.parquet"))
    >>> _ = part.write_bytes(part.read_bytes()[:100])
    >>> [d.problem for d in verify(out)]
    ['100 bytes, the manifest says 3648']
    """
    return check(dataset, checksums=checksums).damages


def check(dataset: StoreLike, *, checksums: bool = True) -> Checked:
    """:func:`verify`, with what was read: records, parts, their bytes and rows.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> print(check(out))
    1 commit record, 5 parts (16,653 bytes, 6 rows) checked: sizes, SHA-256, footers and rows
    """
    root = open_existing(dataset)
    damages: list[Damage] = []
    checks: list[tuple[PartEntry, Damage]] = []  # each part, with its damage but the problem
    records = 0
    found_records = list(_records(root))
    gone = _vacuumed(root, [r for _, r, _ in found_records])
    for name, record, problems in found_records:
        records += record is not None
        wrote = blame(record, f"{BATCHES}/{name}", name)
        if problems:
            damages.append(_with(wrote, "; ".join(problems)))
        if isinstance(record, dict):
            entries = [e for e in record_entries(record) if e.file not in gone]
            checks += [(e, _with(wrote, "", e)) for e in entries]
    stored, unreadable = _store_files(root)
    checks += stored
    with ThreadPoolExecutor(_WORKERS) as pool:
        found = list(pool.map(lambda e: _inspect(root, e, checksums), [e for e, _ in checks]))
    damages += [_with(d, p) for (_, d), (p, _, _) in zip(checks, found, strict=True) if p]
    # the dataset's own damage first, the stores' after (readers name the first)
    own = [d for d in damages if d.table != DECISIONS]
    empties = [
        Damage(f, f"unreadable Parquet footer ({_first_line(exc)}){_REWRITE}", SCHEMA_DIR)
        for f, exc in empty_tables.unreadable(root)
    ]
    damages = own + empties + unreadable + [d for d in damages if d.table == DECISIONS]
    size, rows = sum(f[1] for f in found), sum(f[2] for f in found)
    return Checked(damages, records, len(checks) - len(stored), size, rows, checksums, len(stored))


# --- the decisions stores --------------------------------------------------------------


def _store_files(root: Store) -> tuple[list[tuple[PartEntry, Damage]], list[Damage]]:
    """Every file the decisions stores' newest records list, and the records that cannot be read.

    A store is read through its newest record only (``store/decisions.py``):
    its chain's parts and ids files are checked like a dataset's parts,
    against the bytes, rows and SHA-256 the record keeps (records written
    before these were kept: existence, footer). A damaged store loses
    nothing: ``verify --repair`` deletes it and the next refresh builds it.
    """
    checks: list[tuple[PartEntry, Damage]] = []
    unreadable: list[Damage] = []
    for name in sorted(root.child(DECISIONS).names()):
        st = DecisionStore(root, name)
        folder = f"{DECISIONS}/{name}"
        if not st.root.is_dir():
            continue
        try:
            record = st.latest()
            found = [] if record is None else _store_entries(record, folder)
        except (DatasetError, OSError, ValueError, TypeError, AttributeError, KeyError):
            # not JSON, no chain, or a chain of the wrong shapes: the store cannot be read
            names = st.records()
            newest = f"{folder}/_generations/{names[-1]}" if names else folder
            about = f"the decisions store of a rule{REPAIR_STORE}"
            unreadable.append(Damage(newest, f"not a readable record ({about})", DECISIONS))
            continue
        checks += found
    return checks, unreadable


def _store_entries(record: dict[str, Any], folder: str) -> list[tuple[PartEntry, Damage]]:
    """Each file a store's record lists, with what the record says of it; raises on odd shapes."""
    said = about(record)
    return [(part, Damage(part.file, said, DECISIONS)) for part in file_entries(record, folder)]


def _vacuumed(root: Store, records: list[Any]) -> set[str]:
    """The parts only snapshots older than the last vacuum read: deleted, not checked."""
    oldest = oldest_readable(root)
    if oldest is None:
        return set()
    whole = [r for r in records if isinstance(r, dict) and not record_problems(r, "")]
    listed = {e.file for r in whole for e in record_entries(r)}
    return listed - files_read_from(whole, oldest[0])


def _records(root: Store) -> Iterator[tuple[str, Any, list[str]]]:
    """Each commit record's name, content (``None`` when unreadable) and shape problems.

    Besides each record's own shape: a ``seq`` missing between two records (a
    deleted record), and a part listed by two records.
    """
    names = record_names(root)
    yield from _missing(root, names)
    listed: dict[str, str] = {}
    for name in names:
        try:
            record = orjson.loads(root.child(BATCHES, name).read_bytes())
        except orjson.JSONDecodeError as exc:
            yield name, None, [f"not valid JSON ({exc})"]
            continue
        problems = record_problems(record, name)
        for e in record_entries(record) if isinstance(record, dict) else ():
            if e.file in listed:
                problems.append(f"lists {e.file}, which {listed[e.file]} lists too")
            listed.setdefault(e.file, f"{BATCHES}/{name}")
        yield name, record, problems


def _missing(root: Store, names: list[str]) -> Iterator[tuple[str, Any, list[str]]]:
    """A record missing between two others: deleted (a writer never leaves a gap)."""
    seqs = {int(n[:-5]) for n in names if n[:-5].isdigit()}
    gaps = sorted(set(range(min(seqs, default=0), max(seqs, default=0))) - seqs)
    if not gaps:
        return
    on_disk = [n for t in S.TABLES for n in root.child(t).names() if n.endswith(".parquet")]
    for seq in gaps:
        parts = sum(1 for n in on_disk if n.startswith(f"{seq:08d}-"))
        problem = "missing, while records before and after it exist"
        yield f"{seq:08d}.json", None, [f"{problem}; {parts} of its parts are left unread"]


def record_problems(record: Any, name: str) -> list[str]:
    """What is wrong with the shape of a commit record named ``name``; empty when nothing.

    Examples
    --------
    >>> r = {"batch_id": "00000001-ab", "seq": 1, "committed_at": "2026-12-01T00:00:00+00:00",
    ...      "files": {"runs": ["runs/00000001-ab-00000.parquet"]}, "sources": [{"path": "a.json"}],
    ...      "parts": [{"file": "runs/00000001-ab-00000.parquet", "table": "runs", "rows": 3}]}
    >>> record_problems(r, "00000001.json")
    []
    >>> record_problems({**r, "seq": 2, "parts": []}, "00000001.json")
    ['seq is 2 in the record 00000001.json', 'runs/00000001-ab-00000.parquet has no manifest entry']
    """
    if not isinstance(record, dict):
        return [f"a JSON {type(record).__name__}, not an object"]
    problems = [p for key, want in _FIELDS.items() if (p := _field(record, key, want))]
    seq, stem = record.get("seq"), name.removesuffix(".json")
    if isinstance(seq, int) and stem.isdigit() and seq != int(stem):
        problems.append(f"seq is {seq} in the record {name}")
    files = record.get("files")
    if isinstance(files, dict):
        problems += _files_problems(files)
    for key in ("sources", "event_sources"):
        sources = record.get(key, [])
        if not isinstance(sources, list) or not all(has_path(s) for s in sources):
            problems.append(f"{key!r} is not a list of objects with a 'path'")
    if "parts" in record and isinstance(files, dict):
        problems += _parts_problems(record["parts"], files)
    if "replaces" in record:
        replaces = record["replaces"]
        if not isinstance(replaces, dict):
            problems.append(f"'replaces' is {type(replaces).__name__}, not an object")
        else:
            problems += [f"replaces {p}" for p in _files_problems(replaces)]
    return problems


# key -> the type a commit record holds under it (every record since the first has them)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "batch_id": str,
    "seq": int,
    "committed_at": str,
    "files": dict,
    "sources": list,
}


def _field(record: Mapping[str, Any], key: str, want: type | tuple[type, ...]) -> str | None:
    if key not in record:
        return f"no {key!r}"
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, want):
        return f"{key!r} is {type(value).__name__}, not {getattr(want, '__name__', want)}"
    return None


def _files_problems(files: Mapping[str, Any]) -> list[str]:
    problems = []
    for table, listed in files.items():
        if not isinstance(listed, list):
            problems.append(f"the files of {table!r} are not a list")
            continue
        for f in listed:
            if not (isinstance(f, str) and f.startswith(f"{table}/") and f.endswith(".parquet")):
                problems.append(f"{f!r} is not a Parquet file of the table {table!r}")
    return problems


def _parts_problems(parts: Any, files: Mapping[str, Any]) -> list[str]:
    if not isinstance(parts, list):
        return [f"'parts' is {type(parts).__name__}, not a list"]
    problems: list[str] = []
    entries: dict[str, PartEntry] = {}
    for value in parts:
        try:
            entry = PartEntry.from_json(value)
        except ValueError as exc:
            problems.append(f"a manifest entry is unreadable: {exc}")
            continue
        entries[entry.file] = entry
    listed = {f: t for t, fs in files.items() if isinstance(fs, list) for f in fs}
    for f, table in listed.items():
        if f not in entries:
            problems.append(f"{f} has no manifest entry")
        elif entries[f].table != table:
            said = entries[f].table
            problems.append(f"{f} is listed under {table!r}, its manifest entry says {said!r}")
    problems += [
        f"the manifest names {f}, which 'files' does not list" for f in entries.keys() - listed
    ]
    return problems


def _with(damage: Damage, problem: str, entry: PartEntry | None = None) -> Damage:
    file, table = (entry.file, entry.table) if entry else (damage.file, damage.table)
    if damage.problem and problem:  # a decisions store's file: what it is, after the problem
        problem = f"{problem} ({damage.problem})"
    return Damage(file, problem, table, damage.seq, damage.batch_id, damage.sources)


# --- one part ---------------------------------------------------------------------------


def part_problem(root: Store, entry: PartEntry, *, checksum: bool = True) -> str | None:
    """What is wrong with a part against its manifest entry; ``None`` when nothing.

    Checked in order, the first failure reported: the file exists, its size,
    its SHA-256 (when ``checksum`` and the entry has one), a readable Parquet
    footer, its row count. A field the entry lacks is not checked.

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> root = store(tempfile.mkdtemp())
    >>> part_problem(root, PartEntry("runs/a.parquet", "runs"))
    'missing'
    >>> root.child("runs").mkdir()
    >>> root.child("runs", "a.parquet").write_bytes(b"not Parquet")
    >>> part_problem(root, PartEntry("runs/a.parquet", "runs", size=11))  # doctest: +ELLIPSIS
    'unreadable Parquet footer (Parquet magic bytes not found in footer...)'
    """
    return _inspect(root, entry, checksum)[0]


def _inspect(root: Store, entry: PartEntry, checksum: bool) -> tuple[str | None, int, int]:
    """:func:`part_problem`, with the part's bytes and rows (0 where not read)."""
    target = root.child(entry.file)
    if not target.is_file():
        return "missing", 0, 0
    size = target.size()
    if entry.size is not None and size != entry.size:
        return wrong_size(size, entry.size), size, 0
    if checksum and entry.sha256 is not None and file_sha256(target) != entry.sha256:
        return FLIPPED, size, 0
    try:
        with target.open() as f:
            rows = pq.read_metadata(f).num_rows
    except (OSError, pa.ArrowException, ValueError) as exc:
        # ValueError: pyarrow decodes a column's name when it reads the footer, and
        # flipped bytes there raise UnicodeDecodeError, not an Arrow error
        return f"unreadable Parquet footer ({_first_line(exc)})", size, 0
    if entry.rows is not None and rows != entry.rows:
        return f"{rows} rows, the manifest says {entry.rows}", size, rows
    return None, size, rows


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- damaged parts met by other commands -----------------------------------------------


@contextmanager
def damaged_parts(dataset: StoreLike) -> Iterator[None]:
    """Turn a read failing on a damaged part of ``dataset`` into a one-line ``DatasetError``.

    Around code that reads the dataset (``with damaged_parts(path): frame.collect()``):
    on an error a damaged part may cause (polars' ``ComputeError`` and
    ``PanicException``, pyarrow's ``ArrowInvalid`` and ``OSError``, DuckDB's
    input, I/O and untyped errors, a name read that is not UTF-8, an error
    of the package caused by one of these or by its own SQL on the files),
    the dataset's parts are checked (sizes and footers; then checksums, when
    the error is a panic or a Parquet decoding error's) and the first
    damaged one is named, with a hint to run ``ocp-analytics verify``. An
    error no damage explains is raised as it was, unless its message is a
    Parquet decoding error's (a part of a record written before the
    manifest, whose bytes cannot be checked): that becomes a one-line
    ``DatasetError`` too. The original error is the new one's cause.

    Errors that cannot come from a part are let through unchecked: a broken
    pipe, an ``OSError`` naming a file outside the dataset (an ``--out``
    file), a DuckDB parser or catalog error (a query's own mistake).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile, pathlib
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> part = next(pathlib.Path(out, "runs").glob("*.parquet"))
    >>> _ = part.write_bytes(part.read_bytes()[:-10])
    >>> with damaged_parts(out):
    ...     oa.scan_dataset(out).runs.collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ocp_analytics.exceptions.DatasetError: ...: damaged part runs/00000001-...: ... Hint: run ...
    """
    try:
        yield
    except BaseException as exc:
        read = exc.__cause__ if isinstance(exc, OcpAnalyticsError) else exc
        ours = isinstance(exc, SqlSetupError)  # even a binder error: a file's columns are wrong
        if read is None or not (ours or _may_be_damage(read, dataset)):
            raise
        explained = _explain(dataset, read)
        if explained is None:
            raise
        raise explained from exc


def _may_be_damage(exc: BaseException, dataset: StoreLike) -> bool:
    if isinstance(exc, BrokenPipeError | DatasetError):
        return False
    if isinstance(exc, OSError) and exc.filename is not None:
        return _inside(str(exc.filename), dataset)
    if isinstance(exc, RuntimeError) and str(exc).startswith("nanobind::"):
        return True  # DuckDB's error message held bytes no text holds: a damaged name
    # UnicodeDecodeError: DuckDB or pyarrow giving a damaged column name as text
    kinds: tuple[type[BaseException], ...] = (ComputeError, PanicException, pa.ArrowException)
    kinds += (OSError, UnicodeDecodeError)
    duckdb = sys.modules.get("duckdb")  # never imported here: only a reader that uses it
    if duckdb is not None:
        kinds += (duckdb.InvalidInputException, duckdb.IOException, duckdb.InternalException)
        if type(exc) is duckdb.Error:  # untyped: how DuckDB raises a footer's thrift error
            return True
    return isinstance(exc, kinds)


def _inside(filename: str, dataset: StoreLike) -> bool:
    """Whether ``filename`` may be a file of ``dataset`` (always, in an object store)."""
    try:
        root = store(dataset)
    except Exception:  # not a place a store can name: nothing to compare with
        return False
    if root.remote:
        return True
    return Path(filename).resolve().is_relative_to(Path(root.path).resolve())


# Words of the messages of a Parquet read failing on damaged bytes (polars, pyarrow, DuckDB).
_PARQUET_WORDS = ("out of specification", "thrift", "zstd", "magic bytes", "decompress", "corrupt")


def _explain(dataset: StoreLike, exc: BaseException) -> DatasetError | None:
    """The one-line error naming the damaged part behind ``exc``; ``None`` when there is none."""
    text = _first_line(exc)
    decoding = any(w in text.lower() for w in (*_PARQUET_WORDS, "parquet"))
    # every byte is hashed only for an error that reading damaged bytes explains:
    # an unrelated error must not cost a read of the whole dataset
    hash_all = decoding or isinstance(exc, PanicException | pa.ArrowException) or _duck(exc)
    hash_all |= isinstance(exc, UnicodeDecodeError | RuntimeError)
    try:
        root = open_existing(dataset)
        damages = verify(root, checksums=False) or (verify(root) if hash_all else [])
    except Exception:  # the check failed too: the read's own error is all there is to say
        root, damages = None, []
    if not (decoding or isinstance(exc, OSError | PanicException | pa.ArrowException)):
        # a decisions store explains only what reading its files can raise: another error
        # (a query's own, say) is not blamed on a store it may never have read
        damages = [d for d in damages if d.table != DECISIONS]
    where = str(root if root is not None else dataset)
    hint = f"Hint: run `ocp-analytics verify {where}`."
    if damages:
        table = damages[0].table
        what = "commit record" if table is None else _WHAT.get(table, "part")
        return damage_error(where, damages, what)
    if any(w in text.lower() for w in _PARQUET_WORDS):  # damage the manifest cannot place
        return DatasetError(f"{where}: a part could not be read ({text}). {hint}")
    return None


_WHAT = {DECISIONS: "decisions store file", SCHEMA_DIR: "empty table file"}
_REWRITE = "; the empty table SQL reads: `verify --repair` or the next ingest writes it again"


def _duck(exc: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(exc, duckdb.Error)
