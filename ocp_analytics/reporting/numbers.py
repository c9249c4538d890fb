"""How a share and a rate read, on the page and in the command line's tables: one home.

``66.0 % [65.7–66.3] of 1,234 decided``: the rate with one decimal, its 95 %
interval, and the number of decided runs it rests on, so no rate is read
without its count. Shares are percentages (``43.8 %``); a change is in points
with its interval and its call (``-3.1 pts [-5.0, -1.2] regressed``). The
command line imports these (a door may import this one); nothing here needs
the report's extra.
"""

from __future__ import annotations

import math

from ocp_analytics.engine.flips import format_difference


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(value: float | None, digits: int = 1) -> str:
    """A share as a percentage with ``digits`` decimals; ``–`` when there is none.

    Examples
    --------
    >>> pct(0.4375), pct(1.0), pct(None)
    ('43.8 %', '100.0 %', '–')
    """
    if value is None or _missing(value):
        return "–"
    return f"{100 * value:.{digits}f} %"


def interval_text(low: float | None, high: float | None) -> str:
    """A 95 % interval in percent points, ``[65.7–66.3]``; ``[–]`` when there is none.

    Examples
    --------
    >>> interval_text(0.657, 0.663)
    '[65.7–66.3]'
    """
    if low is None or high is None or _missing(low) or _missing(high):
        return "[–]"
    return f"[{100 * low:.1f}–{100 * high:.1f}]"


def rate_text(
    rate: float | None, low: float | None, high: float | None, decided: int | None
) -> str:
    """A rate with its interval and the decided runs it rests on.

    Examples
    --------
    >>> rate_text(0.66, 0.657, 0.663, 1234)
    '66.0 % [65.7–66.3] of 1,234 decided'
    >>> rate_text(None, None, None, 0)
    '– of 0 decided'
    """
    count = "" if decided is None else f" of {decided:,} decided"
    if rate is None or _missing(rate):
        return f"–{count}"
    return f"{pct(rate)} {interval_text(low, high)}{count}"


def change_text(
    change: float | None, low: float | None, high: float | None, call: str | None
) -> str:
    """A change of accept rate in points, with its 95 % interval and its call.

    The call is that of ``engine.stats.changes.change_call`` (``improved``,
    ``regressed``, ``within noise``, ``not enough data``).

    Examples
    --------
    >>> change_text(-0.031, -0.05, -0.012, "regressed")
    '-3.1 pts [-5.0, -1.2] regressed'
    >>> change_text(None, None, None, "not enough data")
    '– not enough data'
    """
    text = format_difference(change, low, high)
    return f"{text} {call}" if call else text
