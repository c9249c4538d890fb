"""Statistics an analyst can defend (issue #37); pure and vectorised.

Each figure is computed over whole columns (polars expressions, or numpy and
scipy on columns), never in a Python loop per cell, and each is held in
``tests/test_stats.py`` to an independent reference. docs/statistics.md gives
every formula, its assumptions and when not to use it.

- :mod:`.paired`: two rules over the same runs: the paired difference with
  Newcombe's interval (method 10, 1998), McNemar's test, Holm's adjustment.
- :mod:`.changes`: two periods or groups: the difference with Newcombe's
  hybrid score interval (method 10, 1998) and a call per cell.
- :mod:`.cluster`: an accept rate with a cluster-robust (CR1) interval.
- :mod:`.passk`: pass@k and pass^k per task, averaged per group.
- :mod:`.cost`: cost per accepted run with a delta-method interval.
- :mod:`.sweep`: the accept rate at every target of a score, and the target
  that reaches a rate.
"""

from __future__ import annotations

from ocp_analytics.engine.stats.changes import (
    CALLS,
    IMPROVED,
    MIN_DECIDED,
    NOT_ENOUGH,
    REGRESSED,
    WITHIN_NOISE,
    change_call,
    newcombe_difference,
)
from ocp_analytics.engine.stats.cluster import CLUSTER_COLUMNS, cluster_partials, cluster_rates
from ocp_analytics.engine.stats.cost import (
    COST_COLUMNS,
    COST_PARTIALS,
    cost_partials,
    cost_per_accepted,
)
from ocp_analytics.engine.stats.paired import (
    MCNEMAR_EXACT_BELOW,
    Interval,
    holm,
    mcnemar,
    mcnemar_method,
    mcnemar_pvalues,
    paired_difference,
)
from ocp_analytics.engine.stats.passk import PASSK_COLUMNS, pass_at_k, pass_at_k_by, task_counts
from ocp_analytics.engine.stats.sweep import SWEEP_COLUMNS, Better, sweep, target_for_rate

__all__ = [
    "CALLS",
    "CLUSTER_COLUMNS",
    "COST_COLUMNS",
    "COST_PARTIALS",
    "IMPROVED",
    "MCNEMAR_EXACT_BELOW",
    "MIN_DECIDED",
    "NOT_ENOUGH",
    "PASSK_COLUMNS",
    "REGRESSED",
    "SWEEP_COLUMNS",
    "WITHIN_NOISE",
    "Better",
    "Interval",
    "change_call",
    "cluster_partials",
    "cluster_rates",
    "cost_partials",
    "cost_per_accepted",
    "holm",
    "mcnemar",
    "mcnemar_method",
    "mcnemar_pvalues",
    "newcombe_difference",
    "paired_difference",
    "pass_at_k",
    "pass_at_k_by",
    "sweep",
    "target_for_rate",
    "task_counts",
]
