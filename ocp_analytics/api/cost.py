"""What acceptance costs: cost per accepted run, and the cost to acceptance.

A run's cost comes from its attempts (``cost_usd``, tokens, or wall time):
over all of them, and over those up to and including the attempt at
acceptance (:mod:`ocp_analytics.engine.stats.cost`). Per group and rule,
:func:`cost` gives the cost per accepted run (all the decided runs' cost
over the accepted ones) with its delta-method interval, and the median cost
to acceptance; :func:`run_costs` gives each run's two costs.

The loop carries each run's ``doc_id``; the sink reads the attempts of a
slice's runs once (the first rule's frame of the slice), by ``doc_id``, so
Parquet statistics keep the read to the slice's row groups. The cost
partials add up across slices; the median needs the accepted runs' costs
themselves: 8 bytes an accepted run and rule, held until the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import polars as pl

from ocp_analytics._typing import DatasetLike, Period, RulesLike, When
from ocp_analytics.api.evaluation import _Scope
from ocp_analytics.engine.evaluate import SLICE_RUNS
from ocp_analytics.engine.groups import empty_decisions, group_carry, warn_missing_labels
from ocp_analytics.engine.rates import By
from ocp_analytics.engine.stats.cost import (
    COST_COLUMNS,
    COST_PARTIALS,
    MEASURES,
    Measure,
    attempt_costs,
    cost_partials,
    cost_per_accepted,
    with_run_costs,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import resolve_rules
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import Dataset, scan_at

__all__ = ["cost", "run_costs"]

DOC = "_doc"  # the carried doc_id
TO_ACCEPTANCE = (
    "accepted_with_cost_to_acceptance",
    "cost_to_acceptance_median",
    "cost_to_acceptance_mean",
)
RUN_COLUMNS = (
    "run_id",
    "rule",
    "outcome",
    "attempts_to_acceptance",
    "cost",
    "cost_to_acceptance",
)


def _measure(measure: str) -> Measure:
    for word in MEASURES:
        if measure == word:
            return word
    raise OcpAnalyticsError(
        hint(f"cannot measure cost as {measure!r}.", f"use one of {', '.join(MEASURES)}.")
    )


def _attempts(
    dataset: Dataset | Mapping[str, pl.LazyFrame | pl.DataFrame], measure: Measure
) -> pl.LazyFrame:
    """The attempts' columns the measure reads (every committed row: the runs pick theirs)."""
    if isinstance(dataset, Dataset):
        frame = dataset.scans.get("attempts", dataset.frames["attempts"])
    else:
        frame = dataset["attempts"].lazy()
    cols = ["ended_at", "started_at"] if measure == "wall_s" else ["started_at", measure]
    return frame.select("doc_id", "att_idx", *dict.fromkeys(cols))


