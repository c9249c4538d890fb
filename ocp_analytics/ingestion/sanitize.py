"""The slow path of the decode: one document read in Python, its defects named.

:func:`sanitize` reads one document with the standard JSON reader
(:func:`parse_json`), decides whether it is a document at all (else:
quarantine, a :class:`Rejected`), nulls every field whose JSON type does not
fit the declared dtype (each one a ``wrong_type`` :class:`Finding`), records
the JSON type of each ``signal.value``, and hands back a clean text that the
fast path (``decode.py``) decodes exactly as it would a clean document.

It also reads what orjson refuses but a JSON reader must not lose a run
over: a lone surrogate escape (``"\\ud800"``) or bytes that are not UTF-8 in
any string, in a field the package reads or not (``lone_surrogate`` /
``invalid_utf8`` findings, the string read as null, a member whose *name* is
bad dropped), and a number too large for a 64-bit float (``out_of_range``,
read as null). A ``null`` element of ``signals`` / ``attempts`` /
``artifacts`` is a ``wrong_type`` finding here (``typed.py`` reports it for
typed-path documents, ``tables.py`` for fast-path ones). The typed path
(``typed.py``) gives what this one gives for the documents it can decode.

The JSON rules every reader of the package shares live here too:
:func:`parse_json` (repeated member names keep their first value),
:func:`json_type` and :func:`member_path` (how a finding names a value).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson
import polars as pl

from ocp_analytics.schemas import DOCUMENT_DTYPE

# ``run.labels`` and ``run.acceptance_rule`` are free-form: the slow path hands
# on their JSON text (``Sanitized.side``), read later by ``members.py``.
SIDE_KEYS = ("labels", "acceptance_rule")


def is_signal_dtype(dtype: pl.Struct) -> bool:
    """Whether ``dtype`` is a signal's: the one struct whose ``value`` may be any scalar."""
    return "_ocpa_vtype" in {f.name for f in dtype.fields}


@dataclass
class Rejected:
    """A text that is not a readable run document (goes to quarantine)."""

    pos: int
    code: str
    message: str
    json_path: str | None = None


@dataclass
class Finding:
    """A defect inside a readable document (goes to findings)."""

    pos: int
    code: str
    json_path: str
    message: str


