"""Mistyped values: one value of a document written in the wrong JSON type.

Producers send them: a verdict written ``true`` / ``false``, a score written
as text (``"value": "2400"``, as an exporter that stringifies numbers
would), a boolean where a count is declared (``"n": true``), a number where
a text is (``"effort": 3``). Each is one finding when ingested, and the rest
of the document is read as usual.

Which documents get one is drawn from a generator of its own, seeded from
``(seed, index)`` apart from the document's: a document with a mistyped
value is otherwise byte for byte the one the stream holds without it, and
with no share asked for the stream is exactly what it was.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import orjson


def _verdict_boolean(doc: dict[str, Any], r: random.Random) -> bool:
    """A verdict's word written as a boolean: ``pass``/``accept`` as true, the rest false."""
    found = [s for s in doc["run"]["signals"] if s["kind"] == "verdict"]
    if not found:
        return False
    s = r.choice(found)
    s["value"] = s["value"] in ("pass", "accept")
    return True


def _score_text(doc: dict[str, Any], r: random.Random) -> bool:
    """A measured score written as the text of its number."""
    found = [s for s in doc["run"]["signals"] if s["kind"] == "score" and s["value"] is not None]
    if not found:
        return False
    s = r.choice(found)
    s["value"] = orjson.dumps(s["value"]).decode()
    return True


def _count_boolean(doc: dict[str, Any], r: random.Random) -> bool:
    """An attempt's ``n`` written as a boolean."""
    attempts = [a for a in doc["attempts"] if "n" in a]
    if not attempts:
        return False
    r.choice(attempts)["n"] = True
    return True


def _text_number(doc: dict[str, Any], r: random.Random) -> bool:
    """An attempt's ``effort`` (a text) written as a number."""
    attempts = [a for a in doc["attempts"] if a.get("effort") is not None]
    if not attempts:
        return False
    r.choice(attempts)["effort"] = r.choice((1, 2, 3))
    return True


MISTYPES: dict[str, Callable[[dict[str, Any], random.Random], bool]] = {
    "verdict_boolean": _verdict_boolean,
    "score_text": _score_text,
    "count_boolean": _count_boolean,
    "text_number": _text_number,
}
# "mixed": the kinds in these shares (what a fleet of producers sends; the
# verdicts and scores of the corpus, and now and then the others)
_MIXED = (("verdict_boolean", 0.45), ("score_text", 0.45), ("count_boolean", 0.05))
MISTYPE_KINDS = ("mixed", *MISTYPES)
# apart from every seed build_document uses, (seed << 64) | index
_SALT = 1 << 130


def mistype(
    doc: dict[str, Any], seed: int, index: int, share: float, kind: str, r: random.Random
) -> None:
    """With probability ``share``, write one value of ``doc`` in the wrong JSON type.

    ``kind``: one of :data:`MISTYPE_KINDS`. A document that has no value of
    the kind drawn gets one of the next kind that it has (in the order of
    :data:`MISTYPES`); one that has none is left as it is.
    """
    r.seed(_SALT | ((seed & 0xFFFF_FFFF_FFFF_FFFF) << 64) | index)
    if r.random() >= share:
        return
    if kind == "mixed":
        x, acc, kind = r.random(), 0.0, "text_number"
        for name, p in _MIXED:
            acc += p
            if x < acc:
                kind = name
                break
    names = list(MISTYPES)
    start = names.index(kind)
    for name in names[start:] + names[:start]:
        if MISTYPES[name](doc, r):
            return
