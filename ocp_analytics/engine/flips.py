"""Rule-versus-rule comparison over decisions: flips and the paired table; pure.

docs/figures.md, "Comparing rules: the matrix and flips".

For every ordered pair of rules (per group), over the runs evaluated under
both: the *flips* (accepted under ``rule_a``, not under ``rule_b``: rejected
or unknown) with sample run ids, and over the runs decided under both the
paired 2x2 table ``a, b, c, d``, from which :func:`flip_figures` gives the
paired difference, McNemar's test and Holm's adjustment
(:mod:`ocp_analytics.engine.stats.paired`; docs/statistics.md). As for
rates, per-slice *partials* add up across slices of runs and one *combine*
turns them into figures; :class:`FlipPartials` collects them for the
evaluation loop. The columns are those of ``schemas.FLIPS``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import polars as pl

from ocp_analytics.schemas import FLIP_SCHEMA

#: Flip columns that add up across slices of runs (``sample_run_ids`` is kept apart).
FLIP_COUNTS = ("runs_compared", "flips", "a", "b", "c", "d")
_FLIP_PART = [*FLIP_COUNTS, "sample_run_ids"]
# An outcome as a code: the flags held per (run, rule) while a slice's rules arrive.
_REJECTED, _ACCEPTED, _UNKNOWN = 0, 1, 2


def outcome_code(outcome: pl.Expr) -> pl.Expr:
    """An outcome as ``0`` (rejected), ``1`` (accepted) or ``2`` (unknown), in one byte.

    Examples
    --------
    >>> df = pl.DataFrame({"outcome": ["accepted", "rejected", "unknown"]})
    >>> df.select(outcome_code(pl.col("outcome"))).to_series().to_list()
    [1, 0, 2]
    """
    return (
        pl.when(outcome == "accepted")
        .then(pl.lit(_ACCEPTED, pl.UInt8))
        .when(outcome == "rejected")
        .then(pl.lit(_REJECTED, pl.UInt8))
        .otherwise(pl.lit(_UNKNOWN, pl.UInt8))
    )


def flip_counts(
    acc: pl.DataFrame, names: list[str], sample: int, keys: Sequence[str] = ()
) -> pl.DataFrame:
    """Flip partials of one slice: per group and ordered rule pair, the counts and sample ids.

    ``acc`` has ``_doc`` (the run's ``doc_id``), ``run_id``, ``rule``,
    ``outcome`` and the group columns ``keys``; see :func:`flag_counts`.

    Examples
    --------
    >>> acc = pl.DataFrame({"_doc": [1, 1, 2, 2], "run_id": ["r1", "r1", "r2", "r2"],
    ...                     "rule": ["x", "y", "x", "y"],
    ...                     "outcome": ["accepted", "unknown", "accepted", "rejected"]})
    >>> flip_counts(acc, ["x", "y"], 5).select("rule_a", "flips", "a", "b", "c", "d").rows()
    [('x', 2, 0, 1, 0, 0), ('y', 0, 0, 0, 1, 0)]
    """
    number = {n: i for i, n in enumerate(names)}
    flags = acc.select(
        "_doc",
        pl.col("rule").replace_strict(number, return_dtype=pl.UInt16).alias("r"),
        outcome_code(pl.col("outcome")).alias("o"),
    )
    ids = acc.select("_doc", "run_id", *keys).unique("_doc")
    return flag_counts(flags, ids, names, sample, keys)


def flag_counts(
    flags: pl.DataFrame,
    ids: pl.DataFrame,
    names: list[str],
    sample: int,
    keys: Sequence[str] = (),
) -> pl.DataFrame:
    """Flip partials from outcome codes: ``flags`` (``_doc``, rule number ``r``, code ``o``).

    ``ids`` maps ``_doc`` to ``run_id`` and the group columns ``keys``. Each
    run's codes become one *outcome vector* (:func:`vector_words`), then
    :func:`vector_counts` gives one row per group and ordered pair:
    ``*keys, rule_a, rule_b, runs_compared, flips, a, b, c, d, sample_run_ids``.

    Examples
    --------
    >>> flags = pl.DataFrame({"_doc": [1, 1], "r": [0, 1], "o": [1, 0]})
    >>> ids = pl.DataFrame({"_doc": [1], "run_id": ["r1"]})
    >>> flag_counts(flags, ids, ["x", "y"], 5).drop("runs_compared").rows()
    [('x', 'y', 1, 0, 1, 0, 0, ['r1']), ('y', 'x', 0, 0, 0, 1, 0, [])]
    """
    r = pl.col("r").cast(pl.Int64)
    place = _digit(pl.col("o"), r)
    words = flags.group_by("_doc").agg(
        place.filter(r // _PER_WORD == w).sum().alias(f"_w{w}") for w in range(_words(len(names)))
    )
    runs = ids.join(words, on="_doc", how="left").with_columns(pl.col("^_w\\d+$").fill_null(0))
    return vector_counts(runs, names, sample, keys)


# A run's outcome under rule ``r`` is held as ``code + 1`` (0: no row under it) in base-4
# digit ``r % _PER_WORD`` of the Int64 word ``_w{r // _PER_WORD}``: 31 rules a word.
_PER_WORD = 31


def _words(k: int) -> int:
    return max(1, -(-k // _PER_WORD))


def _digit(code: pl.Expr, rule: pl.Expr | int) -> pl.Expr:
    """Rule ``rule``'s outcome ``code`` (null: no row) as its digit's value in its word."""
    return (code.cast(pl.Int64) + 1).fill_null(0) * pl.lit(4, pl.Int64).pow(rule % _PER_WORD)


def _undigit(word: pl.Expr, rule: int) -> pl.Expr:
    """Rule ``rule``'s outcome code from its word (-1: no row under it); :func:`_digit` undone."""
    return (word // 4 ** (rule % _PER_WORD)) % 4 - 1


def vector_words(codes: Sequence[pl.Series]) -> list[pl.Series]:
    """The outcome vectors of runs from each rule's codes (one Series per rule, same runs).

    ``codes[r]`` holds the runs' outcome codes (:func:`outcome_code`; null: no
    row under rule ``r``), in one order. Returns the words ``_w0, _w1, ...``:
    one Int64 per 31 rules, equal for two runs exactly when their outcomes
    are under every rule.

    Examples
    --------
    >>> acc, rej = pl.Series([1, 1], dtype=pl.UInt8), pl.Series([0, None], dtype=pl.UInt8)
    >>> [w.to_list() for w in vector_words([acc, rej])]
    [[6, 2]]
    """
    if not codes:
        return [pl.Series("_w0", [], pl.Int64)]
    frame = pl.DataFrame([c.alias(f"c{r}") for r, c in enumerate(codes)])
    in_word = [
        range(w * _PER_WORD, min(len(codes), (w + 1) * _PER_WORD))
        for w in range(_words(len(codes)))
    ]
    return frame.select(
        pl.sum_horizontal(_digit(pl.col(f"c{r}"), r) for r in rules).alias(f"_w{w}")
        for w, rules in enumerate(in_word)
    ).get_columns()


def vector_counts(
    runs: pl.DataFrame, names: list[str], sample: int, keys: Sequence[str] = ()
) -> pl.DataFrame:
    """Flip partials from runs' outcome vectors: ``run_id``, ``keys`` and the words ``_w*``.

    Runs judged alike under every rule share a vector, and a slice of
    half a million runs under 21 rules holds a couple of thousand: the runs
    are counted (and their ``sample`` smallest run ids kept) per group and
    vector, then each unordered pair's six sums (the paired table ``a, b,
    c, d`` and the flips both ways) are taken over the vectors, weighted by
    their runs. No runs × rules² work, and the same sums as over the runs.
    """
    k = len(names)
    words = [f"_w{w}" for w in range(_words(k))]
    distinct = runs.group_by(*keys, *words).agg(
        pl.len().alias("_n"), pl.col("run_id").bottom_k(sample).alias("_ids")
    )

    codes = (_undigit(pl.col(words[r // _PER_WORD]), r).alias(f"r{r}") for r in range(k))
    coded = distinct.select(*keys, "_n", "_ids", *codes)
    pairs = list(itertools.combinations(range(k), 2))
    exprs = []
    for p, (i, j) in enumerate(pairs):
        exprs += _pair_sums(pl.col(f"r{i}"), pl.col(f"r{j}"), p, sample, implode=not keys)
    # without groups, a select: a group_by of one group costs more for the same sums
    summed = coded.group_by(keys).agg(exprs) if keys else coded.select(exprs)
    return _ordered_pairs(summed, names, pairs, keys)


def _pair_sums(x: pl.Expr, y: pl.Expr, p: int, sample: int, implode: bool) -> list[pl.Expr]:
    """The sums of unordered pair ``p`` (rules coded ``x``, ``y``): its table, flips both ways.

    Over outcome vectors (``_n`` runs each, ``_ids`` their smallest run ids):
    a code of -1 is no row under that rule, neither a flip nor in the table.
    The sample ids are a list per group; ``implode`` makes them one in a select.
    """
    acc_x, acc_y, rej_x, rej_y = x == _ACCEPTED, y == _ACCEPTED, x == _REJECTED, y == _REJECTED
    forward = acc_x & (y != _ACCEPTED) & (y >= 0)
    backward = (x != _ACCEPTED) & (x >= 0) & acc_y
    n, ids = pl.col("_n"), pl.col("_ids")
    return [
        n.filter((x >= 0) & (y >= 0)).sum().alias(f"m{p}"),
        n.filter(acc_x & acc_y).sum().alias(f"a{p}"),
        n.filter(acc_x & rej_y).sum().alias(f"b{p}"),
        n.filter(rej_x & acc_y).sum().alias(f"c{p}"),
        n.filter(rej_x & rej_y).sum().alias(f"d{p}"),
        n.filter(forward).sum().alias(f"f{p}"),
        n.filter(backward).sum().alias(f"g{p}"),
        _listed(ids.filter(forward).explode().drop_nulls().bottom_k(sample), implode).alias(
            f"s{p}"
        ),
        _listed(ids.filter(backward).explode().drop_nulls().bottom_k(sample), implode).alias(
            f"t{p}"
        ),
    ]


def _listed(ids: pl.Expr, implode: bool) -> pl.Expr:
    return ids.implode() if implode else ids


def _ordered_pairs(
    summed: pl.DataFrame, names: list[str], pairs: list[tuple[int, int]], keys: Sequence[str]
) -> pl.DataFrame:
    """The sums per unordered pair as rows per ordered pair: the reverse swaps b and c."""
    schema = pl.Schema(
        {k: summed.schema[k] for k in keys}
        | {c: FLIP_SCHEMA[c] for c in ("rule_a", "rule_b", *_FLIP_PART)}
    )
    if not pairs:
        return pl.DataFrame(schema=schema)

    def cell(flips: str, b: str, c: str, ids: str, p: int) -> pl.Expr:
        return pl.struct(
            pl.col(f"m{p}").alias("runs_compared"),
            pl.col(flips).alias("flips"),
            pl.col(f"a{p}").alias("a"),
            pl.col(b).alias("b"),
            pl.col(c).alias("c"),
            pl.col(f"d{p}").alias("d"),
            pl.col(ids).alias("sample_run_ids"),
        )

    cells: list[pl.Expr] = []
    rule_a: dict[str, str] = {}
    rule_b: dict[str, str] = {}
    for p, (i, j) in enumerate(pairs):
        cells += [
            cell(f"f{p}", f"b{p}", f"c{p}", f"s{p}", p).alias(f"{p}>"),
            cell(f"g{p}", f"c{p}", f"b{p}", f"t{p}", p).alias(f"{p}<"),
        ]
        rule_a |= {f"{p}>": names[i], f"{p}<": names[j]}
        rule_b |= {f"{p}>": names[j], f"{p}<": names[i]}
    cell_name = pl.col("_cell")
    return (
        summed.select(*keys, *cells)
        .unpivot(index=list(keys), variable_name="_cell", value_name="_v")
        .unnest("_v")
        .select(
            *keys,
            cell_name.replace_strict(rule_a, return_dtype=pl.String).alias("rule_a"),
            cell_name.replace_strict(rule_b, return_dtype=pl.String).alias("rule_b"),
            *_FLIP_PART,
        )
        .cast(schema)
    )


def flip_figures(counts: pl.LazyFrame, keys: Sequence[str] = ()) -> pl.LazyFrame:
    """The FLIPS columns from summed counts: the paired difference and McNemar's test.

    ``counts`` has ``*keys, rule_a, rule_b`` and the summed
    :data:`FLIP_COUNTS` and ``sample_run_ids``. Over the ``n = a + b + c +
    d`` runs decided under both rules: ``difference`` (accept rate under
    ``rule_a`` minus that under ``rule_b``, ``(b - c) / n``) with Newcombe's
    paired interval, McNemar's ``p_value`` and ``p_method``, and ``p_holm``,
    Holm's adjustment across every cell of the frame. A pair and its reverse
    share one test (the same p-value), so the family counts each unordered
    pair once per group. Null statistics where ``n = 0``. See
    docs/statistics.md.

    Examples
    --------
    >>> counts = pl.LazyFrame({"rule_a": ["x", "y"], "rule_b": ["y", "x"],
    ...                        "runs_compared": [90, 90], "flips": [14, 2],
    ...                        "a": [36, 36], "b": [12, 2], "c": [2, 12], "d": [0, 0],
    ...                        "sample_run_ids": [[], []]})
    >>> f = flip_figures(counts).collect()
    >>> f.select("n", "difference", "p_method").rows()
    [(50, 0.2, 'exact'), (50, -0.2, 'exact')]
    >>> [round(v, 5) for v in f["p_holm"]]
    [0.01294, 0.01294]
    """
    # imported when used: engine.stats imports engine.rates, which re-exports this module
    from ocp_analytics.engine.stats.paired import (
        holm,
        mcnemar,
        mcnemar_method,
        paired_difference,
    )

    a, b, c, d = (pl.col(x).cast(pl.Int64) for x in "abcd")  # signed: b - c may be negative
    n = a + b + c + d
    diff = paired_difference(a, b, c, d)
    tested = n > 0
    first = pl.col("rule_a") < pl.col("rule_b")  # one row of each pair and its reverse
    pair = [pl.min_horizontal("rule_a", "rule_b"), pl.max_horizontal("rule_a", "rule_b")]
    return (
        counts.with_columns(
            n.alias("n"),
            diff.estimate.alias("difference"),
            diff.low.alias("difference_low"),
            diff.high.alias("difference_high"),
            pl.when(tested).then(mcnemar(b, c)).alias("p_value"),
            pl.when(tested).then(mcnemar_method(b, c)).alias("p_method"),
        )
        .with_columns(holm(pl.when(first).then(pl.col("p_value"))).alias("p_holm"))
        .with_columns(pl.col("p_holm").max().over(*keys, *pair))
        .select(*keys, *FLIP_SCHEMA)
        .cast(FLIP_SCHEMA)
        .sort(*keys, "rule_a", "rule_b", nulls_last=True)
    )


def combine_flips(parts: list[pl.DataFrame], sample: int, keys: Sequence[str] = ()) -> pl.LazyFrame:
    """Flip partials of every slice, summed, and their figures (:func:`flip_figures`).

    Keeps the first ``sample`` run ids of each cell. Group columns ``keys``
    are text when no slice had rows.

    Examples
    --------
    >>> acc = pl.DataFrame({"_doc": [1, 1], "run_id": ["r1", "r1"], "rule": ["x", "y"],
    ...                     "outcome": ["accepted", "rejected"]})
    >>> part = flip_counts(acc, ["x", "y"], 5)
    >>> combine_flips([part, part], 5).select("rule_a", "flips", "b", "c", "n").collect().rows()
    [('x', 2, 2, 0, 2), ('y', 0, 0, 2, 2)]
    """
    if not parts:
        empty = {k: pl.String() for k in keys} | dict(FLIP_SCHEMA)
        return pl.LazyFrame(schema=empty)
    summed = (
        pl.concat(parts)
        .lazy()
        .group_by(*keys, "rule_a", "rule_b")
        .agg(
            pl.col(*FLIP_COUNTS).sum(),
            pl.col("sample_run_ids")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .sort()
            .head(sample),
        )
    )
    return flip_figures(summed, keys)


def flips_from(acc: pl.LazyFrame, sample: int = 5, by: Sequence[str] = ()) -> pl.LazyFrame:
    """The flips of acceptance rows in one pass (the twin of ``sql/queries/flips.sql``).

    For every ordered pair of rules (per group of the columns ``by`` of
    ``acc``, a run's groups), pairing rows by ``run_id``: ``runs_compared``,
    the runs accepted under ``rule_a`` and not under ``rule_b`` (``flips``,
    the first ``sample`` of their ids), and the figures of
    :func:`flip_figures`. Columns: ``*by`` then those of ``schemas.FLIPS``.

    Examples
    --------
    >>> acc = pl.LazyFrame({"run_id": ["r1", "r1", "r2", "r2"], "rule": ["x", "y"] * 2,
    ...                     "outcome": ["accepted", "unknown", "accepted", "rejected"]})
    >>> flips_from(acc).select("rule_a", "flips", "b", "n", "sample_run_ids").collect().rows()
    [('x', 2, 1, 1, ['r1', 'r2']), ('y', 0, 0, 1, [])]
    """
    code = outcome_code(pl.col("outcome"))
    x = acc.select("run_id", *by, pl.col("rule").alias("rule_a"), code.alias("_x"))
    y = acc.select("run_id", pl.col("rule").alias("rule_b"), code.alias("_y"))
    pairs = x.join(y, on="run_id").filter(pl.col("rule_a") != pl.col("rule_b"))
    ox, oy = pl.col("_x"), pl.col("_y")
    flip = (ox == _ACCEPTED) & (oy != _ACCEPTED)
    counts = pairs.group_by(*by, "rule_a", "rule_b").agg(
        pl.len().alias("runs_compared"),
        flip.sum().alias("flips"),
        ((ox == _ACCEPTED) & (oy == _ACCEPTED)).sum().alias("a"),
        ((ox == _ACCEPTED) & (oy == _REJECTED)).sum().alias("b"),
        ((ox == _REJECTED) & (oy == _ACCEPTED)).sum().alias("c"),
        ((ox == _REJECTED) & (oy == _REJECTED)).sum().alias("d"),
        pl.col("run_id").filter(flip).sort().head(sample).alias("sample_run_ids"),
    )
    return flip_figures(counts, by)


def format_difference(diff: float | None, low: float | None, high: float | None) -> str:
    """A difference of two rates in points, with its interval.

    Examples
    --------
    >>> format_difference(0.0435, -0.104, 0.2099)
    '+4.3 pts [-10.4, +21.0]'
    >>> format_difference(None, None, None)
    '–'

    A bound that rounds to zero reads ``0.0``, with no sign; a difference
    that does reads ``+0.0``, never ``-0.0``:

    >>> format_difference(0.003, -0.0004, 0.009)
    '+0.3 pts [0.0, +0.9]'
    >>> format_difference(-0.0002, -0.05, 0.04)
    '+0.0 pts [-5.0, +4.0]'
    """
    if diff is None or low is None or high is None:
        return "–"

    def points(v: float, zero: str) -> str:
        text = f"{100 * v:+.1f}"
        return zero if text in ("+0.0", "-0.0") else text

    return f"{points(diff, '+0.0')} pts [{points(low, '0.0')}, {points(high, '0.0')}]"


def format_p(p: float | None, method: str | None = None) -> str:
    """A p-value to four decimals (``<0.0001`` below), and the test's method if given.

    Examples
    --------
    >>> format_p(0.012939, "exact"), format_p(3e-9), format_p(None)
    ('0.0129 exact', '<0.0001', '–')
    """
    if p is None:
        return "–"
    text = "<0.0001" if p < 0.0001 else f"{p:.4f}"
    return f"{text} {method}" if method else text


# --- the sink for the evaluation loop ----------------------------------------------


class FlipPartials:
    """Collects flip partials per group and rule pair, one run document at a time per slice.

    A slice's rules arrive one frame at a time; the frames of a slice are
    held until the slice's last rule (``len(names)`` frames), then counted.
    ``keys`` are the group columns of the decisions (none: one group).
    """

    columns = ("run_id", "rule", "outcome")

    def __init__(
        self, names: list[str], sample: int, doc: str = "_doc", keys: Sequence[str] = ()
    ) -> None:
        self.names = names
        self.sample = sample
        self.doc = doc
        self.keys = list(keys)
        self.held: list[pl.DataFrame] = []
        self.ids = pl.DataFrame()
        self.parts: list[pl.DataFrame] = []

    def add(self, decisions: pl.DataFrame) -> None:
        """Take one rule's decisions of a slice (with the document column ``_doc``).

        Only an outcome code per run is held (the run ids and groups once a
        slice), so a slice of K rules holds about 9 bytes per (run, rule).
        """
        k = len(self.held)
        if decisions.height and decisions["rule"][0] != self.names[k]:
            raise AssertionError(f"rule {decisions['rule'][0]!r} arrived for {self.names[k]!r}")
        if k == 0:
            self.ids = decisions.select(pl.col(self.doc).alias("_doc"), "run_id", *self.keys)
        self.held.append(
            decisions.select(
                pl.col(self.doc).alias("_doc"), outcome_code(pl.col("outcome")).alias("o")
            )
        )
        if len(self.held) == len(self.names):
            held, self.held = self.held, []
            if any(h.height for h in held):
                self.parts.append(self._counts(held))

    def _counts(self, held: list[pl.DataFrame]) -> pl.DataFrame:
        """One slice's flip partials from each rule's codes, ``held`` in the rules' order.

        Every rule decides the slice's runs, mostly in one order: the codes
        line up as they are (else once sorted by document) and become the
        runs' outcome vectors directly; rules that decided other runs go
        through :func:`flag_counts`.
        """
        ids = self.ids
        if not _aligned(held, ids):
            held = [h.sort("_doc") for h in held]
            ids = ids.sort("_doc")
        if _aligned(held, ids):
            runs = ids.with_columns(vector_words([h.get_column("o") for h in held]))
            return vector_counts(runs, self.names, self.sample, self.keys)
        flags = pl.concat(
            h.with_columns(pl.lit(r, pl.UInt16).alias("r")) for r, h in enumerate(held)
        )
        return flag_counts(flags.select("_doc", "r", "o"), ids, self.names, self.sample, self.keys)

    def flips(self) -> pl.LazyFrame:
        """The summed flips of every slice, with their figures (group columns ``keys``)."""
        return combine_flips(self.parts, self.sample, self.keys)


def _aligned(held: list[pl.DataFrame], ids: pl.DataFrame) -> bool:
    """Whether every rule's codes are of the runs of ``ids``, in its order."""
    docs = ids.get_column("_doc")
    return all(h.get_column("_doc").equals(docs) for h in held)
