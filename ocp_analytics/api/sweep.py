"""Where to put the bar: the accept rate of a score rule at every target, and the target for a rate.

The runs are read a slice at a time (the window, ``where`` filters and
snapshot of :func:`~ocp_analytics.api.evaluation.rates`): per run, only the
groups, the latest score and what the rest of the rule says
(:mod:`ocp_analytics.engine.sweep_inputs`); then one sort per group gives
the whole curve (:func:`ocp_analytics.engine.stats.sweep.sweep`).
docs/statistics.md, "Where to put the bar: the threshold sweep".
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import replace

import polars as pl

from ocp_analytics._typing import DatasetLike, When
from ocp_analytics.api.evaluation import _Scope
from ocp_analytics.api.set_codes import latest_scores
from ocp_analytics.api.stored import WindowCodes, observing
from ocp_analytics.engine.evaluate import SLICE_RUNS, slices
from ocp_analytics.engine.groups import group_carry, warn_missing_labels
from ocp_analytics.engine.known import KnownNames
from ocp_analytics.engine.rates import By
from ocp_analytics.engine.stats.sweep import SWEEP_COLUMNS, Better
from ocp_analytics.engine.stats.sweep import sweep as sweep_curve
from ocp_analytics.engine.stats.sweep import target_for_rate as rate_target
from ocp_analytics.engine.sweep_inputs import (
    collect_sweep_rows,
    reasons_tell_rest,
    rest_from_reasons,
    score_values,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import Rule, ScoreTarget, resolve_rules
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import Dataset, scan_at

__all__ = ["curves", "score_rule", "sweep"]

_DOC = "_sweep_doc"  # the run's doc_id, carried through the loop (a leading "_")


def score_rule(
    rule: Rule | str | None = None,
    *,
    score: str | None = None,
    better: Better | None = None,
    requires: str | Sequence[str] = (),
) -> Rule:
    """The rule a sweep moves the target of: ``rule`` (with a score), or one built from its parts.

    Either ``rule`` (a :class:`~ocp_analytics.Rule` or short form with a
    score; its target is ignored: every target is swept) or ``score`` with
    ``better`` and optionally ``requires`` (verdict names). A built rule
    excludes the default events (``revert``, ``incident``, within 14 days),
    as a short-form rule does.

    Examples
    --------
    >>> r = score_rule(score="runtime_s", better="lower", requires="tests")
    >>> r.name, r.requires, r.score.better
    ('tests+runtime_s', ('tests',), 'lower')
    >>> score_rule("tests+bench_score>=2400").score.name
    'bench_score'
    """
    needs = [rule is not None, score is not None]
    if needs == [True, True] or needs == [False, False]:
        raise OcpAnalyticsError(
            hint(
                "a sweep needs either a rule with a score or a score name, not "
                + ("both." if all(needs) else "neither."),
                "pass rule='tests+runtime_s<=3600', or score='runtime_s', better='lower'.",
            )
        )
    if rule is not None:
        found = resolve_rules(rule)
        if len(found) != 1 or found[0].score is None:
            raise OcpAnalyticsError(
                hint(
                    f"the sweep's rule must be one rule with a score, got {rule!r}.",
                    "e.g. 'tests+runtime_s<=3600' (the target is ignored: every one is swept).",
                )
            )
        return found[0]
    if better not in ("higher", "lower"):
        raise OcpAnalyticsError(
            hint(
                f"the score {score!r} needs better='higher' or 'lower', got {better!r}.",
                "lower for a runtime or a cost, higher for a benchmark score.",
            )
        )
    assert score is not None
    names = (requires,) if isinstance(requires, str) else tuple(requires)
    return Rule(
        name="+".join([*names, score]), requires=names, score=ScoreTarget(score, 0.0, better)
    )


def sweep(
    dataset: DatasetLike,
    rule: Rule | str | None = None,
    *,
    score: str | None = None,
    better: Better | None = None,
    requires: str | Sequence[str] = (),
    by: By = (),
    for_rate: float | None = None,
    as_of: When = None,
    since: When = None,
    until: When = None,
    where: Sequence[str] = (),
    slice_runs: int = SLICE_RUNS,
    snapshot: Snapshot = None,
    use_decisions: bool = True,
) -> pl.DataFrame:
    """The accept rate of a score rule at every observed score value as its target, per group.

    A run's outcome is that of the rule with the target set to the row's
    ``target``: the counts of a row are exactly those
    :func:`~ocp_analytics.rates` gives for the rule with that target.

    Parameters
    ----------
    dataset, as_of, since, until, where, snapshot
        As for :func:`~ocp_analytics.acceptance`.
    rule, score, better, requires
        The rule whose target moves: a rule with a score, or a score name with
        its direction and the verdicts it requires (see :func:`score_rule`).
    by, slice_runs
        As for :func:`~ocp_analytics.rates`.
    for_rate
        Instead of the curve, one row per group: the strictest target whose
        accept rate is at least this share (all null when none reaches it).
    use_decisions
        Read the rule's rest (its verdicts and excluded events) from its
        decisions store (:func:`~ocp_analytics.refresh` of the rule) where
        the store gives the rows a full evaluation gives, and only the
        scores from the signals; the curve is the same either way
        (docs/dataset.md, "The decisions store").

    Warns
    -----
    UserWarning
        For a verdict or score the rule names that no run carries.

    Returns
    -------
    polars.DataFrame
        ``*by, target, runs, accepted, rejected, unknown, decided,
        accept_rate, ci_low, ci_high, as_of``: one row per group and distinct
        finite score value, sorted by group and target (a group with no score
        has no row); with ``for_rate``, one row per group.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> curve = oa.sweep(ds, "runtime_s<=3600", as_of="2027-01-01")
    >>> curve["target"].to_list()
    [960.0, 1740.0, 1860.0, 2520.0, 3300.0, 4320.0]
    >>> curve.filter(target=3300.0).select("accepted", "rejected", "unknown").row(0)
    (6, 1, 0)

    The lowest runtime target that still accepts half of the decided runs:

    >>> at = oa.sweep(ds, score="runtime_s", better="lower", requires="tests", for_rate=0.5,
    ...               as_of="2027-01-01")
    >>> at.select("target", pl.col("accept_rate").round(3)).row(0)
    (2520.0, 0.571)
    """
    the_rule = score_rule(rule, score=score, better=better, requires=requires)
    if for_rate is not None and not 0.0 <= for_rate <= 1.0:
        raise OcpAnalyticsError(
            hint(f"for_rate must be a share between 0 and 1, not {for_rate}.", "e.g. 0.8.")
        )
    [curve] = curves(
        dataset,
        [the_rule],
        by=by,
        as_of=as_of,
        since=since,
        until=until,
        where=where,
        slice_runs=slice_runs,
        snapshot=snapshot,
        for_rate=for_rate,
        stacklevel=3,
        decisions=use_decisions,
        said=True,
    )
    return curve


def curves(
    dataset: DatasetLike,
    rules: Sequence[Rule],
    *,
    by: By = (),
    as_of: When = None,
    since: When = None,
    until: When = None,
    where: Sequence[str] = (),
    slice_runs: int = SLICE_RUNS,
    snapshot: Snapshot = None,
    for_rate: float | None = None,
    stacklevel: int = 2,
    decisions: bool = False,
    names: bool = True,
    said: bool = False,
    window: WindowCodes | None = None,
) -> list[pl.DataFrame]:
    """:func:`sweep`'s curve of each rule with a score, every rule in one pass over the runs.

    What the report draws: a curve per rule, at the cost of about one
    evaluation (the rests of every rule are decided together). With
    ``decisions`` (the report's default), each rule's rest is read from
    the rule's own rows where its decisions store gives them
    (:func:`_from_rules`), and only the scores from the signals; the
    curves are the same either way. ``names`` false skips the warning of a
    name no run carries (and the reading of every slice's signal names it
    may need), for a caller that has warned already; ``said`` hands the
    stores' summary to :func:`~ocp_analytics.api.stored.observing` (the
    report has said its own, of the same rows). ``window``: the window's
    runs and the rules' stores read already (the report's, run-major; its
    runs carry ``by``'s groups and no period), used instead of reading them.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> rules = [oa.Rule.parse("runtime_s<=3600"), oa.Rule.parse("tests+runtime_s<=3600")]
    >>> [c.height for c in curves(ds, rules, as_of="2027-01-01")]
    [6, 6]
    """
    scope = _Scope.read(list(rules), as_of, since, until, False, slice_runs, where, decisions)
    labels, keys, carry = group_carry(by, None)
    known = None
    ds = scan_at(dataset, snapshot)
    if decisions and all(reasons_tell_rest(r) for r in rules):
        # the loop warns of the names itself (at the caller of curves' caller)
        found = _from_rules(
            ds, list(rules), replace(scope, names=names), keys, carry, stacklevel + 2, said, window
        )
    else:
        known = KnownNames(list(rules)) if names else None
        found = collect_sweep_rows(
            ds,
            rules,
            scope.as_of,
            since=scope.since,
            until=scope.until,
            where=scope.where,
            carry=carry,
            slice_runs=slice_runs,
            known=known,
        )
    for message in known.messages() if known is not None else []:
        warnings.warn(message, UserWarning, stacklevel=stacklevel)
    out = []
    for rule, rows in zip(rules, found, strict=True):
        assert rule.score is not None
        direction: Better = "lower" if rule.score.better == "lower" else "higher"
        if rows.width == 0:  # no slice at all: the columns sweep reads, no row
            rows = pl.DataFrame(schema={**{k: pl.String for k in keys}, "value": pl.Float64})
            rows = rows.with_columns(pl.lit(None, pl.Int8).alias("rest"))
        curve = sweep_curve(rows, direction, keys)
        if for_rate is not None:
            curve = rate_target(curve, for_rate, direction, keys)
        curve = curve.rename(dict(zip(keys, labels, strict=True)))
        curve = curve.with_columns(pl.lit(scope.as_of).alias("as_of"))
        warn_missing_labels(curve, labels)
        out.append(curve.select(*labels, *SWEEP_COLUMNS, "as_of"))
    return out


class _Rests:
    """A sink: per rule with a score, each run's groups, latest score and rest (from its reasons).

    ``scores``: per score name, every run's latest score (``_DOC``, ``value``)
    sorted by ``doc_id``; a slice's rows are joined to the scores of their
    ``doc_id`` range only, so what is kept is what :func:`collect_sweep_rows`
    keeps: the groups, ``value`` and ``rest`` of each run.
    """

    columns = ("rule", "outcome", "reasons")

    def __init__(
        self, rules: Sequence[Rule], keys: Sequence[str], scores: dict[str, pl.DataFrame]
    ) -> None:
        self.rules = list(rules)
        self.keys = list(keys)
        self.scores = scores
        self.frames: list[list[pl.DataFrame]] = [[] for _ in rules]
        self.handed = 0

    def add(self, decisions: pl.DataFrame) -> None:
        # the loop hands each slice's frames in the rules' order, empty ones too (their
        # columns keep the types a window with no run gives)
        at = self.handed % len(self.rules)
        self.handed += 1
        rule = self.rules[at]
        assert rule.score is not None
        assert not decisions.height or decisions.item(0, "rule") == rule.name
        scores = self.scores[rule.score.name]
        if decisions.height:
            docs, ids = scores.get_column(_DOC), decisions.get_column(_DOC)
            first, last = int(ids.min()), int(ids.max())  # type: ignore[arg-type]
            lo, hi = docs.search_sorted(first), docs.search_sorted(last, side="right")
            scores = scores.slice(lo, hi - lo)
        rows = decisions.select(*self.keys, _DOC, rest_from_reasons(rule))
        rows = rows.join(scores, on=_DOC, how="left")
        self.frames[at].append(rows.select(*self.keys, "value", "rest"))


def _from_rules(
    ds: DatasetLike,
    rules: list[Rule],
    scope: _Scope,
    keys: Sequence[str],
    carry: Callable[[pl.Schema], Sequence[pl.Expr]],
    stacklevel: int,
    said: bool = False,
    window: WindowCodes | None = None,
) -> list[pl.DataFrame]:
    """:func:`collect_sweep_rows` from the rules' own rows (their stores', else decided).

    First the runs' latest scores, one ``doc_id`` range at a time; then
    each rule's rest is read from its rows' outcome and reasons
    (:func:`~ocp_analytics.engine.sweep_inputs.rest_from_reasons`) by the
    evaluation loop, which reads the stores where they give the rows a full
    evaluation gives. Unless ``said``, the stores' read is not said again on
    stderr: the report's evaluation has said it (the same rows of the same
    stores).
    """
    names = sorted({r.score.name for r in rules if r.score is not None})
    with nullcontext() if said else observing():
        whole = _run_major(ds, rules, scope, names, keys, carry, stacklevel, window)
    if whole is not None:
        return whole
    found: dict[str, list[pl.DataFrame]] = {n: [] for n in names}
    read = False
    for tables in slices(ds, scope.slice_runs, since=scope.since, until=scope.until):
        read = True
        values = score_values(tables["signals"], scope.as_of, names)
        frame = values.rename({"doc_id": _DOC})
        for (name,), part in frame.collect().partition_by("name", as_dict=True).items():
            found[str(name)].append(part.drop("name"))
    if not read:  # no slice at all: the columns sweep reads, no row
        return [pl.DataFrame() for _ in rules]
    empty = pl.DataFrame(schema={_DOC: pl.Int64, "value": pl.Float64})
    scores = {n: pl.concat([empty, *f]).sort(_DOC) for n, f in found.items()}
    sink = _Rests(rules, keys, scores)

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        return [*carry(schema), pl.col("doc_id").alias(_DOC)]

    with nullcontext() if said else observing():
        scope.run(ds, [sink], carry_all, stacklevel=stacklevel)
    return [pl.concat(f) if f else pl.DataFrame() for f in sink.frames]


def _run_major(
    ds: DatasetLike,
    rules: list[Rule],
    scope: _Scope,
    names: Sequence[str],
    keys: Sequence[str],
    carry: Callable[[pl.Schema], Sequence[pl.Expr]],
    stacklevel: int,
    window: WindowCodes | None = None,
) -> list[pl.DataFrame] | None:
    """:func:`_from_rules` over the whole window at once when every rule has a usable store.

    The window's runs are read once (:func:`~ocp_analytics.api.stored.window_codes`;
    or ``window``, the report's, read already), the latest scores of every
    name a few million runs at a time (:func:`~ocp_analytics.api.set_codes.latest_scores`;
    the rule set's codes keep them at their own ``as_of``), and each rule's
    rest from its stored rows over the whole window, each lined up with the runs: no
    slice of decisions is joined. None (nothing read) when some rule has no
    usable store.
    """
    # one frame below _from_rules: the warnings still point at curves' caller's caller
    codes = window or scope.codes(ds, carry, stacklevel=stacklevel + 1, run_ids=False)
    if codes is None:
        return None
    runs = codes.runs
    assert isinstance(ds, Dataset)  # window_codes reads committed datasets only
    ids = runs.get_column("doc_id")
    table = codes.table
    if table is not None and table.scores_at(scope.as_of, codes.snapshot, names):
        # the rule set's codes keep every run's latest scores at their as_of and commit
        values = {name: table.score(name, ids) for name in names}
    else:
        signals = ds.within(scope.since, scope.until).current("signals")
        values = latest_scores(signals, ids, scope.as_of, names)
    none = pl.repeat(None, runs.height, dtype=pl.Float64, eager=True).alias("value")
    out = []
    for rule, (_, rows) in zip(
        rules, codes.columns(lambda r: [rest_from_reasons(r)] if r else []), strict=True
    ):
        assert rule.score is not None
        value = values.get(rule.score.name, none).alias("value")
        frame = pl.DataFrame([*runs.select(keys).get_columns(), value, rows.get_column("rest")])
        out.append(frame.filter(rows.get_column("_found").is_not_null()))
    return out
