"""Loud typos: the verdicts and scores rules name that no selected run carries.

A rule naming a verdict no run has (``tests+reveiw``) is not an error: every
run is ``unknown`` (``missing:reveiw``), a believable 0 %. The evaluation loop
hands each slice's signals (the runs of the window and filters) to a
:class:`KnownNames`; once every name the rules mention was seen, it reads no
more, so a well-spelt call costs one pass over the first slice's signal
names (docs/rules.md, "A name no run carries").
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import polars as pl

from ocp_analytics.model.rules import Rule

KINDS = ("verdict", "score")


def named(rules: Sequence[Rule]) -> dict[tuple[str, str], list[str]]:
    """(kind, name) of every verdict and score the rules name → the rules naming it.

    Examples
    --------
    >>> named([Rule.parse("tests+review"), Rule.parse("tests+x>=1")])
    {('verdict', 'tests'): ['tests+review', 'tests+x>=1'], ('verdict', 'review'): ['tests+review'], ('score', 'x'): ['tests+x>=1']}
    """  # noqa: E501
    out: dict[tuple[str, str], list[str]] = {}
    for r in rules:
        wanted = [("verdict", v) for v in r.effective_requires]
        if r.score is not None:
            wanted.append(("score", r.score.name))
        for key in wanted:
            out.setdefault(key, []).append(r.name)
    return out


class KnownNames:
    """Collects the distinct (kind, name) of verdict and score signals, slice by slice.

    Examples
    --------
    >>> k = KnownNames([Rule.parse("tests+reveiw")])
    >>> k.add(pl.LazyFrame({"kind": ["verdict", "verdict", "event", "verdict"],
    ...                     "name": ["tests", "review", "revert", None]}))
    >>> k.messages()
    ["rule 'tests+reveiw' names a verdict 'reveiw' that no run carries; did you mean 'review'?"]
    """

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.wanted = named(rules)
        self.seen: set[tuple[str, str]] = set()
        # the names no part read holds (rule_out): known to be missing without reading
        self.absent: set[tuple[str, str]] = set()
        self.held: set[tuple[str, str]] = set()

    def rule_out(self, held: set[tuple[str, str]] | None) -> None:
        """Take every (kind, name) the parts to be read hold (``None``: not known).

        The dataset's manifest lists the verdict and score names of each
        ``signals`` part (``store/manifest.py``); a name none holds is
        carried by no run, so no slice need be read to find that out.

        Examples
        --------
        >>> k = KnownNames([Rule.parse("tests+reveiw")])
        >>> k.rule_out({("verdict", "tests"), ("verdict", "review")})
        >>> k.add(pl.LazyFrame({"kind": ["verdict"], "name": ["tests"]}))
        >>> k.done, k.messages()
        (True, ["rule 'tests+reveiw' names a verdict 'reveiw' that no run carries; did you mean 'review'?"])
        """  # noqa: E501
        if held is not None:
            self.held = held
            self.absent = {k for k in self.wanted if k not in held}

    @property
    def done(self) -> bool:
        """Every name the rules mention was seen or ruled out: later slices need not be read.

        A name ruled out is reported once a slice with some verdict or score
        was read (a selection with none says nothing: see :meth:`messages`).
        """
        found = all(k in self.seen or k in self.absent for k in self.wanted)
        return found and (bool(self.seen) or not self.absent)

    def add(self, signals: pl.LazyFrame) -> None:
        """Take one slice's signals (``kind``, ``name``), unless every name was seen."""
        if self.done:
            return
        found = (
            signals.filter(pl.col("kind").is_in(KINDS) & pl.col("name").is_not_null())
            .select("kind", "name")
            .unique()
            .collect()
        )
        self.seen.update(found.iter_rows())

    def messages(self) -> list[str]:
        """One line per rule and name no run carried, with the closest known names.

        None when the selection holds no verdict or score at all (an empty
        window, say): then every name is missing and none is a typo.
        """
        if not self.seen:
            return []
        known = sorted({n for _, n in self.seen | self.held})
        out = []
        for (kind, name), rules in self.wanted.items():
            if (kind, name) in self.seen:
                continue
            close = difflib.get_close_matches(name, known, n=3)
            advice = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
            out += [
                f"rule {r!r} names a {kind} {name!r} that no run carries{advice}" for r in rules
            ]
        return out
