"""A rule set's decisions run-major, kept by ``refresh`` beside its stores: a byte per run and rule.

The night's report reads every rule's rows of its window: from the rules'
stores, that is one read of every store (a ``doc_id`` column, the outcome
and tier texts, the reasons of a scored rule) for each rule, each coded
again (:func:`~ocp_analytics.engine.run_codes.cell_code`). :func:`refresh`
keeps instead, for the rule set it refreshes, one table of what the
report reads of them (docs/dataset.md, "The rule set's codes"):

- a row per current run, in ``doc_id`` order: for the rule at position
  ``i`` of the record's ``labels``, its cell code ``c{i}`` (null: the run has
  no row under the rule), its attempts to acceptance ``a{i}`` and, for a
  scored rule whose reasons tell its rest, the sweep's rest ``r{i}``; and
  the latest value of each score the rules read, ``s{j}``, at the table's
  ``as_of``;
- kept like a store (:class:`~ocp_analytics.store.decisions.DecisionStore`,
  in ``decisions/set-<16 hex>/``: files first, the record last, every file
  hashed in its record, checked by ``verify``, evicted by ``vacuum``): its
  first entry holds every run, each later entry one refresh's changes: the
  runs some rule decided again, a null cell where that rule did not (the
  value before stands), the scores of every run it holds.

The record names each store's generation the table was built from; a
reader uses the table only when every rule's store is at that generation,
so the table gives what the stores give, a rule at a time, without
reading them (:meth:`SetCodes.columns`). Rows a reader decides again (a
later ``as_of``, runs ingested since) are put in place over it, as over the
stores' rows. The scores are read from it only at its own ``as_of`` and
commit.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from ocp_analytics.engine.finality import CONTRACT
from ocp_analytics.engine.rates import ATT
from ocp_analytics.engine.run_codes import CELL, FOUND, cell_code, positions
from ocp_analytics.engine.sweep_inputs import reasons_tell_rest, rest_from_reasons, score_values
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.decisions import DecisionStore
from ocp_analytics.store.prune import id_spans
from ocp_analytics.store.scan import Dataset

__all__ = [
    "SET_PREFIX",
    "SetCodes",
    "coded",
    "coded_exprs",
    "compact",
    "latest_scores",
    "night_entry",
    "open_set",
    "set_fingerprint",
    "write_set",
]

SET_PREFIX = "set-"  # the table's folder under decisions/: set-<16 hex>
SCORE_RUNS = 2_000_000  # runs whose latest scores are found at a time (a sort of their rows)
FOLD_NIGHTS = 8  # later entries before they are folded into one
# the codes' own format (cell_code, rest_from_reasons): raised when they change, so a table
# written before is not read but built again
FORMAT = 1
_REST = "rest"
_NONE = pl.Series("doc_id", [], pl.Int64)


def set_fingerprint(fingerprints: Sequence[str]) -> str:
    """The table's folder name for a rule set: its stores' fingerprints, in any order.

    Examples
    --------
    >>> set_fingerprint(["b", "a"]) == set_fingerprint(["a", "b"])
    True
    >>> set_fingerprint(["a"])[:4], len(set_fingerprint(["a"]))
    ('set-', 20)
    """
    body = "\n".join([str(CONTRACT), str(FORMAT), *sorted(set(fingerprints))]).encode()
    return SET_PREFIX + hashlib.sha256(body).hexdigest()[:16]


def _rest(rule: Rule | None) -> bool:
    """Whether the table keeps ``rule``'s rest (a scored rule whose reasons tell it)."""
    return rule is not None and rule.score is not None and reasons_tell_rest(rule)


def coded_exprs(rule: Rule | None) -> list[pl.Expr]:
    """What the table keeps of a rule's stored row: ``_cell``, attempts, rest (a scored rule's)."""
    rest = [rest_from_reasons(rule)] if rule is not None and _rest(rule) else []
    return [cell_code(), pl.col(ATT), *rest]


