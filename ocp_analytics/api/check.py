"""The CI gate: did the accept rate drop by more than a tolerated margin, beyond noise?

Two ways to ask (docs/statistics.md, "The CI gate"):

- **unpaired**: one rule over two windows of runs (last month against this
  week): Newcombe's hybrid score interval of ``candidate − baseline``
  (:func:`~ocp_analytics.engine.stats.changes.newcombe_difference`), from
  the counts :func:`~ocp_analytics.rates` gives for each window;
- **paired**: two rules over the same runs (today's bar against a stricter
  one): Newcombe's paired interval from the table :func:`~ocp_analytics.compare`
  counts (:func:`~ocp_analytics.engine.stats.paired.paired_difference`), with
  McNemar's p-value beside it.

A group **regressed** when the whole interval lies below ``-max_drop``
(:func:`~ocp_analytics.engine.stats.changes.change_call` with that margin):
the drop is significantly larger than the drop tolerated. With several
groups, each interval is widened (Bonferroni) so that the chance of any false
``regressed`` across the groups stays at most ``1 − confidence``. The overall
verdict is the worst group's: ``regressed``, else ``not enough data``, else
``within noise``, else ``improved``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import NormalDist
from typing import Any

import polars as pl

from ocp_analytics._typing import DatasetLike, When
from ocp_analytics.api.evaluation import compare, rates
from ocp_analytics.engine.evaluate import SLICE_RUNS
from ocp_analytics.engine.flips import format_difference, format_p
from ocp_analytics.engine.rates import By, group_names
from ocp_analytics.engine.stats.changes import (
    IMPROVED,
    MIN_DECIDED,
    NOT_ENOUGH,
    REGRESSED,
    WITHIN_NOISE,
    change_call,
    newcombe_difference,
)
from ocp_analytics.engine.stats.paired import holm, mcnemar, mcnemar_method, paired_difference
from ocp_analytics.engine.timeaxis import resolve_as_of
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import RECORDED, Rule, resolve_rules
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import Dataset, scan_at

__all__ = ["EXIT_CODES", "GROUP_COLUMNS", "CheckResult", "Window", "check", "read_window"]

#: The exit status of each verdict (``ocp-analytics check``; errors exit 5).
EXIT_CODES = {IMPROVED: 0, WITHIN_NOISE: 0, REGRESSED: 1, NOT_ENOUGH: 4}
_WORST_FIRST = (REGRESSED, NOT_ENOUGH, WITHIN_NOISE, IMPROVED)

#: The columns of :attr:`CheckResult.groups` after the group columns. The
#: paired table (``a, b, c, d``) and McNemar's p-values are null for two windows.
GROUP_COLUMNS = (
    "baseline_accepted",
    "baseline_decided",
    "baseline_rate",
    "candidate_accepted",
    "candidate_decided",
    "candidate_rate",
    "difference",
    "difference_low",
    "difference_high",
    "call",
    "a",
    "b",
    "c",
    "d",
    "p_value",
    "p_method",
    "p_holm",
)

Window = str | Mapping[str, When] | tuple[When, When]
"""A window of runs: ``"since=60d,until=30d"``, ``{"since": …, "until": …}``, ``(since, until)``."""


def read_window(spec: Window, what: str = "window") -> tuple[When, When]:
    """``(since, until)`` of a window given as text, a mapping or a pair.

    Examples
    --------
    >>> read_window("since=2026-11-01,until=2026-12-01")
    ('2026-11-01', '2026-12-01')
    >>> read_window({"since": "14d"})
    ('14d', None)
    >>> read_window("from=7d", "--baseline")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.OcpAnalyticsError: cannot read --baseline 'from=7d': ...
    """
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise OcpAnalyticsError(hint(f"{what} {spec!r} is not a pair.", "give (since, until)."))
        return spec
    items: dict[str, When] = {}
    if isinstance(spec, str):
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            key, eq, value = part.partition("=")
            items[key.strip()] = value.strip() if eq else ""
    else:
        items = dict(spec)
    wrong = [k for k, v in items.items() if k not in ("since", "until") or v in ("", None)]
    if wrong or not items:
        raise OcpAnalyticsError(
            hint(
                f"cannot read {what} {spec!r}: it needs since=WHEN and/or until=WHEN.",
                "e.g. since=2026-11-01,until=2026-12-01 or since=60d,until=30d "
                "(durations count back from as_of).",
            )
        )
    return items.get("since"), items.get("until")


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` found: the verdict, its exit status, and a row per group.

    Attributes
    ----------
    verdict
        ``regressed``, ``not enough data``, ``within noise`` or ``improved``:
        the worst group's call.
    exit_code
        0 (no significant drop beyond the margin), 1 (regressed) or 4 (not
        enough data): :data:`EXIT_CODES`.
    groups
        One row per group (one row without ``by``): the group columns, then
        :data:`GROUP_COLUMNS`.
    paired
        Two rules over the same runs (else one rule over two windows).
    level
        The confidence level of each group's interval: ``confidence``,
        Bonferroni-adjusted over the groups with enough data.
    """

    verdict: str
    exit_code: int
    groups: pl.DataFrame
    paired: bool
    baseline: str
    candidate: str
    max_drop: float
    min_decided: int
    confidence: float
    level: float
    as_of: datetime
    snapshot: int | None = None
    by: tuple[str, ...] = field(default=())

    def lines(self) -> list[str]:
        """One line per group (with ``by``), then the verdict's line."""
        out = [
            f"{_group_text(r, self.by)}: {_row_text(r)}" for r in self.groups.iter_rows(named=True)
        ]
        if not self.by:
            row = self.groups.row(0, named=True) if self.groups.height else None
            said = _row_text(row) if row else f"{self.verdict}: no run on either side"
            return [f"{said}; {self._terms()}"]
        counts = self.groups.get_column("call").value_counts(sort=True).rows()
        tally = ", ".join(f"{n} {call}" for call, n in counts) or "no group"
        return [*out, f"{self.verdict}: {tally}; {self._terms()}"]

    def _terms(self) -> str:
        return (
            f"{self.candidate} against {self.baseline}; tolerated drop "
            f"{100 * self.max_drop:.1f} pts at {100 * self.level:.4g} % (exit {self.exit_code})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The verdict document (``check --format json``)."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "paired": self.paired,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "max_drop": self.max_drop,
            "min_decided": self.min_decided,
            "confidence": self.confidence,
            "level": self.level,
            "by": list(self.by),
            "as_of": self.as_of.isoformat(),
            "snapshot": self.snapshot,
            "groups": self.groups.to_dicts(),
        }


