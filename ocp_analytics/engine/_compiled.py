"""Rules compiled into column expressions over one wide per-run table; pure.

Alternative rules (known up front, few distinct names), and a slice's
recorded rules when it holds few distinct definitions, are compiled: one
wide feature table holds a column per required name and event set
(:func:`wide_features`), and each rule is a projection of it
(:func:`alternative_summary`), so K rules cost K projections, not a runs ×
rules join. Each rule's reason words come from a table of all its outcomes,
or from keys when there are too many to list (:func:`compiled_words`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ocp_analytics.engine._finish import NO_WORDS, Words, part_reason
from ocp_analytics.engine.features import ATTEMPT_FIELDS, FAIL, PASS, event_counts, score_state
from ocp_analytics.model.rules import Rule

__all__ = [
    "Compiled",
    "alternative_summary",
    "compiled_words",
    "counted_events",
    "event_columns",
    "wide_features",
]

_APOS = ATTEMPT_FIELDS["pos"]


class Compiled:
    """The names a set of alternative rules reads, numbered for column names."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.verdicts = list(dict.fromkeys(n for r in rules for n in r.effective_requires))
        self.scores = list(dict.fromkeys(r.score.name for r in rules if r.score))
        self.events = list(dict.fromkeys(n for r in rules for n in r.effective_excludes))
        # Rules sharing excluded events and window share their event columns.
        keys = {
            k: (tuple(sorted(set(r.effective_excludes))), r.effective_window_days)
            for k, r in enumerate(rules)
            if r.effective_excludes
        }
        self.event_sets = list(dict.fromkeys(keys.values()))
        self.ei = {k: self.event_sets.index(key) for k, key in keys.items()}


_PART_VALUES = ["rank", *ATTEMPT_FIELDS.values()]


def _named_columns(
    keys: pl.Series, long: pl.DataFrame, names: list[str], value: str, prefix: str
) -> list[pl.Series]:
    """Columns ``{prefix}{field}_{i}``: the i-th name's row of ``long`` for each run of ``keys``.

    ``keys`` are the runs' ``doc_id``, sorted and unique; ``long`` has at
    most one row per (``doc_id``, ``name``). Each row's place among the runs
    is found by binary search and its values scattered there (less CPU than
    one left join a name, itself less than a pivot: benchmarks/RESULTS.md,
    "Writer ahead, cheaper shared features", 2026-12-04); a row of a run not
    in ``keys`` is dropped, as the join did.
    """
    fields = [value, *_PART_VALUES]
    if keys.is_empty():
        long = long.clear()
    at = keys.search_sorted(long.get_column("doc_id")).alias("_at")
    found = keys.gather(at.clip(0, max(keys.len() - 1, 0))) == long.get_column("doc_id")
    parts = long.with_columns(at).filter(found).partition_by("name", as_dict=True)
    columns = []
    for i, name in enumerate(names):
        part = parts.get((name,))
        for f in fields:
            column = pl.repeat(None, keys.len(), dtype=long.schema[f], eager=True)
            if part is not None:
                column = column.scatter(part.get_column("_at"), part.get_column(f))
            columns.append(column.alias(f"{prefix}{f}_{i}"))
    return columns


def wide_features(
    runs: pl.DataFrame,
    verdicts: pl.DataFrame | None,
    scores: pl.DataFrame | None,
    events: pl.DataFrame | None,
    c: Compiled,
) -> pl.DataFrame:
    """The per-run feature table of the compiled rules: runs beside each name's parts."""
    if not runs.get_column("doc_id").is_sorted():
        runs = runs.sort("doc_id")
    keys = runs.get_column("doc_id")
    columns = []
    if c.verdicts:
        assert verdicts is not None
        columns += _named_columns(keys, verdicts, c.verdicts, "state", "v")
    if c.scores:
        assert scores is not None
        columns += _named_columns(keys, scores, c.scores, "value", "s")
    wide = runs.with_columns(columns)
    if events is not None:
        wide = wide.join(events, on="doc_id", how="left")
    return wide