def coded(rows: pl.LazyFrame | pl.DataFrame, rule: Rule | None) -> pl.LazyFrame:
    """A rule's stored rows as the table keeps them: ``doc_id`` and :func:`coded_exprs`."""
    return rows.lazy().select(pl.col("doc_id"), *coded_exprs(rule))


def compact(rows: pl.DataFrame) -> pl.DataFrame:
    """A rule's coded columns in the table's types: a byte a cell, attempts as small as they fit."""
    return rows.with_columns(pl.col(CELL).cast(pl.UInt8), _small(rows.get_column(ATT)))


def latest_scores(
    signals: pl.LazyFrame, ids: pl.Series, as_of: datetime, names: Sequence[str]
) -> dict[str, pl.Series]:
    """Each of ``names``: the latest score of every run of ``ids`` (sorted) known at ``as_of``.

    Lined up with ``ids`` (null: no such score). Found :data:`SCORE_RUNS`
    runs at a time: finding them sorts every score row read.
    """
    if not names:
        return {}
    cuts = ids.gather_every(SCORE_RUNS).to_list() + ([ids.max() + 1] if ids.len() else [])  # type: ignore[operator]
    wanted = ids.to_frame("doc_id")
    latest = pl.concat(
        [
            score_values(
                signals.filter(pl.col("doc_id").is_between(lo, hi, closed="left")).join(
                    wanted.lazy(), on="doc_id", how="semi"
                ),
                as_of,
                names,
            ).collect()
            for lo, hi in itertools.pairwise(cuts)
        ]
        or [pl.DataFrame(schema={"doc_id": pl.Int64, "name": pl.String, "value": pl.Float64})]
    )
    parts = latest.partition_by("name", as_dict=True)
    none = pl.repeat(None, ids.len(), dtype=pl.Float64, eager=True)
    out = {}
    for name in names:
        part = parts.get((name,))
        if part is None:
            out[name] = none.alias(name)
            continue
        joined = wanted.join(part.drop("name"), on="doc_id", how="left", maintain_order="left")
        out[name] = joined.get_column("value").alias(name)
    return out


def _small(values: pl.Series) -> pl.Series:
    """Attempts as the smallest unsigned type that holds them (read back as Int64)."""
    low, top = values.min(), values.max()
    if top is None:
        return values.cast(pl.UInt8)
    for dtype, limit in ((pl.UInt8, 255), (pl.UInt16, 65_535), (pl.UInt32, 4_294_967_295)):
        if low >= 0 and top <= limit:  # type: ignore[operator]
            return values.cast(dtype)
    return values


def _renamed(rows: pl.DataFrame, i: int) -> pl.DataFrame:
    """A rule's coded columns under the table's names for position ``i``."""
    names = {CELL: f"c{i}", ATT: f"a{i}", _REST: f"r{i}"}
    return rows.rename({k: v for k, v in names.items() if k in rows.columns})


def _wide(
    ids: pl.Series,
    columns: Iterable[tuple[int, pl.DataFrame]],
    scores: dict[str, pl.Series],
    names: Sequence[str],
) -> pl.DataFrame:
    """The table's rows for ``ids``: each rule's coded columns and the scores.

    A rule's frame with a ``doc_id`` is joined to ``ids`` (a night's rows,
    null where the rule decided nothing again); one without is lined up
    with them already.
    """
    frame = ids.to_frame("doc_id")
    for i, rows in columns:  # one rule's columns held at a time (the whole table's build)
        part = _renamed(compact(rows), i)
        if "doc_id" in part.columns:
            frame = frame.join(part, on="doc_id", how="left", maintain_order="left")
        else:
            frame = pl.concat([frame, part], how="horizontal")
    return frame.with_columns(scores[n].alias(f"s{j}") for j, n in enumerate(names))


