"""The typed path of the decode: each scalar's JSON type kept, misfits found by columns.

A document whose text shows a value of the wrong JSON type (a boolean or a
quoted number as a signal's ``value``, a boolean where a number is declared,
a number where a text is: ``decode.PREFILTER``), or that the fast decode
refuses or reads ambiguously, is read here, still many at a time. polars
reads any scalar into a text field as text (``2400`` and ``"2400"`` alike),
so the JSON type is made visible first: every string *value* gets a tag
(:data:`TAG`) as its first character (:func:`tagged`). The texts are then
decoded into :func:`typed_dtype` (the decode dtype with every scalar a text)
and each scalar is told by its tag: tagged, a string; ``true`` / ``false``,
a boolean; else a number (a text polars wrote for it).

From there :meth:`TypedReader.read` gives what the slow path
(:func:`~ocp_analytics.ingestion.sanitize.sanitize`) would: the document
with every misfit read as null and ``_ocpa_vtype`` set, in
:data:`~ocp_analytics.ingestion.decode.DECODE_DTYPE`, and one ``wrong_type``
finding per misfit (and per ``null`` element of a list of objects), in the
order the sanitizer names them. ``tests/property/test_spelling.py`` holds the
two paths to the same tables.

What this path cannot read (an object or array where a scalar is declared,
or the reverse; a number beyond a 64-bit float; not JSON at all) fails its
decode, and the document takes the slow path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from ocp_analytics.ingestion.sanitize import is_signal_dtype

# The first character of every string value once tagged. Any character
# would do: every string value gets it, so a text that starts with it is a
# string whatever it holds, and a number or a boolean never does.
TAG = "!"
_WS = "[ \t\n\r]*"
# A member name's closing quote, its colon and a string value's opening
# quote. Outside a string this is exactly a member whose value is a string;
# the one other place it matches is a string that ends in ``\\":`` (an
# escaped quote and a colon), where the tag lands after the string's end and
# the text no longer decodes: that document takes the slow path, never a
# wrong reading.
_STRING_VALUE = f'"{_WS}:{_WS}"'
_SPACED = "[ \t\n\r]:|:[ \t\n\r]"
_BOOLEANS = ("true", "false")
FINDING_SCHEMA = {"pos": pl.UInt32, "code": pl.String, "json_path": pl.String, "message": pl.String}


def _all_text(dtype: Any) -> Any:
    """``dtype`` with every scalar a text, and no ``_ocpa_vtype`` (computed here)."""
    if isinstance(dtype, pl.List):
        return pl.List(_all_text(dtype.inner))
    if isinstance(dtype, pl.Struct):
        return pl.Struct(
            {f.name: _all_text(f.dtype) for f in dtype.fields if f.name != "_ocpa_vtype"}
        )
    return pl.String


def typed_dtype(decode_dtype: pl.Struct) -> pl.Struct:
    """The dtype a tagged text is decoded into: ``decode_dtype`` with every scalar a text.

    Examples
    --------
    >>> typed_dtype(pl.Struct({"n": pl.Float64, "s": pl.List(pl.Struct({"v": pl.String}))}))
    Struct({'n': String, 's': List(Struct({'v': String}))})
    """
    out = _all_text(decode_dtype)
    assert isinstance(out, pl.Struct)
    return out


def tagged(texts: pl.Series) -> pl.Series:
    """``texts`` with :data:`TAG` put first in every string value (member names are left alone).

    Examples
    --------
    >>> tagged(pl.Series(['{"a": "2400", "b": 2400, "c": true, "d": ["x"]}'])).item()
    '{"a":"!2400", "b": 2400, "c": true, "d": ["x"]}'
    >>> tagged(pl.Series(['{"a":"x","b":{"c":"y"}}'])).item()
    '{"a":"!x","b":{"c":"!y"}}'
    """
    # A text with no JSON whitespace beside a colon (a compact writer's) is
    # tagged by a literal replacement, at a third of the regex's cost.
    out = texts.str.replace_all('":"', '":"' + TAG, literal=True)
    spaced = texts.str.contains(_SPACED)
    if spaced.any():
        at = spaced.arg_true()
        out = out.scatter(at, texts.gather(at).str.replace_all(_STRING_VALUE, '":"' + TAG))
    return out


# --- reading one scalar ----------------------------------------------------------


def _is_string(v: pl.Expr) -> pl.Expr:
    return v.str.starts_with(TAG)


def _found(v: pl.Expr) -> pl.Expr:
    """The JSON type of a scalar that is not null, as a finding names it."""
    return (
        pl.when(_is_string(v))
        .then(pl.lit("string"))
        .when(v.is_in(_BOOLEANS))
        .then(pl.lit("boolean"))
        .otherwise(pl.lit("number"))
    )


def _misfit(v: pl.Expr, number: bool) -> pl.Expr:
    """True where a declared number (``number``) or text holds a scalar of another type."""
    if number:
        return v.is_not_null() & (_is_string(v) | v.is_in(_BOOLEANS))
    return v.is_not_null() & ~_is_string(v)


def _scalar(v: pl.Expr, number: bool, any_scalar: bool) -> pl.Expr:
    """The scalar as the decode dtype reads it: a misfit is null, a string untagged."""
    if any_scalar:  # a signal's value: its text, untagged (its type goes to _ocpa_vtype)
        return pl.when(_is_string(v)).then(v.str.slice(1)).otherwise(v)
    if number:  # (a text polars wrote for a number always reads back as it)
        return pl.when(~_misfit(v, True)).then(v.cast(pl.Float64, strict=False))
    return pl.when(_is_string(v)).then(v.str.slice(1))


def _value_type(v: pl.Expr) -> pl.Expr:
    """``_ocpa_vtype`` of a signal's value: ``"null"`` for a null (or absent) one.

    (The sanitizer writes none for an absent value; ``tables.py`` reads both as null.)
    """
    return pl.when(v.is_null()).then(pl.lit("null")).otherwise(_found(v))


# --- the document in the decode dtype --------------------------------------------


def _rebuilt(dtype: Any, src: pl.Expr, any_scalar: bool = False) -> pl.Expr:
    """``src`` (decoded into the typed dtype) as ``dtype`` reads it, misfits null."""
    if isinstance(dtype, pl.List):
        return src.list.eval(_rebuilt(dtype.inner, pl.element()))
    if isinstance(dtype, pl.Struct):
        if not dtype.fields:  # a marker (run.labels, run.acceptance_rule): as decoded
            return src
        is_signal = is_signal_dtype(dtype)
        fields = []
        for f in dtype.fields:
            if f.name == "_ocpa_vtype":
                fields.append(_value_type(src.struct.field("value")).alias(f.name))
                continue
            sub = src.struct.field(f.name)
            fields.append(_rebuilt(f.dtype, sub, is_signal and f.name == "value").alias(f.name))
        return pl.when(src.is_not_null()).then(pl.struct(fields))
    return _scalar(src, dtype == pl.Float64, any_scalar)


# --- the findings, in the sanitizer's order ---------------------------------------


@dataclass(frozen=True)
class _Leaf:
    """A scalar the sanitizer checks: its fields from the base, JSON path, declared type."""

    fields: tuple[str, ...]
    path: str
    number: bool


@dataclass(frozen=True)
class _Items:
    """A list of objects: its fields from the document, JSON path, and its elements' leaves."""

    fields: tuple[str, ...]
    path: str
    leaves: tuple[_Leaf, ...]


