"""The tier macros of ``sql/macros/``, written from :mod:`ocp_analytics.schemas`.

The tier words, their order (strongest first) and their q are declared once,
as ``OUTCOME_TIERS`` and ``TIER_Q``; the three macros that turn a tier word
into a rank, a rank back into a word and a rank into q are rendered from
them here. :func:`ocp_analytics.sql.connect` runs the rendered text, and
``python -m ocp_analytics.sql`` writes it to ``macros/ocp_tier_*.sql`` (for
analysts and the DuckDB CLI, through ``setup.sql``); ``--check`` and
``tests/test_sql_files.py`` fail when the files differ from the rendering.
"""

from __future__ import annotations

import textwrap

from ocp_analytics._typing import Tier
from ocp_analytics.schemas import OUTCOME_TIERS, TIER_Q

_GENERATED = (
    "-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by\n"
    "--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.\n"
)


def _comment(label: str, text: str) -> str:
    """``-- label: text``, wrapped at 79 columns with a hanging indent."""
    lines = textwrap.wrap(
        f"{label}: {text}",
        width=79,
        initial_indent="-- ",
        subsequent_indent="--   ",
        break_on_hyphens=False,
    )
    return "\n".join(lines) + "\n"


def _case(operand: str, pairs: list[tuple[str, str]], otherwise: str) -> str:
    whens = "".join(f"    WHEN {when} THEN {then}\n" for when, then in pairs)
    return f"CASE {operand}\n{whens}    ELSE {otherwise}\nEND;\n"


def _q(tier: Tier) -> str:
    # Parsed from text (repr round-trips), so the double is exactly
    # Python's TIER_Q value, as the engine writes it.
    return f"CAST('{TIER_Q[tier]!r}' AS DOUBLE)"


def _rank_macro() -> str:
    *named, weakest = OUTCOME_TIERS
    last = len(OUTCOME_TIERS) - 1
    ranks = ", ".join(f"{t} {i}" for i, t in enumerate(OUTCOME_TIERS))
    return (
        "-- ocp_tier_rank(tier): rank of an evidence tier word"
        ' (docs/figures.md "tier and q").\n--\n'
        + _GENERATED
        + _comment(
            "Purpose",
            f"{ranks}; compared lower-cased; a missing or unknown word reads as "
            f"{weakest} ({last}).",
        )
        + "-- Parameters: tier VARCHAR.\n"
        + f"-- Output: INTEGER 0..{last} (higher is weaker).\n"
        + "CREATE OR REPLACE MACRO ocp_tier_rank(tier) AS\n"
        + _case("lower(tier)", [(f"'{t}'", str(i)) for i, t in enumerate(named)], str(last))
    )


def _word_macro() -> str:
    *named, weakest = OUTCOME_TIERS
    last = len(OUTCOME_TIERS) - 1
    words = " | ".join(OUTCOME_TIERS)
    return (
        '-- ocp_tier_word(tier_rank): the tier word of a rank (docs/figures.md "tier and q").\n--\n'
        + _GENERATED
        + _comment(
            "Purpose",
            f"turn the weakest rank used back into its word; nothing used (NULL) reads {weakest}.",
        )
        + f"-- Parameters: tier_rank INTEGER 0..{last}, or NULL (nothing used).\n"
        + _comment("Output", f"VARCHAR {words} (NULL reads {weakest}).")
        + "CREATE OR REPLACE MACRO ocp_tier_word(tier_rank) AS\n"
        + _case("tier_rank", [(str(i), f"'{t}'") for i, t in enumerate(named)], f"'{weakest}'")
    )


def _q_macro() -> str:
    *named, weakest = OUTCOME_TIERS
    last = len(OUTCOME_TIERS) - 1
    qs = " | ".join(repr(TIER_Q[t]) for t in OUTCOME_TIERS)
    return (
        '-- ocp_tier_q(tier_rank): q of a tier rank (docs/figures.md "tier and q").\n--\n'
        + _GENERATED
        + _comment(
            "Purpose",
            "the q written next to every outcome: "
            + ", ".join(f"{TIER_Q[t]!r} for {t}" for t in OUTCOME_TIERS)
            + ".",
        )
        + f"-- Parameters: tier_rank INTEGER 0..{last}, or NULL (nothing used).\n"
        + _comment("Output", f"DOUBLE {qs} (NULL reads {weakest}, {TIER_Q[weakest]!r}).")
        + "CREATE OR REPLACE MACRO ocp_tier_q(tier_rank) AS\n"
        + _case("tier_rank", [(str(i), _q(t)) for i, t in enumerate(named)], _q(weakest))
    )


def tier_macros() -> dict[str, str]:
    """The text of each tier macro file, by its path under ``sql/``.

    Examples
    --------
    >>> texts = tier_macros()
    >>> sorted(texts)
    ['macros/ocp_tier_q.sql', 'macros/ocp_tier_rank.sql', 'macros/ocp_tier_word.sql']
    >>> print(texts["macros/ocp_tier_rank.sql"].split("AS\\n", 1)[1], end="")
    CASE lower(tier)
        WHEN 'verified' THEN 0
        WHEN 'reported' THEN 1
        WHEN 'heuristic' THEN 2
        ELSE 3
    END;
    """
    return {
        "macros/ocp_tier_rank.sql": _rank_macro(),
        "macros/ocp_tier_word.sql": _word_macro(),
        "macros/ocp_tier_q.sql": _q_macro(),
    }