def _merged(frames: Sequence[pl.DataFrame], width: int) -> pl.DataFrame:
    """Later entries as one: per rule its newest decided row of a run, the newest scores.

    ``frames`` oldest first, each of the table's columns (``width`` rules).
    """
    ordered = pl.concat(
        [f.with_columns(pl.lit(n, pl.UInt32).alias("_n")) for n, f in enumerate(frames)],
        how="vertical_relaxed",
    )
    newest = ordered.sort("doc_id", "_n").unique("doc_id", keep="last", maintain_order=True)
    out = newest.select("doc_id", *(c for c in ordered.columns if c.startswith("s")))
    for i in range(width):
        cols = [c for c in (f"c{i}", f"a{i}", f"r{i}") if c in ordered.columns]
        rows = (
            ordered.filter(pl.col(f"c{i}").is_not_null())
            .sort("doc_id", "_n")
            .unique("doc_id", keep="last", maintain_order=True)
            .select("doc_id", *cols)
        )
        out = out.join(rows, on="doc_id", how="left", maintain_order="left")
    return out.select(frames[-1].columns)


# --- the reader ---------------------------------------------------------------------------


def _same(held: pl.Series, ids: pl.Series) -> bool:
    """Whether ``ids`` are the runs ``held`` (the same series: every rule of a read passes it)."""
    return held is ids or held.equals(ids)


def _scattered(values: pl.Series, into: pl.Series, rows: pl.Series) -> pl.Series:
    """``values`` with ``rows`` put at ``into`` (both as Int64 when their types differ)."""
    if rows.dtype != values.dtype:  # a night's attempts past the first entry's type
        values, rows = values.cast(pl.Int64), rows.cast(pl.Int64)
    return values.scatter(into, rows)


class _Lined:
    """The first entry's runs (``docs``) lined up with a set of runs ``ids``, both sorted.

    Usually ``ids`` are the first entry's runs but those replaced or out of
    the window since, then runs committed since (after the last of
    ``docs``): then a column is lined up by a filter of its rows and nulls
    at the end, which is several times cheaper than a gather of each row.
    Else by a gather (``at``; null where a run is not there).
    """

    def __init__(self, ids: pl.Series, docs: pl.Series) -> None:
        self.ids = ids
        at, hit = positions(docs, ids)
        self.at = pl.select(pl.when(hit).then(at)).to_series()
        found = int(hit.sum())
        self.tail = ids.len() - found
        # every run there comes first, in order; those not there all after the last
        ordered = (
            docs.len() > 0
            and bool(hit.slice(0, found).all())
            and (self.tail == 0 or int(ids[found]) > int(docs[-1]))
        )
        self.keep: pl.Series | None = None
        self.filtered = ordered
        if ordered and found < docs.len():
            self.keep = pl.repeat(False, docs.len(), eager=True).scatter(at.slice(0, found), True)

    def take(self, values: pl.Series) -> pl.Series:
        """``values`` (a column of the first entry) lined up with ``ids``."""
        if not self.filtered:
            return values.gather(self.at)
        kept = values if self.keep is None else values.filter(self.keep)
        return kept.extend_constant(None, self.tail) if self.tail else kept


