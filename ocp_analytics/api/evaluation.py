"""The public evaluation API: acceptance, rates, comparisons, over any dataset size.

Each function reads its arguments (rules, ``as_of``, the time window, the
groups) into a :class:`_Scope`, then runs the one evaluation loop
(:func:`ocp_analytics.engine.evaluate.run`) with the sinks it needs: the
acceptance rows kept in memory or written to one Parquet file (the file's
threads live in :mod:`ocp_analytics.store.parquet_writer`), rate partials,
flip partials.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from ocp_analytics._typing import DatasetLike, Period, RulesLike, Tier, When
from ocp_analytics.api._partials import rate_partials, with_cluster
from ocp_analytics.api._scope import _Scope as _Scope
from ocp_analytics.engine.acceptance import CODED, OUTPUT_SCHEMA, enum_words, turned_by_late_event
from ocp_analytics.engine.evaluate import SLICE_RUNS
from ocp_analytics.engine.flips import FlipPartials
from ocp_analytics.engine.groups import (
    compare_arguments,
    empty_decisions,
    groups,
    named_rates,
    warn_missing_labels,
)
from ocp_analytics.engine.rates import (
    By,
    compare_matrix,
)
from ocp_analytics.exceptions import OcpAnalyticsError, hint
from ocp_analytics.model.rules import resolve_rules
from ocp_analytics.schemas import ACCEPTANCE, as_views
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.parquet_writer import ThreadedParquetWriter, atomic_parquet
from ocp_analytics.store.scan import Dataset, scan_at

__all__ = ["acceptance", "attempts_distribution", "compare", "rates", "write_acceptance"]


# --- acceptance rows: kept in memory, or written to one Parquet file ------------------


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
# statistics prune nothing and cost encoding time (benchmarks/RESULTS.md,
# History: b1486b5, 30fb182).
_STATISTICS = ["rule"]

# CODED columns hold at most 4 words (rule: its one name), so 8-bit codes.
_CODES = pa.dictionary(pa.uint8(), pa.large_string())
_WORD = pa.dictionary(pa.uint32(), pa.large_string())

# Columns written with a dictionary (Parquet column paths): all but
# ``run_id``, unique within a row group (one rule of one slice), which the
# writer would hash into a dictionary until the page is full and then write
# plain anyway: less encoding CPU and a smaller file (benchmarks/RESULTS.md,
# History: 01f3d37).
_DICTIONARY = [c for c in OUTPUT_SCHEMA if c not in ("run_id", "reasons")] + [
    "reasons.list.element"
]


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


def _footer(as_of: datetime, snapshot: int | None = None) -> dict[bytes, bytes]:
    """The acceptance file's key-value metadata: ``ARROW:schema``, ``as_of``, ``snapshot``.

    The file's column types are those of ACCEPTANCE: readers take them from
    the footer's ``ARROW:schema``, stored as pyarrow stores it (the schema's
    IPC form in base64), since the writer is given other ones. ``snapshot``
    is the ``seq`` of the commit the rows were read at (empty for tables in
    memory): with ``as_of``, what reads the same rows again.

    Examples
    --------
    >>> from datetime import UTC
    >>> list(_footer(datetime(2027, 1, 1, tzinfo=UTC), 12).items())[1:]
    [(b'ocp_analytics.as_of', b'2027-01-01T00:00:00+00:00'), (b'ocp_analytics.snapshot', b'12')]
    """
    meta = {
        b"ocp_analytics.as_of": as_of.isoformat().encode(),
        b"ocp_analytics.snapshot": b"" if snapshot is None else str(snapshot).encode(),
    }
    stored = base64.b64encode(ACCEPTANCE.with_metadata(meta).serialize().to_pybytes())
    return {b"ARROW:schema": stored, **meta}


class _FileSink:
    """Hands each decision frame to the acceptance file's writer as Arrow, optionally filtered."""

    columns = tuple(OUTPUT_SCHEMA)
    coded = True  # rule, outcome, tier (and the reasons' words) may come as Enum columns

    def __init__(self, writer: ThreadedParquetWriter, keep: pl.Expr | None = None) -> None:
        self.writer = writer
        self.keep = keep

    def add(self, decisions: pl.DataFrame) -> None:
        # Texts handed over as string views and Enum columns, without a copy
        # (benchmarks/RESULTS.md, History: 89505ca); the file declares them as
        # large strings (see _as_written).
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
        if not table.schema.equals(self.writer.schema):
            table = table.cast(self.writer.schema)
        self.writer.write(table)