class RunCosts:
    """Each decision frame with its runs' costs, the attempts read once a slice.

    A sink of the evaluation loop (the decisions carry ``_doc``): subclasses
    say what to keep of each frame (:meth:`keep`).
    """

    columns: tuple[str, ...] = ("run_id", "rule", "outcome", "attempts_to_acceptance")

    def __init__(self, attempts: pl.LazyFrame, measure: Measure) -> None:
        self.attempts = attempts
        self.measure = measure
        self._slice: tuple[object, ...] | None = None
        self._costs = pl.DataFrame()

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one frame of decisions (one rule of one slice)."""
        if decisions.height:
            self.keep(with_run_costs(decisions, self._slice_costs(decisions[DOC]), DOC))

    def keep(self, costed: pl.DataFrame) -> None:
        """Keep what the caller needs of one costed frame."""
        raise NotImplementedError

    def _slice_costs(self, docs: pl.Series) -> pl.DataFrame:
        # every rule's frame of a slice holds the same runs: read their attempts once
        key = (docs.min(), docs.max(), docs.len())
        if key != self._slice:
            ids = pl.LazyFrame({"doc_id": docs.unique()})
            rows = self.attempts.filter(pl.col("doc_id").is_between(key[0], key[1]))
            rows = rows.join(ids, on="doc_id", how="semi")
            self._costs = attempt_costs(rows, self.measure).collect()
            self._slice = key
        return self._costs


class CostPartials(RunCosts):
    """Cost partials per (group, rule), merged slice by slice, and the costs to acceptance."""

    def __init__(self, attempts: pl.LazyFrame, measure: Measure, keys: Sequence[str]) -> None:
        super().__init__(attempts, measure)
        self.by = [*keys, "rule"]
        self.held: pl.DataFrame | None = None
        self.to_acceptance: list[pl.DataFrame] = []

    def keep(self, costed: pl.DataFrame) -> None:
        part = cost_partials(costed, self.by, "cost")
        if self.held is not None:
            part = pl.concat([self.held, part]).group_by(self.by).agg(pl.col(*COST_PARTIALS).sum())
        self.held = part
        through = pl.col("cost_to_acceptance")
        self.to_acceptance.append(costed.filter(through.is_not_null()).select(*self.by, through))

    def figures(self, keys: Sequence[str]) -> pl.DataFrame:
        """Cost per accepted run and the cost to acceptance per (group, rule)."""
        empty = empty_decisions(keys).with_columns(
            pl.lit(None, pl.Float64).alias("cost"),
            pl.lit(None, pl.Float64).alias("cost_to_acceptance"),
        )
        held = self.held if self.held is not None else cost_partials(empty, self.by, "cost")
        through = pl.concat([empty.select(*self.by, "cost_to_acceptance"), *self.to_acceptance])
        medians = through.group_by(self.by).agg(
            pl.len().cast(pl.Int64).alias(TO_ACCEPTANCE[0]),
            pl.col("cost_to_acceptance").median().alias(TO_ACCEPTANCE[1]),
            pl.col("cost_to_acceptance").mean().alias(TO_ACCEPTANCE[2]),
        )
        ratio = cost_per_accepted(held, self.by)
        return ratio.join(medians, on=self.by, how="left", nulls_equal=True).with_columns(
            pl.col(TO_ACCEPTANCE[0]).fill_null(0)
        )


class CostRows(RunCosts):
    """Every run's costs (for :func:`run_costs`)."""

    def __init__(self, attempts: pl.LazyFrame, measure: Measure, keys: Sequence[str]) -> None:
        super().__init__(attempts, measure)
        self.keys = list(keys)
        self.frames: list[pl.DataFrame] = []

    def keep(self, costed: pl.DataFrame) -> None:
        self.frames.append(costed.select(*RUN_COLUMNS, *self.keys))


def _setup(
    dataset: Dataset | Mapping[str, pl.LazyFrame | pl.DataFrame],
    measure: str,
    by: By,
    period: Period | None,
) -> tuple[pl.LazyFrame, Measure, list[str], list[str], Callable[[pl.Schema], list[pl.Expr]]]:
    """The attempts to read, the measure checked, group names, their keys, the carried columns."""
    checked = _measure(measure)
    names, keys, carry = group_carry(by, period)

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        return [*carry(schema), pl.col("doc_id").alias(DOC)]

    return _attempts(dataset, checked), checked, names, keys, carry_all