class SetCodes:
    """A rule set's table at one record: what each rule's store gives, a rule at a time.

    ``labels``: the rules' labels in the record's order; ``scores``: the
    score names of ``s0``, ``s1``, ...; ``rests``: the positions of the
    rules whose rest is kept.
    """

    def __init__(self, store: DecisionStore, record: dict[str, Any]) -> None:
        self.store, self.record = store, record
        self.labels: list[str] = list(record["labels"])
        self.scores: list[str] = list(record["scores"])
        self.rests: set[int] = set(record["rests"])
        entries = store.entries(record)  # its files checked against the record first
        self._base = entries[0][0] if entries else None
        self._later = pl.collect_all([f for f, _ in entries[1:]]) if len(entries) > 1 else []
        self._lined: _Lined | None = None
        self._whole: pl.DataFrame | None = None
        self._scores: pl.DataFrame | None = None
        self._later_ids: pl.Series | None = None
        self._later_lined: dict[int, tuple[pl.Series, pl.Series]] = {}

    def keeps(self, label: str, names: Sequence[str]) -> bool:
        """Whether the table gives the columns ``names`` of rule ``label``."""
        if label not in self.labels:
            return False
        rest = [_REST] if self.labels.index(label) in self.rests else []
        return set(names) <= {FOUND, CELL, ATT, *rest}

    def scores_at(self, as_of: datetime, snapshot: int | None, names: Sequence[str]) -> bool:
        """Whether the table keeps the scores ``names`` at ``as_of`` of commit ``snapshot``."""
        said = self.record["as_of"] == as_of.isoformat() and self.record["dataset_seq"] == snapshot
        return said and set(names) <= set(self.scores)

    def _align(self, ids: pl.Series) -> _Lined:
        """How the first entry's rows line up with ``ids``: read once for a set of runs."""
        if self._lined is None or not _same(self._lined.ids, ids):
            whole = self._first()
            docs = whole.get_column("doc_id") if whole is not None else _NONE
            self._lined = _Lined(ids, docs)
        self._lined.ids = ids  # the same runs: the next call with this series compares none
        return self._lined

    def _column(self, name: str, ids: pl.Series, dtype: pl.DataType) -> pl.Series:
        """Column ``name`` of the first entry lined up with ``ids`` (null: not there).

        In the table's own type (attempts as small as they fit): the first
        call reads every code column of the first entry at once (a few
        hundred MB at 10M runs and 21 rules), cheaper than a read a column;
        the first score's, every score.
        """
        whole = self._first(scores=name.startswith("s"))
        if whole is None or not ids.len():
            return pl.Series(name, [None] * ids.len(), dtype)
        return self._align(ids).take(whole.get_column(name))

    def _first(self, scores: bool = False) -> pl.DataFrame | None:
        """The first entry's codes, or its scores (each read once; None: the table holds no run).

        Apart: the scores (eight bytes a run each) are read only when the
        sweep asks for one, not held through the rates and flips.
        """
        if self._base is None:
            return None
        if self._whole is None:
            self._whole = self._base.select(pl.exclude(r"^s\d+$")).collect()
        if not scores:
            return self._whole
        if self._scores is None:
            self._scores = self._base.select(pl.col(r"^s\d+$")).collect()
        return self._scores

    def _later_at(self, n: int, ids: pl.Series) -> tuple[pl.Series, pl.Series]:
        """Where the runs of later entry ``n`` sit in ``ids``, and whether they are there."""
        if self._later_ids is None or not _same(self._later_ids, ids):
            self._later_lined = {}
        self._later_ids = ids
        if n not in self._later_lined:
            self._later_lined[n] = positions(ids, self._later[n].get_column("doc_id"))
        return self._later_lined[n]

    def columns(
        self,
        label: str,
        ids: pl.Series,
        again: pl.DataFrame | None,
        rule: Rule | None,
        wanted: Sequence[str] = (FOUND, CELL, ATT, _REST),
    ) -> tuple[pl.DataFrame, int]:
        """``_found``, ``_cell``, attempts (and rest) of rule ``label``, lined up with ``ids``.

        The attempts in the smallest type that holds them. The first
        entry's, then each later entry's changes, then ``again`` (rows
        decided again now: stored columns) put in place. Only the columns
        ``wanted`` are lined up (``_found`` and ``_cell`` always). Returns the
        columns and how many rows of ``again`` are of ``ids``.
        """
        i = self.labels.index(label)
        kept = {CELL: f"c{i}", ATT: f"a{i}", **({_REST: f"r{i}"} if i in self.rests else {})}
        out_names = [CELL, *(n for n in (ATT, _REST) if n in kept and n in wanted)]
        names = [kept[n] for n in out_names]
        every = {CELL: pl.UInt8(), ATT: pl.UInt8(), _REST: pl.Int8()}
        values = [self._column(c, ids, every[n]) for n, c in zip(out_names, names, strict=True)]
        patches = [(f.select(names), *self._later_at(n, ids)) for n, f in enumerate(self._later)]
        if again is not None and again.height:
            mine = _renamed(compact(coded(again, rule).collect()), i)
            patches.append((mine.select(names), *positions(ids, mine.get_column("doc_id"))))
        decided = 0
        for n, (patch, at, hit) in enumerate(patches):
            keep = hit & patch.get_column(names[0]).is_not_null()
            into, rows = at.filter(keep), patch.filter(keep)
            if not into.len():
                continue
            if n == len(self._later):  # the rows decided again now
                decided = into.len()
            values = [
                _scattered(v, into, rows.get_column(c)) for v, c in zip(values, names, strict=True)
            ]
        cell = values[0]
        found = pl.select(pl.when(cell.is_not_null()).then(pl.lit(True))).to_series()
        out = [found.alias(FOUND), *(v.alias(n) for v, n in zip(values, out_names, strict=True))]
        return pl.DataFrame(out), decided

    def score(self, name: str, ids: pl.Series) -> pl.Series:
        """The latest score ``name`` of each of ``ids`` at the table's ``as_of`` (null: none)."""
        j = self.scores.index(name)
        values = self._column(f"s{j}", ids, pl.Float64())
        for n, later in enumerate(self._later):
            at, hit = self._later_at(n, ids)
            if bool(hit.any()):
                values = values.scatter(at.filter(hit), later.get_column(f"s{j}").filter(hit))
        return values.alias("value")