def _walk(dtype: pl.Struct, fields: tuple[str, ...], path: str) -> list[_Leaf | _Items]:
    """The scalars and lists below ``dtype`` in the order the sanitizer visits them.

    A signal's ``value`` may be any scalar: it is never a misfit, so it is
    left out. The markers (labels, the rule) are read elsewhere.
    """
    out: list[_Leaf | _Items] = []
    for f in dtype.fields:
        if f.name == "_ocpa_vtype" or (f.name == "value" and is_signal_dtype(dtype)):
            continue
        sub, sub_path = (*fields, f.name), f"{path}.{f.name}"
        if isinstance(f.dtype, pl.List):
            inner = f.dtype.inner
            assert isinstance(inner, pl.Struct)  # every list declared is one of objects
            leaves = _walk(inner, (), "")
            out.append(_Items(sub, sub_path, tuple(x for x in leaves if isinstance(x, _Leaf))))
        elif isinstance(f.dtype, pl.Struct):
            out += _walk(f.dtype, sub, sub_path) if f.dtype.fields else []
        else:
            out.append(_Leaf(sub, sub_path, f.dtype == pl.Float64))
    return out


def _field(base: pl.Expr, fields: tuple[str, ...]) -> pl.Expr:
    for name in fields:
        base = base.struct.field(name)
    return base


def _message(leaf: _Leaf, v: pl.Expr) -> pl.Expr:
    expected = "a number" if leaf.number else "a string"
    return pl.format(f"expected {expected}, found {{}}; the field is read as null", _found(v))


_ORDER = ("block", "phase", "idx", "leaf")  # within a document, as the sanitizer names them
_NULL_ELEMENT = "expected an object, found null; the element is skipped"


def _any_misfit(base: pl.Expr, leaves: tuple[_Leaf, ...]) -> pl.Expr:
    return pl.any_horizontal([_misfit(_field(base, x.fields), x.number) for x in leaves])


