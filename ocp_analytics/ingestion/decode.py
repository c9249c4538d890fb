"""Decode document texts into the declared dtype, robustly and fast.

The fast path decodes many lines at once with polars (``str.json_decode`` into
:data:`~ocp_analytics.schemas.DOCUMENT_DTYPE`). polars is strict about most
type errors (the whole call fails) but lenient in a few places where a defect
would pass unseen. Lines that may hold such a defect are routed, by cheap
vectorized regexes, to the slow path; lines in a sub-chunk that fails to
decode are found by bisection and routed there too, and so are documents
whose decoded values show a defect the regexes cannot see (a bare number in
a text ``value`` member, :data:`_BARE_NUMBER`).
``tests/property/test_spelling.py`` holds both paths to the same tables
however a document is spelled.

The slow path (:func:`sanitize`) reads one document with orjson, decides
whether it is a document at all (else: quarantine), nulls every field whose
JSON type does not fit the declared dtype (each one a ``wrong_type``
finding), records the JSON type of each ``signal.value``, and hands back a
clean text that the fast path decodes exactly as it would a clean document.
Both paths therefore share one flattening step (``tables.py``).

The slow path also reads what orjson refuses but a JSON reader must not lose
a run over: a lone surrogate escape (``"\\ud800"``) or bytes that are not
UTF-8 in any string, in a field the package reads or not (``lone_surrogate``
/ ``invalid_utf8`` findings, the string read as null, a member whose *name*
is bad dropped), and a number too large for a 64-bit float
(``out_of_range``, read as null). polars would read the surrogate as
``"\\x00"`` without a word, so such lines are routed here by the prefilter,
as are lines where an escape spells a letter, digit or sign (``RARE``): the
prefilter's regexes read the text, not the characters it stands for.
A ``null`` element of ``signals`` / ``attempts`` / ``artifacts`` is a
``wrong_type`` finding: reported here on the slow path, by ``tables.py`` on
the fast path (the frame's ``slow`` column tells which).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
import polars as pl

from ocp_analytics.schemas import DOCUMENT_DTYPE, RUN_DTYPE

# Lines decoded by one json_decode call. Smaller pieces stay in the core's
# cache: on one thread a 15,000-document chunk decoded in pieces of 250 takes
# 172-181 ms of CPU, of 500 191-215, of 1,000 250, of 15,000 420 (of 100 183-188,
# of 50 217: the calls' own cost takes over). See benchmarks/RESULTS.md.
SUBCHUNK = 250

# ``run.labels`` and ``run.acceptance_rule`` are free-form: they are read from
# their own JSON text (``tables.py``). The decode only marks whether each is
# an object (an empty struct: present or null); a value that is not an
# object makes the decode fail, so the document takes the slow path.
SIDE_KEYS = ("labels", "acceptance_rule")
_MARKED_RUN = pl.Struct(
    {**{f.name: f.dtype for f in RUN_DTYPE.fields}, **dict.fromkeys(SIDE_KEYS, pl.Struct({}))}
)
DECODE_DTYPE = pl.Struct(
    {f.name: _MARKED_RUN if f.name == "run" else f.dtype for f in DOCUMENT_DTYPE.fields}
)

# Shapes polars would accept silently but wrongly: a boolean or a quoted
# number as a signal value (its JSON type matters), a boolean in a numeric
# field (read as 1.0). (A scalar or object where a list of objects is
# declared makes polars fail, so the bisection finds it.)


def _keys_of(dtype: Any, leaf: Any, out: set[str]) -> set[str]:
    """Names of every ``leaf``-typed field of a decode dtype (except signal.value)."""
    if isinstance(dtype, pl.List):
        return _keys_of(dtype.inner, leaf, out)
    if isinstance(dtype, pl.Struct):
        for f in dtype.fields:
            if f.dtype == leaf and f.name not in ("value", "_ocpa_vtype"):
                out.add(f.name)
            _keys_of(f.dtype, leaf, out)
    return out


_NUMERIC_KEYS = "|".join(sorted(_keys_of(DOCUMENT_DTYPE, pl.Float64, set())))
# A number or boolean where a string is declared: polars would read it as
# its JSON text; the sanitizer reads it as a wrong type instead.
_STRING_KEYS = "|".join(sorted(_keys_of(DOCUMENT_DTYPE, pl.String, set())))
# A JSON number, as its text (RFC 8259): unanchored here, whole in JSON_NUMBER.
_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?"
JSON_NUMBER = f"^{_NUMBER}$"
PREFILTER = (
    rf'"value"\s*:\s*(?:true|false|"{_NUMBER}")'
    rf'|"(?:{_NUMERIC_KEYS})"\s*:\s*(?:true|false)'
    rf'|"(?:{_STRING_KEYS})"\s*:\s*[-0-9tf]'
)
# Shapes found by a rare literal (a separate pattern: one alternation with
# PREFILTER runs twice as slow as the two apart; this one is found by its
# "\u" or its member name, both rare):
# - a surrogate escape (polars reads a lone one as "\x00");
# - an escape of a letter, digit, "_", "+", "-" or "." (and the few signs
#   among them): it can spell a member name or a number the prefilter's
#   regexes look for, as in '"\u006e": true' (member n) or '"value": "\u0031"'
#   (the text "1"). Escapes of other characters ("<", "&", controls, any
#   non-ASCII character) spell none of them and stay on the fast path;
# - a member named "_ocpa_vtype", the signal field only the sanitizer
#   writes: the fast path would trust a document's own; the sanitizer drops it.
RARE = r'\\u(?:[dD][89a-fA-F]|00(?:2[bdeBDE]|3[0-9]|[4-7][0-9a-fA-F]))|"_ocpa_vtype"'


# A bare number where a text named "value" is declared (role.value,
# phase.value, an artifact's kind.value) is read by polars as its text; the
# prefilter cannot tell it from a signal's value, which may be a number. A
# text of that field that reads as a JSON number on the fast path came from a
# bare number (a quoted one is routed by PREFILTER, an escaped one by RARE),
# so its document takes the slow path.


def _is_signal(dtype: pl.Struct) -> bool:
    """Whether ``dtype`` is a signal's: the one struct whose ``value`` may be any scalar."""
    return "_ocpa_vtype" in {f.name for f in dtype.fields}


