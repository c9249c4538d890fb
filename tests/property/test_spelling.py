"""How a document is spelled changes nothing that is read.

The fast path routes documents by regexes over their text (a boolean where
a number is declared, a number where a text is, a quoted number as a
signal's value) to the typed path, which reads them many at a time with
their values' JSON types kept; what needs one document at a time takes the
slow path. The typed and slow paths must read a mistyped value alike
(issue 36). Its regexes must see what the JSON reader sees, however the
document is written: members in any order, any JSON whitespace around them,
characters escaped. An escaped character once hid from them what the reader
sees: ``"\\u006e": true`` is member ``n`` set to a boolean, which polars
would read as 1 without a word. So every document (fields retyped at random),
serialized plainly and spelled otherwise, must give the same tables, row for
row, findings included.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

import ocp_analytics as oa
from benchmarks.generate import generate_documents
from ocp_analytics.ingestion import decode

POOL = list(generate_documents(12, seed=17))
# Values a field may be retyped to: each JSON type, and texts that look like numbers.
SCALARS = [True, False, 1, 0, -2.5, 1e300, "1", "2400", "-0.5e3", "true", "x", None]
ODD = [*SCALARS, {}, [], ["x"], {"a": 1}]


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value below the top level: scalars, objects and lists."""
    here = [path] if path else []
    if isinstance(doc, dict):
        return here + [p for k, v in doc.items() for p in _paths(v, (*path, k))]
    if isinstance(doc, list):
        return here + [p for i, v in enumerate(doc) for p in _paths(v, (*path, i))]
    return here


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def escaped(text: str, chosen: list[bool]) -> str:
    """``text`` with the characters of its strings escaped where ``chosen`` says (cycled).

    Only characters of the Basic Multilingual Plane that stand for themselves
    are escaped (an existing escape is copied as it is).
    """
    out: list[str] = []
    in_string = False
    i = k = 0
    while i < len(text):
        c = text[i]
        if not in_string:
            in_string = c == '"'
            out.append(c)
        elif c == "\\":  # an escape: copied whole
            width = 6 if text[i + 1] == "u" else 2
            out.append(text[i : i + width])
            i += width - 1
        elif c == '"':
            in_string = False
            out.append(c)
        elif ord(c) < 0x10000 and chosen[k % len(chosen)]:
            out.append(f"\\u{ord(c):04x}" if k % 3 else f"\\u{ord(c):04X}")
        else:
            out.append(c)
        k += in_string
        i += 1
    return "".join(out)


WHITESPACE = ["", " ", "\t", "  ", " \t "]


def spelled(value: Any, rnd: random.Random, keep_order: bool = False) -> str:
    """``value`` as JSON, its members shuffled and JSON whitespace put around its tokens.

    The members of ``labels`` keep their order (it is kept in the table).
    """
    ws = lambda: rnd.choice(WHITESPACE)  # noqa: E731
    if isinstance(value, dict):
        items = list(value.items())
        if not keep_order:
            rnd.shuffle(items)
        members = [
            ws()
            + json.dumps(k, ensure_ascii=False)
            + ws()
            + ":"
            + ws()
            + spelled(v, rnd, k == "labels")
            for k, v in items
        ]
        return "{" + ",".join(members) + ws() + "}"
    if isinstance(value, list):
        return "[" + ",".join(ws() + spelled(v, rnd) + ws() for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _tables(text: str) -> dict[str, pl.DataFrame]:
    """The tables read from ``text``: all but the bytes' hash and a quarantined text's head."""
    got = {name: frame.collect() for name, frame in oa.read_documents([text]).items()}
    got["quarantine"] = got["quarantine"].select("code", "json_path", "source_line")
    return {name: frame.drop("doc_sha256", strict=False) for name, frame in got.items()}


@st.composite
def retyped(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(POOL)))
    for _ in range(draw(st.integers(0, 4))):
        path = draw(st.sampled_from(_paths(doc)))
        _set(doc, path, copy.deepcopy(draw(st.sampled_from(ODD))))
    return doc