def _group_text(row: Mapping[str, Any], by: Sequence[str]) -> str:
    return " ".join(f"{k}={row[k]}" for k in by)


def _row_text(row: Mapping[str, Any]) -> str:
    """``regressed: 80.0 % → 70.0 % (-10.0 pts [-15.2, -4.9]) of 400 → 380 decided``."""

    def rate(x: float | None) -> str:
        return "–" if x is None else f"{100 * x:.1f} %"

    decided = f"{row['baseline_decided']:,} → {row['candidate_decided']:,} decided"
    if row["call"] == NOT_ENOUGH:
        return f"{row['call']}: {decided}"
    diff = format_difference(row["difference"], row["difference_low"], row["difference_high"])
    p = (
        f", McNemar p {format_p(row['p_value'], row['p_method'])}"
        if row["p_value"] is not None
        else ""
    )
    text = f"{rate(row['baseline_rate'])} → {rate(row['candidate_rate'])} ({diff}{p})"
    return f"{row['call']}: {text} of {decided}"


def check(
    dataset: DatasetLike,
    rule: Rule | str | None = None,
    *,
    baseline: Window | None = None,
    candidate: Window | None = None,
    baseline_rule: Rule | str | None = None,
    candidate_rule: Rule | str | None = None,
    by: By = (),
    max_drop: float = 0.02,
    min_decided: int = MIN_DECIDED,
    confidence: float = 0.95,
    as_of: When = None,
    since: When = None,
    until: When = None,
    where: Sequence[str] = (),
    slice_runs: int = SLICE_RUNS,
    snapshot: Snapshot = None,
) -> CheckResult:
    """Gate a change: is the candidate's accept rate below the baseline's by more than ``max_drop``?

    Either **two windows** (``baseline`` and ``candidate``) under one
    ``rule`` (each run's recorded rule when ``None``, or ``"recorded"``), or
    **two rules** (``baseline_rule`` and ``candidate_rule``; ``"recorded"``
    names each run's own) over the same runs (``since``, ``until``).

    Parameters
    ----------
    dataset, as_of, where, snapshot
        As for :func:`~ocp_analytics.acceptance`. Both sides read the same
        snapshot.
    rule, baseline, candidate
        One rule over two windows (:data:`Window`: ``"since=60d,until=30d"``).
    baseline_rule, candidate_rule
        Two rules over the same runs: a paired comparison.
    since, until
        The runs of a paired comparison (refused with two windows).
    by, slice_runs
        As for :func:`~ocp_analytics.rates`: a call per group.
    max_drop
        The drop tolerated (a share: 0.02 is two points): a group regressed
        only when the whole interval of ``candidate − baseline`` lies below
        ``-max_drop``.
    min_decided
        Fewer decided runs on either side (paired: runs decided under both):
        ``not enough data``.
    confidence
        The chance that no group is called ``regressed`` falsely: each
        group's interval is at ``1 − (1 − confidence) / m``, ``m`` the groups
        with enough data (Bonferroni).

    Returns
    -------
    CheckResult
        ``verdict``, ``exit_code`` (0, 1 or 4), ``groups`` (a row per group)
        and the terms of the check; ``lines()`` and ``to_dict()`` say it.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> r = oa.check(ds, baseline_rule="tests", candidate_rule="tests+review",
    ...              as_of="2027-01-01", min_decided=3)
    >>> r.verdict, r.exit_code
    ('within noise', 0)
    >>> r.groups.select("baseline_decided", "candidate_decided", "a", "b", "c", "d").row(0)
    (4, 4, 4, 0, 0, 0)
    >>> oa.check(ds, baseline="until=2026-01-01", candidate="since=2026-01-01",
    ...          as_of="2027-01-01").verdict
    'not enough data'
    """
    _check_terms(max_drop, min_decided, confidence)
    when = resolve_as_of(as_of)
    ds = scan_at(dataset, snapshot)
    common: dict[str, Any] = {
        "by": by,
        "as_of": when,
        "where": where,
        "slice_runs": slice_runs,
    }
    paired = baseline_rule is not None or candidate_rule is not None
    if paired:
        _refuse_mixed(rule, baseline, candidate, baseline_rule, candidate_rule)
        counts, base_text, cand_text = _paired_counts(
            ds, baseline_rule, candidate_rule, {**common, "since": since, "until": until}
        )
    else:
        if baseline is None or candidate is None or since is not None or until is not None:
            raise OcpAnalyticsError(
                hint(
                    "check compares two windows (baseline and candidate) or two rules "
                    "(baseline_rule and candidate_rule).",
                    "pass baseline='since=60d,until=30d', candidate='since=30d', or "
                    "baseline_rule='tests', candidate_rule='tests+review' (with since/until).",
                )
            )
        counts, base_text, cand_text = _window_counts(ds, rule, baseline, candidate, common)
    names = group_names(by)
    groups, level = _calls(counts, names, paired, max_drop, min_decided, confidence)
    calls = set(groups.get_column("call").to_list())
    verdict = next((c for c in _WORST_FIRST if c in calls), NOT_ENOUGH)
    return CheckResult(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        groups=groups,
        paired=paired,
        baseline=base_text,
        candidate=cand_text,
        max_drop=max_drop,
        min_decided=min_decided,
        confidence=confidence,
        level=level,
        as_of=when,
        snapshot=ds.snapshot if isinstance(ds, Dataset) else None,
        by=tuple(names),
    )


