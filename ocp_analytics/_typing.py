"""The exact types of the inputs the package accepts, declared once.

Part of the ground: at run time it imports nothing of ours, so every layer
may import it; the classes :data:`StoreLike`, :data:`DatasetLike` and
:data:`RulesLike` name are imported for type checkers only (those aliases
are forward references, resolved by the checker).

The words of :data:`Tier` and :data:`Period` are spelled here and nowhere
else: the runtime tuples are derived with :func:`typing.get_args`
(:data:`ocp_analytics.schemas.OUTCOME_TIERS`, the keys of
``engine.timeaxis.PERIODS`` are checked against them).

Examples
--------
>>> from typing import get_args
>>> get_args(Tier)
('verified', 'reported', 'heuristic', 'asserted')
>>> get_args(Period)
('day', 'week', 'month')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    import polars as pl

    from ocp_analytics.model.rules import Rule
    from ocp_analytics.store.scan import Dataset
    from ocp_analytics.store.storage import Store

__all__ = ["DatasetLike", "Period", "Progress", "RulesLike", "Silent", "StoreLike", "Tier", "When"]

Tier: TypeAlias = Literal["verified", "reported", "heuristic", "asserted"]
"""Evidence tiers, strongest first (docs/figures.md "tier and q")."""

Period: TypeAlias = Literal["day", "week", "month"]
"""Calendar buckets of the time axis, in UTC (weeks start on Monday)."""

When: TypeAlias = datetime | str | None
"""An instant: aware or naive (read as UTC), ISO 8601 text, or ``None`` for the default.

``since`` and ``until`` also take a duration before ``as_of`` (``"7d"``).
"""

StoreLike: TypeAlias = "str | Path | Store"
"""Where a dataset lives: a local path, an object-store URI, or a :class:`Store`."""

DatasetLike: TypeAlias = "StoreLike | Dataset | Mapping[str, pl.LazyFrame | pl.DataFrame]"
"""What the evaluation reads: a dataset's place, a scanned :class:`Dataset`, or its
tables in memory (``runs``, ``signals``, ``attempts``, ``rules``, optionally
``artifacts`` and ``events``)."""

RulesLike: TypeAlias = "Rule | str | Path | Iterable[Rule | str | Path] | None"
"""Alternative rules: a :class:`Rule`, a short form (``"tests+review"``), a
rules file (``.toml``/``.json``), a list of these, or ``None`` for none."""


class Progress(Protocol):
    """Receives the progress of long work (an ingest, a compaction): the bytes to go
    through, then the documents and bytes done; :class:`Silent` by default."""

    def start(self, total_bytes: int) -> None: ...
    def advance(self, documents: int, nbytes: int) -> None: ...
    def stop(self) -> None: ...


class Silent:
    """A :class:`Progress` that says nothing."""

    def start(self, total_bytes: int) -> None:
        pass

    def advance(self, documents: int, nbytes: int) -> None:
        pass

    def stop(self) -> None:
        pass