def counted_events(ev: pl.LazyFrame, c: Compiled) -> pl.LazyFrame:
    """Event rows that count for some event set, in ``(doc_id, sig_idx)`` order.

    Each row gets a boolean column ``c{k}`` per event set and its reason word
    ``_r``. The conditions are computed once over all rows (in an aggregation they
    would be evaluated group by group, at several times the CPU:
    benchmarks/RESULTS.md, "Evaluation at the floor (#12), second pass").
    """
    conds = [
        (pl.col("name").is_in(list(names)) & event_counts(pl.lit(window_days))).alias(f"c{k}")
        for k, (names, window_days) in enumerate(c.event_sets)
    ]
    return (
        ev.with_columns(*conds, pl.format("late:{}", pl.col("name")).alias("_r"))
        .filter(pl.any_horizontal(pl.col(f"c{k}") for k in range(len(conds))))
        .sort("doc_id", "sig_idx")
    )


def event_columns(counted: pl.DataFrame, c: Compiled) -> tuple[pl.DataFrame, list[pl.Series]]:
    """Per run: each event set's counted reasons (as an index) and strongest tier rank.

    Columns ``ee{k}`` and ``ek{k}`` for event set ``k``; runs with no counted
    event are absent. ``ee{k}`` indexes the set's word lists, returned beside
    the table (index 0: no counted event): the few distinct lists of late
    words, each in signal order.

    A run's counted events are read as one key, the sequence of (word code,
    rank, sets it counts for); the few distinct keys are decoded once in
    Python and joined back (far less CPU than filtered aggregations per set:
    benchmarks/RESULTS.md, "Writer ahead, cheaper shared features"). The
    group-by is eager on purpose: it keeps each group's rows in input order
    (documented for ``DataFrame.group_by``), so ``(doc_id, sig_idx)`` order
    needs no per-group sort.
    """
    n = len(c.event_sets)
    texts = counted.get_column("_r").unique(maintain_order=True)
    code = pl.col("_r").replace_strict(texts, pl.int_range(texts.len(), eager=True))
    counts = [pl.col(f"c{k}").cast(pl.Int8).cast(pl.String) for k in range(n)]
    token = pl.concat_str(
        [code.cast(pl.String), pl.col("rank").cast(pl.String), *counts], separator=","
    )
    per_run = (
        counted.select("doc_id", token.alias("_key"))
        .group_by("doc_id", maintain_order=True)
        .agg("_key")
        .with_columns(pl.col("_key").list.join(";"))
    )
    keys = per_run.get_column("_key").unique(maintain_order=True).to_list()
    words = texts.to_list()
    lists: list[dict[tuple[str, ...], int]] = [{(): 0} for _ in range(n)]
    ee: list[list[int]] = [[] for _ in range(n)]
    ek: list[list[int | None]] = [[] for _ in range(n)]
    for key in keys:
        rows = [t.split(",") for t in key.split(";")]
        for k in range(n):
            mine = [(words[int(r[0])], int(r[1])) for r in rows if r[2 + k] == "1"]
            said = tuple(w for w, _ in mine)
            ee[k].append(lists[k].setdefault(said, len(lists[k])))
            ek[k].append(max((rank for _, rank in mine), default=None))
    table = pl.DataFrame(
        {
            "_key": pl.Series(keys, dtype=pl.String),
            **{f"ek{k}": pl.Series(ek[k], dtype=pl.Int8) for k in range(n)},
            **{f"ee{k}": pl.Series(ee[k], dtype=pl.Int64) for k in range(n)},
        }
    )
    per_run = per_run.join(table, on="_key", how="left").drop("_key")
    lut = [
        pl.Series(f"w{k}", [list(t) for t in lists[k]], dtype=pl.List(pl.String)) for k in range(n)
    ]
    return per_run, lut


_DIGITS = 39  # base-3 digits an Int64 code holds (3**39 < 2**63)


def _codes(states: Sequence[pl.Expr], n_codes: int) -> list[pl.Expr]:
    """Parts' states as the base-3 digits of ``n_codes`` Int64 columns ``_pc{j}``.

    The i-th part is digit ``i % 39`` of ``_pc{i // 39}``; absent digits are 0.
    """
    out = []
    for j in range(n_codes):
        digits = [
            s.cast(pl.Int64) * 3 ** (i % _DIGITS) for i, s in enumerate(states) if i // _DIGITS == j
        ]
        out.append((pl.sum_horizontal(digits) if digits else pl.lit(0, pl.Int64)).alias(f"_pc{j}"))
    return out


