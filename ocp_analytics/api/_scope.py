"""What an evaluation reads and the loop it runs: :class:`_Scope`.

Every public function of :mod:`ocp_analytics.api` reads its arguments
(rules, ``as_of``, the time window, the filters) into a :class:`_Scope`,
then runs the one evaluation loop (:func:`ocp_analytics.engine.evaluate.run`)
with its sinks; with ``decisions``, the loop is fed from the rules'
decisions stores where they give the same rows
(:func:`ocp_analytics.api.stored.run_stored`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from ocp_analytics._typing import DatasetLike, When
from ocp_analytics.api.stored import WindowCodes, run_stored, window_codes
from ocp_analytics.engine.evaluate import SLICE_RUNS, Sink, run
from ocp_analytics.engine.known import KnownNames
from ocp_analytics.engine.timeaxis import resolve_as_of, resolve_window
from ocp_analytics.model.rules import Rule

__all__: list[str] = []


@dataclass(frozen=True)
class _Scope:
    """What a call evaluates, its arguments read: rules, instant, window, filters, slicing."""

    rules: list[Rule]
    as_of: datetime
    since: datetime | None
    until: datetime | None
    recorded: bool
    slice_runs: int = SLICE_RUNS
    where: tuple[str, ...] = ()
    # read the rules' decisions stores where they can give the same rows (api/stored.py)
    decisions: bool = False
    # read each slice's signal names for the warning of a name no run carries (engine/known.py)
    names: bool = True

    @classmethod
    def read(
        cls,
        rules: list[Rule],
        as_of: When,
        since: When,
        until: When,
        recorded: bool,
        slice_runs: int = SLICE_RUNS,
        where: Sequence[str] = (),
        decisions: bool = False,
    ) -> _Scope:
        when = resolve_as_of(as_of)
        window = resolve_window(since, until, when)
        filters = (where,) if isinstance(where, str) else tuple(where)
        return cls(rules, when, *window, recorded, slice_runs, filters, decisions)

    def run(
        self,
        dataset: DatasetLike,
        sinks: Sequence[Sink],
        carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None,
        progress: Callable[[int, int], None] | None = None,
        stacklevel: int = 3,
    ) -> None:
        """The evaluation loop over ``dataset``, its decisions handed to ``sinks``.

        With ``decisions``, the rules' decisions stores are read where they
        give the rows a full evaluation gives (:func:`~ocp_analytics.api.stored.run_stored`).
        Then, unless ``names`` is false (a caller that has warned already),
        a warning (at ``stacklevel``: the public function's caller) for each
        verdict or score a rule names that no run kept carries.
        """
        known = KnownNames(self.rules) if self.names else None
        if not self.decisions or not self._stored(dataset, sinks, carry, progress, known):
            self._raw(dataset, sinks, carry, progress, known)
        _warn(known, stacklevel)

    def codes(
        self,
        dataset: DatasetLike,
        carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None = None,
        stacklevel: int = 3,
        run_ids: bool = True,
    ) -> WindowCodes | None:
        """The window's decisions from the stores, run-major (:func:`.stored.window_codes`).

        None, having read nothing, without ``decisions`` or when some rule
        has no usable store: the caller then runs :meth:`run`. Warns as
        :meth:`run` does of names no run carries.
        """
        if not self.decisions:
            return None
        known = KnownNames(self.rules) if self.names else None
        found = window_codes(
            dataset, self.rules, self.as_of, **self._reads(carry, known), run_ids=run_ids
        )
        if found is not None:
            _warn(known, stacklevel)
        return found

    def _stored(
        self,
        dataset: DatasetLike,
        sinks: Sequence[Sink],
        carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None,
        progress: Callable[[int, int], None] | None,
        known: KnownNames | None,
    ) -> bool:
        """The loop fed from the decisions stores; False (nothing done) when none is usable."""
        summary = run_stored(
            dataset, self.rules, self.as_of, sinks, **self._reads(carry, known), progress=progress
        )
        return summary is not None

    def _reads(
        self, carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None, known: KnownNames | None
    ) -> dict[str, Any]:
        """The arguments both readers of the stores take (run_stored, window_codes)."""
        return {
            "recorded": self.recorded,
            "since": self.since,
            "until": self.until,
            "where": self.where,
            "carry": carry,
            "slice_runs": self.slice_runs,
            "known": known,
        }

    def _raw(
        self,
        dataset: DatasetLike,
        sinks: Sequence[Sink],
        carry: Callable[[pl.Schema], Sequence[pl.Expr]] | None,
        progress: Callable[[int, int], None] | None,
        known: KnownNames | None,
    ) -> None:
        run(
            dataset,
            self.rules,
            self.as_of,
            sinks,
            recorded=self.recorded,
            since=self.since,
            until=self.until,
            carry=carry,
            slice_runs=self.slice_runs,
            progress=progress,
            where=self.where,
            known=known,
        )


def _warn(known: KnownNames | None, stacklevel: int) -> None:
    """One warning (at ``stacklevel`` from the caller) per name ``known`` found no run carries."""
    for message in known.messages() if known is not None else []:
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