def _text_values(dtype: Any, expr: pl.Expr) -> list[pl.Expr]:
    """For every text field named ``value`` but a signal's: true where it reads as a number.

    One expression per field, true per document (``expr`` is the document).
    """
    found: list[pl.Expr] = []
    if isinstance(dtype, pl.List):
        inner = _text_values(dtype.inner, pl.element())
        return [expr.list.eval(e).list.any() for e in inner]
    if isinstance(dtype, pl.Struct):
        is_signal = _is_signal(dtype)
        for f in dtype.fields:
            sub = expr.struct.field(f.name)
            if f.name == "value" and f.dtype == pl.String:
                if not is_signal:
                    found.append(sub.str.contains(JSON_NUMBER))
            else:
                found += _text_values(f.dtype, sub)
    return found


_BARE_NUMBER = pl.any_horizontal(_text_values(DECODE_DTYPE, pl.col("doc"))).fill_null(False)


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


@dataclass
class Decoded:
    """The result of decoding one chunk of texts."""

    frame: pl.DataFrame  # columns: pos (UInt32), doc (DECODE_DTYPE), text, slow
    rejected: list[Rejected] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Slow-path documents: position -> JSON text of run.labels and of
    # run.acceptance_rule (None when absent or null), as read and repaired.
    side: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)


class Sanitized(NamedTuple):
    """What the slow path makes of one text (:func:`sanitize`)."""

    text: str | None  # clean text, decodable with DECODE_DTYPE
    findings: list[Finding]
    rejected: Rejected | None  # not a readable run document
    side: tuple[str | None, str | None] = (None, None)  # labels, rule: JSON texts


def json_type(value: Any) -> str:
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
_HIGH_FLOAT = 2.0**64


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
        is_signal = _is_signal(dtype)
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


def _decode(texts: pl.Series) -> pl.Series:
    # eager: for a few hundred lines a lazy query's start costs more than it saves
    return texts.str.json_decode(DECODE_DTYPE)


_Part = tuple[list[int], pl.Series]  # positions, docs


def _decode_or_bisect(texts: pl.Series, positions: list[int], failed: list[int]) -> list[_Part]:
    """Decode; on failure split in halves until the failing lines are found."""
    try:
        return [(positions, _decode(texts))]
    except pl.exceptions.PolarsError:
        if len(positions) == 1:
            failed.append(positions[0])
            return []
    mid = len(positions) // 2
    return _decode_or_bisect(texts[:mid], positions[:mid], failed) + _decode_or_bisect(
        texts[mid:], positions[mid:], failed
    )


