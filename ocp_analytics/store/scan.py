"""A dataset read: one LazyFrame per table, current run versions only, parts checked first.

:func:`scan_dataset` reads the commit records (at a snapshot) and gives a
:class:`Dataset`: each table's scan of the parts the records list, built on
first use, when its parts are hashed against the manifest
(``store/read_check.py``): a command that reads three tables, or one
window's parts (:meth:`Dataset.within`), hashes those only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ocp_analytics import schemas as S
from ocp_analytics.exceptions import DatasetError, hint
from ocp_analytics.store.commits import SIGNAL_LINKS, Snapshot, manifest_frame, read_commits
from ocp_analytics.store.dataset import open_existing
from ocp_analytics.store.manifest import PartEntry, names_held, record_entries, tables_entries
from ocp_analytics.store.prune import WINDOWED, PartChoice, choose_parts, parts_meeting
from ocp_analytics.store.read_check import PartCheck
from ocp_analytics.store.storage import Store

if TYPE_CHECKING:
    from ocp_analytics._typing import DatasetLike

__all__ = ["Dataset", "LazyTables", "older_versions", "scan_at", "scan_dataset"]


class LazyTables(Mapping[str, pl.LazyFrame]):
    """Tables by name, each built on its first access and kept.

    A dataset's scan hashes its parts when it is built, so a table no
    reader asks for costs nothing; iterating gives the names without
    building any.

    Examples
    --------
    >>> built = []
    >>> t = LazyTables(lambda n: built.append(n) or pl.LazyFrame({"x": [1]}), ["a", "b"])
    >>> list(t), built
    (['a', 'b'], [])
    >>> _ = t["b"], t["b"]; built
    ['b']
    """

    def __init__(self, build: Callable[[str], pl.LazyFrame], names: Iterable[str]) -> None:
        self._build = build
        self._names = tuple(names)
        self._built: dict[str, pl.LazyFrame] = {}

    def __getitem__(self, name: str) -> pl.LazyFrame:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __or__(self, other: Mapping[str, pl.LazyFrame]) -> dict[str, pl.LazyFrame]:
        return {**self, **other}  # as a dict's: the tables are built

    def __ror__(self, other: Mapping[str, pl.LazyFrame]) -> dict[str, pl.LazyFrame]:
        return {**other, **self}


@dataclass
class Dataset:
    """The tables of a dataset as LazyFrames, current run versions only.

    Attributes ``runs``, ``attempts``, ``signals``, ``rules``, ``artifacts``,
    ``findings``, ``quarantine`` and ``events`` (late events, every stored
    one; see :func:`~ocp_analytics.ingest_events`); ``manifest`` is an eager
    DataFrame of ingested run sources; ``snapshot`` the ``seq`` of the last
    commit read (``None``: no commit yet), the snapshot that reads the same
    rows again. Index it like a mapping: ``ds["runs"]``. A table's scan is
    built when first asked for, and its parts are hashed against the
    manifest then: a damaged part raises the one-line
    :class:`~ocp_analytics.exceptions.DatasetError` before any row is read.
    """

    path: Store
    frames: Mapping[str, pl.LazyFrame] = field(default_factory=dict)
    manifest: pl.DataFrame = field(default_factory=pl.DataFrame)
    # Every committed row, superseded run versions included (same as frames
    # when nothing was superseded); for readers that filter versions themselves.
    scans: Mapping[str, pl.LazyFrame] = field(default_factory=dict)
    # seq of every batch with signals -> whether its signals carry the attempt link
    signal_links: dict[int, bool] = field(default_factory=dict)
    snapshot: int | None = None
    # The records read (None: tables built by hand), the parts scanned (store/prune.py),
    # what builds the run_id and doc_id of each row the run-version rule compares
    # (None: none replaced; built on first use, as its parts are hashed then).
    records: list[dict[str, Any]] | None = field(default=None, repr=False)
    parts: PartChoice | None = field(default=None, repr=False)
    versions_of: Callable[[], pl.LazyFrame] | None = field(default=None, repr=False)
    # what the readers of one call share, read once (within(), superseded())
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def versions(self) -> pl.LazyFrame | None:
        """``run_id`` and ``doc_id`` of each run version the run-version rule compares.

        ``None`` when no run read can have a newer version (nothing to compare).
        """
        if self.versions_of is None:
            return None
        if "versions" not in self._memo:
            self._memo["versions"] = self.versions_of()
        found: pl.LazyFrame = self._memo["versions"]
        return found

    def superseded(self) -> pl.DataFrame | None:
        """The ``doc_id`` of every run version read that a newer one replaces; None: none can be.

        Read once (then kept) from :attr:`versions`: the versions of the parts
        read and of every part, read or not, that may hold a newer version of
        one of them. A report's passes over the same window and its
        freshness share one read.

        Examples
        --------
        >>> import ocp_analytics as oa, tempfile
        >>> out = tempfile.mkdtemp() + "/ds"
        >>> _ = oa.ingest("tests/data/examples/v0.3/solo.ocp.json", out)
        >>> oa.scan_dataset(out).superseded() is None  # nothing replaced: none can be
        True
        """
        if self.versions is None:
            return None
        if "superseded" not in self._memo:
            # a window's read shares what a wider window of the same scan found: a version
            # replaced is replaced in every window, and the wider one's parts hold this one's
            since, until = self._memo.get("window", (None, None))
            known: dict[tuple[Any, Any], pl.DataFrame] = self._memo.setdefault("stale", {})
            wider = [v for (lo, hi), v in known.items() if _covers(lo, hi, since, until)]
            stale = wider[0] if wider else older_versions(self.versions.collect())
            known[(since, until)] = self._memo["superseded"] = stale
        found: pl.DataFrame = self._memo["superseded"]
        return found

    def current(self, name: str) -> pl.LazyFrame:
        """Table ``name`` at current run versions, through the shared :meth:`superseded` read.

        The rows of ``self[name]``; a report's readers of several tables take
        the replaced versions out with one read instead of one each.
        """
        pruned = self.parts is not None and self.parts.pruned  # frames keep the window's runs
        stale = self.superseded() if name in S.RUN_TABLES and not pruned else None
        if stale is None:
            return self.frames[name]
        return self.scans[name].join(stale.lazy(), on="doc_id", how="anti")

    def signal_names(self) -> set[tuple[str, str]] | None:
        """Every (kind, name) of a verdict or score in the ``signals`` parts read; None: unknown.

        From the manifest (:func:`~ocp_analytics.store.manifest.names_held`);
        ``None`` for tables built by hand.
        """
        if self.records is None or self.parts is None:
            return None
        live = self.parts.entries or tables_entries(self.records)
        return names_held(live.get("signals", []), self.parts.files.get("signals", []))

    def within(self, since: datetime | None, until: datetime | None) -> Dataset:
        """The dataset as a read of the runs in ``[since, until)`` needs it, parts pruned.

        Every run whose time (``ended_at``, else ``started_at``) is in the
        window is there with all its rows, at its current version; runs
        outside it may be too (filter them). Parts the manifest says cannot
        hold such a run are never opened (store/prune.py). Unbounded, or with
        nothing to prune: the dataset itself.

        Examples
        --------
        >>> import ocp_analytics as oa, tempfile
        >>> from datetime import UTC, datetime
        >>> out = tempfile.mkdtemp() + "/ds"
        >>> _ = oa.ingest("tests/data/examples/v0.3/solo.ocp.json", out)
        >>> ds = oa.scan_dataset(out)
        >>> later = ds.within(datetime(2030, 1, 1, tzinfo=UTC), None)
        >>> later.parts.files["runs"], later.runs.collect().height, ds.within(None, None) is ds
        ([], 0, True)
        """
        if self.records is None or (since is None and until is None):
            return self
        key = ("within", since, until)
        if key not in self._memo:  # the same window read again shares its scans and versions
            parsed = self._memo.get("parsed")
            choice = choose_parts(self.records, since, until, parsed)
            chosen = self
            if choice.pruned:
                chosen = _scanned(self.path, self.records, choice, self.snapshot, parsed)
                # the windows of one scan share the replaced versions each found (superseded)
                chosen._memo["window"] = (since, until)
                chosen._memo["stale"] = self._memo.setdefault("stale", {})
            self._memo[key] = chosen
        within: Dataset = self._memo[key]
        return within

    def holding(
        self, spans: list[tuple[int, int]], tables: tuple[str, ...] = WINDOWED
    ) -> dict[str, pl.LazyFrame]:
        """The rows of ``tables`` in the parts whose ``doc_id`` range meets ``spans``.

        Every committed version (``scans``, not ``frames``: filter to the runs
        wanted, which the caller knows to be current); the manifest chooses
        the parts (:func:`~ocp_analytics.store.prune.parts_meeting`), so a
        read of a few recent runs opens the recent batches' parts only.
        """
        if self.records is None:
            return {t: self.scans.get(t, self.frames[t]) for t in tables}
        live = self.parts.entries if self.parts is not None else None
        files = parts_meeting(self.records, spans, tables, live or None)
        check = PartCheck(self.path, self.records, self._memo.get("parsed"))
        return {t: _scan(self.path, files[t], t, check) for t in tables}

    def __getitem__(self, name: str) -> pl.LazyFrame:
        return self.frames[name]

    def __getattr__(self, name: str) -> pl.LazyFrame:
        frames = self.__dict__.get("frames", {})
        if name in frames:
            return frames[name]
        raise AttributeError(name)


def _covers(lo: Any, hi: Any, since: datetime | None, until: datetime | None) -> bool:
    """Whether the window ``[lo, hi)`` holds ``[since, until)`` (None: unbounded)."""
    starts = lo is None or (since is not None and lo <= since)
    ends = hi is None or (until is not None and hi >= until)
    return starts and ends


def older_versions(versions: pl.DataFrame) -> pl.DataFrame:
    """The ``doc_id`` of every row of ``versions`` (``run_id``, ``doc_id``) a newer one replaces.

    A run's newest version is its largest ``doc_id``. The ids are compared
    by a 64-bit hash first (sorted, the equal neighbours): only the few rows
    whose hash repeats are grouped by their ``run_id`` text, which is exact.
    A few times faster than grouping every id by its text
    (benchmarks/RESULTS.md, "The rule set's codes").

    Examples
    --------
    >>> v = pl.DataFrame({"run_id": ["a", "b", "a", "c", "a"], "doc_id": [1, 2, 5, 7, 3]})
    >>> older_versions(v).get_column("doc_id").sort().to_list()
    [1, 3]
    """
    keys = versions.get_column("run_id").hash()
    ordered = keys.sort()
    repeated = ordered.filter(ordered == ordered.shift(1))
    maybe = versions.filter(keys.is_in(repeated.implode()))
    newest = pl.col("doc_id").max().over("run_id")
    return maybe.filter(pl.col("doc_id") < newest).select("doc_id")


def _scan(root: Store, files: list[str], table: str, check: PartCheck) -> pl.LazyFrame:
    """The rows of ``files`` (parts of ``table``), once ``check`` found their bytes whole."""
    if not files:
        return pl.LazyFrame(schema=S.polars_schema(table))
    check(files)
    # glob=False: a dataset path holding "[", "*" or "?" is a path, not a pattern.
    return pl.scan_parquet(
        [root.child(f).uri for f in files],
        schema=S.polars_schema(table),
        # parts written before a column existed read it as null; a column
        # this version does not know (a newer writer's) is left out
        missing_columns="insert",
        extra_columns="ignore",
        glob=False,
        storage_options=root.storage_options(),
    )


def scan_dataset(path: str | Path | Store, *, snapshot: Snapshot = None) -> Dataset:
    """Scan a dataset: one LazyFrame per table, holding each run's current version.

    A run id ingested again with new content replaces its older version for
    every table; ``quarantine`` holds every quarantined document.

    Parameters
    ----------
    path
        The dataset: a local path, an ``s3://`` or ``abfss://`` URI, or a
        :class:`~ocp_analytics.store.storage.Store`.
    snapshot
        The dataset as a commit left it: its ``seq`` (``ocp-analytics log``),
        or an instant (the last commit at or before it); late events and
        run versions committed after it are not read. ``None``: the latest.
        A snapshot no commit matches raises
        :class:`~ocp_analytics.exceptions.DatasetError`.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> oa.scan_dataset(out).runs.select("run_id", "n_attempts").collect().rows()
    [('run_ex_solo', 1)]
    >>> _ = oa.ingest(["tests/data/examples/v0.3/swarm.ocp.json"], out)
    >>> ds = oa.scan_dataset(out, snapshot=1)
    >>> ds.snapshot, ds.runs.select("run_id").collect().height
    (1, 1)
    """
    root = open_existing(path)
    records = read_commits(root, snapshot)
    last = max((r["seq"] for r in records), default=None)
    # each record's part entries read once: its windows (within) and checks share them
    parsed = [record_entries(r) for r in records]
    return _scanned(root, records, choose_parts(records, None, None, parsed), last, parsed)


def _scanned(
    root: Store,
    records: list[dict[str, Any]],
    choice: PartChoice,
    last: int | None,
    parsed: list[list[PartEntry]] | None = None,
) -> Dataset:
    """The dataset of ``records`` reading the parts ``choice`` names, current versions only.

    Nothing is opened here: each table's scan (and the check of its parts)
    is built when a reader first asks for it. ``parsed``: each record's
    part entries, read already.
    """
    check = PartCheck(root, records, parsed)
    scans = LazyTables(lambda t: _scan(root, choice.files[t], t, check), S.TABLES)
    if not choice.resolve:
        frames: Mapping[str, pl.LazyFrame] = scans
        versions_of = None
    else:

        def versions_of() -> pl.LazyFrame:
            versions = scans["runs"].select("run_id", "doc_id")
            if choice.versions:  # parts outside the window that may hold a newer version
                newer = _scan(root, choice.versions, "runs", check).select("run_id", "doc_id")
                versions = pl.concat([versions, newer])
            return versions

        @functools.cache  # built once, shared by the run tables
        def newest() -> pl.LazyFrame:
            versions = ds.versions
            assert versions is not None  # resolve: there are versions to compare
            return versions.group_by("run_id").agg(pl.col("doc_id").max()).select("doc_id")

        def frame(t: str) -> pl.LazyFrame:
            if t not in S.RUN_TABLES:
                return scans[t]
            return scans[t].join(newest(), on="doc_id", how="semi")

        frames = LazyTables(frame, S.TABLES)
    links = {r["seq"]: bool(r.get(SIGNAL_LINKS)) for r in records if r["files"].get("signals")}
    ds = Dataset(
        root, frames, manifest_frame(records), scans, links, last, records, choice, versions_of
    )
    if parsed is not None:
        ds._memo["parsed"] = parsed
    return ds


def scan_at(
    dataset: DatasetLike, snapshot: Snapshot = None
) -> Dataset | Mapping[str, pl.LazyFrame | pl.DataFrame]:
    """``dataset`` scanned once at ``snapshot``; a scanned or in-memory one as it is.

    What every reader that takes ``snapshot=`` does first, so that the whole
    evaluation reads one state of the dataset and knows its ``seq``
    (:attr:`Dataset.snapshot`). A snapshot with a scanned :class:`Dataset`
    (it was read at its own) or with tables in memory (they have no commits)
    is refused.

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> out = tempfile.mkdtemp() + "/ds"
    >>> _ = oa.ingest(["tests/data/examples/v0.3/solo.ocp.json"], out)
    >>> scan_at(out, "1").snapshot
    1
    >>> scan_at(oa.scan_dataset(out), 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.DatasetError: a snapshot was given with a dataset already scanned...
    """
    if isinstance(dataset, Dataset | Mapping):
        if snapshot is None:
            return dataset
        what = "already scanned" if isinstance(dataset, Dataset) else "of tables in memory"
        raise DatasetError(
            hint(
                f"a snapshot was given with a dataset {what} (snapshot={snapshot!r}).",
                "pass the dataset's path with snapshot=, or scan it with "
                "scan_dataset(path, snapshot=...) and pass that alone.",
            )
        )
    return scan_dataset(dataset, snapshot=snapshot)
