"""Decoded documents → the dataset's tables (runs, attempts, signals, …).

Every table is cast to its declared schema (``schemas.py``). Defects inside a
readable document become rows of ``findings`` and the defective value is
null, never guessed; documents that are not readable runs become rows of
``quarantine``.
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson
import polars as pl
import pyarrow as pa

from ocp_analytics import schemas as S
from ocp_analytics.ingestion.decode import JSON_NUMBER, Decoded, json_type, member_path, parse_json
from ocp_analytics.model.links import attempt_positions, link_attempts
from ocp_analytics.model.rules import rule_row

# Seconds 00-59: a leap second (":60") is no instant Python or SEMANTICS §2 reads.
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})?$"
RAW_HEAD = 1024


class Spans(NamedTuple):
    """Where the texts of a chunk lie in the bytes they were read from.

    Text ``i`` is ``buffers[which[i]][starts[i]:starts[i] + lengths[i]]``:
    valid UTF-8, never copied (:meth:`series` views it in place). Every
    buffer is shorter than 2 GiB (Arrow's string views hold 32-bit offsets).
    """

    buffers: list[bytes]
    which: array[int]
    starts: array[int]
    lengths: array[int]

    def data(self, pos: int) -> memoryview:
        """The bytes of text ``pos``, in place."""
        start = self.starts[pos]
        return memoryview(self.buffers[self.which[pos]])[start : start + self.lengths[pos]]

    def sha256(self, positions: list[int]) -> list[str]:
        """SHA-256 of the texts at ``positions``, hex (one view of each buffer, no copy)."""
        sha = hashlib.sha256
        views = [memoryview(b) for b in self.buffers]
        which, starts, lengths = self.which, self.starts, self.lengths
        return [
            sha(views[which[p]][starts[p] : starts[p] + lengths[p]]).hexdigest() for p in positions
        ]

    def series(self) -> pl.Series:
        """The texts as a polars string column viewing the buffers (no copy).

        An Arrow string view is 16 bytes: the length, then the text itself
        when it is at most 12 bytes, else its first 4 bytes, its buffer and
        its offset.
        """
        n = len(self.starts)
        views = array("i", bytes(16 * n))
        views[0::4] = self.lengths
        views[2::4] = self.which
        views[3::4] = self.starts
        prefix = _PREFIX.unpack_from
        bufs = self.buffers
        views[1::4] = array(
            "i",
            [
                prefix(bufs[b], s)[0] if length > 12 else 0
                for b, s, length in zip(self.which, self.starts, self.lengths, strict=True)
            ],
        )
        for i, length in enumerate(self.lengths):
            if length <= 12:  # inline: the text itself, padded with zeros
                start = self.starts[i]
                text = bufs[self.which[i]][start : start + length].ljust(12, b"\0")
                views[4 * i + 1 : 4 * i + 4] = array("i", text)
        arrays = [pa.py_buffer(b) for b in bufs]
        column = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), *arrays])
        series = pl.from_arrow(column)
        assert isinstance(series, pl.Series)
        return series.alias("t")


# A view's prefix is the text's first 4 bytes as they lie in memory: read and
# written back in the machine's own byte order (``array("i")`` is native too).
_PREFIX = struct.Struct("=i")


@dataclass
class ChunkMeta:
    """Where the texts of one chunk came from.

    ``texts``: one per document, as read (a polars column viewing the
    reader's buffers, see ``spans``, or a list).
    """

    source_path: str
    texts: pl.Series | list[str]
    lines: list[int | None]
    indexes: list[int | None]
    # Texts that are not valid UTF-8, by position, read with their bad bytes
    # kept as surrogate escapes (``texts`` holds a display copy).
    raw: dict[int, str] = field(default_factory=dict)
    spans: Spans | None = None

    def data(self, pos: int) -> bytes:
        """The bytes of the text at ``pos`` as read (what ``doc_sha256`` hashes)."""
        return bytes(self._bytes(pos))

    def _bytes(self, pos: int) -> bytes | memoryview:
        if pos in self.raw:
            return self.raw[pos].encode("utf-8", "surrogateescape")
        if self.spans is not None:
            return self.spans.data(pos)
        return str(self.texts[pos]).encode()

    def sha256(self, positions: list[int]) -> list[str]:
        """``doc_sha256`` of the texts at ``positions``: SHA-256 of their bytes as read, hex."""
        if self.spans is not None and not self.raw:
            return self.spans.sha256(positions)
        sha = hashlib.sha256
        return [sha(self._bytes(p)).hexdigest() for p in positions]


@dataclass
class ChunkTables:
    """The tables built from one chunk, as polars frames in schema order."""

    frames: dict[str, pl.DataFrame] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.frames[name]


_FIRST_INSTANT = datetime(1, 1, 1, tzinfo=UTC)
_LAST_INSTANT = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_FIRST_US = (_FIRST_INSTANT - _EPOCH) // _US
_LAST_US = (_LAST_INSTANT - _EPOCH) // _US


def _parse_unchecked(col: pl.Expr) -> pl.Expr:
    """RFC 3339 text → instant, without the range check (see :func:`parse_timestamp`).

    One aware parse; the naive parse only where it missed. chrono reads a
    fraction of any length, truncated to the time unit. The aware parse is
    chrono's RFC 3339 item (``%+``): on texts of ``TS_PATTERN``'s shape it
    reads what ``%Y-%m-%dT%H:%M:%S%.f%#z`` reads, with 36 % less CPU (polars
    hands chrono the format anew for every text, and ``%+`` is one item).
    """
    ok = col.str.contains(TS_PATTERN) & ~col.str.starts_with("0000")
    aware = col.str.to_datetime("%+", time_zone="UTC", strict=False, time_unit="us", cache=False)
    naive = (
        pl.when(aware.is_null())
        .then(col)
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us", cache=False)
        .dt.replace_time_zone("UTC")
    )
    return pl.when(ok).then(pl.coalesce(aware, naive))


def _in_range(value: pl.Expr) -> pl.Expr:
    """``value`` where it lies in years 1-9999 (UTC), else null (bounds as integers)."""
    return pl.when(value.to_physical().is_between(_FIRST_US, _LAST_US)).then(value)


def parse_timestamp(col: pl.Expr) -> pl.Expr:
    """Parse RFC 3339 text to ``Datetime(us, UTC)`` as SEMANTICS §2 says.

    ``Z`` and ``±HH:MM`` offsets; no offset reads as UTC; fractions of any
    length truncated to microseconds; anything else is null: impossible
    calendar values, a leap second, and instants outside years 1-9999 once
    moved to UTC (as the reference reader, Python's ``datetime``, says).
    For the columns of a frame :func:`with_timestamps` does the same in
    about half the CPU (polars computes a sub-expression used twice twice).

    Examples
    --------
    >>> s = pl.Series(["2026-09-23T23:59:59.1234567+02:00", "2026-09-23T23:59:60Z",
    ...                "0000-01-01T00:00:00Z", "9999-12-31T23:00:00-01:00"])
    >>> pl.select(parse_timestamp(pl.lit(s))).to_series().cast(pl.String).to_list()
    ['2026-09-23 21:59:59.123456+00:00', None, None, None]
    """
    return _in_range(_parse_unchecked(col))


def with_timestamps(frame: pl.LazyFrame, columns: dict[str, str]) -> pl.LazyFrame:
    """Add parsed timestamp columns ``{name: text column}`` (:func:`parse_timestamp`).

    Parsed in one step, range-checked in the next, so each text is parsed once.

    Examples
    --------
    >>> f = pl.LazyFrame({"t": ["2026-09-23T23:59:59Z", "9999-12-31T23:00:00-01:00", None]})
    >>> with_timestamps(f, {"at": "t"}).collect().get_column("at").cast(pl.String).to_list()
    ['2026-09-23 23:59:59.000000+00:00', None, None]
    """
    return frame.with_columns(
        _parse_unchecked(pl.col(raw)).alias(name) for name, raw in columns.items()
    ).with_columns(_in_range(pl.col(name)).alias(name) for name in columns)


# TS_PATTERN without an offset (one scan instead of two for the finding).
_NAIVE_PATTERN = TS_PATTERN.replace(r"(Z|[+-]\d{2}:\d{2})?$", "$")


def is_naive_timestamp(col: pl.Expr) -> pl.Expr:
    """True where a well-formed timestamp has no offset.

    Examples
    --------
    >>> s = pl.Series(["2026-09-23T23:59:59", "2026-09-23T23:59:59Z", "2026-09-23"])
    >>> pl.select(is_naive_timestamp(pl.lit(s))).to_series().to_list()
    [True, False, False]
    """
    return col.str.contains(_NAIVE_PATTERN)


_SCHEMAS = {t: S.polars_schema(t) for t in S.TABLES}


def _cast(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    have = set(frame.collect_schema().names())
    return frame.select(
        [
            pl.col(n).cast(t) if n in have else pl.lit(None, t).alias(n)
            for n, t in _SCHEMAS[table].items()
        ]
    )


# --- findings ---------------------------------------------------------------

_FIND_COLS = ("run_id", "doc_id", "code", "json_path", "message")


def _find(
    frame: pl.LazyFrame, cond: pl.Expr, code: str, path: pl.Expr, message: pl.Expr
) -> pl.LazyFrame:
    return frame.filter(cond).select(
        "run_id",
        "doc_id",
        pl.lit(code).alias("code"),
        path.alias("json_path"),
        message.alias("message"),
    )


def _ts_findings(frame: pl.LazyFrame, name: str, path: pl.Expr) -> list[pl.LazyFrame]:
    """Findings of timestamp ``name`` (parsed) read from ``{name}_raw`` (its text)."""
    col = pl.col(f"{name}_raw")
    bad = col.is_not_null() & pl.col(name).is_null()
    return [
        _find(
            frame,
            bad,
            "bad_timestamp",
            path,
            pl.format("cannot read timestamp '{}'; read as unknown time", col.str.slice(0, 80)),
        ),
        _find(
            frame,
            is_naive_timestamp(col).fill_null(False),
            "naive_timestamp",
            path,
            pl.format("timestamp '{}' has no offset; read as UTC", col),
        ),
    ]


def _enum_finding(
    frame: pl.LazyFrame, col: str, values: tuple[str, ...], path: pl.Expr
) -> pl.LazyFrame:
    c = pl.col(col)
    return _find(
        frame,
        c.is_not_null() & ~c.is_in(values),
        "unknown_enum",
        path,
        pl.format("'{}' is not one of " + ", ".join(values), c.str.slice(0, 80)),
    )


def _integer_fields(
    frame: pl.LazyFrame, cols: list[str], path_fmt: str, idx: str
) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    found = []
    for c in cols:
        v = pl.col(c)
        frac = v.is_not_null() & (v.is_nan() | (v != v.floor()))
        big = v.is_not_null() & ~frac & (v.abs() >= 2.0**63)
        path = pl.format(path_fmt.format(c), pl.col(idx))
        found.append(
            _find(
                frame,
                frac,
                "not_integer",
                path,
                pl.format("expected a whole number, found {}; read as null", v),
            )
        )
        found.append(
            _find(
                frame,
                big,
                "out_of_range",
                path,
                pl.format("whole number {} does not fit 64 bits; read as null", v),
            )
        )
        frame = frame.with_columns(pl.when(~frac & ~big).then(v).alias(c))
    return frame, found


# --- per table ----------------------------------------------------------------


def _explode(docs: pl.LazyFrame, path: list[str], idx: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The elements of a list of objects, one row each, and a finding per ``null`` element.

    Null elements are reported here for fast-path documents only: the slow
    path reports them itself (a misfit element is null there too).
    """
    expr = pl.col("doc")
    for p in path:
        expr = expr.struct.field(p)
    exploded = (
        docs.select("run_id", "doc_id", "slow", expr.alias("item"))
        .with_columns(pl.int_ranges(0, pl.col("item").list.len(), dtype=pl.Int32).alias(idx))
        .explode(["item", idx])
        .cache()
    )
    items = exploded.filter(pl.col("item").is_not_null()).drop("slow").unnest("item")
    nulls = exploded.filter(
        pl.col("item").is_null() & pl.col(idx).is_not_null() & ~pl.col("slow")
    ).select(
        "run_id",
        "doc_id",
        pl.lit("wrong_type").alias("code"),
        pl.format("$." + ".".join(path) + "[{}]", pl.col(idx)).alias("json_path"),
        pl.lit("expected an object, found null; the element is skipped").alias("message"),
    )
    return items, nulls


def _signals(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    sig, nulls = _explode(docs, ["run", "signals"], "sig_idx")
    v = pl.col("value")
    vtype = pl.coalesce(
        pl.col("_ocpa_vtype"),
        pl.when(v.is_null())
        .then(pl.lit("null"))
        .when(v.str.contains(JSON_NUMBER))
        .then(pl.lit("number"))
        .otherwise(pl.lit("string")),
    )
    quoted = pl.struct(v=v).struct.json_encode().str.slice(5).str.head(-1)
    sig = (
        sig.with_columns(vtype.alias("vtype"))
        .with_columns(
            v.alias("value_text"),
            pl.when(pl.col("vtype") == "number")
            .then(v.cast(pl.Float64, strict=False))
            .alias("value_num"),
            pl.when(pl.col("vtype") == "string")
            .then(quoted)
            .when(pl.col("vtype") == "null")
            .then(pl.lit("null"))
            .otherwise(v)
            .alias("value_json"),
            pl.col("observed_at").alias("observed_at_raw"),
            pl.col("source").struct.field("kind").alias("source_kind"),
            pl.col("source").struct.field("ref").alias("source_ref"),
            pl.col("id").alias("signal_id"),
        )
        .pipe(with_timestamps, {"observed_at": "observed_at_raw"})
        .cache()
    )
    base = "$.run.signals[{}]"
    path = lambda f: pl.format(base + f, pl.col("sig_idx"))  # noqa: E731
    kind, vt = pl.col("kind"), pl.col("vtype")
    bad_value = (
        ((kind == "verdict") & ((vt != "string") | ~v.is_in(S.VERDICT_VALUES)))
        | ((kind == "score") & ~vt.is_in(["number", "null"]))
        | ((kind == "event") & (vt != "string"))
        | (
            (kind == "score")
            & (pl.col("scale") == "fraction")
            & ((pl.col("value_num") < 0) | (pl.col("value_num") > 1))
        )
    ).fill_null(False)
    found = [
        nulls,
        *_ts_findings(sig, "observed_at", path(".observed_at")),
        _find(
            sig,
            bad_value,
            "bad_value",
            path(".value"),
            pl.format(
                "value {} does not fit a {} signal (E195)",
                pl.col("value_json").str.slice(0, 80),
                kind,
            ),
        ),
        _enum_finding(sig, "kind", S.SIGNAL_KINDS, path(".kind")),
        _enum_finding(sig, "tier", S.OUTCOME_TIERS, path(".tier")),
        _enum_finding(sig, "better", S.BETTER_VALUES, path(".better")),
        _enum_finding(sig, "scale", S.SCALE_VALUES, path(".scale")),
    ]
    return _cast(sig, "signals"), found


def _attempts(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    att, nulls = _explode(docs, ["attempts"], "att_idx")
    cost = pl.col("cost")
    att = (
        att.with_columns(
            pl.col("id").alias("attempt_id"),
            pl.col("started_at").alias("started_at_raw"),
            pl.col("ended_at").alias("ended_at_raw"),
            pl.col("outcome").struct.field("result").alias("outcome_result"),
            pl.col("outcome").struct.field("evidence").alias("outcome_evidence"),
            pl.col("model").struct.field("raw").alias("model_raw"),
            pl.col("model").struct.field("id").alias("model_id"),
            pl.col("role").struct.field("value").alias("role"),
            pl.col("phase").struct.field("value").alias("phase"),
            pl.col("cause").struct.field("type").alias("cause_type"),
            cost.struct.field("usd").alias("cost_usd"),
            *[cost.struct.field(t).alias(t) for t in S.COST_TOKENS],
        )
        .pipe(with_timestamps, {"started_at": "started_at_raw", "ended_at": "ended_at_raw"})
        .cache()
    )
    att, found = _integer_fields(att, ["n", "round"], "$.attempts[{{}}].{}", "att_idx")
    att, found_cost = _integer_fields(
        att, list(S.COST_TOKENS), "$.attempts[{{}}].cost.{}", "att_idx"
    )
    path = lambda f: pl.format("$.attempts[{}]" + f, pl.col("att_idx"))  # noqa: E731
    found += [
        nulls,
        *found_cost,
        *_ts_findings(att, "started_at", path(".started_at")),
        *_ts_findings(att, "ended_at", path(".ended_at")),
        _enum_finding(att, "status", S.ATTEMPT_STATUSES, path(".status")),
        _enum_finding(att, "outcome_result", S.OUTCOME_RESULTS, path(".outcome.result")),
    ]
    return _cast(att, "attempts"), found


def _artifacts(docs: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    art, nulls = _explode(docs, ["artifacts"], "art_idx")
    art = (
        art.with_columns(
            pl.col("id").alias("artifact_id"),
            pl.col("kind").struct.field("value").alias("kind"),
            pl.col("first_write_at").alias("first_write_at_raw"),
        )
        .pipe(with_timestamps, {"first_write_at": "first_write_at_raw"})
        .cache()
    )
    path = pl.format("$.artifacts[{}].first_write_at", pl.col("art_idx"))
    return _cast(art, "artifacts"), [nulls, *_ts_findings(art, "first_write_at", path)]


_Problem = dict[str, str]  # {"path": JSON path, "message": ...}


def _labels_of(obj: Any) -> tuple[list[dict[str, str | None]] | None, list[_Problem]]:
    """``run.labels`` → key/value entries, and one problem per defect.

    A value that is not a string (null, a number, …) is kept as a null
    value of its key, never converted: ``{"n": 3}`` does not become ``"3"``.
    """
    if obj is None:
        return None, []
    if not isinstance(obj, dict):
        found = json_type(obj)
        msg = f"labels must be an object of strings, found {found}; read as no labels"
        return None, [{"path": "$.run.labels", "message": msg}]
    pairs: list[dict[str, str | None]] = []
    problems: list[_Problem] = []
    for k, v in obj.items():
        pairs.append({"key": k, "value": v if isinstance(v, str) else None})
        if not isinstance(v, str):
            problems.append(
                {
                    "path": member_path("$.run.labels", k),
                    "message": f"expected a string, found {json_type(v)}; read as null",
                }
            )
    return pairs, problems


_LABELS_DTYPE = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))
_PROBLEMS_DTYPE = pl.List(pl.Struct({"path": pl.String, "message": pl.String}))
_NO_RULE: dict[str, Any] = {"has_rule": False, "problems": None}


def _rule_of(obj: Any) -> dict[str, Any]:
    """``run.acceptance_rule`` → a rules-table row with its problems."""
    if obj is None:
        return _NO_RULE
    row = rule_row(obj)
    problems = [
        {"path": "$.run.acceptance_rule" + p.path, "message": p.message}
        for p in row.pop("problems")
    ]
    return {"has_rule": True, **row, "problems": problems}


_RULE_DTYPES: dict[str, Any] = {
    "has_rule": pl.Boolean,
    "name": pl.String,
    "definition": pl.String,
    "requires": pl.List(pl.String),
    "score_name": pl.String,
    "score_target": pl.Float64,
    "score_better": pl.String,
    "score_scale": pl.String,
    "excludes_events": pl.List(pl.String),
    "window_days": pl.Int64,
    "valid": pl.Boolean,
    "invalid_reason": pl.String,
    "problems": _PROBLEMS_DTYPE,
}


def _load_member(text: str | None) -> Any:
    """A member's JSON text as Python (raises ``ValueError`` when it is not JSON).

    orjson when its compact output gives the text back (then no member name
    repeats); else the slow reader, whose repeated names keep their first
    value as everywhere else.
    """
    if text is None:
        return None
    try:
        value = orjson.loads(text)
        if orjson.dumps(value) == text.encode():
            return value
    except orjson.JSONDecodeError:
        pass
    return parse_json(text)


_THREAD = threading.local()
_DUCKDB: list[Any] = []  # one in-memory database, shared


def _duckdb() -> Any:
    """This thread's DuckDB connection, kept (a new one costs ~15 ms of CPU a chunk).

    One database for every thread (each database holds its own memory); a
    cursor per thread.
    """
    con = getattr(_THREAD, "con", None)
    if con is None:
        with _LOCK:
            if not _DUCKDB:
                import duckdb

                _DUCKDB.append(duckdb.connect())
        con = _THREAD.con = _DUCKDB[0].cursor()
    return con


_LOCK = threading.Lock()

# The text of run.labels (an object of scalars) and run.acceptance_rule (one
# level of nested objects) cut out of a document's text. A cut is used only
# when it can be nothing else (see _cut_members); otherwise JSON paths read it.
# The whole match (the key, the colon, the object) is taken and the key and
# colon stripped after: extracting a capture group needs polars' capturing
# regex engine (the rule's cut took 16 against 12 ms per 10k documents).
_CUT = {
    "labels": r"\{[^{}]*\}",
    "acceptance_rule": r"\{(?:[^{}]|\{[^{}]*\})*\}",
}


def _member_key(key: str) -> str:
    """A regex for member ``key``'s name and colon, as JSON may space them."""
    return f'"{re.escape(key)}"\\s*:\\s*'


def _cut_members(docs: pl.DataFrame) -> pl.DataFrame:
    """``doc_id``, and the JSON text of ``run.labels`` / ``run.acceptance_rule``.

    The decode tells whether each member is an object (``DECODE_DTYPE``).
    Where it is, its text is cut from the document's text when that cut is
    surely the member: its key occurs exactly once, literally (no ``\\u``
    escape anywhere in the text, so the run's own key is that occurrence),
    and the cut parses (checked per distinct text in :func:`_side_members`;
    a cut that ends early ends inside a string, one that runs late has text
    after the object: neither parses). Slow-path documents come with their
    members read by the sanitizer, so none is cut. Columns: ``pos``,
    ``doc_id``, ``slow``, and per key ``{key}_cut`` (the cut, or null) and
    ``{key}_present`` (an object on the fast path).
    """
    text, run = pl.col("text"), pl.col("doc").struct.field("run")
    plain = ~text.str.contains("\\u", literal=True)
    cols = []
    for key, body in _CUT.items():
        present = run.struct.field(key).is_not_null() & ~pl.col("slow")
        # exactly once: there, and not twice (two scans without counting:
        # 6x less CPU than count_matches, measured on 10k-document chunks)
        once = text.str.contains(f'"{key}"', literal=True) & ~text.str.contains(
            f'"{re.escape(key)}"[\\s\\S]*"{re.escape(key)}"'
        )
        cols.append(
            pl.when(present & plain & once)
            .then(
                text.str.extract(_member_key(key) + body, 0).str.replace("^" + _member_key(key), "")
            )
            .alias(f"{key}_cut")
        )
        cols.append(present.alias(f"{key}_present"))
    return docs.select("pos", "doc_id", "slow", *cols)


def _read_paths(texts: pl.DataFrame) -> pl.DataFrame:
    """``labels_json``, ``rule_json`` of ``doc_id, text`` rows by JSON path (DuckDB)."""
    con = _duckdb()
    con.register("texts", texts.to_arrow())
    try:
        return con.sql(
            "SELECT doc_id, x[1]::VARCHAR AS labels_json, x[2]::VARCHAR AS rule_json FROM "
            "(SELECT doc_id, json_extract(text, ['$.run.labels', '$.run.acceptance_rule']) AS x "
            "FROM texts)"
        ).pl()
    finally:
        con.unregister("texts")


class _MemberTexts:
    """Distinct JSON texts of one member (labels, or the rule), each read once per process.

    The same few texts (a team's labels, its rule) recur in chunk after
    chunk: a text read before is found by a join on its text, and only new
    texts are read in Python (:func:`_load_member`, then ``row``) and added.
    Shared by the threads that build chunks (a lock guards the additions);
    forgotten once it holds ``limit`` texts.
    """

    def __init__(self, key: str, row: Any, dtypes: dict[str, Any], limit: int = 50_000) -> None:
        self.key, self.row, self.dtypes, self.limit = key, row, dtypes, limit
        self.frame = pl.DataFrame(schema={key: pl.String, **dtypes})
        self.lock = threading.Lock()

    def read(
        self, texts: pl.Series, *, strict: bool = False, known: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """The rows of ``texts``, with those of ``known`` (default: every text read before).

        A text that is not JSON is left out, or raises ``ValueError`` when
        ``strict`` (texts written by a JSON writer, never expected to fail).
        Give ``known`` (an earlier result) to extend that result: the process's
        texts may have been forgotten since by another thread.
        """
        known = self.frame if known is None else known
        new = (
            texts.drop_nulls()
            .unique()
            .to_frame(self.key)
            .join(known.select(self.key), on=self.key, how="anti")
            .get_column(self.key)
            .to_list()
        )
        if not new:
            return known
        read, values = [], []
        for text in new:
            try:
                values.append(self.row(_load_member(text)))
            except (ValueError, RecursionError):
                if strict:
                    raise
                continue
            read.append(text)
        added = pl.DataFrame(
            {
                self.key: pl.Series(read, dtype=pl.String),
                **{
                    k: pl.Series([v[i] for v in values], dtype=d)
                    for i, (k, d) in enumerate(self.dtypes.items())
                },
            }
        )
        with self.lock:
            frame = self.frame if self.frame.height < self.limit else self.frame.clear()
            self.frame = pl.concat([frame, added.join(frame, on=self.key, how="anti")])
        return pl.concat([known, added])


def _rule_values(obj: Any) -> tuple[Any, ...]:
    row = _rule_of(obj)
    return tuple(row.get(k) for k in _RULE_DTYPES)


_LABEL_TEXTS = _MemberTexts(
    "labels_json", _labels_of, {"labels": _LABELS_DTYPE, "labels_problems": _PROBLEMS_DTYPE}
)
_RULE_TEXTS = _MemberTexts("rule_json", _rule_values, _RULE_DTYPES)


def _side_members(
    docs: pl.DataFrame, slow: dict[int, tuple[str | None, str | None]]
) -> pl.DataFrame:
    """``run.labels`` and ``run.acceptance_rule`` of each document.

    Both are free-form (free keys; a rule's defects must mark it invalid, not
    fail the document), so each is taken as JSON text: cut from the
    document's text (:func:`_cut_members`), by JSON path where a cut is not
    sure (rare), from the sanitizer on the slow path. Each distinct text is
    read and validated once in Python (:class:`_MemberTexts`).
    """
    cut = _cut_members(docs)
    labels = _LABEL_TEXTS.read(cut.get_column("labels_cut"))
    rules = _RULE_TEXTS.read(cut.get_column("acceptance_rule_cut"))
    lab, rul = pl.col("labels_cut"), pl.col("acceptance_rule_cut")
    lab_ok = lab.is_not_null() & lab.is_in(labels.get_column("labels_json").implode())
    rul_ok = rul.is_not_null() & rul.is_in(rules.get_column("rule_json").implode())
    unsure = (pl.col("labels_present") & ~lab_ok) | (pl.col("acceptance_rule_present") & ~rul_ok)
    members = cut.filter(~unsure & ~pl.col("slow")).select(
        "doc_id",
        pl.when(lab_ok).then(lab).alias("labels_json"),
        pl.when(rul_ok).then(rul).alias("rule_json"),
    )
    parts = [members]
    slow_rows = cut.filter(pl.col("slow")).select("pos", "doc_id")
    if slow_rows.height:
        pos = slow_rows.get_column("pos").to_list()
        parts.append(
            slow_rows.select(
                "doc_id",
                pl.Series("labels_json", [slow[p][0] for p in pos], dtype=pl.String),
                pl.Series("rule_json", [slow[p][1] for p in pos], dtype=pl.String),
            )
        )
    need = cut.filter(unsure & ~pl.col("slow")).select("doc_id")
    if need.height:
        parts.append(_read_paths(docs.join(need, on="doc_id").select("doc_id", "text")))
    members = pl.concat(parts)
    if len(parts) > 1:  # texts not cut, written by a JSON writer: read them too
        extra = pl.concat(parts[1:])
        labels = _LABEL_TEXTS.read(extra.get_column("labels_json"), strict=True, known=labels)
        rules = _RULE_TEXTS.read(extra.get_column("rule_json"), strict=True, known=rules)
    return (
        members.join(labels, on="labels_json", how="left")
        .join(rules, on="rule_json", how="left")
        .drop("labels_json", "rule_json")
        .with_columns(pl.col("has_rule").fill_null(False))
    )


def _rules(docs: pl.LazyFrame, side: pl.LazyFrame) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    rules = (
        side.drop("labels", "labels_problems")
        .filter(pl.col("has_rule"))
        .join(docs.select("doc_id", "run_id"), on="doc_id", maintain_order="left")
    )
    problems = (
        rules.select("run_id", "doc_id", "problems")
        .explode("problems")
        .filter(pl.col("problems").is_not_null())
        .unnest("problems")
        .select(
            "run_id",
            "doc_id",
            pl.lit("invalid_rule").alias("code"),
            pl.col("path").alias("json_path"),
            "message",
        )
    )
    return _cast(rules, "rules"), [problems]


def _runs(
    docs: pl.LazyFrame, side: pl.LazyFrame, meta: ChunkMeta, batch_id: str
) -> tuple[pl.LazyFrame, list[pl.LazyFrame]]:
    run = pl.col("doc").struct.field("run")
    task = run.struct.field("task")
    labels = side.select("doc_id", "labels", "labels_problems")
    runs = (
        docs.join(labels, on="doc_id", how="left", maintain_order="left")
        .with_columns(
            pl.col("doc").struct.field("ocp").alias("ocp_version"),
            pl.col("doc").struct.field("producer").struct.field("name").alias("producer_name"),
            pl.col("doc")
            .struct.field("producer")
            .struct.field("version")
            .alias("producer_version"),
            run.struct.field("started_at").alias("started_at_raw"),
            run.struct.field("ended_at").alias("ended_at_raw"),
            run.struct.field("title").alias("title"),
            task.struct.field("id").alias("task_id"),
            task.struct.field("type").alias("task_type"),
            task.struct.field("subtype").alias("task_subtype"),
            task.struct.field("repo").alias("repo"),
            task.struct.field("org").alias("org"),
            run.struct.field("configuration").struct.field("id").alias("configuration_id"),
            run.struct.field("configuration").struct.field("source").alias("configuration_source"),
            run.struct.field("provenance").struct.field("kind").alias("provenance_kind"),
            pl.col("doc").struct.field("attempts").list.len().fill_null(0).alias("n_attempts"),
            run.struct.field("signals").list.len().fill_null(0).alias("n_signals"),
            pl.lit(meta.source_path).alias("source_path"),
            pl.lit(batch_id).alias("batch_id"),
        )
        .pipe(with_timestamps, {"started_at": "started_at_raw", "ended_at": "ended_at_raw"})
        .cache()
    )
    found = [
        *_ts_findings(runs, "started_at", pl.lit("$.run.started_at")),
        *_ts_findings(runs, "ended_at", pl.lit("$.run.ended_at")),
        _enum_finding(
            runs,
            "configuration_source",
            S.CONFIGURATION_SOURCES,
            pl.lit("$.run.configuration.source"),
        ),
        _enum_finding(runs, "provenance_kind", S.PROVENANCE_KINDS, pl.lit("$.run.provenance.kind")),
        runs.select("run_id", "doc_id", "labels_problems")
        .explode("labels_problems")
        .filter(pl.col("labels_problems").is_not_null())
        .unnest("labels_problems")
        .select(
            "run_id",
            "doc_id",
            pl.lit("wrong_type").alias("code"),
            pl.col("path").alias("json_path"),
            "message",
        ),
    ]
    return runs, found


def _quarantine_checks(docs: pl.LazyFrame) -> pl.LazyFrame:
    """Decoded texts that are still not readable runs: ``q_code`` (null: a readable run)."""
    run = pl.col("doc").struct.field("run")
    rid = run.struct.field("id")
    ocp = pl.col("doc").struct.field("ocp")
    return docs.with_columns(
        pl.when(run.is_null())
        .then(pl.lit("missing_run"))
        .when(rid.is_null() | (rid.str.strip_chars() == ""))
        .then(pl.lit("missing_run_id"))
        .when(~ocp.is_in(S.OCP_VERSIONS).fill_null(False))
        .then(pl.lit("unknown_version"))
        .alias("q_code")
    )


def _quarantine_details() -> list[pl.Expr]:
    """``q_message`` and ``q_path`` of rows with a ``q_code`` (computed for those rows only)."""
    code = pl.col("q_code")
    ocp = pl.col("doc").struct.field("ocp")
    return [
        pl.when(code == "missing_run")
        .then(pl.lit("the document has no run object"))
        .when(code == "missing_run_id")
        .then(pl.lit("run.id is missing or empty"))
        .otherwise(
            pl.format("ocp version '{}' is not one of 0.1, 0.2, 0.3", ocp.fill_null("(missing)"))
        )
        .alias("q_message"),
        pl.when(code == "missing_run")
        .then(pl.lit("$.run"))
        .when(code == "missing_run_id")
        .then(pl.lit("$.run.id"))
        .otherwise(pl.lit("$.ocp"))
        .alias("q_path"),
    ]


def build_tables(dec: Decoded, meta: ChunkMeta, doc_id_base: int, batch_id: str) -> ChunkTables:
    """Build every table of one decoded chunk.

    ``doc_id`` of the text at position ``pos`` is ``doc_id_base + pos``. The
    tables are planned lazily and materialized together (one
    :func:`polars.collect_all`), so the steps they share run once.
    """
    checked = _quarantine_checks(dec.frame.lazy())
    bad, docs = pl.collect_all(
        [
            checked.filter(pl.col("q_code").is_not_null()).select(
                "pos", "q_code", *_quarantine_details()
            ),
            checked.filter(pl.col("q_code").is_null()).select(
                "pos",
                "doc",
                "text",
                "slow",
                (pl.col("pos").cast(pl.Int64) + doc_id_base).alias("doc_id"),
                pl.col("doc").struct.field("run").struct.field("id").alias("run_id"),
            ),
        ],
        engine="in-memory",
    )
    quarantine = [(int(p), c, m, jp) for p, c, m, jp in bad.iter_rows()]
    quarantine += [(r.pos, r.code, r.message, r.json_path) for r in dec.rejected]
    pos = docs.get_column("pos").to_list()
    docs = docs.with_columns(
        pl.Series("source_line", [meta.lines[p] for p in pos], dtype=pl.Int64),
        pl.Series("source_index", [meta.indexes[p] for p in pos], dtype=pl.Int64),
        pl.Series("doc_sha256", meta.sha256(pos), dtype=pl.String),
    )
    side = _side_members(docs, dec.side).lazy()
    lazy_docs = docs.lazy()
    runs, found = _runs(lazy_docs, side, meta, batch_id)
    rules, f_rules = _rules(lazy_docs, side)
    runs = runs.join(
        rules.select("doc_id", pl.col("name").alias("rule_name")),
        on="doc_id",
        how="left",
        maintain_order="left",
    )
    signals, f_sig = _signals(lazy_docs)
    attempts, f_att = _attempts(lazy_docs)
    signals = _cast(link_attempts(signals, attempt_positions(attempts)), "signals")
    artifacts, f_art = _artifacts(lazy_docs)
    slow = _slow_findings(dec, lazy_docs)
    findings = pl.concat(
        [f.select(_FIND_COLS) for f in [*found, *f_rules, *f_sig, *f_att, *f_art, slow]]
    )
    findings = findings.join(
        lazy_docs.select("doc_id", "source_line", "source_index"),
        on="doc_id",
        how="left",
        maintain_order="left",
    ).with_columns(pl.lit(meta.source_path).alias("source_path"))
    planned = {
        "runs": _cast(runs, "runs"),
        "attempts": attempts,
        "signals": signals,
        "rules": rules,
        "artifacts": artifacts,
        "findings": _cast(findings, "findings"),
    }
    # a chunk's tables are small: the in-memory engine builds them with about
    # 10 % less CPU than the streaming one (measured on 10k-document chunks)
    collected = pl.collect_all(planned.values(), engine="in-memory")
    frames = dict(zip(planned, collected, strict=True))
    frames["quarantine"] = quarantine_frame(quarantine, meta, batch_id)
    return ChunkTables(frames)


def _slow_findings(dec: Decoded, docs: pl.LazyFrame) -> pl.LazyFrame:
    frame = pl.LazyFrame(
        {
            "pos": pl.Series([f.pos for f in dec.findings], dtype=pl.UInt32),
            "code": pl.Series([f.code for f in dec.findings], dtype=pl.String),
            "json_path": pl.Series([f.json_path for f in dec.findings], dtype=pl.String),
            "message": pl.Series([f.message for f in dec.findings], dtype=pl.String),
        }
    )
    return frame.join(docs.select("pos", "run_id", "doc_id"), on="pos", maintain_order="left")


def quarantine_frame(
    rows: list[tuple[int, str, str, str | None]], meta: ChunkMeta, batch_id: str
) -> pl.DataFrame:
    """Quarantine rows (position, code, message, JSON path) of one chunk."""
    frame = pl.DataFrame(
        {
            "batch_id": [batch_id] * len(rows),
            "source_path": [meta.source_path] * len(rows),
            "source_line": [meta.lines[p] for p, *_ in rows],
            "source_index": [meta.indexes[p] for p, *_ in rows],
            "code": [c for _, c, _, _ in rows],
            "message": [m for _, _, m, _ in rows],
            "json_path": [jp for *_, jp in rows],
            "raw_head": [meta.texts[p][:RAW_HEAD] for p, *_ in rows],
        },
        schema=S.polars_schema("quarantine"),
    )
    return frame
