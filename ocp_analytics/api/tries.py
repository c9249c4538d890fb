"""Repeated tries of a task: pass@k and pass^k, and the flaky tasks.

A task tried in several runs (``task_id``, or any runs column or label)
is a repeated try: :func:`passk` says how often ``k`` of its runs hold at
least one accepted run (pass@k) or only accepted runs (pass^k);
:func:`flaky_tasks` lists the tasks whose runs disagree. Both count whole
runs of one task under one rule, not the attempts inside a run (those are
:func:`~ocp_analytics.attempts_distribution`'s).

The loop hands each rule's decisions of a slice to one sink that keeps, per
(group, rule, task), the decided and accepted runs (and with ``sample``, a
few run ids): counts that add up across slices, so memory grows with the
tasks, not the runs. The statistics are those of
:mod:`ocp_analytics.engine.stats.passk` (docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics._typing import DatasetLike, Period, RulesLike, When
from ocp_analytics.api.evaluation import _Scope
from ocp_analytics.engine.evaluate import SLICE_RUNS
from ocp_analytics.engine.groups import empty_decisions, group_carry, warn_missing_labels
from ocp_analytics.engine.rates import By, group_exprs
from ocp_analytics.engine.stats._frames import outcome_flags
from ocp_analytics.engine.stats.passk import PASSK_COLUMNS, pass_at_k, pass_at_k_by, task_counts
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import resolve_rules
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import scan_at

__all__ = ["flaky_tasks", "passk"]

TASK = "_task"  # the carried task column
_COUNTS = ("decided", "accepted")
_SAMPLES = ("sample_accepted", "sample_rejected")


class TaskCounts:
    """Decided and accepted runs per (group, rule, task), merged slice by slice.

    With ``sample``, also the first ``sample`` run ids (in ``run_id`` order)
    accepted and rejected of each task.
    """

    def __init__(self, keys: Sequence[str], sample: int | None = None) -> None:
        self.by = [*keys, "rule"]
        self.sample = sample
        self.columns: tuple[str, ...] = ("rule", "outcome") + (
            () if sample is None else ("run_id",)
        )
        self.held: pl.DataFrame | None = None

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one frame of decisions (with the group keys and ``_task``)."""
        part = self._counts(decisions)
        self.held = part if self.held is None else self._merge(pl.concat([self.held, part]))

    def _counts(self, decisions: pl.DataFrame) -> pl.DataFrame:
        if self.sample is None:
            return task_counts(decisions, self.by, TASK)
        accepted, decided = outcome_flags("outcome")
        ids = pl.col("run_id").cast(pl.String)
        return (
            decisions.filter(decided)
            .group_by(*self.by, TASK)
            .agg(
                pl.len().cast(pl.Int64).alias("decided"),
                accepted.sum().cast(pl.Int64).alias("accepted"),
                ids.filter(accepted).sort().head(self.sample).alias("sample_accepted"),
                ids.filter(~accepted).sort().head(self.sample).alias("sample_rejected"),
            )
        )

    def _merge(self, stacked: pl.DataFrame) -> pl.DataFrame:
        samples = (
            []
            if self.sample is None
            else [
                pl.col(c)
                .list.explode(keep_nulls=False, empty_as_null=False)
                .sort()
                .head(self.sample)
                for c in _SAMPLES
            ]
        )
        return stacked.group_by(*self.by, TASK).agg(pl.col(*_COUNTS).sum(), *samples)

    def counts(self, keys: Sequence[str]) -> pl.DataFrame:
        """The merged counts; with no decided run, none (typed as the keys and task)."""
        if self.held is not None:
            return self.held
        empty = empty_decisions(keys).with_columns(pl.lit(None, pl.String).alias(TASK))
        return self._counts(empty)