class Sanitized(NamedTuple):
    """What the slow path makes of one text (:func:`sanitize`)."""

    text: str | None  # clean text, decodable with DECODE_DTYPE
    findings: list[Finding]
    rejected: Rejected | None  # not a readable run document
    side: tuple[str | None, str | None] = (None, None)  # labels, rule: JSON texts


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, as a finding names it (``null``, ``number``, …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def member_path(path: str, key: str) -> str:
    """The JSON path of member ``key`` of the object at ``path``.

    Examples
    --------
    >>> member_path("$.run.labels", "team"), member_path("$.run.labels", "a b")
    ('$.run.labels.team', '$.run.labels["a b"]')
    """
    return f"{path}.{key}" if _NAME.fullmatch(key) else f"{path}[{json.dumps(key)}]"


class _Unicode:
    """Make a parsed document representable: bad strings and numbers become null.

    A string holding a surrogate (a lone ``\\ud800`` escape, or a byte that is
    not UTF-8 kept as a surrogate escape by the reader) is read as null; a
    member whose name holds one is dropped; a number beyond a 64-bit float
    (parsed as infinity) is read as null. Each is a finding. Integers beyond
    64 bits become floats, as orjson and polars read them.
    """

    def __init__(self, pos: int, invalid_utf8: bool) -> None:
        self.pos, self.invalid_utf8 = pos, invalid_utf8
        self.findings: list[Finding] = []
        self.nulled: set[str] = set()

    def bad_text(self, text: str, path: str, what: str) -> None:
        chars = _SURROGATE.findall(text)
        raw = [c for c in chars if "\udc80" <= c <= "\udcff"]
        if self.invalid_utf8 and raw:
            found = " ".join(f"0x{ord(c) - 0xDC00:02x}" for c in raw[:8])
            code, msg = "invalid_utf8", f"holds bytes that are not UTF-8 ({found})"
        else:
            found = " ".join(f"\\u{ord(c):04x}" for c in chars[:8])
            code, msg = "lone_surrogate", f"holds a lone surrogate escape ({found})"
        self.findings.append(Finding(self.pos, code, path, f"{what} {msg}; {self.fate(what)}"))

    @staticmethod
    def fate(what: str) -> str:
        return "the member is dropped" if what == "the member name" else "read as null"

    def fix(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            if _SURROGATE.search(value):
                self.bad_text(value, path, "the string")
                self.nulled.add(path)
                return None
            return value
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            self.findings.append(
                Finding(
                    self.pos,
                    "out_of_range",
                    path,
                    "the number is beyond the range of a 64-bit float; read as null",
                )
            )
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value if -(2**63) <= value < 2**64 else float(value)
        if isinstance(value, list):
            return [self.fix(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                sub = member_path(path, k)
                if _SURROGATE.search(k):
                    self.bad_text(k, sub, "the member name")
                    continue
                out[k] = self.fix(v, sub)
            return out
        return value


class _Cleaner:
    """Walk one parsed document against a polars dtype, nulling misfits."""

    def __init__(self, pos: int) -> None:
        self.pos = pos
        self.findings: list[Finding] = []

    def misfit(
        self, path: str, expected: str, value: Any, fate: str = "the field is read as null"
    ) -> None:
        found = json_type(value)
        self.findings.append(
            Finding(self.pos, "wrong_type", path, f"expected {expected}, found {found}; {fate}")
        )

    def clean(self, value: Any, dtype: Any, path: str, any_scalar: bool = False) -> Any:
        if value is None:
            return None
        if isinstance(dtype, pl.Struct):
            if not isinstance(value, dict):
                self.misfit(path, "an object", value)
                return None
            return self.clean_struct(value, dtype, path)
        if isinstance(dtype, pl.List):
            if not isinstance(value, list):
                self.misfit(path, "an array", value)
                return None
            inner = dtype.inner
            if isinstance(inner, pl.Struct):
                for i, v in enumerate(value):
                    if v is None:
                        self.misfit(f"{path}[{i}]", "an object", v, "the element is skipped")
            return [self.clean(v, inner, f"{path}[{i}]") for i, v in enumerate(value)]
        if dtype == pl.Float64:
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.misfit(path, "a number", value)
                return None
            return value
        # String. Only a signal's value may be any scalar (its type is kept).
        if isinstance(value, str) or (any_scalar and not isinstance(value, dict | list)):
            return value
        self.misfit(path, "a string", value)
        return None

    def clean_struct(self, value: dict[str, Any], dtype: pl.Struct, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        is_signal = is_signal_dtype(dtype)
        for fld in dtype.fields:
            if fld.name in value and fld.name != "_ocpa_vtype":  # the sanitizer's own
                out[fld.name] = self.clean(
                    value[fld.name],
                    fld.dtype,
                    f"{path}.{fld.name}",
                    any_scalar=is_signal and fld.name == "value",
                )
        if is_signal and "value" in value:
            raw = value["value"]
            out["_ocpa_vtype"] = json_type(raw) if out.get("value") is not None else "null"
        return out


def _not_json_code(text: str, error: Exception, unterminated: bool) -> str:
    if unterminated:
        return "truncated"
    msg = str(error)
    return "truncated" if "EOF" in msg or "end of" in msg.lower() else "not_json"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose repeated member names keep their first value (as polars reads them)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def parse_json(text: str) -> Any:
    """Parse one JSON text the way the fast path reads it, refusing nothing JSON allows.

    The standard reader, so that lone surrogate escapes, surrogates (bytes
    that were not UTF-8) and numbers beyond a 64-bit float are read (and
    :class:`_Unicode` reports them), and a repeated member name keeps its
    first value, as polars and DuckDB do (orjson keeps the last). ``NaN`` and
    ``Infinity`` are not JSON. Errors are orjson's (their wording tells a cut
    text from a malformed one).
    """
    try:
        return json.loads(text, object_pairs_hook=first_wins, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        orjson.loads(text)  # raises with orjson's message
        raise


# Fields whose defect makes the document unreadable rather than a finding.
_KEY_PATHS = ("$.run.id", "$.ocp")


def sanitize(
    text: str, pos: int, *, unterminated: bool = False, invalid_utf8: bool = False
) -> Sanitized:
    """Read one document on the slow path.

    Returns ``(clean_text, findings, None, side)`` for a readable document,
    or ``(None, [], rejected, (None, None))`` for text that is not a run
    document. ``side``: the JSON texts of ``run.labels`` and
    ``run.acceptance_rule`` (None when absent or null), read from their own
    text later. ``invalid_utf8``: the text holds bytes that were not UTF-8
    (as surrogate escapes).
    """
    try:
        parsed = parse_json(text)
    except (ValueError, RecursionError) as exc:
        code = _not_json_code(text, exc, unterminated)
        note = " (the text also holds bytes that are not UTF-8)" if invalid_utf8 else ""
        return Sanitized(None, [], Rejected(pos, code, f"not valid JSON{note}: {exc}"))
    uni = _Unicode(pos, invalid_utf8)
    doc = uni.fix(parsed, "$")
    for f in uni.findings:
        if f.json_path in _KEY_PATHS:
            return Sanitized(None, [], Rejected(pos, f.code, f.message, f.json_path))
    if invalid_utf8 and not any(f.code == "invalid_utf8" for f in uni.findings):
        return Sanitized(
            None, [], Rejected(pos, "invalid_utf8", "the text holds bytes that are not UTF-8")
        )
    if not isinstance(doc, dict):
        found = json_type(doc)
        return Sanitized(None, [], Rejected(pos, "not_object", f"top level is {found}", "$"))
    run = doc.get("run")
    if run is not None and not isinstance(run, dict):
        found = json_type(run)
        msg = f"run is {found}, expected an object"
        return Sanitized(None, [], Rejected(pos, "missing_run", msg, "$.run"))
    cleaner = _Cleaner(pos)
    clean = cleaner.clean_struct(doc, DOCUMENT_DTYPE, "$")
    # labels and the rule are read from their own text later: hand them on
    # (a label whose value was just reported and nulled is left out, so it
    # is not reported again as a null label).
    side: list[str | None] = [None, None]
    if isinstance(run, dict):
        labels = run.get("labels")
        if isinstance(labels, dict) and uni.nulled:
            run["labels"] = {
                k: v for k, v in labels.items() if member_path("$.run.labels", k) not in uni.nulled
            }
        for i, key in enumerate(SIDE_KEYS):
            if run.get(key) is not None:
                side[i] = orjson.dumps(run[key]).decode()
    findings = uni.findings + cleaner.findings
    return Sanitized(orjson.dumps(clean).decode(), findings, None, (side[0], side[1]))