def _misfits(
    frame: pl.LazyFrame, base: pl.Expr, leaves: list[tuple[int, _Leaf]], at: pl.Expr | None
) -> pl.LazyFrame:
    """A row per misfit of ``leaves`` in a row of ``frame``: ``order``, ``json_path``, ``message``.

    ``leaves``: (order, leaf); ``at``: the JSON path the leaves' paths
    follow (an element's), or None (the document's). The columns of
    ``frame`` are kept. (A column a leaf, unpivoted: one list of findings a
    row, by ``concat_list``, costs many times more.)
    """
    keep = frame.collect_schema().names()
    found = []
    for k, leaf in leaves:
        v = _field(base, leaf.fields)
        path = pl.lit(leaf.path) if at is None else pl.concat_str(at, pl.lit(leaf.path))
        found.append(
            pl.when(_misfit(v, leaf.number))
            .then(
                pl.struct(
                    pl.lit(k, pl.Int32).alias("order"),
                    path.alias("json_path"),
                    _message(leaf, v).alias("message"),
                )
            )
            .alias(f"_found{k}")
        )
    return (
        frame.with_columns(found)
        .unpivot(on=[f"_found{k}" for k, _ in leaves], index=keep, value_name="found")
        .filter(pl.col("found").is_not_null())
        .select(*keep, pl.col("found").struct.unnest())
    )


def _list_findings(docs: pl.LazyFrame, items: _Items, block: int) -> pl.LazyFrame:
    """Findings of one list of objects: its ``null`` elements first, then each element's.

    The findings are built for the elements that have one only.
    """
    item, idx = pl.col("item"), pl.col("idx")
    elements = (
        docs.select("pos", _field(pl.col("doc"), items.fields).alias("item"))
        .with_columns(pl.int_ranges(0, item.list.len(), dtype=pl.Int32).alias("idx"))
        .explode(["item", "idx"])
        .filter(idx.is_not_null() & (item.is_null() | _any_misfit(item, items.leaves)))
    )
    at = pl.format(items.path + "[{}]", idx)
    nulls = elements.filter(item.is_null()).select(
        "pos",
        pl.lit(0, pl.Int32).alias("phase"),  # first
        "idx",
        pl.lit(0, pl.Int32).alias("leaf"),
        at.alias("json_path"),
        pl.lit(_NULL_ELEMENT).alias("message"),
    )
    present = elements.filter(item.is_not_null())
    misfits = _misfits(present, item, list(enumerate(items.leaves)), at).select(
        "pos",
        pl.lit(1, pl.Int32).alias("phase"),
        "idx",
        pl.col("order").alias("leaf"),
        "json_path",
        "message",
    )
    return pl.concat([nulls, misfits]).select(
        "pos", pl.lit(block, pl.Int32).alias("block"), pl.exclude("pos")
    )


def _findings(docs: pl.LazyFrame, walk: list[_Leaf | _Items]) -> pl.LazyFrame:
    """Every ``wrong_type`` finding of the typed documents, in the sanitizer's order."""
    leaves = [(k, x) for k, x in enumerate(walk) if isinstance(x, _Leaf)]
    zero = pl.lit(0, pl.Int32)
    odd = docs.filter(_any_misfit(pl.col("doc"), tuple(x for _, x in leaves)))
    parts = [
        _misfits(odd, pl.col("doc"), leaves, None).select(
            "pos",
            pl.col("order").alias("block"),
            zero.alias("phase"),
            zero.alias("idx"),
            zero.alias("leaf"),
            "json_path",
            "message",
        )
    ]
    parts += [_list_findings(docs, x, k) for k, x in enumerate(walk) if isinstance(x, _Items)]
    return (
        pl.concat(parts)
        .sort("pos", *_ORDER)
        .select("pos", pl.lit("wrong_type").alias("code"), "json_path", "message")
    )


class TypedReader:
    """Reads tagged texts decoded into the typed dtype as the slow path would.

    Built once for a decode dtype (its expressions are planned once).
    """

    def __init__(self, decode_dtype: pl.Struct) -> None:
        self.dtype = typed_dtype(decode_dtype)
        # the sanitizer walks the document dtype: the markers are not in it
        self.walk = _walk(decode_dtype, (), "$")
        self.rebuilt = _rebuilt(decode_dtype, pl.col("doc")).alias("doc")

    def read(self, frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """``pos``, ``doc`` (typed) → ``pos``, ``doc`` (the decode dtype), and the findings.

        The findings (``pos``, ``code``, ``json_path``, ``message``) are
        sorted by position, and within a document in the sanitizer's order.

        Examples
        --------
        >>> from ocp_analytics.ingestion.decode import DECODE_DTYPE
        >>> reader = TypedReader(DECODE_DTYPE)
        >>> texts = tagged(pl.Series(['{"ocp": "0.3", "attempts": [{"n": true}, null]}']))
        >>> typed = pl.DataFrame({"pos": [0], "doc": texts.str.json_decode(reader.dtype)})
        >>> docs, found = reader.read(typed.with_columns(pl.col("pos").cast(pl.UInt32)))
        >>> docs.get_column("doc").to_list()[0]["attempts"][0]["n"] is None
        True
        >>> found.select("json_path", "message").rows()  # doctest: +NORMALIZE_WHITESPACE
        [('$.attempts[1]', 'expected an object, found null; the element is skipped'),
         ('$.attempts[0].n', 'expected a number, found boolean; the field is read as null')]
        """
        lazy = frame.lazy()
        docs, found = pl.collect_all(
            [lazy.select("pos", self.rebuilt), _findings(lazy, self.walk)],
            engine="in-memory",
        )
        return docs, found
