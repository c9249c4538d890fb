"""The public evaluation API: acceptance, rates, comparisons, over any dataset size.

Each function reads its arguments (rules, ``as_of``, the time window, the
groups), then runs the one evaluation loop (:func:`ocp_analytics.engine.evaluate.run`)
with the sinks it needs.
"""

from __future__ import annotations

import base64
import os
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from ocp_analytics.engine.acceptance import CODED, OUTPUT_SCHEMA, enum_words, turned_by_late_event
from ocp_analytics.engine.evaluate import SLICE_RUNS, run
from ocp_analytics.engine.rates import (
    LABEL_PREFIX,
    FlipPartials,
    RatePartials,
    compare_matrix,
    group_exprs,
)
from ocp_analytics.engine.timeaxis import check_period, period_start, resolve_as_of, resolve_window
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import RECORDED, Rule, resolve_rules
from ocp_analytics.schemas import ACCEPTANCE, as_views
from ocp_analytics.store import parquet_parallel as _parquet_parallel
from ocp_analytics.store.parquet_parallel import ParquetRowGroups, encode

When = datetime | str | None

__all__ = ["acceptance", "attempts_distribution", "compare", "rates", "write_acceptance"]


# Converted frames waiting for the writer's thread, in bytes at most (one
# frame may always wait). The writer encodes a 500k-row frame in ~55 ms, three
# times as long as the frame takes to compute, so it falls behind while a
# slice's rules are evaluated and catches up during the next slice's shared
# work. Measured at 2M runs (wall, peak RSS; at 19b1d36, before frames were
# handed over as views and dictionaries): 20 rules 9.2 s / 1.8 GB with
# 384 MiB, 9.9 s / 1.6 GB with 256 MiB; 100 rules 34.8 s / 2.05 GB with 384
# MiB, 36.1 s / 1.9 GB with 256 MiB. 256 MiB keeps both under 2 GB.
WRITE_AHEAD_BYTES = 256 << 20

# Threads encoding the acceptance file's row groups (see _Writer). On 2
# cores two encode beside the evaluation: 2M runs x 100 rules ~29.2 s
# against ~30.8 with one (the one thread was the bound).
ENCODERS = max(1, min(4, len(os.sched_getaffinity(0))))

# Bytes a buffer the encoders write into holds at first (a 500k-row part of
# the acceptance file is about 3.5 MB); larger ones once a part did not fit.
PART_SPACE = 16 << 20


class _Collect:
    """Keeps every decision frame (for :func:`acceptance`), optionally filtered."""

    columns = tuple(OUTPUT_SCHEMA)

    def __init__(self, keep: pl.Expr | None = None) -> None:
        self.frames: list[pl.DataFrame] = []
        self.keep = keep

    def add(self, decisions: pl.DataFrame) -> None:
        self.frames.append(decisions if self.keep is None else decisions.filter(self.keep))


# Columns whose row-group min/max are written: ``rule`` only (a row group
# holds one rule of one slice, so readers skip other rules' groups). The other
# columns' values vary within a group of half a million runs, so their
# statistics prune nothing: the texts' cost a third of the write, the
# numbers' 4 % (measured on 500k-row frames).
_STATISTICS = ["rule"]


# CODED columns hold at most 4 words (rule: its one name), so 8-bit codes.
_CODES = pa.dictionary(pa.uint8(), pa.large_string())
_WORD = pa.dictionary(pa.uint32(), pa.large_string())


def _as_written(schema: pa.Schema) -> pa.Schema:
    """The schema the writer is handed: texts as string views, CODED and words as dictionaries.

    Both come from polars without a copy (string views, Enum columns); the
    writer encodes them into the same Parquet columns as the large strings
    of ``schema`` (a dictionary's codes as they are, instead of hashing each
    row's text again).

    Examples
    --------
    >>> _as_written(ACCEPTANCE).field("reasons").type.value_type
    DictionaryType(dictionary<values=large_string, indices=uint32, ordered=0>)
    >>> _as_written(ACCEPTANCE).field("outcome").type
    DictionaryType(dictionary<values=large_string, indices=uint8, ordered=0>)
    """

    def written(f: pa.Field) -> pa.DataType:
        if f.name == "reasons":  # the schema's list item (its name, not null), coded
            return pa.large_list(f.type.value_field.with_type(_WORD))
        if f.name in CODED:
            return _CODES
        return as_views(f.type)

    return pa.schema([pa.field(f.name, written(f), f.nullable) for f in schema])


