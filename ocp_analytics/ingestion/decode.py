"""Decode document texts into the declared dtype, robustly and fast: three paths.

The fast path decodes many lines at once with polars (``str.json_decode`` into
:data:`DECODE_DTYPE`). polars is strict about most type errors (the whole
call fails) but lenient in a few places where a defect would pass unseen: it
reads a boolean where a number is declared as 1, and any scalar where a text
is declared as its text (``2400`` and ``"2400"`` alike). Lines that may hold
such a value are routed by cheap vectorized regexes (``PREFILTER``) to the
typed path; so are the lines of a sub-chunk that fails to decode (found by
bisection) and documents whose decoded values show a defect the regexes
cannot see (a bare number in a text ``value`` member, :data:`_BARE_NUMBER`).

The typed path (:mod:`~ocp_analytics.ingestion.typed`) decodes its lines
many at a time too, with every scalar's JSON type kept, and finds the
misfits (a wrong type: a ``wrong_type`` finding, the value read as null) as
column expressions. What it cannot decode takes the slow path
(:func:`~ocp_analytics.ingestion.sanitize.sanitize`), which reads one
document at a time in Python, names its defects and hands back a clean text
that decodes exactly as a clean document would. It takes what needs one
document at a time: not JSON, bytes that are not UTF-8, a lone surrogate
escape (which polars would read as ``"\\x00"`` without a word), an escape
that spells a letter, digit or sign (``RARE``: the regexes read the text, not
the characters it stands for), a number beyond a 64-bit float, an object
where a scalar is declared or the reverse. The three paths share one
flattening step (``tables.py``), and ``tests/property/test_spelling.py``
holds them to the same tables however a document is spelled.

A ``null`` element of ``signals`` / ``attempts`` / ``artifacts`` is a
``wrong_type`` finding: reported by the typed and slow paths for their
documents, by ``tables.py`` on the fast path (the frame's ``slow`` and
``typed`` columns tell which).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ocp_analytics.ingestion.sanitize import (
    SIDE_KEYS,
    Finding,
    Rejected,
    is_signal_dtype,
    sanitize,
)
from ocp_analytics.ingestion.typed import FINDING_SCHEMA, TypedReader, tagged
from ocp_analytics.schemas import DOCUMENT_DTYPE, RUN_DTYPE

# Lines decoded by one json_decode call. Smaller pieces stay in the core's
# cache, down to where the calls' own cost takes over (the figures per piece
# size are in benchmarks/RESULTS.md, "json_decode in pieces of 250").
SUBCHUNK = 250

# ``run.labels`` and ``run.acceptance_rule`` (``SIDE_KEYS``) are free-form:
# they are read from their own JSON text (``members.py``). The decode only
# marks whether each is an object (an empty struct: present or null); a value
# that is not an object makes the decode fail, so the document takes the slow
# path.
_MARKED_RUN = pl.Struct(
    {**{f.name: f.dtype for f in RUN_DTYPE.fields}, **dict.fromkeys(SIDE_KEYS, pl.Struct({}))}
)
DECODE_DTYPE = pl.Struct(
    {f.name: _MARKED_RUN if f.name == "run" else f.dtype for f in DOCUMENT_DTYPE.fields}
)

# Shapes polars would accept silently but wrongly, routed to the typed path:
# a boolean or a quoted number as a signal value (its JSON type matters), a
# boolean in a numeric field (read as 1.0), a number or boolean where a text
# is declared (read as its text). A text where a number is declared makes the
# decode fail (the bisection would find it): it is routed up front too, so a
# sub-chunk is not bisected for it. (A scalar or object where a list of
# objects is declared makes polars fail, so the bisection finds it.)


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
    rf'|"(?:{_NUMERIC_KEYS})"\s*:\s*(?:true|false|")'
    rf'|"(?:{_STRING_KEYS})"\s*:\s*[-0-9tf]'
)
# Shapes found by a rare literal (a separate pattern: one alternation with
# PREFILTER runs slower than the two apart, see benchmarks/RESULTS.md; this
# one is found by its "\u" or its member name, both rare):
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
# so its document takes the typed path.


def _text_values(dtype: Any, expr: pl.Expr) -> list[pl.Expr]:
    """For every text field named ``value`` but a signal's: true where it reads as a number.

    One expression per field, true per document (``expr`` is the document).
    """
    found: list[pl.Expr] = []
    if isinstance(dtype, pl.List):
        inner = _text_values(dtype.inner, pl.element())
        return [expr.list.eval(e).list.any() for e in inner]
    if isinstance(dtype, pl.Struct):
        is_signal = is_signal_dtype(dtype)
        for f in dtype.fields:
            sub = expr.struct.field(f.name)
            if f.name == "value" and f.dtype == pl.String:
                if not is_signal:
                    found.append(sub.str.contains(JSON_NUMBER))
            else:
                found += _text_values(f.dtype, sub)
    return found


_BARE_NUMBER = pl.any_horizontal(_text_values(DECODE_DTYPE, pl.col("doc"))).fill_null(False)
_TYPED = TypedReader(DECODE_DTYPE)


@dataclass
class Decoded:
    """The result of decoding one chunk of texts."""

    # columns: pos (UInt32), doc (DECODE_DTYPE), text, slow, typed (the path that read it)
    frame: pl.DataFrame
    rejected: list[Rejected] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # the slow path's
    # the typed path's findings (pos, code, json_path, message): typed.FINDING_SCHEMA
    typed_findings: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=FINDING_SCHEMA)
    )
    # Slow-path documents: position -> JSON text of run.labels and of
    # run.acceptance_rule (None when absent or null), as read and repaired.
    side: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    slow_path: int = 0  # texts read one at a time (readable or not)


def _decode(texts: pl.Series, dtype: pl.Struct) -> pl.Series:
    # eager: for a few hundred lines a lazy query's start costs more than it saves
    return texts.str.json_decode(dtype)


_Part = tuple[list[int], pl.Series]  # positions, docs


def _decode_or_bisect(
    texts: pl.Series, positions: list[int], failed: list[int], dtype: pl.Struct
) -> list[_Part]:
    """Decode; on failure split in halves until the failing lines are found."""
    try:
        return [(positions, _decode(texts, dtype))]
    except pl.exceptions.PolarsError:
        if len(positions) == 1:
            failed.append(positions[0])
            return []
    mid = len(positions) // 2
    return _decode_or_bisect(texts[:mid], positions[:mid], failed, dtype) + _decode_or_bisect(
        texts[mid:], positions[mid:], failed, dtype
    )


def _part_frame(parts: list[_Part], dtype: pl.Struct) -> pl.DataFrame:
    """Decoded parts as one frame (``pos``, ``doc``)."""
    frames = [
        pl.DataFrame({"pos": pl.Series(pos, dtype=pl.UInt32), "doc": docs}) for pos, docs in parts
    ]
    if not frames:
        return pl.DataFrame(schema={"pos": pl.UInt32, "doc": dtype})
    return pl.concat(frames, rechunk=False)


def _route_bare_numbers(fast: pl.DataFrame, typed: list[int]) -> pl.DataFrame:
    """``fast`` without the documents whose non-signal ``value`` is a bare number: to ``typed``."""
    found = fast.select(_BARE_NUMBER).to_series()
    if not found.any():
        return fast
    typed += fast.get_column("pos").filter(found).to_list()
    return fast.filter(~found)


def _route(series: pl.Series, raw: Mapping[int, str]) -> tuple[list[int], list[int], list[int]]:
    """Positions for the fast path, the typed path and the slow one.

    The slow path takes what must be read one document at a time (``RARE``,
    and texts that are not UTF-8); the typed path what ``PREFILTER`` flags.
    """
    t = pl.col("t")
    route = (
        series.to_frame()
        .select(
            pl.when(t.str.contains(RARE))
            .then(pl.lit(2, pl.UInt8))
            .when(t.str.contains(PREFILTER))
            .then(pl.lit(1, pl.UInt8))
            .otherwise(pl.lit(0, pl.UInt8))
            .fill_null(0)
        )
        .to_series()
    )
    if raw:
        route.scatter(list(raw), 2)
    return [(route == k).arg_true().to_list() for k in (0, 1, 2)]  # type: ignore[return-value]


def _decode_fast(series: pl.Series, fast: list[int], typed: list[int]) -> pl.DataFrame:
    """The fast path's texts decoded ``SUBCHUNK`` at a time (``pos``, ``doc``).

    A text that fails to decode, or shows a bare number, is added to ``typed``.
    """
    parts: list[_Part] = []
    for start in range(0, len(fast), SUBCHUNK):
        pos = fast[start : start + SUBCHUNK]
        contiguous = pos[-1] - pos[0] == len(pos) - 1
        sub = series.slice(pos[0], len(pos)) if contiguous else series.gather(pos)
        parts += _decode_or_bisect(sub, pos, typed, DECODE_DTYPE)
    # one chunk: the check below, and the tables built from it, run faster
    # on one than on a chunk per part (rechunking costs less than it saves)
    return _route_bare_numbers(_part_frame(parts, DECODE_DTYPE).rechunk(), typed)


def _decode_typed(
    series: pl.Series, typed: list[int], slow: list[int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The typed path's texts (:mod:`~ocp_analytics.ingestion.typed`): ``pos``, ``doc``, findings.

    A text that fails to decode even so is added to ``slow``.
    """
    if not typed:
        return _part_frame([], DECODE_DTYPE), pl.DataFrame(schema=FINDING_SCHEMA)
    typed = sorted(typed)
    texts = tagged(series.gather(typed))
    parts: list[_Part] = []
    for start in range(0, len(typed), SUBCHUNK):
        sub = texts.slice(start, SUBCHUNK)
        parts += _decode_or_bisect(sub, typed[start : start + SUBCHUNK], slow, _TYPED.dtype)
    return _TYPED.read(_part_frame(parts, _TYPED.dtype).rechunk())