def _check_terms(max_drop: float, min_decided: int, confidence: float) -> None:
    if not 0.0 <= max_drop < 1.0:
        raise OcpAnalyticsError(
            hint(f"max_drop must be a share in [0, 1), not {max_drop}.", "0.02 is two points.")
        )
    if min_decided < 1:
        raise OcpAnalyticsError(
            hint(f"min_decided must be at least 1, not {min_decided}.", "use 30.")
        )
    if not 0.5 <= confidence < 1.0:
        raise OcpAnalyticsError(
            hint(f"confidence must be in [0.5, 1), not {confidence}.", "use 0.95.")
        )


def _refuse_mixed(rule: Any, baseline: Any, candidate: Any, base_rule: Any, cand_rule: Any) -> None:
    if base_rule is None or cand_rule is None:
        raise OcpAnalyticsError(
            hint("a paired check needs both baseline_rule and candidate_rule.", "give both.")
        )
    if rule is not None or baseline is not None or candidate is not None:
        raise OcpAnalyticsError(
            hint(
                "two rules over the same runs (baseline_rule, candidate_rule) take no rule "
                "and no baseline or candidate window.",
                "choose the runs with since/until; or compare one rule over two windows.",
            )
        )


def _one_rule(rule: Rule | str | None, what: str) -> Rule | None:
    """The one rule ``rule`` names, or None for each run's recorded rule."""
    if rule is None or rule == RECORDED:
        return None
    found = resolve_rules(rule)
    if len(found) != 1:
        raise OcpAnalyticsError(
            hint(f"{what} must name one rule, got {len(found)}.", "give one rule for each side.")
        )
    return found[0]