def _part_frame(parts: list[_Part]) -> pl.DataFrame:
    """Decoded parts as one frame (``pos``, ``doc``)."""
    frames = [
        pl.DataFrame({"pos": pl.Series(pos, dtype=pl.UInt32), "doc": docs}) for pos, docs in parts
    ]
    if not frames:
        return pl.DataFrame(schema={"pos": pl.UInt32, "doc": DECODE_DTYPE})
    return pl.concat(frames, rechunk=False)


def _route_bare_numbers(fast: pl.DataFrame, slow: list[int]) -> pl.DataFrame:
    """``fast`` without the documents whose non-signal ``value`` is a bare number: to ``slow``."""
    found = fast.select(_BARE_NUMBER).to_series()
    if not found.any():
        return fast
    slow += fast.get_column("pos").filter(found).to_list()
    return fast.filter(~found)


def decode_texts(
    texts: pl.Series | list[str],
    unterminated: frozenset[int] = frozenset(),
    *,
    raw: Mapping[int, str] | None = None,
) -> Decoded:
    """Decode a chunk of document texts (positions are indexes into ``texts``).

    Parameters
    ----------
    texts
        One document text each (an NDJSON line, or an element of a JSON array
        re-serialized), as a list or a polars string column.
    unterminated
        Positions whose text was cut off by the end of its source (an
        unparseable one is quarantined as ``truncated``).
    raw
        Positions whose bytes were not valid UTF-8: the text as read, bad bytes
        kept as surrogate escapes (``texts`` holds a display copy). They take
        the slow path and each bad string is an ``invalid_utf8`` finding.
    """
    raw = raw or {}
    # a new Series object: the scatter below must not change the caller's
    series = texts.alias("t") if isinstance(texts, pl.Series) else pl.Series("t", texts, pl.String)
    t = pl.col("t")
    flagged = (
        series.to_frame()
        .select(t.str.contains(PREFILTER) | t.str.contains(RARE))
        .to_series()
        .fill_null(False)
    )
    flags = flagged.to_list()
    for i in raw:
        flags[i] = True
    fast = [i for i, f in enumerate(flags) if not f]
    slow = [i for i, f in enumerate(flags) if f]
    parts: list[_Part] = []
    for start in range(0, len(fast), SUBCHUNK):
        pos = fast[start : start + SUBCHUNK]
        contiguous = pos[-1] - pos[0] == len(pos) - 1
        sub = series.slice(pos[0], len(pos)) if contiguous else series.gather(pos)
        parts += _decode_or_bisect(sub, pos, slow)
    # one chunk: the check below, and the tables built from it, run faster
    # on one than on a chunk per part (rechunking costs less than it saves)
    fast_frame = _route_bare_numbers(_part_frame(parts).rechunk(), slow)
    cleaned: list[_Part] = []  # the slow path's texts, decoded
    result = Decoded(frame=pl.DataFrame())
    clean_pos: list[int] = []
    clean_texts: list[str] = []
    for i in sorted(slow):
        text, findings, rejected, side = sanitize(
            raw.get(i, texts[i]), i, unterminated=i in unterminated, invalid_utf8=i in raw
        )
        if rejected is not None:
            result.rejected.append(rejected)
            continue
        assert text is not None
        result.findings += findings
        result.side[i] = side
        clean_pos.append(i)
        clean_texts.append(text)
    if clean_texts:
        failed: list[int] = []
        cleaned = _decode_or_bisect(pl.Series("t", clean_texts, dtype=pl.String), clean_pos, failed)
        for i in failed:  # not expected: a clean text is built to decode
            result.rejected.append(Rejected(i, "not_json", "the document cannot be decoded"))
        series.scatter(clean_pos, clean_texts)
    frame = pl.concat([fast_frame, _part_frame(cleaned)], rechunk=False) if cleaned else fast_frame
    if clean_pos:  # the fast parts are in order; a nested sort only when slow ones join
        frame = frame.sort("pos")
    if frame.height == len(texts):  # every position, in order
        slow_col = pl.Series("slow", [False] * len(texts), dtype=pl.Boolean)
        if clean_pos:
            slow_col.scatter(clean_pos, True)
        result.frame = frame.with_columns(series.alias("text"), slow_col)
        return result
    slow_mask = [False] * len(texts)
    for i in clean_pos:
        slow_mask[i] = True
    at = frame.get_column("pos")
    result.frame = frame.with_columns(
        series.gather(at).alias("text"),
        pl.Series("slow", slow_mask, dtype=pl.Boolean).gather(at),
    )
    return result