def open_set(dataset: Dataset, plans: Sequence[Any]) -> SetCodes | None:
    """The rule set's table when every plan's store is at the generation it was built from."""
    if not plans or any(p.record is None for p in plans):
        return None
    store = DecisionStore(dataset.path, set_fingerprint([p.store.fingerprint for p in plans]))
    record = store.latest()
    if record is None or record.get("kind") != "codes":
        return None
    if record["stores"] != _identity(plans):
        return None
    return SetCodes(store, record)


# --- the writer (refresh) -------------------------------------------------------------------


def _identity(plans: Sequence[Any]) -> dict[str, list[Any]]:
    """Each plan's label: its store's fingerprint, generation and commit time (with a record).

    The time too: a store deleted (``verify --repair``, ``vacuum``) and
    built again numbers its generations from 1 again, with other rows.
    """
    return {
        p.label: [p.store.fingerprint, p.record["generation"], p.record.get("committed_at")]
        for p in plans
        if p.record is not None
    }


def write_set(
    ds: Dataset,
    store: DecisionStore,
    before: Sequence[Any],
    after: Sequence[Any],
    again: dict[str, pl.DataFrame],
    when: datetime,
    build: Callable[[Sequence[Any], pl.Series], Iterator[tuple[int, pl.DataFrame]]],
    signals: pl.LazyFrame | None = None,
    night: pl.DataFrame | None = None,
) -> None:
    """Bring the rule set's table to the stores' new records (``after``: their plans).

    ``before``: the plans the refresh started from (their records, the
    rows it decided again: ``again``). When the table was built from those
    records, the night's changes are added as one entry (past
    :data:`FOLD_NIGHTS` entries, the later ones are folded into one); else
    (no table, a rule decided from raw, a store another rule set's refresh
    moved on, the later entries past half the first) the table is built
    again from the stores (``build(plans, ids)``: each plan's coded columns
    lined up with ``ids``, by position). ``store``: the table's folder
    (:func:`set_fingerprint`), whose lock the caller holds; ``signals``:
    the signals of the runs decided again, read already (else read here);
    ``night``: the night's entry built already (:func:`night_entry`).
    """
    labels, rules, names = _rule_set(after)
    stores = _identity(after)
    meta = {
        "kind": "codes",
        "contract": CONTRACT,
        "rule": {"name": f"codes of {len(labels)} rules"},
        "labels": labels,
        "scores": names,
        "rests": [i for i, p in enumerate(after) if _rest(p.target)],
        "stores": stores,
        "dataset_seq": ds.snapshot,
        "as_of": when.isoformat(),
    }
    record = store.latest()
    same = record is not None and _same_set(record, labels)
    unchanged = same and record is not None and record["stores"] == stores
    if unchanged and record["as_of"] == meta["as_of"] and record["dataset_seq"] == ds.snapshot:  # type: ignore[index]
        return  # nothing changed since
    gen = store.start()
    if same and record is not None and _follows(record, before):
        if night is None:
            night = _night(ds, labels, rules, again, when, names, signals)
        chain = record["chain"]
        if len(chain) > FOLD_NIGHTS:  # the nights as one entry, tonight's last
            later = [f.collect() for f, _ in store.entries(record)[1:]]
            night = _merged([*later, night], len(labels))
            record = {**record, "chain": chain[:1]}
        if night.height + sum(e["rows"] for e in record["chain"][1:]) <= chain[0]["rows"] / 2:
            gen.add_frame(night)
            store.commit(gen, record, None, {**meta, "rows": chain[0]["rows"]})
            return
    # the whole table from the stores: the first refresh, a changed set, long nights
    ids = ds.current("runs").select("doc_id").collect().get_column("doc_id").sort()
    scores = latest_scores(ds.current("signals"), ids, when, names)
    gen.add_frame(_wide(ids, build(after, ids), scores, names))
    store.commit(gen, None, None, {**meta, "rows": ids.len()})