def _window_counts(
    ds: DatasetLike,
    rule: Rule | str | None,
    baseline: Window,
    candidate: Window,
    common: dict[str, Any],
) -> tuple[pl.DataFrame, str, str]:
    """Accepted and decided runs per group in each window, side by side (a full join)."""
    the_rule = _one_rule(rule, "rule")
    name = RECORDED if the_rule is None else the_rule.name
    names = group_names(common["by"])
    sides, texts = [], []
    for side, spec in (("baseline", baseline), ("candidate", candidate)):
        since, until = read_window(spec, side)
        got = rates(ds, the_rule, recorded=the_rule is None, since=since, until=until, **common)
        sides.append(
            got.filter(pl.col("rule") == name).select(
                *names,
                pl.col("accepted").alias(f"{side}_accepted"),
                (pl.col("accepted") + pl.col("rejected")).alias(f"{side}_decided"),
            )
        )
        texts.append(f"rule {name}, runs {_bounds(since, until)}")
    keys = names or ["_one"]  # a constant key: without groups, one row a side at most
    if not names:
        sides = [f.with_columns(pl.lit(1).alias("_one")) for f in sides]
    both = sides[0].join(sides[1], on=keys, how="full", coalesce=True, nulls_equal=True)
    if both.height == 0 and not names:  # no run on either side: one row of zeros
        both = pl.DataFrame({c: [0] for c in both.columns}, schema=both.schema)
    both = both.drop("_one", strict=False)
    counts = [c for c in both.columns if c not in names]
    return both.with_columns(pl.col(counts).fill_null(0)), texts[0], texts[1]


