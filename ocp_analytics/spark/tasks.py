"""One Spark task per share of the work: task ids in, the package's results out.

Every job here has one shape: a DataFrame of the ids ``0 … n-1`` with one
partition each (so one task each), and ``mapInArrow`` calling the job's own
method for the id it holds. Small results (rate partials, file lists) come
back to the driver pickled, one payload row per task.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PAYLOAD = "part long, payload binary"
SETTLE_S = 60.0  # how long a failed job's driver waits for its other tasks to end

TaskHook = Callable[[str, int], None]
"""Called by a task at its checkpoints as ``hook(stage, index)``.

``("count", source)`` before a source's documents are counted,
``("build", source)`` once a source is read (its texts may still wait in the
task's chunk), ``("written", task)`` once every part of an ingest task is
written and before the task returns them, ``("evaluate", range)`` once a
``doc_id`` range is scanned and before it is evaluated.
"""

HOOK: TaskHook | None = None
"""The hook every job made from now on carries to its tasks (pickled with the job).

None in use. Tests set one that raises, to fail a task midway and check the
dataset is left as it was.
"""


def job_hook() -> TaskHook | None:
    """:data:`HOOK` as it is now (a job's default, read on the driver when the job is made)."""
    return HOOK


def checkpoint(hook: TaskHook | None, stage: str, index: int) -> None:
    """Call ``hook`` (when there is one) at a task's checkpoint.

    Examples
    --------
    >>> checkpoint(None, "count", 0)
    >>> checkpoint(lambda stage, i: print(stage, i), "build", 3)
    build 3
    """
    if hook is not None:
        hook(stage, index)


def one_per_task(spark: SparkSession, n: int) -> DataFrame:
    """A DataFrame of ids 0 … n-1, one per partition (one task each)."""
    return spark.range(0, n, 1, max(n, 1))


def task_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    """The ids of a task's partition (in ``mapInArrow``)."""
    for batch in batches:
        yield from batch.column(0).to_pylist()


def payload(part: int, obj: object) -> pa.RecordBatch:
    """One task's result as a payload row: its id and the pickled result.

    Examples
    --------
    >>> payload(2, {"rows": 7}).column(0).to_pylist()
    [2]
    """
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return pa.record_batch(
        [pa.array([part], pa.int64()), pa.array([data], pa.binary())],
        names=["part", "payload"],
    )


def collect_payloads(df: DataFrame) -> list[Any]:
    """Every task's payload, in task order (small: partials and file lists)."""
    rows = df.collect()
    return [pickle.loads(bytes(r["payload"])) for r in sorted(rows, key=lambda r: r["part"])]


def run_tasks(spark: SparkSession, n: int, task: Callable[[int], object]) -> list[Any]:
    """``task(i)`` for i in 0 … n-1, one Spark task each; their results in order.

    ``task`` is shipped to the executors (cloudpickled), so a bound method
    carries its job with it.
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i in task_ids(batches):
            yield payload(i, task(i))

    return collect_payloads(one_per_task(spark, n).mapInArrow(run, PAYLOAD))


def settle(spark: SparkSession, timeout: float = SETTLE_S) -> bool:
    """Wait until no executor runs a task (at most ``timeout`` seconds); whether none does.

    When one task fails, the job fails at once while its other tasks may
    still run and write: a driver cleaning up after a failed job waits for
    them first, so what they write is not left behind. It counts every task
    of the session's executors (another job's too), and after ``timeout``
    cleans up anyway: what a task writes later is removed by the next ingest
    (``remove_orphans``).

    Examples
    --------
    >>> from ocp_analytics import spark as osp
    >>> settle(osp.session("local[1]"))
    True
    """
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while any(e.numRunningTasks for e in tracker.getExecutorInfos()):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def attempt_number() -> int:
    """This task's attempt (0 first; a retry or a speculative copy counts up; 0 off a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else ctx.attemptNumber()
