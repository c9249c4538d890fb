"""What the threshold sweep reads of each run: its score, and what the rest of its rule says.

:func:`~ocp_analytics.engine.stats.sweep.sweep` wants one row per run with
``value`` (the run's latest numeric score of the rule's name known at
``as_of``) and ``rest`` (:data:`~ocp_analytics.engine.features.PASS`,
``UNKNOWN`` or ``FAIL``: what the required verdicts and excluded events say,
whatever the target). Both are read here with the engine's own pieces, so the
sweep at a target gives exactly the counts of the rule with that target:

- ``rest`` is the outcome of the rule *without* its score part
  (:func:`rest_rule`), decided by
  :func:`~ocp_analytics.engine.acceptance.decide` like any rule;
- ``value`` is :func:`~ocp_analytics.engine.features.latest_scores` over the
  signals known at ``as_of``, what the rule's score part compares.

:func:`sweep_rows` does one slice (pure); :func:`collect_sweep_rows` walks a
dataset's slices (:func:`~ocp_analytics.engine.evaluate.slices`) with the
window and filters of the evaluation loop, keeping only these three small
columns (and the groups) of each run, so memory stays bounded by the slice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from ocp_analytics.engine.acceptance import decide
from ocp_analytics.engine.evaluate import SLICE_RUNS, selected, window_slices
from ocp_analytics.engine.features import FAIL, PASS, UNKNOWN, known_at, latest_scores
from ocp_analytics.engine.known import KnownNames
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import Rule

if TYPE_CHECKING:
    from ocp_analytics._typing import DatasetLike

_DOC = "_sweep_doc"  # the run version's doc_id, carried through decide (a leading "_")


def rest_rule(rule: Rule) -> Rule:
    """``rule`` without its score part: its required verdicts, excluded events and window.

    Examples
    --------
    >>> r = rest_rule(Rule.parse("tests+runtime_s<=3600"))
    >>> r.requires, r.score, r.effective_excludes
    (('tests',), None, ('revert', 'incident'))
    """
    if rule.score is None:
        raise OcpAnalyticsError(
            hint(
                f"rule {rule.name!r} has no score to sweep.",
                "give a rule with a score, e.g. 'tests+runtime_s<=3600', or --score NAME.",
            )
        )
    return Rule(
        name=f"{rule.name} without its score",
        requires=rule.effective_requires,
        excludes_events=rule.excludes_events,
        window_days=rule.window_days,
    )


def rest_state(outcome: pl.Expr, requires: bool) -> pl.Expr:
    """The sweep's ``rest`` (Int8) from the outcome of :func:`rest_rule`.

    With required verdicts, accepted is ``PASS``, rejected ``FAIL`` and
    unknown ``UNKNOWN``. Without any, the rest rule has no part and reads
    unknown (docs/figures.md "outcome and reasons"), yet it holds nothing
    against the run: ``PASS``, unless an excluded event rejected it.

    Examples
    --------
    >>> s = pl.Series(["accepted", "rejected", "unknown"])
    >>> pl.select(rest_state(pl.lit(s), True)).to_series().to_list()
    [2, 0, 1]
    >>> pl.select(rest_state(pl.lit(s), False)).to_series().to_list()
    [2, 0, 2]
    """
    word = outcome.cast(pl.String)
    return (
        pl.when(word == "rejected")
        .then(pl.lit(FAIL, pl.Int8))
        .when((word == "accepted") | pl.lit(not requires))
        .then(pl.lit(PASS, pl.Int8))
        .otherwise(pl.lit(UNKNOWN, pl.Int8))
    )


def reasons_tell_rest(rule: Rule) -> bool:
    """Whether the rows of ``rule`` itself tell what its rest says (:func:`rest_from_reasons`).

    They do unless the score's name is also a required verdict's: then a
    ``missing:NAME`` reason could be either part's.

    Examples
    --------
    >>> reasons_tell_rest(Rule.parse("tests+runtime_s<=3600"))
    True
    """
    return rule.score is not None and rule.score.name not in rule.effective_requires


def rest_from_reasons(rule: Rule) -> pl.Expr:
    """The sweep's ``rest`` (Int8) from a row of ``rule`` itself: its ``outcome`` and ``reasons``.

    ``reasons`` lists a reason for every part that does not pass and one per
    counted excluded event (docs/figures.md, "outcome and reasons"), so the
    rest's outcome is the rule's with the score's reason taken out: rejected
    when a ``failed:`` or ``late:`` reason is left, else unknown when a
    ``missing:`` verdict is, else accepted; then :func:`rest_state`. An
    accepted row passes every part. Exact when :func:`reasons_tell_rest`.
    The decisions stores keep every row's reasons, so a sweep can read the
    rest from them instead of deciding :func:`rest_rule` from the signals.

    Examples
    --------
    >>> rule = Rule.parse("tests+runtime_s<=3600")
    >>> rows = pl.DataFrame({
    ...     "outcome": ["accepted", "rejected", "rejected", "rejected", "unknown"],
    ...     "reasons": [[], ["below_target:runtime_s"], ["failed:tests"],
    ...                 ["below_target:runtime_s", "late:revert"], ["missing:tests"]]})
    >>> rows.select(rest_from_reasons(rule)).to_series().to_list()
    [2, 2, 0, 0, 1]
    """
    assert rule.score is not None and reasons_tell_rest(rule)
    word = pl.element()
    # the score's own reasons start with neither "failed:" nor "late:", and only its
    # "missing:" is a missing one: tested in place, with no list of the others built
    # (benchmarks/RESULTS.md, "The rule set's codes")
    fails = pl.col("reasons").list.eval(
        word.str.starts_with("failed:") | word.str.starts_with("late:")
    )
    own = f"missing:{rule.score.name}"
    unknown = (
        pl.col("reasons").list.eval(word.str.starts_with("missing:") & (word != own)).list.any()
    )
    outcome = (
        pl.when(pl.col("outcome").cast(pl.String) == "accepted")
        .then(pl.lit("accepted"))
        .when(fails.list.any())
        .then(pl.lit("rejected"))
        .when(unknown)
        .then(pl.lit("unknown"))
        .otherwise(pl.lit("accepted"))
    )
    return rest_state(outcome, bool(rule.effective_requires)).alias("rest")


def score_values(signals: pl.LazyFrame, as_of: datetime, names: Sequence[str]) -> pl.LazyFrame:
    """``doc_id, name, value`` (Float64): each run's latest score of ``names`` known at ``as_of``.

    What a rule's score part compares (:func:`~ocp_analytics.engine.features.latest_scores`).
    """
    latest = latest_scores(known_at(signals, as_of), names)
    return latest.select("doc_id", "name", pl.col("value").cast(pl.Float64))


def sweep_rows(
    tables: Mapping[str, pl.LazyFrame],
    rule: Rule,
    as_of: datetime,
    carry: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """One row per run of ``tables``: the carried columns, ``value`` (Float64) and ``rest`` (Int8).

    Pure, over one slice's tables (every row of each run together, as
    :func:`~ocp_analytics.engine.evaluate.evaluate_slice` takes them).
    ``carry``: named expressions over ``runs`` whose names start with ``_``
    (the group keys).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> from datetime import UTC, datetime
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> tables = oa.scan_dataset(ds).frames
    >>> rule = Rule.parse("tests+review+runtime_s<=3600")
    >>> sweep_rows(tables, rule, datetime(2027, 1, 1, tzinfo=UTC)).collect().rows()
    [(3300.0, 2)]
    """
    return sweeps_rows(tables, [rule], as_of, carry)[0]


def sweeps_rows(
    tables: Mapping[str, pl.LazyFrame],
    rules: Sequence[Rule],
    as_of: datetime,
    carry: Sequence[pl.Expr] = (),
) -> list[pl.LazyFrame]:
    """:func:`sweep_rows` of each rule, the rests of every rule decided in one evaluation.

    A report sweeps each rule with a score; one evaluation of their rests
    (``decide`` of every rule at once, the latest scores of every name read
    once) costs about what one rule's does, where a pass per rule cost one
    evaluation each.
    """
    rests = [rest_rule(r) for r in rules]
    keep = [*carry, pl.col("doc_id").alias(_DOC)]
    decided = decide(tables, rests, as_of, recorded=False, carry=keep, reasons=False)
    names = sorted({r.score.name for r in rules if r.score is not None})
    scores = score_values(tables["signals"], as_of, names)
    carried = [e.meta.output_name() for e in carry]
    out = []
    for rule, rest, frame in zip(rules, rests, decided, strict=True):
        assert rule.score is not None  # rest_rule refused a rule without one
        value = scores.filter(pl.col("name") == rule.score.name).select(
            pl.col("doc_id").alias(_DOC), "value"
        )
        state = rest_state(pl.col("outcome"), bool(rest.requires)).alias("rest")
        out.append(frame.join(value, on=_DOC, how="left").select(*carried, "value", state))
    return out


def collect_sweep_rows(
    dataset: DatasetLike,
    rules: Sequence[Rule],
    as_of: datetime,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    where: Sequence[str] = (),
    carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None,
    slice_runs: int = SLICE_RUNS,
    known: KnownNames | None = None,
) -> list[pl.DataFrame]:
    """:func:`sweep_rows` of every run of ``dataset`` in the window for each rule, in one pass.

    The window (``[since, until)`` on the run's time) and ``where`` filters
    select runs as the evaluation loop does
    (:func:`~ocp_analytics.engine.evaluate.run`); ``carry`` builds the group
    expressions from the ``runs`` schema; ``known`` is handed each slice's
    signals (for the warning about names no run carries). Only the carried
    columns, ``value`` and ``rest`` of each run are kept: about ten bytes a
    run besides the groups. One frame per rule (with no column when there
    was no slice).
    """
    parts = window_slices(dataset, slice_runs, since, until, known)
    frames: list[list[pl.DataFrame]] = [[] for _ in rules]
    for tables, exprs in selected(parts, since, until, where, carry, known):
        for kept, frame in zip(
            frames, pl.collect_all(sweeps_rows(tables, rules, as_of, exprs)), strict=True
        ):
            kept.append(frame)
    return [pl.concat(f, how="vertical") if f else pl.DataFrame() for f in frames]