# Columns written with a dictionary (Parquet column paths): all but
# ``run_id``, unique within a row group (one rule of one slice), which the
# writer would hash into a dictionary until the page is full and then write
# plain anyway: 4 % less encoding CPU and a slightly smaller file (measured
# on 500k-row frames of 100 rules).
_DICTIONARY = [c for c in OUTPUT_SCHEMA if c not in ("run_id", "reasons")] + [
    "reasons.list.element"
]


def _same_data(table: pa.Table, other: pa.Table, name: str) -> bool:
    """Whether column ``name`` of both tables is the very same memory (so the same data).

    Only while ``other`` is alive: its buffers cannot be freed and their
    addresses reused. Dictionary and nested columns are never the same here
    (a dictionary's values and a child's offset are not among an array's
    buffers).

    Examples
    --------
    >>> t = pa.table({"x": [1, 2], "d": pa.array(["a", "b"]).dictionary_encode()})
    >>> _same_data(t.select(["x"]), t, "x"), _same_data(pa.table({"x": [1, 2]}), t, "x")
    (True, False)
    >>> _same_data(t, t, "d"), _same_data(pa.table({"l": [[1]]}), pa.table({"l": [[1]]}), "l")
    (False, False)
    """
    a, b = table.column(name), other.column(name)
    if a.type != b.type or a.num_chunks != b.num_chunks:
        return False
    if pa.types.is_nested(a.type) or pa.types.is_dictionary(a.type):
        return False

    def where(chunk: pa.Array) -> tuple[object, ...]:
        held = ((x.address, x.size) if x else None for x in chunk.buffers())
        return (chunk.offset, len(chunk), *held)

    return all(where(x) == where(y) for x, y in zip(a.chunks, b.chunks, strict=True))