def _sanitize_slow(
    texts: pl.Series | list[str],
    slow: list[int],
    unterminated: frozenset[int],
    raw: Mapping[int, str],
    result: Decoded,
) -> tuple[list[int], list[str]]:
    """Read the slow path's texts (:func:`sanitize`): positions and clean texts of the runs.

    What is no readable run goes to ``result.rejected``; the findings and
    side members of the others to ``result``.
    """
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
    return clean_pos, clean_texts


def _decode_slow(
    texts: pl.Series | list[str],
    series: pl.Series,
    slow: list[int],
    unterminated: frozenset[int],
    raw: Mapping[int, str],
    result: Decoded,
) -> pl.DataFrame:
    """The slow path's readable documents (``pos``, ``doc``): each text sanitized, then decoded.

    Their clean texts take their place in ``series``; what is no readable run,
    and the findings, go to ``result``.
    """
    clean_pos, clean_texts = _sanitize_slow(texts, slow, unterminated, raw, result)
    if not clean_texts:
        return _part_frame([], DECODE_DTYPE)
    failed: list[int] = []
    clean = pl.Series("t", clean_texts, dtype=pl.String)
    cleaned = _decode_or_bisect(clean, clean_pos, failed, DECODE_DTYPE)
    for i in failed:  # not expected: a clean text is built to decode
        result.rejected.append(Rejected(i, "not_json", "the document cannot be decoded"))
    series.scatter(clean_pos, clean_texts)
    return _part_frame(cleaned, DECODE_DTYPE)


