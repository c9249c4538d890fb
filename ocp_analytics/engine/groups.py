"""How the public functions group runs and name their results; pure.

Every executor (the polars loop in :mod:`ocp_analytics.api`, Spark's tasks,
the report) groups the same way: ``by`` names (runs columns, ``label.KEY``,
an :func:`~ocp_analytics.engine.rates.label` expression) and the period
become carried key columns ``_g0, _g1, …``; the summed rates get their names
back; ``compare``'s arguments are read once for all of them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from ocp_analytics._typing import Period, RulesLike
from ocp_analytics.engine.acceptance import OUTPUT_SCHEMA
from ocp_analytics.engine.rates import (
    LABEL_PREFIX,
    MATRIX_CELL,
    By,
    RatePartials,
    group_exprs,
    group_names,
)
from ocp_analytics.engine.timeaxis import check_period, period_start
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import RECORDED, Rule, resolve_rules


def groups(by: By, period: Period | None) -> tuple[list[str], list[str]]:
    """Output names of the group columns (``period`` first) and their carried names."""
    cols = group_names(by)
    names = (["period"] if period else []) + cols
    if len(set(names)) != len(names):
        raise OcpAnalyticsError(hint(f"a group is named twice in {names}.", "name each once."))
    return names, [f"_g{i}" for i in range(len(names))]


def group_carry(
    by: By, period: str | None
) -> tuple[list[str], list[str], Callable[[pl.Schema], list[pl.Expr]]]:
    """Group names, their carried names, and the expressions carrying them (over ``runs``)."""
    checked = check_period(period)
    names, keys = groups(by, checked)
    cols = names[1:] if checked else names

    def carry(schema: pl.Schema) -> list[pl.Expr]:
        exprs = ([period_start(checked)] if checked else []) + group_exprs(cols, schema)
        return [e.alias(k) for e, k in zip(exprs, keys, strict=True)]

    return names, keys, carry


def warn_missing_labels(out: pl.DataFrame, names: Sequence[str]) -> None:
    """Warn (at the caller's caller) for each label group no run has."""
    for name in names:
        if name.startswith(LABEL_PREFIX) and out.height and out[name].null_count() == out.height:
            warnings.warn(
                f"no run has the label {name[len(LABEL_PREFIX) :]!r}: every group is null. "
                "Hint: check the key's spelling (labels are case-sensitive).",
                stacklevel=3,
            )


def empty_decisions(
    keys: Sequence[str], dtypes: Mapping[str, pl.DataType] | None = None
) -> pl.DataFrame:
    """No decisions, with the key columns: the schema of a result when no run was read.

    Key columns are text unless ``dtypes`` gives their type.

    Examples
    --------
    >>> e = empty_decisions(["team", "_w"], {"_w": pl.Boolean()})
    >>> e.height, e.schema["team"], e.schema["_w"], e.columns[:2]
    (0, String, Boolean, ['run_id', 'rule'])
    """
    types = dtypes or {}
    return pl.DataFrame(schema={**OUTPUT_SCHEMA, **{k: types.get(k, pl.String()) for k in keys}})


def named_rates(sink: RatePartials, keys: Sequence[str], names: Sequence[str]) -> pl.DataFrame:
    """The summed rates, the group columns renamed from their keys to their names."""
    return sink.rates(empty_decisions(keys)).rename(dict(zip(keys, names, strict=True))).collect()


def compare_arguments(
    rules: RulesLike, by: By, sample: int, recorded: bool
) -> tuple[list[Rule], list[str], list[str]]:
    """Read ``compare``'s arguments (for every executor): rules, rule names, group names."""
    if sample < 0:
        raise OcpAnalyticsError(hint(f"sample must be 0 or more, not {sample}.", "use 5."))
    alt = resolve_rules(rules)
    names = ([RECORDED] if recorded else []) + [r.name for r in alt]
    cols = group_names(by)
    check_compare_names(names, cols)
    return alt, names, cols


def check_compare_names(names: list[str], groups: Sequence[str]) -> None:
    columns = {
        *groups,
        *(f"{n}{suffix}" for n in names for suffix in MATRIX_CELL.values() if suffix),
    }
    clash = sorted(n for n in names if n in columns)
    if clash:
        raise OcpAnalyticsError(
            hint(
                f"rule name {clash[0]!r} collides with a column of the comparison "
                "(a group, or another rule's __low, __high, __runs, __decided or "
                "__accepted column).",
                "rename the rule.",
            )
        )