def _task_counts(
    dataset: DatasetLike,
    scope: _Scope,
    by: By,
    period: Period | None,
    task: str,
    sample: int | None = None,
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Run the loop into :class:`TaskCounts`: the counts, group names and their keys."""
    names, keys, carry = group_carry(by, period)
    if task in names:
        raise OcpAnalyticsError(
            hint(f"{task!r} is both a group and the task.", "group by another column.")
        )

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        return [*carry(schema), group_exprs([task], schema)[0].alias(TASK)]

    sink = TaskCounts(keys, sample)
    scope.run(dataset, [sink], carry_all, stacklevel=4)
    return sink.counts(keys), names, keys


def passk(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    k: int = 1,
    by: By = (),
    task: str = "task_id",
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: Period | None = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
) -> pl.DataFrame:
    """pass@k and pass^k per group and rule, for ``k = 1 .. k``: repeated tries of a task.

    For a task with ``n`` decided runs under a rule, ``c`` of them accepted,
    pass@k ``= 1 - C(n-c, k) / C(n, k)`` is the chance that ``k`` of its runs
    drawn without replacement hold at least one accepted run, pass^k ``=
    C(c, k) / C(n, k)`` that all ``k`` were accepted. Each is averaged over
    the tasks of the group with ``n >= k`` (``tasks``), every task weighing
    the same (docs/statistics.md, "Repeated tries of a task"). These count
    whole runs of a task, not attempts inside a run.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot
        As for :func:`~ocp_analytics.acceptance`.
    k
        The largest ``k``, at least 1.
    by, period, slice_runs
        As for :func:`~ocp_analytics.rates`.
    task
        What makes runs tries of one task: a runs column or ``label.KEY``.
        Decided runs whose task is null are left out of the averages and
        counted in ``decided_without_task``.

    Returns
    -------
    polars.DataFrame
        ``[period], *by, rule, k, tasks, pass_at_k, pass_hat_k,
        decided_without_task, as_of``: one row per group, rule and ``k``
        (groups with no decided run have none); ``pass_at_k`` and
        ``pass_hat_k`` are null when no task has ``k`` decided runs.

    Examples
    --------
    The solo task run twice, its tests failed once; six other tasks run once
    and accepted:

    >>> import json, ocp_analytics as oa, tempfile
    >>> tmp = tempfile.mkdtemp()
    >>> doc = json.load(open("tests/data/examples/v0.3/solo.ocp.json"))
    >>> doc["run"]["id"], doc["run"]["signals"][0]["value"] = "run_ex_solo_again", "fail"
    >>> _ = open(tmp + "/again.json", "w").write(json.dumps(doc))
    >>> _ = oa.ingest(["tests/data/examples/v0.3", tmp + "/again.json"], tmp + "/ds")
    >>> p = oa.passk(tmp + "/ds", k=2, as_of="2027-01-01")
    >>> p.select("k", "tasks", "pass_at_k", "pass_hat_k").rows()
    [(1, 7, 0.9285714285714286, 0.9285714285714286), (2, 1, 1.0, 0.0)]
    """
    if k < 1:
        raise OcpAnalyticsError(hint(f"k must be at least 1, not {k}.", "pass k=1 or more."))
    scope = _Scope.read(resolve_rules(rules), as_of, since, until, recorded, slice_runs, where)
    counts, names, keys = _task_counts(scan_at(dataset, snapshot), scope, by, period, task)
    group = [*keys, "rule"]
    out = (
        pass_at_k_by(pass_at_k(counts, k), group, TASK)
        .rename(dict(zip(keys, names, strict=True)))
        .sort(*names, "rule", "k", nulls_last=True)
        .with_columns(pl.lit(scope.as_of).alias("as_of"))
        .select(*names, "rule", *PASSK_COLUMNS, "as_of")
    )
    warn_missing_labels(out, names)
    return out


def flaky_tasks(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    by: By = (),
    task: str = "task_id",
    sample: int = 5,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: Period | None = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
) -> pl.DataFrame:
    """Tasks whose runs disagree under a rule: some accepted, some rejected.

    A flaky task fails a bar some of the time it is tried, whatever the
    bar's average: what to look at before trusting a single run of it. Ranked
    by decided runs (most tried first) within each group and rule.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot
        As for :func:`~ocp_analytics.acceptance`.
    by, period, slice_runs
        As for :func:`~ocp_analytics.rates`.
    task
        As for :func:`passk`; runs whose task is null are no task's.
    sample
        Run ids kept per task, accepted and rejected each (the first in
        ``run_id`` order), 0 or more.

    Returns
    -------
    polars.DataFrame
        ``[period], *by, rule, <task>, decided, accepted, rejected,
        accept_rate, sample_accepted, sample_rejected, as_of``.

    Examples
    --------
    The solo task run twice, its tests failed once:

    >>> import json, ocp_analytics as oa, tempfile
    >>> tmp = tempfile.mkdtemp()
    >>> doc = json.load(open("tests/data/examples/v0.3/solo.ocp.json"))
    >>> doc["run"]["id"], doc["run"]["signals"][0]["value"] = "run_ex_solo_again", "fail"
    >>> _ = open(tmp + "/again.json", "w").write(json.dumps(doc))
    >>> _ = oa.ingest(["tests/data/examples/v0.3", tmp + "/again.json"], tmp + "/ds")
    >>> f = oa.flaky_tasks(tmp + "/ds", as_of="2027-01-01")
    >>> f.select("task_id", "decided", "accepted", "sample_rejected").rows()
    [('tsk_ex_solo', 2, 1, ['run_ex_solo_again'])]
    """
    if sample < 0:
        raise OcpAnalyticsError(hint(f"sample must be 0 or more, not {sample}.", "use 5."))
    scope = _Scope.read(resolve_rules(rules), as_of, since, until, recorded, slice_runs, where)
    counts, names, keys = _task_counts(scan_at(dataset, snapshot), scope, by, period, task, sample)
    accepted, decided = pl.col("accepted"), pl.col("decided")
    out = (
        counts.filter(pl.col(TASK).is_not_null() & (accepted > 0) & (accepted < decided))
        .rename({**dict(zip(keys, names, strict=True)), TASK: task})
        .with_columns(
            (decided - accepted).alias("rejected"),
            (accepted / decided).alias("accept_rate"),
            pl.lit(scope.as_of).alias("as_of"),
        )
        .sort(
            [*names, "rule", "decided", task],
            descending=[*(False for _ in names), False, True, False],
            nulls_last=True,
        )
        .select(*names, "rule", task, *_COUNTS, "rejected", "accept_rate", *_SAMPLES, "as_of")
    )
    warn_missing_labels(out, names)
    return out
