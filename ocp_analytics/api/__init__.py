"""The public API over the engine and the store: what ``import ocp_analytics`` offers.

- :mod:`.evaluation`: acceptance, rates, attempts to acceptance, comparisons
  of rules (the one evaluation loop, its arguments read once).
"""

from __future__ import annotations

from ocp_analytics.api.evaluation import (
    acceptance,
    attempts_distribution,
    compare,
    rates,
    write_acceptance,
)

__all__ = ["acceptance", "attempts_distribution", "compare", "rates", "write_acceptance"]