def acceptance(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    late_only: bool = False,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
    use_decisions: bool = True,
) -> pl.DataFrame:
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
        The instant of knowledge (now, UTC, by default): a signal observed
        after it is not yet known and takes no part (docs/figures.md,
        "as_of"). Written into every row as the ``as_of`` column.
    recorded
        Include each run's own rule (``rule = "recorded"``).
    since, until
        Only runs whose time (``ended_at``, else ``started_at``) falls in
        ``[since, until)``: instants, or durations before ``as_of`` (``7d``).
        A window with ``since`` and no ``until`` ends at ``as_of``
        (docs/time.md).
    late_only
        Keep only the rows a counted excluded event turned to ``rejected``
        (see :func:`~ocp_analytics.engine.acceptance.turned_by_late_event`).
    where
        Only runs meeting every filter ``label.KEY=VALUE`` or
        ``COLUMN=VALUE`` (a ``runs`` column, compared as text), applied
        where the window is.
    snapshot
        The dataset as a commit left it: its ``seq`` (``ocp-analytics
        log``) or an instant (the last commit at or before it); ``None``: the
        latest. With ``as_of``, the same call gives the same rows after any
        later ingest (docs/dataset.md, "Snapshots"). Refused with a scanned
        :class:`~ocp_analytics.Dataset` (scan it at the snapshot instead).
    use_decisions
        Read each rule's rows from the dataset's decisions store
        (:func:`~ocp_analytics.refresh`) where it gives the rows of a full
        evaluation at ``as_of``, deciding only what is not final there; the
        rows are the same either way (docs/dataset.md, "The decisions
        store"). False: evaluate every run from raw.

    Warns
    -----
    UserWarning
        For each verdict or score a rule names that no run kept carries,
        with the closest names that some run does carry (a typo would
        otherwise read as a believable 0 %).

    Returns
    -------
    polars.DataFrame
        One row per (run, rule): ``run_id, rule, outcome, reasons, tier, q,
        accepted_attempt, attempts_to_acceptance, accepted_attempt_n,
        accepted_round, window_open, as_of``. The evaluation runs a slice of
        runs at a time; the rows are held in memory,
        so for very large datasets write them with :func:`write_acceptance`.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> row = oa.acceptance(ds, as_of="2027-01-01T00:00:00Z").row(0, named=True)
    >>> row["outcome"], row["tier"], row["accepted_attempt"], row["attempts_to_acceptance"]
    ('accepted', 'reported', 'review.a2', 4)
    """
    scope = _Scope.read(
        resolve_rules(rules), as_of, since, until, recorded, where=where, decisions=use_decisions
    )
    dataset = scan_at(dataset, snapshot)
    sink = _Collect(turned_by_late_event() if late_only else None)
    scope.run(dataset, [sink])
    if not sink.frames:
        return pl.DataFrame(schema=OUTPUT_SCHEMA)
    return pl.concat(sink.frames)


def write_acceptance(
    dataset: DatasetLike,
    out: str | Path,
    rules: RulesLike = None,
    *,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    late_only: bool = False,
    slice_runs: int = SLICE_RUNS,
    progress: Callable[[int, int], None] | None = None,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
    use_decisions: bool = True,
) -> int:
    """Write acceptance rows to one Parquet file, a slice of runs at a time.

    Memory is bounded by ``slice_runs`` whatever the dataset's size: the
    shared features of two slices at most (one being handed to the writer,
    the next being computed) and up to
    :data:`~ocp_analytics.store.parquet_writer.WRITE_AHEAD_BYTES` of rows
    waiting to be encoded. Rows are written slice by slice, rule by rule
    (not sorted by run). ``as_of`` and the ``seq`` of the commit read
    (the one ``snapshot`` names, else the newest) are also written into the
    file's metadata (``ocp_analytics.as_of``, ``ocp_analytics.snapshot``). The file
    appears atomically (written to a temporary name, then renamed).

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, late_only, where, snapshot, use_decisions
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
    scope = _Scope.read(
        resolve_rules(rules), as_of, since, until, recorded, slice_runs, where, use_decisions
    )
    target = Path(out)
    if not target.parent.is_dir():
        raise OcpAnalyticsError(
            hint(f"the folder {str(target.parent)!r} does not exist.", "create it first.")
        )
    keep = turned_by_late_event() if late_only else None
    dataset = scan_at(dataset, snapshot)
    with atomic_parquet(
        target,
        _as_written(ACCEPTANCE),
        _footer(scope.as_of, dataset.snapshot if isinstance(dataset, Dataset) else None),
        write_statistics=_STATISTICS,
        use_dictionary=_DICTIONARY,
        store_schema=False,
    ) as writer:
        scope.run(dataset, [_FileSink(writer, keep)], progress=progress)
    return writer.rows


# --- rates, attempts and comparisons: partials summed over the slices -----------------


def rates(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    by: By = (),
    min_tier: Tier | None = None,
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    period: Period | None = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
    cluster: str | None = None,
    use_decisions: bool = True,
) -> pl.DataFrame:
    """Acceptance rates per group and rule, optionally per period.

    What each column means: docs/figures.md, "Per group: rates".

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot, use_decisions
        As for :func:`acceptance`.
    by
        Group columns: any ``runs`` column, or ``label.KEY`` for a label
        (also as an expression: ``oa.label("team")``).
    min_tier
        Count an outcome as decided only when its tier is at least this strong
        (``verified``, ``reported``, ``heuristic``, ``asserted``).
    period
        ``day``, ``week`` (from Monday) or ``month``: a first group column
        ``period``, the UTC start of the run's bucket.
    slice_runs
        Runs evaluated at a time: memory is bounded by it.
    cluster
        A runs column or ``label.KEY`` whose runs are not independent tries
        (``task_id``): adds the cluster-robust (CR1) interval after ``ci_high``,
        ``clusters, cluster_se, cluster_ci_low, cluster_ci_high,
        design_effect`` (docs/statistics.md, "Runs of the same task").

    Returns
    -------
    polars.DataFrame
        ``[period], *by, rule, runs, accepted, rejected, unknown, accept_rate,
        ci_low, ci_high, [cluster figures], decided_share, attempts_mean, attempts_median,
        first_attempt_share, first_node_attempt_share, provisional,
        tier_verified, tier_reported, tier_heuristic, tier_asserted, as_of``
        (``tier_*``: decided runs by their evidence tier).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> r = oa.rates(ds, "tests+review", as_of="2027-01-01T00:00:00Z")
    >>> r.select("rule", "runs", "accepted", "unknown").rows()
    [('recorded', 7, 7, 0), ('tests+review', 7, 4, 3)]
    >>> t = oa.rates(ds, by=oa.label("example"), as_of="2027-01-01T00:00:00Z")
    >>> t.filter(rule="recorded").select("label.example", "runs").rows()
    [('full-fields', 1), (None, 6)]
    >>> oa.rates(ds, where=["label.example=full-fields"], as_of="2027-01-01")["runs"].item()
    1

    Runs of one task are not independent tries: with ``cluster``, the
    cluster-robust interval beside the Wilson one:

    >>> c = oa.rates(ds, "tests", cluster="task_id", as_of="2027-01-01")
    >>> c.filter(rule="tests").select("accepted", "rejected", "clusters", "cluster_se").row(0)
    (7, 0, 7, 0.0)

    The dataset as its first commit left it, whatever was ingested since:

    >>> _ = oa.ingest("tests/data/examples/swarm-v02.ocp.json", ds)
    >>> oa.rates(ds, as_of="2027-01-01", snapshot=1)["runs"].item()
    7
    """
    scope = _Scope.read(
        resolve_rules(rules), as_of, since, until, recorded, slice_runs, where, use_decisions
    )
    ds = scan_at(dataset, snapshot)
    sink, names, keys, clusters = rate_partials(ds, scope, by, period, min_tier, cluster=cluster)
    out = named_rates(sink, keys, names)
    if clusters is not None:
        out = with_cluster(out, clusters, keys, names)
    warn_missing_labels(out, names)
    return out


def attempts_distribution(
    dataset: DatasetLike,
    rules: RulesLike = None,
    *,
    by: By = (),
    as_of: When = None,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
    use_decisions: bool = True,
) -> pl.DataFrame:
    """Accepted runs by the attempt at which they were accepted, per group and rule.

    Parameters
    ----------
    dataset, rules, as_of, recorded, since, until, where, snapshot, use_decisions
        As for :func:`acceptance`.
    by, slice_runs
        As for :func:`rates`.

    Returns
    -------
    polars.DataFrame
        ``*by, rule, attempts_to_acceptance, accepted, share,
        cumulative_share``: ``share`` of the accepted runs (whose attempt is
        known) accepted at exactly that attempt, ``cumulative_share`` at or
        before it.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3/full-fields.ocp.json", ds)
    >>> d = oa.attempts_distribution(ds, recorded=True, as_of="2027-01-01")
    >>> d.select("rule", "attempts_to_acceptance", "share").rows()
    [('recorded', 4, 1.0)]
    """
    scope = _Scope.read(
        resolve_rules(rules), as_of, since, until, recorded, slice_runs, where, use_decisions
    )
    sink, names, keys, _ = rate_partials(scan_at(dataset, snapshot), scope, by)
    named = sink.distribution(empty_decisions(keys)).rename(dict(zip(keys, names, strict=True)))
    return named.collect()


def compare(
    dataset: DatasetLike,
    rules: RulesLike,
    *,
    by: By = (),
    as_of: When = None,
    sample: int = 5,
    recorded: bool = True,
    since: When = None,
    until: When = None,
    slice_runs: int = SLICE_RUNS,
    where: Sequence[str] = (),
    snapshot: Snapshot = None,
    use_decisions: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Teams' bars side by side: a rate matrix and, per rule pair, flips and a paired test.

    Parameters
    ----------
    dataset, as_of, recorded, since, until, where, snapshot, use_decisions
        As for :func:`acceptance`.
    rules
        The rules to compare (each run's own rule too, with ``recorded``).
    by
        Group columns, as for :func:`rates`: a matrix row and a set of flips
        rows per group.
    sample
        Run ids kept per flips row.
    slice_runs
        Runs evaluated at a time: memory is bounded by it.

    Returns
    -------
    tuple[polars.DataFrame, polars.DataFrame]
        ``(matrix, flips)``. ``matrix`` has one row per group and, per rule,
        ``<rule>``, ``<rule>__low``, ``<rule>__high`` (its accept rate and
        Wilson bounds), then the counts beside the rate: ``<rule>__runs``,
        ``<rule>__decided`` (accepted or rejected) and ``<rule>__accepted``.
        ``flips`` has one row per group and ordered pair of
        rules: ``*by, rule_a, rule_b, runs_compared, flips, a, b, c, d, n,
        difference, difference_low, difference_high, p_value, p_method,
        p_holm, sample_run_ids`` (``schemas.FLIPS``): ``flips`` counts runs
        accepted under ``rule_a`` but not under ``rule_b`` (rejected or
        unknown), ``sample_run_ids`` the first ``sample`` of them; ``a, b, c,
        d`` is the paired table over the ``n`` runs decided under both, with
        the difference of accept rates ``(b - c) / n`` and its Newcombe
        interval, McNemar's p-value and Holm's adjustment across every cell
        (docs/statistics.md).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> ds = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest("tests/data/examples/v0.3", ds)
    >>> m, f = oa.compare(ds, ["tests", "tests+review"], as_of="2027-01-01T00:00:00Z")
    >>> row = f.filter(rule_a="tests", rule_b="tests+review").row(0, named=True)
    >>> row["flips"], row["b"], row["n"], row["p_method"]
    (3, 0, 4, 'exact')
    >>> m.select("tests+review", "tests+review__decided", "tests+review__accepted").row(0)
    (1.0, 4, 4)
    """
    alt, names, cols = compare_arguments(rules, by, sample, recorded)
    gnames, keys = groups(cols, None)
    flips = FlipPartials(names, sample, keys=keys)
    scope = _Scope.read(alt, as_of, since, until, recorded, slice_runs, where, use_decisions)
    sink, _, _, _ = rate_partials(scan_at(dataset, snapshot), scope, cols, flips=flips)
    long = named_rates(sink, keys, gnames)
    warn_missing_labels(long, gnames)
    named = dict(zip(keys, gnames, strict=True))
    return compare_matrix(long, names, gnames), flips.flips().rename(named).collect()
