"""Apache Spark as a second executor of the package's own functions.

Nothing here restates what acceptance means: every Spark task calls the same
functions the one-machine engine calls, on its own share of the work.

- Evaluation (:func:`acceptance`, :func:`write_acceptance`, :func:`rates`,
  :func:`compare`): one task per ``doc_id`` range of the dataset
  (:func:`ocp_analytics.engine.evaluate.doc_ranges` on the manifest). Each task scans
  its own slice of the Parquet parts with polars and runs
  :func:`ocp_analytics.engine.evaluate.evaluate_slice`: every row of a run shares its
  ``doc_id``, so no shuffle is needed. Rates and comparisons return per-task
  partials (:func:`ocp_analytics.engine.rates.partials`,
  :func:`ocp_analytics.engine.rates.flip_counts`), combined on the driver by the
  package's pure :func:`~ocp_analytics.engine.rates.combine` and
  :func:`~ocp_analytics.engine.rates.combine_flips`.
- Ingest (:func:`ingest`): the driver finds the sources (the package's
  ``find_sources``); one task per source file runs the package's reader,
  ``decode_texts`` and ``build_tables`` and writes the seven tables with the
  package's writer into ``DATASET/_staging/BATCH/`` (in an object store: at
  the parts' final keys), returning its file list. The driver classifies run
  versions with the package's own rule, moves staged parts into the table
  folders and writes the commit record last: the batch is visible only then.
  A failed or killed job leaves the dataset as it was; the next ingest
  removes what it left and a rerun converges.

Every public function takes an existing ``SparkSession`` (see :func:`session`
for the settings this module expects). pyspark is optional: install it with
``pip install 'ocp-analytics[spark]'``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from ocp_analytics.exceptions import MissingExtraError, OcpAnalyticsError, hint
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ocp_analytics.ingestion.batch import IngestSummary
    from ocp_analytics.ingestion.sources import Source
    from ocp_analytics.model.rules import Rule

INSTALL = "pip install 'ocp-analytics[spark]'"
JAVA_MIN = 17

# What the measurements in docs/spark.md rest on; --spark-conf overrides any of them.
SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.compression.codec": "zstd",
    "spark.driver.memory": "4g",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
}

# Test hook: "<stage>:<task>" makes that task of that stage ("count", "build",
# "evaluate") raise after doing part of its work. Read on the driver and
# shipped with the job, so it reaches workers however they were started.
FAULT_ENV = "OCP_SPARK_FAULT"

_PAYLOAD = "part long, payload binary"
_LAST_ID = (1 << 63) - 1


# ------------------------------------------------------------------ session


def require_pyspark() -> None:
    """Raise :class:`~ocp_analytics.exceptions.MissingExtraError` when pyspark is absent."""
    try:
        import pandas  # noqa: F401 (pyspark's Arrow functions need it)
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(f"the Spark engine needs pyspark and pandas: {INSTALL}") from exc


def java_major(text: str) -> int | None:
    """The Java major version in ``java -version`` output, None when absent.

    Examples
    --------
    >>> java_major('openjdk version "17.0.15" 2025-04-15')
    17
    >>> java_major('java version "1.8.0_381"')
    8
    >>> java_major("no java here") is None
    True
    """
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def check_java() -> None:
    """Raise a clear error unless Java 17 or newer runs (``JAVA_HOME``, else ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    fix = f"install Java {JAVA_MIN}+ (e.g. apt-get install openjdk-17-jre-headless) "
    fix += "and put it on PATH or set JAVA_HOME."
    if java is None or not Path(java).exists():
        raise OcpAnalyticsError(hint("the Spark engine needs Java, and none was found.", fix))
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    major = java_major(out.stderr + out.stdout)
    if major is None or major < JAVA_MIN:
        found = "an unreadable version" if major is None else f"Java {major}"
        raise OcpAnalyticsError(
            hint(f"the Spark engine needs Java {JAVA_MIN}+; {java} is {found}.", fix)
        )


def session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "ocp-analytics",
) -> SparkSession:
    """A SparkSession with the settings this module relies on.

    Parameters
    ----------
    master
        ``local[*]``, ``local[2]``, ``spark://host:7077``, ``yarn``, …; None
        keeps the master ``spark-submit`` gave, else ``local[*]``.
    conf
        More settings (they override :data:`SETTINGS`).
    app_name
        The application name.

    Workers run this interpreter (``PYSPARK_PYTHON`` defaults to
    ``sys.executable``), and the session time zone is UTC.
    """
    require_pyspark()
    launched = "PYSPARK_GATEWAY_PORT" in os.environ  # under spark-submit: the JVM runs
    if not launched:
        check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None or not launched:
        builder = builder.master(master or "local[*]")
    for key, value in {**SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def running(
    master: str | None = None, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """:func:`session` for the length of a ``with`` block, stopped after it when it made it.

    A session that was already running (a notebook's, a test's) is used and left running.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    spark = session(master, conf)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        if before is None:
            spark.stop()


def parse_conf(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (for ``--spark-conf``).

    Examples
    --------
    >>> parse_conf(["spark.executor.memory=8g", "a.b=x=y"])
    {'spark.executor.memory': '8g', 'a.b': 'x=y'}
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OcpAnalyticsError(hint(f"cannot read --spark-conf {item!r}.", "write KEY=VALUE."))
        out[key.strip()] = value
    return out


def _fault(stage: str) -> int | None:
    spec = os.environ.get(FAULT_ENV, "")
    name, _, task = spec.partition(":")
    return int(task) if name == stage and task.isdigit() else None


def _one_per_task(spark: SparkSession, n: int) -> DataFrame:
    """A DataFrame of ids 0 … n-1, one per partition (one task each)."""
    return spark.range(0, n, 1, max(n, 1))


def _ids(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    for batch in batches:
        yield from batch.column(0).to_pylist()


def _frame_bytes(obj: object) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _payload(part: int, obj: object) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array([part], pa.int64()), pa.array([_frame_bytes(obj)], pa.binary())],
        names=["part", "payload"],
    )


def _collect_payloads(df: DataFrame) -> list[Any]:
    """Every task's payload, in task order (small: partials and file lists)."""
    rows = df.collect()
    return [pickle.loads(bytes(r["payload"])) for r in sorted(rows, key=lambda r: r["part"])]


# ------------------------------------------------------------------ evaluation


@dataclass
class _EvalJob:
    """What every evaluation task needs; shipped to executors (pickled)."""

    root: Store
    size: int
    tasks: int
    rules: list[Rule]
    as_of: datetime
    recorded: bool = True
    since: datetime | None = None
    until: datetime | None = None
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None
    keys: list[str] = field(default_factory=list)
    min_tier: str | None = None
    flip_names: list[str] | None = None
    sample: int = 5
    fault: int | None = None

    def evaluate(self, index: int) -> pl.DataFrame:
        """The acceptance rows of range ``index`` (the package's slice and evaluation)."""
        from ocp_analytics.engine.evaluate import evaluate_slice, slices, windowed

        frames = next(itertools.islice(slices(self.root, self.size), index, None))
        if self.fault == index:
            raise RuntimeError(f"injected fault in evaluation task {index} ({FAULT_ENV})")
        carry = self.carry(frames["runs"].collect_schema()) if self.carry else ()
        tables = windowed(frames, self.since, self.until)
        return evaluate_slice(tables, self.rules, self.as_of, recorded=self.recorded, carry=carry)

    def partials(self, index: int) -> dict[str, pl.DataFrame | None]:
        """Rate partials (and flip counts) of range ``index``."""
        from ocp_analytics.engine.rates import flip_counts, partials

        acc = self.evaluate(index)
        counts, hist = pl.collect_all(partials(acc.lazy(), self.keys, self.min_tier))
        flips = None
        if self.flip_names is not None and acc.height:
            cols = acc.select("_doc", "run_id", "rule", "outcome")
            flips = flip_counts(cols, self.flip_names, self.sample)
        return {"counts": counts, "hist": hist, "flips": flips}


def _eval_job(
    spark: SparkSession,
    dataset: str | Path,
    rules: object,
    as_of: object,
    *,
    recorded: bool,
    since: object,
    until: object,
    slice_runs: int | None,
) -> _EvalJob:
    """Resolve the arguments as the one-machine API does, and cut the ranges."""
    from ocp_analytics.engine.evaluate import doc_ranges
    from ocp_analytics.engine.timeaxis import resolve_as_of, resolve_window
    from ocp_analytics.model.rules import resolve_rules
    from ocp_analytics.store.dataset import scan_dataset

    alt, when = resolve_rules(rules), resolve_as_of(as_of)  # type: ignore[arg-type]
    lo, hi = resolve_window(since, until, when)  # type: ignore[arg-type]
    root = store(dataset)
    manifest = scan_dataset(root).manifest
    size = slice_runs or _slice_size(spark, manifest)
    tasks = max(1, len(doc_ranges(manifest, size)))
    return _EvalJob(root, size, tasks, alt, when, recorded, lo, hi, fault=_fault("evaluate"))


def _slice_size(spark: SparkSession, manifest: pl.DataFrame) -> int:
    """Documents per task: about two tasks per core, at most 500,000 runs each."""
    from ocp_analytics.engine.evaluate import SLICE_RUNS

    total = int(manifest.get_column("documents").sum()) if manifest.height else 0
    cores = max(1, spark.sparkContext.defaultParallelism)
    return max(1, min(SLICE_RUNS, math.ceil(total / (2 * cores))))


def _small(schema: pa.Schema) -> pa.Schema:
    """The schema with 32-bit offsets (Spark's ``mapInArrow`` refuses ``large_list``)."""

    def small(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_list(t) or pa.types.is_list(t):
            return pa.list_(small(t.value_type))
        return t

    return pa.schema([pa.field(f.name, small(f.type), f.nullable) for f in schema])


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=False)


def acceptance(
    spark: SparkSession,
    dataset: str | Path,
    rules: object = None,
    as_of: object = None,
    *,
    recorded: bool = True,
    since: object = None,
    until: object = None,
    slice_runs: int | None = None,
) -> DataFrame:
    """Acceptance of every run, as a Spark DataFrame (lazy: runs when an action does).

    The same rows as :func:`ocp_analytics.acceptance` (one per run and rule,
    the columns of ``ocp_analytics.schemas.ACCEPTANCE``), computed by one
    task per ``doc_id`` range that runs the package's ``evaluate_slice``.

    Parameters
    ----------
    spark
        The session (see :func:`session`).
    dataset
        The dataset folder (a path or ``file:`` URI every executor can read).
    rules, as_of, recorded, since, until
        As for :func:`ocp_analytics.acceptance`.
    slice_runs
        Documents per task (default: about two tasks per core, at most 500,000).
    """
    from ocp_analytics.schemas import ACCEPTANCE

    job = _eval_job(
        spark,
        dataset,
        rules,
        as_of,
        recorded=recorded,
        since=since,
        until=until,
        slice_runs=slice_runs,
    )
    out = _small(ACCEPTANCE)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in _ids(batches):
            yield from job.evaluate(i).to_arrow().cast(out).to_batches()

    return _one_per_task(spark, job.tasks).mapInArrow(run, _spark_schema(out))


def to_polars(df: DataFrame) -> pl.DataFrame:
    """A (small) Spark result as a polars DataFrame with the package's acceptance types."""
    from ocp_analytics.schemas import ACCEPTANCE

    table = df.toArrow()
    if table.schema.names == ACCEPTANCE.names:
        table = table.cast(ACCEPTANCE)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def write_acceptance(
    spark: SparkSession,
    dataset: str | Path,
    out: str | Path,
    rules: object = None,
    as_of: object = None,
    *,
    recorded: bool = True,
    since: object = None,
    until: object = None,
    slice_runs: int | None = None,
) -> int:
    """Write acceptance rows as a folder of Parquet parts, one per task; return the rows.

    Each task writes ``part-NNNNN.parquet`` with the package's schema and
    ``as_of`` in its metadata (``ocp_analytics.as_of``), as
    :func:`ocp_analytics.write_acceptance` does for its one file. The parts
    are written into a hidden folder beside ``out``, renamed to ``out`` once
    every task has finished (``out`` must not exist). polars, DuckDB and
    Spark read the folder as one table.
    """
    from ocp_analytics.schemas import ACCEPTANCE

    target = store(out)
    if target.exists():
        raise OcpAnalyticsError(
            hint(f"{str(target)!r} exists.", "remove it or give a new folder name.")
        )
    if not target.remote and not target.path.parent.is_dir():
        raise OcpAnalyticsError(
            hint(f"the folder {str(target.path.parent)!r} does not exist.", "create it first.")
        )
    job = _eval_job(
        spark,
        dataset,
        rules,
        as_of,
        recorded=recorded,
        since=since,
        until=until,
        slice_runs=slice_runs,
    )
    # Local: parts go to a hidden folder renamed to ``out`` at the end. An object
    # store has no rename: each task PUTs its part at its final key (a retried attempt
    # overwrites it with the same rows).
    folder = (
        target
        if target.remote
        else Store(str(target.path.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")))
    )
    folder.mkdir()
    schema = ACCEPTANCE.with_metadata({b"ocp_analytics.as_of": job.as_of.isoformat().encode()})

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in _ids(batches):
            table = job.evaluate(i).to_arrow().cast(schema)
            part = folder.child(f"part-{i:05d}.parquet")
            part.write_parquet(table, temporary=f".{part.name}.{uuid.uuid4().hex}.tmp")
            yield _payload(i, table.num_rows)

    try:
        rows = _collect_payloads(_one_per_task(spark, job.tasks).mapInArrow(run, _PAYLOAD))
        if not target.remote:
            for stray in folder.path.glob(".*.tmp"):  # a failed attempt's leftovers
                stray.unlink()
            folder.path.rename(target.path)
    finally:
        if not target.remote:
            shutil.rmtree(folder.path, ignore_errors=True)
    return sum(rows)


def _rate_parts(
    spark: SparkSession, job: _EvalJob
) -> tuple[list[pl.DataFrame], list[pl.DataFrame], list[pl.DataFrame]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in _ids(batches):
            yield _payload(i, job.partials(i))

    parts = _collect_payloads(_one_per_task(spark, job.tasks).mapInArrow(run, _PAYLOAD))
    counts = [p["counts"] for p in parts]
    hists = [p["hist"] for p in parts]
    flips = [p["flips"] for p in parts if p["flips"] is not None]
    return counts, hists, flips


def _rates_long(
    spark: SparkSession,
    dataset: str | Path,
    rules: object,
    *,
    by: Sequence[str] | str,
    min_tier: str | None,
    as_of: object,
    recorded: bool,
    since: object,
    until: object,
    period: str | None,
    slice_runs: int | None,
    flip_names: list[str] | None = None,
    sample: int = 5,
) -> tuple[pl.DataFrame, list[str], list[pl.DataFrame]]:
    """Rates (group names restored) and flip partials, from per-task partials."""
    from ocp_analytics.api import _carry, _empty
    from ocp_analytics.engine.features import TIER_RANK
    from ocp_analytics.engine.rates import RatePartials

    if min_tier is not None and min_tier not in TIER_RANK:
        raise OcpAnalyticsError(
            hint(f"unknown tier {min_tier!r}.", f"use one of {', '.join(TIER_RANK)}.")
        )
    job = _eval_job(
        spark,
        dataset,
        rules,
        as_of,
        recorded=recorded,
        since=since,
        until=until,
        slice_runs=slice_runs,
    )
    names, keys, carry = _carry(by, period)

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        doc = [pl.col("doc_id").alias("_doc")] if flip_names is not None else []
        return [*carry(schema), *doc]

    job.carry, job.keys, job.min_tier = carry_all, keys, min_tier
    job.flip_names, job.sample = flip_names, sample
    counts, hists, flips = _rate_parts(spark, job)
    sink = RatePartials(keys, min_tier)
    sink.counts = [c for c in counts if c.height]
    sink.hists = [h for h, c in zip(hists, counts, strict=True) if c.height]
    out = sink.rates(_empty(keys)).rename(dict(zip(keys, names, strict=True))).collect()
    return out, names, flips


def rates(
    spark: SparkSession,
    dataset: str | Path,
    rules: object = None,
    *,
    by: Sequence[str] | str = (),
    min_tier: str | None = None,
    as_of: object = None,
    recorded: bool = True,
    since: object = None,
    until: object = None,
    period: str | None = None,
    slice_runs: int | None = None,
) -> pl.DataFrame:
    """Acceptance rates per group and rule, as :func:`ocp_analytics.rates` gives them.

    Each task returns the package's rate partials for its ``doc_id`` range;
    the driver sums them with the package's ``combine``. The result is small
    (groups × rules), so it is returned as a polars DataFrame.
    """
    from ocp_analytics.api import _warn_missing_labels

    out, names, _ = _rates_long(
        spark,
        dataset,
        rules,
        by=by,
        min_tier=min_tier,
        as_of=as_of,
        recorded=recorded,
        since=since,
        until=until,
        period=period,
        slice_runs=slice_runs,
    )
    _warn_missing_labels(out, names)
    return out


def compare(
    spark: SparkSession,
    dataset: str | Path,
    rules: object,
    *,
    by: Sequence[str] | str = (),
    as_of: object = None,
    sample: int = 5,
    recorded: bool = True,
    since: object = None,
    until: object = None,
    slice_runs: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rate matrix and rule-versus-rule flips, as :func:`ocp_analytics.compare` gives them.

    Rates and flip counts are per-task partials combined by the package's
    ``combine`` and ``combine_flips``.
    """
    from ocp_analytics.api import _warn_missing_labels, compare_arguments
    from ocp_analytics.engine.rates import combine_flips, compare_matrix

    alt, names, cols = compare_arguments(rules, by, sample, recorded)
    long, gnames, flips = _rates_long(
        spark,
        dataset,
        alt,
        by=cols,
        min_tier=None,
        as_of=as_of,
        recorded=recorded,
        since=since,
        until=until,
        period=None,
        slice_runs=slice_runs,
        flip_names=names,
        sample=sample,
    )
    _warn_missing_labels(long, gnames)
    return compare_matrix(long, names, gnames), combine_flips(flips, sample).collect()


# ------------------------------------------------------------------ ingest


@dataclass
class _IngestJob:
    """What every ingest task needs; shipped to executors (pickled)."""

    sources: list[Source]
    staging: Store  # where tasks write parts: DATASET/_staging/BATCH/, or DATASET in a store
    batch_id: str
    groups: list[list[int]] = field(default_factory=list)  # source indexes of each task
    bases: list[int] = field(default_factory=list)
    fault: int | None = None

    def counts(self, task: int) -> list[int]:
        """:meth:`count` of each source of one task."""
        return [self.count(i) for i in self.groups[task]]

    def builds(self, task: int, attempt: int) -> list[dict[str, Any]]:
        """:meth:`build` of each source of one task."""
        return [self.build(i, attempt) for i in self.groups[task]]

    def count(self, index: int) -> int:
        """Document texts of one source (each takes a ``doc_id``), by the package's reader."""
        from ocp_analytics.ingestion.batch import CHUNK_DOCS
        from ocp_analytics.ingestion.sources import read_chunks

        if self.fault == index:
            raise RuntimeError(f"injected fault in count task {index} ({FAULT_ENV})")
        return sum(len(meta.texts) for meta, _ in read_chunks(self.sources[index], CHUNK_DOCS, []))

    def build(self, index: int, attempt: int) -> dict[str, Any]:
        """Read, decode and flatten one source; write its parts into the staging folder."""
        from ocp_analytics.ingestion.batch import (
            CHUNK_DOCS,
            PART_RUNS,
            _quarantine_problems,
            _ranked,
        )
        from ocp_analytics.ingestion.decode import decode_texts
        from ocp_analytics.ingestion.sources import ReadProblem, read_chunks
        from ocp_analytics.ingestion.tables import build_tables

        source = self.sources[index]
        writer = _PartWriter(self.staging, f"{self.batch_id}-s{index:05d}-a{attempt}")
        problems: list[ReadProblem] = []
        base, texts, ranks, held = self.bases[index], 0, [], 0
        for meta, cut in read_chunks(source, CHUNK_DOCS, problems):
            decoded = decode_texts(meta.texts, cut, raw=meta.raw)
            tables = build_tables(decoded, meta, base, self.batch_id)
            base += len(meta.texts)
            texts += len(meta.texts)
            ranks.append(_ranked(tables))  # what the run-version rule reads, per run
            held += writer.add(tables.frames)
            if self.fault == index:
                writer.flush()
                raise RuntimeError(f"injected fault in build task {index} ({FAULT_ENV})")
            if held >= PART_RUNS:
                writer.flush()
                held = 0
        if problems:
            writer.add({"quarantine": _quarantine_problems(problems, source, self.batch_id)})
        writer.flush()
        return {
            "documents": texts + len(problems),
            "files": writer.files,
            "ranks": _concat(ranks),
        }


class _PartWriter:
    """Buffers a task's frames per table and writes parts with the package's writer."""

    def __init__(self, staging: Store, prefix: str) -> None:
        self.staging, self.prefix = staging, prefix
        self.pending: dict[str, list[pl.DataFrame]] = {}
        self.files: list[dict[str, Any]] = []  # table, name, rows, lo, hi, codes
        self.parts = 0

    def add(self, frames: Mapping[str, pl.DataFrame]) -> int:
        for table, frame in frames.items():
            if frame.height:
                self.pending.setdefault(table, []).append(frame)
        runs = frames.get("runs")
        return 0 if runs is None else runs.height

    def flush(self) -> None:
        from ocp_analytics import schemas as S
        from ocp_analytics.store.dataset import write_parquet_atomic

        for table, frames in self.pending.items():
            frame = pl.concat(frames)
            folder = self.staging.child(table)
            folder.mkdir()
            name = f"{self.prefix}-{self.parts:05d}.parquet"
            write_parquet_atomic(S.part_table(frame, table), folder.child(name), part_of=table)
            self.files.append(_file_entry(table, name, frame))
        self.pending = {}
        self.parts += 1


def _file_entry(table: str, name: str, frame: pl.DataFrame) -> dict[str, Any]:
    """A staged part: where, how many rows, its doc_id span and (for findings) codes by doc."""
    entry: dict[str, Any] = {"table": table, "name": name, "rows": frame.height}
    if "doc_id" in frame.columns:
        entry["lo"], entry["hi"] = frame["doc_id"].min(), frame["doc_id"].max()
    if table in ("findings", "quarantine"):
        cols = ["doc_id", "code"] if "doc_id" in frame.columns else ["code"]
        entry["codes"] = frame.select(cols)
    return entry


def _concat(ranks: list[pl.DataFrame]) -> pl.DataFrame | None:
    return pl.concat(ranks) if ranks else None


def ingest(
    spark: SparkSession,
    sources: str | Path | Sequence[str | Path],
    dataset: str | Path,
    *,
    strict: bool = False,
) -> IngestSummary:
    """Ingest OCP run documents with Spark tasks; the same dataset the package's ingest writes.

    One task per source file runs the package's reader (so truncated
    streams, quarantine and findings are exactly as on one machine),
    ``decode_texts`` and ``build_tables``, and writes its parts into
    ``DATASET/_staging/BATCH/`` with the package's writer (in an object store,
    which has no rename: at their final keys, unlisted until the commit). A
    first, cheaper pass counts each source's documents so each task knows its
    ``doc_id`` base. The driver then applies the package's run-version rule
    (new, replaced, unchanged, outranked) source by source, moves staged parts
    into the table folders and writes the commit record last. Until then readers
    see the dataset as it was; after a failure the next ingest removes the
    leftovers, and rerunning the same command converges without duplicates.

    Every call commits one batch (the one-machine ingest starts a new batch
    every million documents). Returns the package's reconciled summary.
    """
    from ocp_analytics.exceptions import StrictIngestError
    from ocp_analytics.ingestion.batch import IngestSummary, SourceSummary, _counts
    from ocp_analytics.ingestion.sources import find_sources
    from ocp_analytics.store import dataset as D
    from ocp_analytics.store.dataset import resolved_path as _resolved

    start = time.perf_counter()
    specs = [sources] if isinstance(sources, str | Path) else list(sources)
    found = find_sources([store(s).uri for s in specs])
    root = D.create(dataset)
    summary = IngestSummary(root)
    with D.locked(root):
        records = D.read_commits(root)
        summary.orphans_removed = D.remove_orphans(root, records)  # _staging/ too
        done = {(_resolved(s), s["sha256"]) for r in records for s in r["sources"]}
        todo = []
        for source in found:
            entry = SourceSummary(source.path, source.size, source.sha256, resolved=source.resolved)
            entry.skipped = (source.resolved, source.sha256) in done
            summary.sources.append(entry)
            if not entry.skipped:
                todo.append((source, entry))
        if todo:
            _ingest_batch(spark, root, records, todo, summary)
    summary.seconds = time.perf_counter() - start
    if strict and summary.quarantined:
        raise StrictIngestError(
            hint(
                f"{summary.quarantined} document(s) were quarantined "
                f"({_counts(summary.quarantine_by_code)}).",
                "inspect them with scan_dataset(path).quarantine; the rest was ingested.",
            )
        )
    return summary


def _ingest_batch(
    spark: SparkSession,
    root: Store,
    records: list[dict[str, Any]],
    todo: list[tuple[Source, Any]],
    summary: IngestSummary,
) -> None:
    """Build every source in Spark tasks, classify on the driver, commit last.

    Local parts are staged and moved into the table folders before the
    commit; in an object store (no rename) tasks write them at their final keys, where
    they stay invisible until the commit record lists them.
    """
    from ocp_analytics.store import dataset as D

    seq = max((r["seq"] for r in records), default=0) + 1
    batch_id = f"{seq:08d}-{uuid.uuid4().hex[:8]}"
    staging = root if root.remote else root.child(D.STAGING, batch_id)
    staging.mkdir()
    job = _IngestJob([s for s, _ in todo], staging, batch_id, fault=_fault("count"))
    job.groups = _groups([s.size for s, _ in todo], spark.sparkContext.defaultParallelism)
    try:
        counts = _run_counts(spark, job)
        job.bases = [(seq << 32) + n for n in itertools.accumulate([0, *counts[:-1]])]
        job.fault = _fault("build")
        built = _run_builds(spark, job)
        files, superseding = _classify_sources(
            root, records, todo, built, staging, batch_id, summary
        )
        _commit(root, staging, batch_id, seq, files, [e for _, e in todo], superseding)
        summary.batches.append(batch_id)
    finally:
        if root.remote:  # parts of failed attempts (or of a failed job): never listed
            with contextlib.suppress(OSError):  # best effort: the next ingest removes them
                _remove_unlisted(root, batch_id, D.read_commits(root))
        else:
            root.child(D.STAGING).delete_tree()


def _run_counts(spark: SparkSession, job: _IngestJob) -> list[int]:
    if len(job.sources) == 1:
        return [0]  # one source: its base is the batch's first id, nothing to count

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in _ids(batches):
            yield _payload(i, job.counts(i))

    parts = _collect_payloads(_one_per_task(spark, len(job.groups)).mapInArrow(run, _PAYLOAD))
    return [n for part in parts for n in part]


def _run_builds(spark: SparkSession, job: _IngestJob) -> list[dict[str, Any]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = 0 if ctx is None else ctx.attemptNumber()
        for i in _ids(batches):
            yield _payload(i, job.builds(i, attempt))

    parts = _collect_payloads(_one_per_task(spark, len(job.groups)).mapInArrow(run, _PAYLOAD))
    return [result for part in parts for result in part]


TASK_BYTES = 64 << 20  # source bytes a task reads, at most (unless one file is larger)


def _groups(sizes: list[int], cores: int) -> list[list[int]]:
    """Consecutive sources per task: about two tasks per core, or one per ``TASK_BYTES``.

    Examples
    --------
    >>> _groups([10, 10, 10, 10, 10], cores=1)
    [[0, 1, 2], [3, 4]]
    >>> _groups([1 << 30, 5], cores=1)
    [[0], [1]]
    """
    total = sum(sizes)
    tasks = min(len(sizes), max(2 * cores, math.ceil(total / TASK_BYTES)))
    target = total / max(tasks, 1)
    groups: list[list[int]] = [[]]
    held = 0
    for i, size in enumerate(sizes):
        if groups[-1] and held + size / 2 > target:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += size
    return groups


def _classify_sources(
    root: Store,
    records: list[dict[str, Any]],
    todo: list[tuple[Source, Any]],
    built: list[dict[str, Any]],
    staging: Store,
    batch_id: str,
    summary: IngestSummary,
) -> tuple[list[dict[str, Any]], int]:
    """The package's run-version rule, source by source in read order, as its ingest applies it.

    Returns the staged parts to commit (rewritten without skipped documents
    where needed, plus the ``duplicate_run`` findings) and the number of
    replaced runs.
    """
    from ocp_analytics import schemas as S
    from ocp_analytics.ingestion.batch import _classify, _Versions
    from ocp_analytics.store.dataset import load_run_index as _load_known

    known, versions = _load_known(root, records), _Versions()
    files: list[dict[str, Any]] = []
    skipped: list[pl.Series] = []
    dup_rows: list[dict[str, Any]] = []
    superseding = 0
    for (_, entry), result in zip(todo, built, strict=True):
        entry.documents = result["documents"]
        files += result["files"]
        if result["ranks"] is None:
            continue
        ranked = result["ranks"]
        ranked = ranked.with_columns(known.lookup(ranked.get_column("k")))
        status, dups = _classify(ranked, versions)
        n = Counter(status.get_column("status").to_list())
        entry.runs_new, entry.runs_replaced = n["new"], n["replaced"]
        entry.runs_unchanged, entry.runs_outranked = n["unchanged"], n["outranked"]
        entry.findings += len(dups)
        superseding += n["replaced"]
        skip = status.filter(pl.col("status").is_in(["unchanged", "outranked"]))["doc_id"]
        skipped.append(skip)
        dup_rows += dups
        current = status.filter(pl.col("status") != "outranked")
        versions.add(current)
        known.add(current.select("k", "h"))
    skip_ids = pl.concat(skipped) if skipped else pl.Series("doc_id", [], pl.Int64)
    files = _drop_skipped(staging, files, skip_ids)
    if dup_rows:
        frame = pl.DataFrame(dup_rows, schema=S.polars_schema("findings"))
        writer = _PartWriter(staging, f"{batch_id}-duplicates")
        writer.add({"findings": frame})
        writer.flush()
        files += writer.files
    _count_codes(todo, files, summary)
    return files, superseding


def _drop_skipped(
    staging: Store, files: list[dict[str, Any]], skip: pl.Series
) -> list[dict[str, Any]]:
    """Rewrite the run-table parts that hold unchanged or outranked documents without them."""
    from ocp_analytics import schemas as S
    from ocp_analytics.store.dataset import write_parquet_atomic

    if skip.len() == 0:
        return files
    ids = pl.DataFrame({"doc_id": skip.cast(pl.Int64)})
    lo, hi = ids["doc_id"].min(), ids["doc_id"].max()
    kept = []
    for f in files:
        if f["table"] not in S.RUN_TABLES or f["rows"] == 0 or f["hi"] < lo or f["lo"] > hi:
            kept.append(f)
            continue
        path = staging.child(f["table"], f["name"])
        read = pl.read_parquet(path.uri, storage_options=path.storage_options())
        frame = read.join(ids, on="doc_id", how="anti")
        if frame.height == f["rows"]:
            kept.append(f)
            continue
        path.delete()
        if frame.height:
            write_parquet_atomic(S.part_table(frame, f["table"]), path, part_of=f["table"])
            kept.append(_file_entry(f["table"], f["name"], frame))
    return kept


def _count_codes(
    todo: list[tuple[Source, Any]], files: list[dict[str, Any]], summary: IngestSummary
) -> None:
    """Quarantine and findings counts per source and by code, from the committed parts."""
    by_source: dict[str, list[pl.DataFrame]] = {}
    for f in files:
        if f["table"] in ("quarantine", "findings"):
            by_source.setdefault(f["table"], []).append(f["codes"])
    for table, frames in by_source.items():
        codes = pl.concat(frames, how="diagonal")["code"].to_list()
        target = summary.quarantine_by_code if table == "quarantine" else summary.findings_by_code
        target.update(codes)
    _per_source(todo, files)


def _per_source(todo: list[tuple[Source, Any]], files: list[dict[str, Any]]) -> None:
    """Per-source quarantined and findings counts (parts are named by source index)."""
    for f in files:
        if f["table"] not in ("quarantine", "findings"):
            continue
        found = re.search(r"-s(\d{5})-a\d+-\d{5}\.parquet$", f["name"])
        if found is None:
            continue  # the driver's duplicate_run findings, counted already
        entry = todo[int(found.group(1))][1]
        if f["table"] == "quarantine":
            entry.quarantined += f["rows"]
        else:
            entry.findings += f["rows"]


def _commit(
    root: Store,
    staging: Store,
    batch_id: str,
    seq: int,
    files: list[dict[str, Any]],
    entries: list[Any],
    superseding: int,
) -> None:
    """Move staged parts into the table folders (local), then write the commit record (last)."""
    from ocp_analytics import schemas as S
    from ocp_analytics.store import dataset as D

    listed: dict[str, list[str]] = {t: [] for t in S.TABLES}
    for f in files:
        rel = f"{f['table']}/{f['name']}"
        if staging != root:
            staging.child(rel).move_to(root.child(rel))
        listed[f["table"]].append(rel)
    record = {
        "batch_id": batch_id,
        "seq": seq,
        "committed_at": datetime.now(UTC).isoformat(),
        "files": listed,
        "sources": [e.record() for e in entries],
        "superseding": superseding,
    }
    D.commit(root, record)


def _remove_unlisted(root: Store, batch_id: str, records: list[dict[str, Any]]) -> None:
    """Delete this batch's parts that no commit lists (object stores: failed attempts)."""
    from ocp_analytics import schemas as S

    listed = {f for r in records for files in r["files"].values() for f in files}
    for table in S.TABLES:
        for name in root.child(table).names():
            if name.startswith(batch_id) and f"{table}/{name}" not in listed:
                root.child(table, name).delete()
