"""The public API over the engine and the store: what ``import ocp_analytics`` offers.

- :mod:`.evaluation`: acceptance, rates, attempts to acceptance, comparisons
  of rules (the one evaluation loop, its arguments read once).
- :mod:`.tries`: repeated tries of a task: pass@k and pass^k, flaky tasks.
- :mod:`.cost`: what acceptance costs: cost per accepted run, cost to acceptance.
- :mod:`.refresh`: the decisions store: rows decided once, refreshed where something changed.
"""

from __future__ import annotations

from ocp_analytics.api.check import CheckResult, check
from ocp_analytics.api.cost import cost, run_costs
from ocp_analytics.api.evaluation import (
    acceptance,
    attempts_distribution,
    compare,
    rates,
    write_acceptance,
)
from ocp_analytics.api.refresh import RefreshSummary, refresh
from ocp_analytics.api.sweep import sweep
from ocp_analytics.api.tries import flaky_tasks, passk

__all__ = [
    "CheckResult",
    "RefreshSummary",
    "acceptance",
    "attempts_distribution",
    "check",
    "compare",
    "cost",
    "flaky_tasks",
    "passk",
    "rates",
    "refresh",
    "run_costs",
    "sweep",
    "write_acceptance",
]
