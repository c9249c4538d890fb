"""``run.labels`` and ``run.acceptance_rule``: read from their own JSON text.

Both members are free-form (free keys; a rule's defects must mark it
invalid, not fail the document), so the decode only marks whether each is an
object, and each is taken here as JSON text: cut from the document's text
where that cut is surely the member (:func:`_cut_members`), by JSON path
(DuckDB) where it is not, from the sanitizer on the slow path. Each distinct
text is read and validated once per process in Python (:class:`_MemberTexts`),
since the same few recur in every chunk. :func:`side_members` gives each
document's labels and rule row with their problems, for ``runs`` and
``rules``.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import orjson
import polars as pl

from ocp_analytics.ingestion.sanitize import json_type, member_path, parse_json
from ocp_analytics.model.rules import rule_row

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
    """This thread's DuckDB connection, kept (a new one for every chunk costs CPU).

    One database for every thread (each database holds its own memory); a
    cursor per thread. Figures: ``benchmarks/RESULTS.md``.
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
# regex engine, which is slower (benchmarks/RESULTS.md).
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
    and the cut parses (checked per distinct text in :func:`side_members`;
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
        # exactly once: there, and not twice (two scans without counting take
        # less CPU than count_matches: benchmarks/RESULTS.md)
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


def side_members(
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
