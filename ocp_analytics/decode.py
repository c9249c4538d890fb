"""Decode document texts into the declared dtype, robustly and fast.

The fast path decodes many lines at once with polars (``str.json_decode`` into
:data:`~ocp_analytics.schemas.DOCUMENT_DTYPE`). polars is strict about most
type errors (the whole call fails) but lenient in a few places where a defect
would pass unseen. Lines that may hold such a defect are routed, by a cheap
vectorized regex, to the slow path; lines in a sub-chunk that fails to decode
are found by bisection and routed there too.

The slow path (:func:`sanitize`) reads one document with orjson, decides
whether it is a document at all (else: quarantine), nulls every field whose
JSON type does not fit the declared dtype (each one a ``wrong_type``
finding), records the JSON type of each ``signal.value``, and hands back a
clean text that the fast path decodes exactly as it would a clean document.
Both paths therefore share one flattening step (``tables.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from ocp_analytics.schemas import DOCUMENT_DTYPE

SUBCHUNK = 2000

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
PREFILTER = (
    r'"value"\s*:\s*(?:true|false|"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")'
    rf'|"(?:{_NUMERIC_KEYS})"\s*:\s*(?:true|false)'
    rf'|"(?:{_STRING_KEYS})"\s*:\s*[-0-9tf]'
)


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

    frame: pl.DataFrame  # columns: pos (UInt32), doc (DOCUMENT_DTYPE), text
    rejected: list[Rejected] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class _Cleaner:
    """Walk one parsed document against a polars dtype, nulling misfits."""

    def __init__(self, pos: int) -> None:
        self.pos = pos
        self.findings: list[Finding] = []

    def misfit(self, path: str, expected: str, value: Any) -> None:
        found = _json_type(value)
        self.findings.append(
            Finding(
                self.pos,
                "wrong_type",
                path,
                f"expected {expected}, found {found}; the field is read as null",
            )
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
        is_signal = "_ocpa_vtype" in {f.name for f in dtype.fields}
        for fld in dtype.fields:
            if fld.name in value:
                out[fld.name] = self.clean(
                    value[fld.name],
                    fld.dtype,
                    f"{path}.{fld.name}",
                    any_scalar=is_signal and fld.name == "value",
                )
        if is_signal and "value" in value:
            raw = value["value"]
            out["_ocpa_vtype"] = _json_type(raw) if out.get("value") is not None else "null"
        return out


def _not_json_code(text: str, error: Exception, unterminated: bool) -> str:
    if unterminated:
        return "truncated"
    msg = str(error)
    return "truncated" if "EOF" in msg or "end of" in msg.lower() else "not_json"


def sanitize(
    text: str, pos: int, *, unterminated: bool = False
) -> tuple[str | None, list[Finding], Rejected | None]:
    """Read one document on the slow path.

    Returns ``(clean_text, findings, None)`` for a readable document, or
    ``(None, [], rejected)`` for text that is not a run document.
    """
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        code = _not_json_code(text, exc, unterminated)
        return None, [], Rejected(pos, code, f"not valid JSON: {exc}")
    if not isinstance(doc, dict):
        found = _json_type(doc)
        return None, [], Rejected(pos, "not_object", f"top level is {found}", "$")
    run = doc.get("run")
    if run is not None and not isinstance(run, dict):
        found = _json_type(run)
        msg = f"run is {found}, expected an object"
        return None, [], Rejected(pos, "missing_run", msg, "$.run")
    cleaner = _Cleaner(pos)
    clean = cleaner.clean_struct(doc, DOCUMENT_DTYPE, "$")
    # labels and the rule are read from their own text later: keep them.
    if isinstance(run, dict):
        for key in ("labels", "acceptance_rule"):
            if key in run:
                clean.setdefault("run", {})[key] = run[key]
    return orjson.dumps(clean).decode(), cleaner.findings, None


def _decode(texts: pl.Series) -> pl.Series:
    return (
        pl.LazyFrame({"t": texts})
        .select(pl.col("t").str.json_decode(DOCUMENT_DTYPE))
        .collect()
        .to_series()
    )


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


def decode_texts(texts: list[str], unterminated: frozenset[int] = frozenset()) -> Decoded:
    """Decode a chunk of document texts (positions are indexes into ``texts``).

    Parameters
    ----------
    texts
        One document text each (an NDJSON line, or an element of a JSON array
        re-serialized).
    unterminated
        Positions whose text was cut off by the end of its source (an
        unparseable one is quarantined as ``truncated``).
    """
    series = pl.Series("t", texts, dtype=pl.String)
    flagged = series.str.contains(PREFILTER).fill_null(False)
    fast = [i for i, f in enumerate(flagged.to_list()) if not f]
    slow = [i for i, f in enumerate(flagged.to_list()) if f]
    parts: list[_Part] = []
    for start in range(0, len(fast), SUBCHUNK):
        pos = fast[start : start + SUBCHUNK]
        parts += _decode_or_bisect(series.gather(pos), pos, slow)
    result = Decoded(frame=pl.DataFrame())
    clean_pos: list[int] = []
    clean_texts: list[str] = []
    for i in sorted(slow):
        text, findings, rejected = sanitize(texts[i], i, unterminated=i in unterminated)
        if rejected is not None:
            result.rejected.append(rejected)
            continue
        assert text is not None
        result.findings += findings
        clean_pos.append(i)
        clean_texts.append(text)
    if clean_texts:
        parts.append((clean_pos, _decode(pl.Series("t", clean_texts, dtype=pl.String))))
        series.scatter(clean_pos, clean_texts)
    frames = [
        pl.DataFrame({"pos": pl.Series(pos, dtype=pl.UInt32), "doc": docs}) for pos, docs in parts
    ]
    frame = (
        pl.concat(frames).sort("pos")
        if frames
        else pl.DataFrame(schema={"pos": pl.UInt32, "doc": DOCUMENT_DTYPE})
    )
    result.frame = frame.with_columns(series.gather(frame.get_column("pos")).alias("text"))
    return result