def _n_codes(n_parts: int) -> int:
    return max(1, -(-n_parts // _DIGITS))


def _coded_words(words: Sequence[tuple[str, str]], late: pl.Series | None) -> pl.Expr:
    """The reason words of coded parts (see :func:`_codes`), then the late ones.

    ``words`` holds each part's (fail word, name) in reason order; ``late``
    the event set's word lists indexed by ``_ev``.
    """
    items = [
        part_reason(pl.col(f"_pc{i // _DIGITS}") // 3 ** (i % _DIGITS) % 3, pl.lit(name), fail)
        for i, (fail, name) in enumerate(words)
    ]
    parts = pl.concat_list(items).list.drop_nulls() if items else NO_WORDS
    if late is None:
        return parts
    return pl.concat_list(parts, pl.lit(late).gather(pl.col("_ev")))


def _parts(r: Rule, c: Compiled) -> tuple[list[pl.Expr], list[tuple[str, str]], list[str]]:
    """A compiled rule's parts over the wide table, in reason order.

    Each part's state expression, its (fail word, name), and the template of
    its wide columns' names (``"v{}_0"``: ``vrank_0``, ``vapos_0``, …).
    """
    states: list[pl.Expr] = []
    words: list[tuple[str, str]] = []
    cols: list[str] = []
    for name in r.effective_requires:
        i = c.verdicts.index(name)
        states.append(pl.col(f"vstate_{i}").fill_null(1))
        words.append(("failed", name))
        cols.append(f"v{{}}_{i}")
    if r.score is not None:
        i = c.scores.index(r.score.name)
        states.append(score_state(pl.col(f"svalue_{i}"), r.score.target, r.score.better == "lower"))
        words.append(("below_target", r.score.name))
        cols.append(f"s{{}}_{i}")
    return states, words, cols


_DENSE_MAX = 1 << 14  # word lists a frame's table may hold; past it, keys are joined


def _outcome_words(words: Sequence[tuple[str, str]], late: Sequence[list[str]]) -> list[list[str]]:
    """The word lists of every outcome of a rule, at ``code + 3**len(words) * e``.

    ``code`` holds the parts' states as base-3 digits (see :func:`_codes`),
    ``e`` indexes ``late`` (the counted events' words; 0: none).
    """
    parts = []
    for code in range(3 ** len(words)):
        listed = []
        for i, (fail, name) in enumerate(words):
            digit = code // 3**i % 3
            if digit != PASS:
                listed.append(f"{fail}:{name}" if digit == FAIL else f"missing:{name}")
        parts.append(listed)
    return [p + e for e in late for p in parts]


def compiled_words(
    rules: Sequence[tuple[int, Rule]],
    c: Compiled,
    late: Sequence[pl.Series],
    rid: bool = False,
    wanted: bool = True,
) -> tuple[Words, list[int] | None]:
    """How compiled rules (``(k, rule)``: the ``k``-th of ``c``) name their reasons.

    With few enough outcomes, one table of them all and each rule's offset in
    it (its summary's ``_ix``). Otherwise keys: ``_pc0``… and ``_ev``, and
    with several rules (the recorded definitions, ``rid`` true) ``_rid``,
    their place in ``rules``; the offsets are then ``None``. Not ``wanted``
    (no reasons asked for): an empty table.
    """
    if not wanted:
        return Words(["_ix"], lut=pl.Series([], dtype=pl.List(pl.String))), [0] * len(rules)

    def events(k: int, r: Rule) -> pl.Series | None:
        return late[c.ei[k]] if r.effective_excludes else None

    def n_late(k: int, r: Rule) -> int:
        ev = events(k, r)
        return 1 if ev is None else ev.len()

    sizes = [3 ** len(_parts(r, c)[1]) * n_late(k, r) for k, r in rules]
    if sum(sizes) <= _DENSE_MAX:
        lists: list[list[str]] = []
        offsets = []
        for k, r in rules:
            offsets.append(len(lists))
            ev = events(k, r)
            lists += _outcome_words(_parts(r, c)[1], [[]] if ev is None else ev.to_list())
        return Words(["_ix"], lut=pl.Series(lists, dtype=pl.List(pl.String))), offsets
    n_codes = max((_n_codes(len(_parts(r, c)[0])) for _, r in rules), default=1)

    def one(keys: pl.LazyFrame, k: int, r: Rule) -> pl.LazyFrame:
        return keys.with_columns(_coded_words(_parts(r, c)[1], events(k, r)).alias("reasons"))

    def words(keys: pl.LazyFrame) -> pl.LazyFrame:
        if not rid:
            return one(keys, *rules[0])
        return pl.concat(
            [one(keys.filter(pl.col("_rid") == j), k, r) for j, (k, r) in enumerate(rules)]
        )

    codes = [f"_pc{i}" for i in range(n_codes)]
    return Words([*codes, "_ev", *(["_rid"] if rid else [])], words), None


def alternative_summary(
    wide: pl.LazyFrame,
    r: Rule,
    k: int,
    c: Compiled,
    carried: Sequence[str],
    *,
    n_codes: int | None = None,
    rid: int | None = None,
    offset: int | None = None,
) -> pl.LazyFrame:
    """The summary of every run of ``wide`` under one compiled rule (the ``k``-th of ``c``).

    With ``offset``, its reasons are ``_ix``, the row of a table of outcome
    words where the rule's start at ``offset`` (see :func:`compiled_words`).
    Otherwise they are keyed by ``_pc0``… (``n_codes`` of them, at least
    what the rule needs) and ``_ev``; with ``rid``, also by ``_rid`` (the
    recorded definition's number).
    """
    states, _, cols = _parts(r, c)
    has_events = bool(r.effective_excludes)
    ev = pl.col(f"ee{c.ei[k]}").fill_null(0) if has_events else pl.lit(0, pl.Int64)
    if offset is not None:
        index = offset + _codes(states, 1)[0] + ev * 3 ** len(states)
        reason_keys = [index.alias("_ix")]
    else:
        reason_keys = [
            *_codes(states, n_codes or _n_codes(len(states))),
            ev.alias("_ev"),
            *([] if rid is None else [pl.lit(rid, pl.Int32).alias("_rid")]),
        ]
    return wide.select(
        "run_id",
        pl.lit(r.name).alias("rule"),
        pl.lit(True).alias("valid"),
        *_part_columns(states, cols),
        *reason_keys,
        (ev > 0).alias("late"),
        (pl.col(f"ek{c.ei[k]}") if has_events else pl.lit(None, pl.Int8)).alias("ev_rank"),
        pl.lit(r.effective_window_days).alias("window_days"),
        pl.lit(has_events).alias("has_events"),
        "ended_at",
        *carried,
    )


def _part_columns(states: Sequence[pl.Expr], cols: Sequence[str]) -> list[pl.Expr]:
    """A rule's part counts, the rank of the parts it used, and its deciding attempt.

    ``states`` and ``cols`` as :func:`_parts` gives them; the deciding
    attempt is the one at the latest position among the parts
    (docs/figures.md "The attempt at acceptance").
    """
    if not cols:
        return [
            pl.lit(0).alias("n_parts"),
            pl.lit(0).alias("n_fail"),
            pl.lit(0).alias("n_pass"),
            pl.lit(None, pl.Int8).alias("used_rank"),
            *(pl.lit(None).alias(f) for f in ("apos", "aid", "an", "ar")),
        ]
    used = [
        pl.when(s != 1).then(pl.col(t.format("rank"))) for s, t in zip(states, cols, strict=True)
    ]
    top = pl.max_horizontal([pl.col(t.format(_APOS)) for t in cols])
    # The deciding attempt's fields are those of the first part at the top
    # position: a part takes over from the ones before it where its position
    # lies past all of theirs (positions start at 1; a part's fields are null
    # where its position is, see ``placed``). One when a part and field costs
    # less CPU than a when each part and a coalesce (benchmarks/RESULTS.md,
    # "The deciding attempt picked once a part", 2026-12-05).
    later = [
        pl.col(t.format(_APOS)).fill_null(0)
        > pl.max_horizontal([pl.col(u.format(_APOS)) for u in cols[:i]]).fill_null(0)
        for i, t in enumerate(cols[1:], 1)
    ]

    def pick(field: str) -> pl.Expr:
        out = pl.col(cols[0].format(field))
        for past, t in zip(later, cols[1:], strict=True):
            out = pl.when(past).then(pl.col(t.format(field))).otherwise(out)
        return out

    return [
        pl.lit(len(cols)).alias("n_parts"),
        pl.sum_horizontal([(s == FAIL) for s in states]).alias("n_fail"),
        pl.sum_horizontal([(s == PASS) for s in states]).alias("n_pass"),
        pl.max_horizontal(used).alias("used_rank"),
        top.alias(_APOS),
        *(pick(f).alias(f) for f in ("aid", "an", "ar")),
    ]