@st.composite
def mistyped(draw: st.DrawFn) -> Any:
    """A document with scalars (not objects or arrays) of another type: one to four.

    One is a signal's value of a type the prefilter sees (the document takes
    the typed path); the others anywhere, and an element of a list of
    objects may be null (those findings come in an order of their own).
    """
    doc = copy.deepcopy(draw(st.sampled_from(POOL)))
    scalars = [p for p in _paths(doc) if not isinstance(_get(doc, p), dict | list)]
    signals = doc["run"]["signals"]
    elements: list[tuple[Any, ...]] = [("run", "signals", i) for i in range(len(signals))]
    elements += [("attempts", i) for i in range(len(doc["attempts"]))]
    for _ in range(draw(st.integers(0, 3))):
        which = draw(st.sampled_from([scalars, scalars, elements]))
        path = draw(st.sampled_from(which))
        if _has(doc, path):  # (not below an element already set to null)
            _set(doc, path, None if which is elements else draw(st.sampled_from(SCALARS)))
    left = [s for s in signals if isinstance(s, dict)]
    if not left:
        signals.append({"kind": "score"})
        left = signals[-1:]
    draw(st.sampled_from(left))["value"] = draw(st.sampled_from([True, False, "1", "2400"]))
    return doc


def _has(doc: Any, path: tuple[Any, ...]) -> bool:
    try:
        _get(doc, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[bool]]:
    chosen = draw(st.lists(st.booleans(), min_size=1, max_size=40))
    return json.dumps(draw(retyped()), ensure_ascii=False), chosen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_escaped_characters_are_read_as_the_characters_they_name(
    case: tuple[str, list[bool]],
) -> None:
    plain, chosen = case
    text = escaped(plain, chosen)
    assert json.loads(text) == json.loads(plain)
    want, got = _tables(plain), _tables(text)
    for name in want:
        assert got[name].equals(want[name]), (name, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(retyped(), st.randoms(use_true_random=False))
def test_member_order_and_whitespace_change_nothing(doc: Any, rnd: random.Random) -> None:
    plain, text = json.dumps(doc, ensure_ascii=False), spelled(doc, rnd)
    assert json.loads(text) == doc
    want, got = _tables(plain), _tables(text)
    for name in want:
        assert got[name].equals(want[name]), (name, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mistyped(), min_size=1, max_size=4))
def test_the_typed_path_reads_mistyped_values_as_the_slow_path_does(
    docs: list[Any],
) -> None:
    """Many documents at a time, with their values' JSON types kept: the sanitizer's reading."""
    texts = [json.dumps(d, ensure_ascii=False) for d in docs]
    assert decode.decode_texts(texts).frame.get_column("typed").all()
    want = {name: frame.collect() for name, frame in oa.read_documents(texts).items()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decode, "RARE", "^")  # every text, one at a time
        assert decode.decode_texts(texts).slow_path == len(texts)
        got = {name: frame.collect() for name, frame in oa.read_documents(texts).items()}
    for name in want:
        assert got[name].equals(want[name]), (name, texts)


def test_an_escaped_member_name_hides_nothing() -> None:
    """Ways the text fooled the prefilter (found by the tests above and a review)."""
    doc = copy.deepcopy(POOL[0])
    doc["attempts"][0]["n"] = True  # a boolean where a number is declared
    doc["run"]["title"] = 7  # a number where a text is declared
    doc["run"]["signals"][0]["value"] = "1"  # a quoted number: a text
    doc["attempts"][0]["role"] = {"value": 3}  # a bare number in a text "value"
    plain = json.dumps(doc)
    text = (
        plain.replace('"n": true', '"\\u006e": true')
        .replace('"title": 7', '"\\u0074itle": 7')
        .replace('"value": "1"', '"value": "\\u0031"')
    )
    assert text.count("\\u") == 3
    want, got = _tables(plain), _tables(text)
    for name, frame in want.items():
        assert got[name].equals(frame), name
    findings = got["findings"].select("code", "json_path").rows()
    assert ("wrong_type", "$.attempts[0].n") in findings
    assert ("wrong_type", "$.run.title") in findings
    assert ("wrong_type", "$.attempts[0].role.value") in findings


def test_a_document_cannot_set_the_sanitizers_own_value_type() -> None:
    """``_ocpa_vtype`` is written by the sanitizer alone: a document's own is dropped."""
    doc = copy.deepcopy(POOL[0])
    signal = doc["run"]["signals"][0]
    signal.update(kind="score", value="abc", _ocpa_vtype="number")
    plain = json.dumps(doc)
    del signal["_ocpa_vtype"]
    want, got = _tables(json.dumps(doc)), _tables(plain)
    for name, frame in want.items():
        assert got[name].equals(frame), name
    findings = got["findings"].select("code", "json_path").rows()
    assert ("bad_value", "$.run.signals[0].value") in findings
