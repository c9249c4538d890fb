"""An evaluation as Spark tasks: one task per ``doc_id`` range, each the package's slice.

The driver resolves the arguments as the one-machine API does, fixes the
snapshot (the ``seq`` of the commit the whole job reads: the one asked for, else
the newest) and cuts the ranges (:func:`ocp_analytics.engine.evaluate.doc_ranges` on the manifest).
Each task scans its own slice of the Parquet parts committed up to that
snapshot with polars (a commit landing mid-job is not read by any task) and runs
:func:`ocp_analytics.engine.evaluate.evaluate_slice`: every row of a run
shares its ``doc_id``, so no shuffle is needed.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics._typing import RulesLike, StoreLike, Tier, When
from ocp_analytics.engine.evaluate import (
    SLICE_RUNS,
    doc_ranges,
    evaluate_slice,
    slices,
    windowed,
)
from ocp_analytics.engine.rates import flip_counts, partials, where_conditions
from ocp_analytics.engine.timeaxis import resolve_as_of, resolve_window
from ocp_analytics.model.rules import Rule, resolve_rules
from ocp_analytics.spark.tasks import TaskHook, checkpoint, job_hook, run_tasks
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.damage import Damage, damage_error
from ocp_analytics.store.read_check import PartCheck, unhashed
from ocp_analytics.store.scan import Dataset, scan_dataset
from ocp_analytics.store.storage import Store, store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class EvalJob:
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
    min_tier: Tier | None = None
    flip_names: list[str] | None = None
    sample: int = 5
    hook: TaskHook | None = field(default_factory=job_hook)
    snapshot: int | None = None  # the seq every task reads (None: the dataset has no commit)
    where: tuple[str, ...] = ()  # filters over runs, as the one-machine API takes them

    def evaluate(self, index: int) -> pl.DataFrame:
        """The acceptance rows of range ``index`` (the package's slice and evaluation)."""
        with unhashed():  # a task reads its range of every part: see store/read_check.py
            ranges = slices(self.root, self.size, self.snapshot)
            frames = next(itertools.islice(ranges, index, None))
        checkpoint(self.hook, "evaluate", index)
        carry = self.carry(frames["runs"].collect_schema()) if self.carry else ()
        conds = where_conditions(self.where, frames["runs"].collect_schema())
        tables = windowed(frames, self.since, self.until, conds)
        return evaluate_slice(tables, self.rules, self.as_of, recorded=self.recorded, carry=carry)

    def partials(self, index: int) -> RangePartials:
        """Rate partials (and flip counts) of range ``index``."""
        acc = self.evaluate(index)
        counts, hist = pl.collect_all(partials(acc.lazy(), self.keys, self.min_tier))
        flips = None
        if self.flip_names is not None and acc.height:
            cols = acc.select("_doc", "run_id", "rule", "outcome", *self.keys)
            flips = flip_counts(cols, self.flip_names, self.sample, self.keys)
        return RangePartials(counts, hist, flips)


@dataclass(frozen=True)
class RangePartials:
    """What a rates task returns: the package's partials of one ``doc_id`` range."""

    counts: pl.DataFrame
    hist: pl.DataFrame
    flips: pl.DataFrame | None  # flip counts, when comparing rules


def eval_job(
    spark: SparkSession,
    dataset: StoreLike,
    rules: RulesLike,
    as_of: When,
    recorded: bool,
    since: When,
    until: When,
    slice_runs: int | None,
    snapshot: Snapshot = None,
    where: Sequence[str] = (),
) -> EvalJob:
    """Resolve the arguments as the one-machine API does, fix the snapshot, cut the ranges.

    The arguments are those of :func:`ocp_analytics.spark.acceptance`, in its
    order (``where`` as in :func:`ocp_analytics.acceptance`). The snapshot is
    resolved here, on the driver, to one ``seq`` (``snapshot``, else the
    newest commit), so every task reads the same dataset state however many
    commits land while the job runs.
    """
    alt, when = resolve_rules(rules), resolve_as_of(as_of)
    lo, hi = resolve_window(since, until, when)
    root = store(dataset)
    with unhashed():
        ds = scan_dataset(root, snapshot=snapshot)
        schema = ds.runs.collect_schema()
    filters = (where,) if isinstance(where, str) else tuple(where)
    where_conditions(filters, schema)  # refused here, on the driver
    manifest = ds.manifest
    size = slice_runs or slice_size(spark.sparkContext.defaultParallelism, manifest)
    tasks = max(1, len(doc_ranges(manifest, size)))
    check_parts(spark, ds, tasks)
    return EvalJob(
        root, size, tasks, alt, when, recorded, lo, hi, snapshot=ds.snapshot, where=filters
    )


def check_parts(spark: SparkSession, ds: Dataset, tasks: int) -> None:
    """Hash every part the job reads against the manifest, in a stage of ``tasks`` tasks.

    The evaluation's tasks read their range of every part unhashed
    (:meth:`EvalJob.evaluate`: hashing what each scans would read every part
    once a worker), so the parts are hashed here first, once each, every
    task a share of them (store/read_check.py): a damaged part stops the job
    with the one line naming it before any figure is computed. The job
    reads every part once more.
    """
    if ds.records is None or ds.parts is None:
        return
    files = sorted(f for fs in ds.parts.files.values() for f in fs)
    if not files:
        return
    check, n = PartCheck(ds.path, ds.records), min(tasks, len(files))
    damages = [d for d in run_tasks(spark, n, functools.partial(_share, check, files, n)) if d]
    if damages:
        raise damage_error(str(ds.path), damages)


def _share(check: PartCheck, files: list[str], n: int, i: int) -> Damage | None:
    """Task ``i``'s share of the parts: the first damaged one, if any (in an executor)."""
    return check.first(files[i::n])


def slice_size(cores: int, manifest: pl.DataFrame) -> int:
    """Documents per task: about two tasks per core, at most ``SLICE_RUNS`` runs each.

    Examples
    --------
    >>> slice_size(2, pl.DataFrame({"documents": [600, 400]}))
    250
    >>> slice_size(2, pl.DataFrame({"documents": [3_000_000]})) == SLICE_RUNS
    True
    """
    total = int(manifest.get_column("documents").sum()) if manifest.height else 0
    return max(1, min(SLICE_RUNS, math.ceil(total / (2 * max(1, cores)))))