def cost(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    measure: Measure = "cost_usd",
    by: By = (),
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: Period | None = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
) -> pl.DataFrame:
    """What an accepted run costs, per group and rule.

    A run's cost is the sum of its attempts' ``measure`` (those that record
    it; null when none does, never 0). Over the decided runs with a cost,
    ``cost_per_accepted`` = their total cost / the accepted ones, with a
    95 % delta-method interval: what the runs it takes to get one accepted
    cost (docs/statistics.md, "What an accepted run costs"). Runs with an
    unknown outcome are left out; decided runs with no cost are counted apart
    (``runs_without_cost``). Beside it, over the accepted runs, the cost of
    the attempts up to and including the attempt at acceptance: its median
    and mean.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot
        As for :func:`~ocp_analytics.acceptance`.
    measure
        ``cost_usd``, ``input_tokens``, ``output_tokens``,
        ``reasoning_tokens`` (the attempts' ``cost``), or ``wall_s``: each
        attempt's ``ended_at - started_at`` in seconds (attempts that ran at
        once add up, as their costs do).
    by, period, slice_runs
        As for :func:`~ocp_analytics.rates`.

    Returns
    -------
    polars.DataFrame
        ``[period], *by, rule, measure, runs_with_cost, accepted_with_cost,
        runs_without_cost, accepted_without_cost, cost_total,
        cost_per_accepted, cost_se, cost_ci_low, cost_ci_high,
        accepted_with_cost_to_acceptance, cost_to_acceptance_median,
        cost_to_acceptance_mean, as_of``.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> c = oa.cost(ds, "tests+review", recorded=False, as_of="2027-01-01")
    >>> c.select("runs_with_cost", "accepted_with_cost", "cost_total").row(0)
    (4, 4, 13.18)
    >>> c.select("cost_per_accepted", "cost_to_acceptance_median").row(0)
    (3.295, 3.455)
    """
    scope = _Scope.read(resolve_rules(rules), as_of, since, until, recorded, slice_runs, where)
    ds = scan_at(dataset, snapshot)
    attempts, checked, names, keys, carry = _setup(ds, measure, by, period)
    sink = CostPartials(attempts, checked, keys)
    scope.run(ds, [sink], carry)
    out = (
        sink.figures(keys)
        .rename(dict(zip(keys, names, strict=True)))
        .with_columns(pl.lit(measure).alias("measure"), pl.lit(scope.as_of).alias("as_of"))
        .select(*names, "rule", "measure", *COST_COLUMNS, *TO_ACCEPTANCE, "as_of")
        .sort(*names, "rule", nulls_last=True)
    )
    warn_missing_labels(out, names)
    return out


def run_costs(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    measure: Measure = "cost_usd",
    by: By = (),
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
) -> pl.DataFrame:
    """Each run's cost under each rule: of all its attempts, and up to its acceptance.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot
        As for :func:`~ocp_analytics.acceptance`.
    measure
        As for :func:`cost`.
    by, slice_runs
        As for :func:`~ocp_analytics.rates` (``by``: columns added to each row).

    Returns
    -------
    polars.DataFrame
        ``run_id, rule, outcome, attempts_to_acceptance, cost,
        cost_to_acceptance, *by``: ``cost`` sums the measure over the run's
        attempts that record it (null when none does); ``cost_to_acceptance``
        over the attempts up to and including the attempt at acceptance, for
        accepted runs whose attempt is known (else null). Held in memory,
        like :func:`~ocp_analytics.acceptance`'s rows.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> oa.run_costs(ds, as_of="2027-01-01").select("cost", "cost_to_acceptance").row(0)
    (3.52, 3.52)
    """
    scope = _Scope.read(resolve_rules(rules), as_of, since, until, recorded, slice_runs, where)
    ds = scan_at(dataset, snapshot)
    attempts, checked, names, keys, carry = _setup(ds, measure, by, None)
    sink = CostRows(attempts, checked, keys)
    scope.run(ds, [sink], carry)
    schema = {**dict.fromkeys(RUN_COLUMNS[4:], pl.Float64()), **dict.fromkeys(keys, pl.String())}
    empty = empty_decisions(keys).with_columns(pl.lit(None, t).alias(c) for c, t in schema.items())
    frames = sink.frames or [empty.select(*RUN_COLUMNS, *keys)]
    out = pl.concat(frames).rename(dict(zip(keys, names, strict=True))).sort("run_id", "rule")
    warn_missing_labels(out, names)
    return out