def _with_texts(
    frame: pl.DataFrame, series: pl.Series, slow: list[int], typed: list[int]
) -> pl.DataFrame:
    """The decoded ``frame`` with each document's ``text``, ``slow`` and ``typed`` (its path)."""
    n = len(series)
    paths = []
    for name, where in (("slow", slow), ("typed", typed)):
        col = pl.Series(name, [False] * n, dtype=pl.Boolean)
        if where:
            col.scatter(where, True)
        paths.append(col)
    if frame.height == n:  # every position, in order
        return frame.with_columns(series.alias("text"), *paths)
    at = frame.get_column("pos")
    return frame.with_columns(series.gather(at).alias("text"), *(c.gather(at) for c in paths))


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

    Returns
    -------
    Decoded
        The readable documents (``pos``, ``doc``, ``text``, and the path
        that read each: ``slow``, ``typed``), what is no readable run, and
        the findings of the typed and slow paths.

    Examples
    --------
    >>> d = decode_texts(
    ...     [
    ...         '{"ocp": "0.3", "run": {"id": "r1", "title": 3}}',
    ...         '{"ocp": "0.3", "run": {"id": "r2", "title": "\\\\ud800"}}',
    ...         "{cut",
    ...     ]
    ... )
    >>> d.frame.select("pos", "typed", "slow").rows(), [r.code for r in d.rejected]
    ([(0, True, False), (1, False, True)], ['not_json'])
    >>> d.typed_findings.select("pos", "code", "json_path").rows()
    [(0, 'wrong_type', '$.run.title')]
    >>> [(f.pos, f.code, f.json_path) for f in d.findings], d.slow_path
    ([(1, 'lone_surrogate', '$.run.title')], 2)
    """
    raw = raw or {}
    # a new Series object: the scatter below must not change the caller's
    series = texts.alias("t") if isinstance(texts, pl.Series) else pl.Series("t", texts, pl.String)
    fast, typed, slow = _route(series, raw)
    fast_frame = _decode_fast(series, fast, typed)
    typed_frame, typed_findings = _decode_typed(series, typed, slow)
    result = Decoded(frame=pl.DataFrame(), typed_findings=typed_findings, slow_path=len(slow))
    slow_frame = _decode_slow(texts, series, slow, unterminated, raw, result)
    frames = [f for f in (fast_frame, typed_frame, slow_frame) if f.height] or [fast_frame]
    frame = pl.concat(frames, rechunk=False)
    if len(frames) > 1:  # each path's documents are in order: a sort when they join
        frame = frame.sort("pos")
    slow_pos = slow_frame.get_column("pos").to_list()
    typed_pos = typed_frame.get_column("pos").to_list()
    result.frame = _with_texts(frame, series, slow_pos, typed_pos)
    return result
