"""Acceptance rows as Spark tasks: a lazy Spark DataFrame, or a folder of Parquet parts."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from ocp_analytics._typing import RulesLike, StoreLike, When
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.schemas import ACCEPTANCE
from ocp_analytics.spark.evaluate import EvalJob, eval_job
from ocp_analytics.spark.tasks import one_per_task, run_tasks, task_ids
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def acceptance(
    spark: SparkSession,
    dataset: StoreLike,
    rules: RulesLike = None,
    as_of: When = None,
    *,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int | None = None,
    snapshot: Snapshot = None,
    where: Sequence[str] = (),
) -> DataFrame:
    """Acceptance of every run, as a Spark DataFrame (lazy: runs when an action does).

    The same rows as :func:`ocp_analytics.acceptance` (one per run and rule,
    the columns of ``ocp_analytics.schemas.ACCEPTANCE``), computed by one
    task per ``doc_id`` range that runs the package's ``evaluate_slice``.

    Parameters
    ----------
    spark
        The session (see :func:`~ocp_analytics.spark.session`).
    dataset
        The dataset folder (a path or ``file:`` URI every executor can read).
    rules, as_of, recorded, since, until, snapshot, where
        As for :func:`ocp_analytics.acceptance`; the snapshot is fixed on the
        driver, so every task reads the same commit.
    slice_runs
        Documents per task (default: about two tasks per core, at most 500,000).

    Returns
    -------
    pyspark.sql.DataFrame

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from ocp_analytics import spark as osp
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> spark = osp.session("local[1]")
    >>> acc = osp.acceptance(spark, ds, "tests+review", "2027-01-01T00:00:00Z")
    >>> sorted(tuple(r) for r in acc.groupBy("rule").count().collect())
    [('recorded', 7), ('tests+review', 7)]
    """
    job = eval_job(
        spark, dataset, rules, as_of, recorded, since, until, slice_runs, snapshot, where
    )
    out = _small(ACCEPTANCE)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in task_ids(batches):
            yield from job.evaluate(i).to_arrow().cast(out).to_batches()

    return one_per_task(spark, job.tasks).mapInArrow(run, _spark_schema(out))


def _small(schema: pa.Schema) -> pa.Schema:
    """The schema with 32-bit offsets (Spark's ``mapInArrow`` refuses ``large_list``).

    Examples
    --------
    >>> _small(pa.schema({"r": pa.large_list(pa.large_string())})).field("r").type
    ListType(list<item: string>)
    """

    def small(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_list(t) or pa.types.is_list(t):
            return pa.list_(small(t.value_type))
        return t

    return pa.schema([pa.field(f.name, small(f.type), f.nullable) for f in schema])


def _spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of ``schema`` (timestamps with the session's time zone)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=False)


def to_polars(df: DataFrame) -> pl.DataFrame:
    """A (small) Spark result as a polars DataFrame with the package's acceptance types.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from ocp_analytics import spark as osp
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> spark = osp.session("local[1]")
    >>> acc = osp.to_polars(osp.acceptance(spark, ds, as_of="2027-01-01T00:00:00Z"))
    >>> acc.schema == oa.acceptance(ds, as_of="2027-01-01T00:00:00Z").collect_schema()
    True
    """
    table = df.toArrow()
    if table.schema.names == ACCEPTANCE.names:
        table = table.cast(ACCEPTANCE)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)  # a Table gives a DataFrame, never a Series
    return frame


def write_acceptance(
    spark: SparkSession,
    dataset: StoreLike,
    out: StoreLike,
    rules: RulesLike = None,
    as_of: When = None,
    *,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int | None = None,
    snapshot: Snapshot = None,
    where: Sequence[str] = (),
) -> int:
    """Write acceptance rows as a folder of Parquet parts, one per task; return the rows.

    Each task writes ``part-NNNNN.parquet`` with the package's schema and
    ``as_of`` and the snapshot's ``seq`` in its metadata (``ocp_analytics.as_of``,
    ``ocp_analytics.snapshot``), as
    :func:`ocp_analytics.write_acceptance` does for its one file. The parts
    are written into a hidden folder beside ``out``, renamed to ``out`` once
    every task has finished (``out`` must not exist). In an object store,
    which has no rename, each task writes its part at its final key. polars,
    DuckDB and Spark read the folder as one table.

    Parameters
    ----------
    spark, dataset, rules, as_of, recorded, since, until, slice_runs, snapshot, where
        As for :func:`acceptance`.
    out
        The folder to write (a path or a store URI); it must not exist.

    Returns
    -------
    int
        The rows written.

    Examples
    --------
    >>> import ocp_analytics as oa, polars as pl, tempfile
    >>> from ocp_analytics import spark as osp
    >>> tmp = tempfile.mkdtemp()
    >>> _ = oa.ingest("tests/data/examples/v0.3", tmp + "/ds")
    >>> spark = osp.session("local[1]")
    >>> osp.write_acceptance(spark, tmp + "/ds", tmp + "/acc", "tests", "2027-01-01")
    14
    >>> pl.read_parquet(tmp + "/acc").height
    14
    """
    target = _new_folder(out)
    job = eval_job(
        spark, dataset, rules, as_of, recorded, since, until, slice_runs, snapshot, where
    )
    return _write_parts(spark, job, target)


def _write_parts(spark: SparkSession, job: EvalJob, target: Store) -> int:
    """One part per task into ``target``; the rows written.

    Local: parts go to a hidden folder renamed to ``target`` at the end, so
    ``target`` appears whole or not at all. An object store has no rename:
    each task PUTs its part at its final key (a retried attempt overwrites it
    with the same rows).
    """
    folder = (
        target
        if target.remote
        else Store(str(target.path.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")))
    )
    folder.mkdir()
    seq = b"" if job.snapshot is None else str(job.snapshot).encode()
    meta = {b"ocp_analytics.as_of": job.as_of.isoformat().encode(), b"ocp_analytics.snapshot": seq}
    schema = ACCEPTANCE.with_metadata(meta)

    def write_part(i: int) -> int:
        table = job.evaluate(i).to_arrow().cast(schema)
        part = folder.child(f"part-{i:05d}.parquet")
        part.write_parquet(table, temporary=f".{part.name}.{uuid.uuid4().hex}.tmp")
        return table.num_rows

    try:
        rows = run_tasks(spark, job.tasks, write_part)
        if not target.remote:
            for stray in folder.path.glob(".*.tmp"):  # a failed attempt's leftovers
                stray.unlink()
            folder.path.rename(target.path)
    finally:
        if not target.remote:
            shutil.rmtree(folder.path, ignore_errors=True)
    return sum(rows)


def _new_folder(out: StoreLike) -> Store:
    """``out`` as a store, refused when it exists or (local) its parent folder does not."""
    target = store(out)
    if target.exists():
        raise OcpAnalyticsError(
            hint(f"{str(target)!r} exists.", "remove it or give a new folder name.")
        )
    if not target.remote and not target.path.parent.is_dir():
        raise OcpAnalyticsError(
            hint(f"the folder {str(target.path.parent)!r} does not exist.", "create it first.")
        )
    return target