def _rule_set(plans: Sequence[Any]) -> tuple[list[str], dict[str, Rule | None], list[str]]:
    """The plans' labels, each label's rule, and the score names the table keeps (sorted)."""
    rules = {p.label: p.target for p in plans}
    names = {r.score.name for r in rules.values() if r is not None and r.score is not None}
    return [p.label for p in plans], rules, sorted(names)


def _same_set(record: dict[str, Any], labels: Sequence[str]) -> bool:
    """Whether the table's ``record`` holds the codes of the rules ``labels``, in that order."""
    return record.get("kind") == "codes" and record["labels"] == list(labels)


def _follows(record: dict[str, Any], before: Sequence[Any]) -> bool:
    """Whether the table's ``record`` was built from the stores' records ``before`` (a night's)."""
    return record["stores"] == _identity(before) and all(p.record is not None for p in before)


def night_entry(
    ds: Dataset,
    store: DecisionStore,
    before: Sequence[Any],
    again: dict[str, pl.DataFrame],
    when: datetime,
    signals: pl.LazyFrame | None = None,
) -> pl.DataFrame | None:
    """The night's entry :func:`write_set` adds to the table, when it adds one; else None.

    Built from what the refresh decided (``again``) before any store is
    committed: a refresh builds it while the stores' records are written.
    """
    record = store.latest()
    labels, rules, names = _rule_set(before)
    if record is None or not _same_set(record, labels) or not _follows(record, before):
        return None
    return _night(ds, labels, rules, again, when, names, signals)


def _night(
    ds: Dataset,
    labels: Sequence[str],
    rules: dict[str, Rule | None],
    again: dict[str, pl.DataFrame],
    when: datetime,
    names: Sequence[str],
    signals: pl.LazyFrame | None,
) -> pl.DataFrame:
    """A night's entry: the runs some rule decided again, each rule's row where it did.

    ``signals``: theirs, read already (else read from the parts holding them).
    """
    ids = pl.concat([_NONE, *(f.get_column("doc_id") for f in again.values())]).unique().sort()
    empty = pl.DataFrame(schema={"doc_id": pl.Int64, CELL: pl.UInt8, ATT: pl.Int64})
    columns = []
    for i, label in enumerate(labels):
        rows = coded(again[label], rules[label]).collect() if label in again else empty
        if _rest(rules[label]) and _REST not in rows.columns:
            rows = rows.with_columns(pl.lit(None, pl.Int8).alias(_REST))
        columns.append((i, rows))
    if signals is None and names:  # the signals of these runs only: the parts holding them
        signals = ds.holding(id_spans(ids), ("signals",))["signals"]
    scores = latest_scores(signals, ids, when, names) if signals is not None else {}
    return _wide(ids, columns, scores, names)