def _paired_counts(
    ds: DatasetLike,
    baseline_rule: Rule | str | None,
    candidate_rule: Rule | str | None,
    common: dict[str, Any],
) -> tuple[pl.DataFrame, str, str]:
    """The paired table per group of the candidate rule (A) against the baseline rule (B)."""
    base, cand = (
        _one_rule(baseline_rule, "baseline_rule"),
        _one_rule(candidate_rule, "candidate_rule"),
    )
    base_name = RECORDED if base is None else base.name
    cand_name = RECORDED if cand is None else cand.name
    if base_name == cand_name:
        raise OcpAnalyticsError(
            hint(
                f"baseline_rule and candidate_rule are the same rule ({base_name!r}).",
                "compare two different rules, or one rule over two windows.",
            )
        )
    alt = [r for r in (base, cand) if r is not None]
    recorded = base is None or cand is None
    _, flips = compare(ds, alt, recorded=recorded, sample=0, **common)
    names = group_names(common["by"])
    rows = flips.filter((pl.col("rule_a") == cand_name) & (pl.col("rule_b") == base_name))
    counts = rows.select(
        *names,
        (pl.col("a") + pl.col("c")).alias("baseline_accepted"),
        pl.col("n").alias("baseline_decided"),
        (pl.col("a") + pl.col("b")).alias("candidate_accepted"),
        pl.col("n").alias("candidate_decided"),
        "a",
        "b",
        "c",
        "d",
    )
    if counts.height == 0 and not names:  # no run at all
        counts = pl.DataFrame({c: [0] for c in counts.columns}, schema=counts.schema)
    runs = _bounds(common["since"], common["until"])
    suffix = f", runs {runs}" if runs else ""
    return counts, f"rule {base_name}{suffix}", f"rule {cand_name}{suffix}"


def _bounds(since: When, until: When) -> str:
    """``since X until Y`` (either part left out when absent)."""
    parts = [f"since {since}" if since else "", f"until {until}" if until else ""]
    return " ".join(p for p in parts if p)


def _calls(
    counts: pl.DataFrame,
    names: Sequence[str],
    paired: bool,
    max_drop: float,
    min_decided: int,
    confidence: float,
) -> tuple[pl.DataFrame, float]:
    """Each group's difference, interval and call; and the level of each interval.

    Only the groups with enough data can be called ``regressed``, so they
    make the family the Bonferroni adjustment divides by.
    """
    base_n, cand_n = pl.col("baseline_decided"), pl.col("candidate_decided")
    enough = counts.filter((base_n >= min_decided) & (cand_n >= min_decided)).height
    level = 1.0 - (1.0 - confidence) / max(enough, 1)
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    base_x, cand_x = pl.col("baseline_accepted"), pl.col("candidate_accepted")
    if paired:
        a, b, c, d = (pl.col(k) for k in "abcd")
        interval = paired_difference(a, b, c, d, z)
        p = mcnemar(b, c)
        extra = [p.alias("p_value"), mcnemar_method(b, c).alias("p_method")]
    else:
        interval = newcombe_difference(base_x, base_n, cand_x, cand_n, z)
        counts = counts.with_columns(pl.lit(None, pl.Int64).alias(k) for k in "abcd")
        extra = [
            pl.lit(None, pl.Float64).alias("p_value"),
            pl.lit(None, pl.String).alias("p_method"),
        ]
    call = change_call(
        interval.low, interval.high, base_n, cand_n, min_decided=min_decided, margin=max_drop
    )
    out = counts.with_columns(
        pl.when(base_n > 0).then(base_x / base_n).alias("baseline_rate"),
        pl.when(cand_n > 0).then(cand_x / cand_n).alias("candidate_rate"),
        interval.estimate.alias("difference"),
        interval.low.alias("difference_low"),
        interval.high.alias("difference_high"),
        call.alias("call"),
        *extra,
    ).with_columns(holm(pl.col("p_value")).alias("p_holm"))
    out = out.select(*names, *GROUP_COLUMNS)
    return (out.sort(list(names), nulls_last=True) if names else out), level