class _Writer:
    """Appends decisions to one Parquet file, its row groups encoded on several threads.

    Each frame is converted to Arrow here, then encoded by pyarrow as a
    Parquet file of its own on one of :data:`ENCODERS` threads while the next
    rules are evaluated (both release the GIL); the encoded row groups are
    appended to ``path`` in the order the frames came (see
    :mod:`ocp_analytics.store.parquet_parallel`: the file is byte for byte the one
    a single ``ParquetWriter`` writes). Converted frames of at most
    :data:`WRITE_AHEAD_BYTES` wait to be encoded or appended (always at
    least one), so memory stays bounded whatever the slice's size.
    :meth:`close` appends the last ones and writes the footer.
    """

    columns = tuple(OUTPUT_SCHEMA)
    coded = True  # rule, outcome, tier (and the reasons' words) may come as Enum columns

    def __init__(
        self, path: Path, schema: pa.Schema, keep: pl.Expr | None = None, **options: object
    ) -> None:
        self.schema = schema
        self.keep = keep
        self.rows = 0
        self._out = ParquetRowGroups(path, schema, **options)  # and the options parts take
        self._pool = ThreadPoolExecutor(ENCODERS, thread_name_prefix="ocp-write")
        self._pending: deque[tuple[Future[tuple[pa.Buffer, pa.Buffer]], int, list[str]]] = deque()
        self._bytes = 0
        self._last: pa.Table | None = None  # the frame before (alive: see _same_data)
        # buffers the encoders write into, reused once their part is appended
        self._spare: deque[pa.Buffer] = deque()
        self._space = PART_SPACE  # bytes a new one holds

    def add(self, decisions: pl.DataFrame) -> None:
        # Texts handed over as string views and Enum columns, without a copy
        # (a 500k-row frame: 0.5 instead of 9 ms of CPU); the file declares
        # them as large strings (see _as_written).
        level = pl.CompatLevel.newest()
        if self.keep is not None:
            # the few rows kept are copied: views would hold (and count) the
            # whole slice's text buffers until written
            decisions = decisions.filter(self.keep)
            level = pl.CompatLevel.oldest()
        if decisions.height == 0:
            return  # no empty row group
        reasons = decisions.get_column("reasons")
        if reasons.dtype == pl.List(pl.String):  # words not coded by decide: code them here
            decisions = decisions.with_columns(enum_words(reasons))
        table = decisions.to_arrow(compat_level=level)
        if not table.schema.equals(self.schema):
            table = table.cast(self.schema)
        size = table.nbytes
        self._append(WRITE_AHEAD_BYTES - size)
        # columns holding the very data of the frame before (every rule of a
        # slice has the slice's run_id): encoded once, their chunks written again
        last, self._last = self._last, table
        same = [c for c in table.column_names if last is not None and _same_data(table, last, c)]
        if len(same) == table.num_columns or table.num_rows > _parquet_parallel.ROW_GROUP_ROWS:
            same = []  # a part leaves out columns when it holds one row group and others
        part = self._pool.submit(self._encode, table.drop_columns(same))
        self._pending.append((part, size, same))
        self._bytes += size
        self.rows += decisions.height

    def _encode(self, table: pa.Table) -> tuple[pa.Buffer, pa.Buffer]:
        """The encoded part and the buffer it was meant to fill (on an encoding thread)."""
        try:
            into = self._spare.pop()
        except IndexError:
            into = pa.allocate_buffer(self._space)
        return encode(table, table.schema, into, **self._out.options), into

    def _append(self, most: int) -> None:
        """Append the encoded frames at the front, waiting until at most ``most`` bytes wait."""
        while self._pending and (self._bytes > most or self._pending[0][0].done()):
            future, size, same = self._pending.popleft()
            self._bytes -= size
            part, into = future.result()  # a failed encoding raises here
            self._out.append(part, same)
            if part.address == into.address:
                self._spare.append(into)
            else:  # it did not fit: larger buffers from now on
                self._space = max(self._space, 2 * part.size)
                self._spare.clear()

    def close(self, metadata: dict[bytes, bytes]) -> None:
        """Append the last frames and write the footer (raising the first error, if any)."""
        try:
            self._append(-1)
            self._out.close(metadata)
        finally:
            self.abort()

    def abort(self) -> None:
        """Drop the frames not encoded yet, wait for the threads and close the file."""
        for part, _, _ in list(self._pending):
            part.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._out.abort()


def acceptance(
    dataset: object,
    rules: object = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    late_only: bool = False,
) -> pl.LazyFrame:
    """Acceptance of every run, under its recorded rule and alternative rules.

    Parameters
    ----------
    dataset
        A dataset path, a :class:`~ocp_analytics.Dataset`, or a dict of
        LazyFrames with ``runs``, ``signals``, ``attempts`` and ``rules``.
    rules
        Alternative rules: :class:`~ocp_analytics.Rule` objects, short forms
        (``"tests+review"``, ``"runtime_s<=3600"``), a rules file path, or a
        list of these.
    as_of
        The instant events are judged at (now, UTC, by default). Written into
        every row as the ``as_of`` column.
    recorded
        Include each run's own rule (``rule = "recorded"``).
    since, until
        Only runs whose time (``ended_at``, else ``started_at``) falls in
        ``[since, until)``: instants, or durations before ``as_of`` (``7d``).
    late_only
        Keep only the rows a counted excluded event turned to ``rejected``
        (see :func:`~ocp_analytics.engine.acceptance.turned_by_late_event`).

    Returns
    -------
    polars.LazyFrame
        One row per (run, rule): ``run_id, rule, outcome, reasons, tier, q,
        accepted_attempt, attempts_to_acceptance, accepted_attempt_n,
        accepted_round, window_open, as_of``. The evaluation runs when this
        is called (a slice of runs at a time); the rows are held in memory,
        so for very large datasets write them with :func:`write_acceptance`.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> row = oa.acceptance(ds, as_of="2027-01-01T00:00:00Z").collect().row(0, named=True)
    >>> row["outcome"], row["tier"], row["accepted_attempt"], row["attempts_to_acceptance"]
    ('accepted', 'reported', 'review.a2', 4)
    """
    alt, when = resolve_rules(rules), resolve_as_of(as_of)  # type: ignore[arg-type]
    lo, hi = resolve_window(since, until, when)
    sink = _Collect(turned_by_late_event() if late_only else None)
    run(dataset, alt, when, [sink], recorded=recorded, since=lo, until=hi)
    if not sink.frames:
        return pl.LazyFrame(schema=OUTPUT_SCHEMA)
    return pl.concat(sink.frames).lazy()


