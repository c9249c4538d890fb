"""The empty table files in ``_schema``: one per table, the columns the SQL views read first.

:func:`~ocp_analytics.store.dataset.create` writes them (again, when one
cannot be read or has other columns), the views of ``ocp_analytics.sql``
read them, and :func:`~ocp_analytics.store.verify.verify` checks them. They
hold no rows and no manifest entry (no checksum): a file is damaged when
pyarrow or polars cannot read it, and one missing is a dataset's from
before its table, which the next ingest or SQL read completes.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from polars.exceptions import ComputeError, PanicException

from ocp_analytics import schemas as S
from ocp_analytics.store.storage import Store

SCHEMA_DIR = "_schema"

# What reading a damaged file raises: pyarrow decodes the column names as it
# reads a footer (UnicodeDecodeError, a ValueError), polars panics on some bytes.
_DAMAGED = (OSError, pa.ArrowException, ValueError, ComputeError, PanicException)


def columns(file: Store) -> list[str] | None:
    """The columns of an empty table file; ``None`` when it cannot be read (or is missing).

    Examples
    --------
    >>> import tempfile
    >>> from ocp_analytics.store.storage import store
    >>> empty = store(tempfile.mkdtemp()).child("runs.parquet")
    >>> empty.write_bytes(b"PAR1 not a footer PAR1")
    >>> columns(empty) is None
    True
    """
    try:
        return _read(file)
    except _DAMAGED:
        return None


def unreadable(root: Store) -> list[tuple[str, BaseException]]:
    """Each empty table file of the dataset ``root`` that cannot be read, with the error."""
    out = []
    for table in S.TABLES:
        target = root.child(SCHEMA_DIR, f"{table}.parquet")
        if not target.is_file():
            continue
        try:
            _read(target)
        except _DAMAGED as exc:
            out.append((f"{SCHEMA_DIR}/{table}.parquet", exc))
    return out


def _read(file: Store) -> list[str]:
    """Its columns, read by both readers of the package: each decodes a footer its own way
    (a field type polars refuses, pyarrow may pass)."""
    with file.open() as f:
        names = pq.read_schema(f).names
        f.seek(0)
        pl.read_parquet(f)
    return names