def write_acceptance(
    dataset: object,
    out: str | Path,
    rules: object = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    late_only: bool = False,
    slice_runs: int = SLICE_RUNS,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write acceptance rows to one Parquet file, a slice of runs at a time.

    Memory is bounded by ``slice_runs`` whatever the dataset's size: the
    shared features of two slices at most (one being handed to the writer,
    the next being computed) and up to :data:`WRITE_AHEAD_BYTES` of rows
    waiting to be encoded. Rows are written slice by slice, rule by rule
    (not sorted by run). ``as_of`` is also
    written into the file's metadata (``ocp_analytics.as_of``). The file
    appears atomically (written to a temporary name, then renamed).

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, late_only
        As for :func:`acceptance`.
    out
        The Parquet file to write.
    slice_runs
        Runs evaluated at a time.
    progress
        Called with (slices done, slices in all) after each slice.

    Returns
    -------
    int
        Rows written.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> tmp = tempfile.mkdtemp()
    >>> _ = oa.ingest("tests/data/examples/v0.3", tmp + "/ds")
    >>> oa.write_acceptance(tmp + "/ds", tmp + "/acc.parquet", "tests", as_of="2027-01-01")
    14
    """
    alt, when = resolve_rules(rules), resolve_as_of(as_of)  # type: ignore[arg-type]
    lo, hi = resolve_window(since, until, when)
    target = Path(out)
    if not target.parent.is_dir():
        raise OcpAnalyticsError(
            hint(f"the folder {str(target.parent)!r} does not exist.", "create it first.")
        )
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    meta = {b"ocp_analytics.as_of": when.isoformat().encode()}
    # The file's column types are those of ACCEPTANCE: readers take them from
    # the footer's ARROW:schema, stored as pyarrow stores it (the schema's IPC
    # form in base64), since the writer is given other ones.
    stored = base64.b64encode(ACCEPTANCE.with_metadata(meta).serialize().to_pybytes())
    try:
        sink = _Writer(
            tmp,
            _as_written(ACCEPTANCE),
            turned_by_late_event() if late_only else None,
            write_statistics=_STATISTICS,
            use_dictionary=_DICTIONARY,
            store_schema=False,
        )
        try:
            run(
                dataset,
                alt,
                when,
                [sink],
                recorded=recorded,
                since=lo,
                until=hi,
                slice_runs=slice_runs,
                progress=progress,
            )
        except BaseException:
            sink.abort()  # the loop's error wins
            raise
        sink.close({b"ARROW:schema": stored, **meta})
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return sink.rows


def _groups(by: Sequence[str] | str, period: str | None) -> tuple[list[str], list[str]]:
    """Output names of the group columns (``period`` first) and their carried names."""
    cols = [by] if isinstance(by, str) else list(by)
    names = (["period"] if check_period(period) else []) + cols
    if len(set(names)) != len(names):
        raise OcpAnalyticsError(hint(f"a group is named twice in {names}.", "name each once."))
    return names, [f"_g{i}" for i in range(len(names))]


def _carry(
    by: Sequence[str] | str, period: str | None
) -> tuple[list[str], list[str], Callable[[pl.Schema], list[pl.Expr]]]:
    names, keys = _groups(by, period)
    cols = names[1:] if period else names

    def carry(schema: pl.Schema) -> list[pl.Expr]:
        exprs = ([period_start(period)] if period else []) + group_exprs(cols, schema)
        return [e.alias(k) for e, k in zip(exprs, keys, strict=True)]

    return names, keys, carry


def _warn_missing_labels(out: pl.DataFrame, names: Sequence[str]) -> None:
    for name in names:
        if name.startswith(LABEL_PREFIX) and out.height and out[name].null_count() == out.height:
            warnings.warn(
                f"no run has the label {name[len(LABEL_PREFIX) :]!r}: every group is null. "
                "Hint: check the key's spelling (labels are case-sensitive).",
                stacklevel=3,
            )


def _rate_partials(
    dataset: object,
    alt: list[Rule],
    *,
    by: Sequence[str] | str,
    min_tier: str | None,
    as_of: When,
    recorded: bool,
    since: When,
    until: When,
    period: str | None,
    slice_runs: int,
    flips: FlipPartials | None = None,
) -> tuple[RatePartials, list[str], list[str]]:
    """Run the loop into rate partials (and flip partials); group names and their keys."""
    from ocp_analytics.engine.features import TIER_RANK

    if min_tier is not None and min_tier not in TIER_RANK:
        raise OcpAnalyticsError(
            hint(f"unknown tier {min_tier!r}.", f"use one of {', '.join(TIER_RANK)}.")
        )
    when = resolve_as_of(as_of)
    lo, hi = resolve_window(since, until, when)
    names, keys, carry = _carry(by, period)
    sink = RatePartials(keys, min_tier)

    def carry_all(schema: pl.Schema) -> list[pl.Expr]:
        doc = [pl.col("doc_id").alias(flips.doc)] if flips is not None else []
        return [*carry(schema), *doc]

    run(
        dataset,
        alt,
        when,
        [sink] if flips is None else [sink, flips],
        recorded=recorded,
        since=lo,
        until=hi,
        carry=carry_all,
        slice_runs=slice_runs,
    )
    return sink, names, keys


def _empty(keys: Sequence[str]) -> pl.DataFrame:
    schema = {**OUTPUT_SCHEMA, **dict.fromkeys(keys, pl.String())}
    return pl.DataFrame(schema=schema)


def rates(
    dataset: object,
    rules: object = None,
    *,
    by: Sequence[str] | str = (),
    min_tier: str | None = None,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: str | None = None,
    slice_runs: int = SLICE_RUNS,
) -> pl.LazyFrame:
    """Acceptance rates per group and rule (SEMANTICS §10), optionally per period.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until
        As for :func:`acceptance`.
    by
        Group columns: any ``runs`` column, or ``label.KEY`` for a label.
    min_tier
        Count an outcome as decided only when its tier is at least this strong
        (``verified``, ``reported``, ``heuristic``, ``asserted``).
    period
        ``day``, ``week`` (from Monday) or ``month``: a first group column
        ``period``, the UTC start of the run's bucket.
    slice_runs
        Runs evaluated at a time: memory is bounded by it.

    Returns
    -------
    polars.LazyFrame
        ``[period], *by, rule, runs, accepted, rejected, unknown, accept_rate,
        ci_low, ci_high, decided_share, attempts_mean, attempts_median,
        first_attempt_share, first_node_attempt_share, provisional,
        tier_verified, tier_reported, tier_heuristic, tier_asserted, as_of``
        (``tier_*``: decided runs by their evidence tier).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> r = oa.rates(ds, "tests+review", as_of="2027-01-01T00:00:00Z").collect()
    >>> r.select("rule", "runs", "accepted", "unknown").rows()
    [('recorded', 7, 7, 0), ('tests+review', 7, 4, 3)]
    """
    sink, names, keys = _rate_partials(
        dataset,
        resolve_rules(rules),  # type: ignore[arg-type]
        by=by,
        min_tier=min_tier,
        as_of=as_of,
        recorded=recorded,
        since=since,
        until=until,
        period=period,
        slice_runs=slice_runs,
    )
    out = sink.rates(_empty(keys)).rename(dict(zip(keys, names, strict=True))).collect()
    _warn_missing_labels(out, names)
    return out.lazy()


def attempts_distribution(
    dataset: object,
    rules: object = None,
    *,
    by: Sequence[str] | str = (),
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int = SLICE_RUNS,
) -> pl.LazyFrame:
    """Accepted runs by the attempt at which they were accepted, per group and rule.

    Returns
    -------
    polars.LazyFrame
        ``*by, rule, attempts_to_acceptance, accepted, share,
        cumulative_share``: ``share`` of the accepted runs (whose attempt is
        known) accepted at exactly that attempt, ``cumulative_share`` at or
        before it.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> d = oa.attempts_distribution(ds, recorded=True, as_of="2027-01-01").collect()
    >>> d.select("rule", "attempts_to_acceptance", "share").rows()
    [('recorded', 4, 1.0)]
    """
    sink, names, keys = _rate_partials(
        dataset,
        resolve_rules(rules),  # type: ignore[arg-type]
        by=by,
        min_tier=None,
        as_of=as_of,
        recorded=recorded,
        since=since,
        until=until,
        period=None,
        slice_runs=slice_runs,
    )
    return sink.distribution(_empty(keys)).rename(dict(zip(keys, names, strict=True)))


def compare_arguments(
    rules: object, by: Sequence[str] | str, sample: int, recorded: bool
) -> tuple[list[Rule], list[str], list[str]]:
    """Read ``compare``'s arguments (for every executor): rules, rule names, group names."""
    if sample < 0:
        raise OcpAnalyticsError(hint(f"sample must be 0 or more, not {sample}.", "use 5."))
    alt = resolve_rules(rules)  # type: ignore[arg-type]
    names = ([RECORDED] if recorded else []) + [r.name for r in alt]
    cols = [by] if isinstance(by, str) else list(by)
    _check_compare_names(names, cols)
    return alt, names, cols


def _check_compare_names(names: list[str], groups: Sequence[str]) -> None:
    columns = {*groups, *(f"{n}__low" for n in names), *(f"{n}__high" for n in names)}
    clash = sorted(n for n in names if n in columns)
    if clash:
        raise OcpAnalyticsError(
            hint(
                f"rule name {clash[0]!r} collides with a column of the comparison "
                "(a group, or another rule's __low/__high bound).",
                "rename the rule.",
            )
        )


def compare(
    dataset: object,
    rules: object,
    *,
    by: Sequence[str] | str = (),
    as_of: When = None,
    sample: int = 5,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int = SLICE_RUNS,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Teams' bars side by side: a rate matrix and rule-versus-rule flips.

    Returns ``(matrix, flips)``: ``matrix`` has one row per group and a column
    per rule (the numeric columns are ``<rule>``, ``<rule>__low``,
    ``<rule>__high``), ``flips`` has ``rule_a, rule_b, runs_compared, flips,
    sample_run_ids``: runs accepted under ``rule_a`` but not ``rule_b``, and
    the first ``sample`` of their run ids.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> m, f = oa.compare(ds, ["tests", "tests+review"], as_of="2027-01-01T00:00:00Z")
    >>> f.filter(rule_a="tests", rule_b="tests+review").collect()["flips"].item()
    3
    """
    alt, names, cols = compare_arguments(rules, by, sample, recorded)
    flips = FlipPartials(names, sample)
    sink, gnames, keys = _rate_partials(
        dataset,
        alt,
        by=cols,
        min_tier=None,
        as_of=as_of,
        recorded=recorded,
        since=since,
        until=until,
        period=None,
        slice_runs=slice_runs,
        flips=flips,
    )
    long = sink.rates(_empty(keys)).rename(dict(zip(keys, gnames, strict=True))).collect()
    _warn_missing_labels(long, gnames)
    return compare_matrix(long, names, gnames).lazy(), flips.flips()
