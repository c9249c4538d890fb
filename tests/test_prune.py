"""A windowed read opens only the parts the manifest says may hold the window's runs.

Pruned and unpruned reads give the same rows for windows anywhere on the time
axis, with runs replaced by versions inside or outside the window, runs without
a time, late events, one slice or many; older datasets whose records carry no
ranges are read whole.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from benchmarks.generate import generate_documents, write_rules
from ocp_analytics.ingestion import batch as ingest_batch
from ocp_analytics.store import scan as store_scan
from ocp_analytics.store.scan import Dataset
from tests.conftest import AS_OF, examples

BATCHES = 8
PER_BATCH = 120


def _run_time(doc: dict[str, Any]) -> datetime | None:
    """The run's time as the dataset reads it (ended_at, else started_at), for sorting."""
    run = doc["run"]
    text = run.get("ended_at") or run.get("started_at")
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (TypeError, ValueError):
        return None


def _stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _moved(doc: dict[str, Any], to: datetime | None) -> dict[str, Any]:
    """A new version of ``doc``: its time moved to ``to`` (None: no time), one signal fewer."""
    new = copy.deepcopy(doc)
    run = new["run"]
    run["signals"] = run.get("signals", [])[1:]
    if to is None:
        run.pop("started_at", None)
        run.pop("ended_at", None)
    else:
        run["started_at"] = _stamp(to - timedelta(hours=1))
        run["ended_at"] = _stamp(to)
    return new


def _with_commit(doc: dict[str, Any], sha: str) -> None:
    kind = {"value": "commit", "tier": "verified"}
    doc["artifacts"] = [{"id": sha, "path": sha, "kind": kind}]


@pytest.fixture(scope="module")
def daily(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[datetime]]:
    """Eight time-ordered batches of generated runs, then a batch of new versions and events.

    Parts hold 40 runs (three a batch). Then one batch replaces runs of batch
    2 by versions moved to the last days, and another runs of batch 6 by
    versions moved to the first days, runs of batch 3 in place and runs of
    batch 4 by versions with no time; late events (in the middle and at the
    end) concern commits of runs in every batch.
    Returns the dataset, the rules and the sorted run times.
    """
    tmp = tmp_path_factory.mktemp("prune")
    docs = sorted(
        generate_documents(BATCHES * PER_BATCH, seed=11),
        key=lambda d: _run_time(d) or datetime.max.replace(tzinfo=UTC),
    )
    for i, doc in enumerate(docs):
        if i % 7 == 0:
            _with_commit(doc, f"{i:040x}")
    for doc in docs[5 * PER_BATCH + 3 : 5 * PER_BATCH + 6]:  # runs with no time, in batch 6
        doc["run"].pop("started_at", None)
        doc["run"].pop("ended_at", None)
    batches = [docs[k * PER_BATCH : (k + 1) * PER_BATCH] for k in range(BATCHES)]
    times = sorted(t for d in docs if (t := _run_time(d)) is not None)
    late, early = times[-PER_BATCH // 2], times[PER_BATCH // 2]
    moved_late = [_moved(d, late + timedelta(minutes=i)) for i, d in enumerate(batches[1][:15])]
    again = (
        [_moved(d, early + timedelta(minutes=i)) for i, d in enumerate(batches[5][10:25])]
        + [_moved(d, _run_time(d)) for d in batches[2][::10]]
        + [_moved(d, None) for d in batches[3][:4]]
    )
    events = [
        {"id": f"ev-{i}", "commit": f"{i:040x}", "kind": "event", "name": "revert",
         "observed_at": "2026-12-02T09:00:00Z", "tier": "verified"}
        for i in range(0, len(docs), 14)
    ]  # fmt: skip
    ds = tmp / "ds"
    mp = pytest.MonkeyPatch()
    mp.setattr(ingest_batch, "PART_RUNS", 40)
    try:
        for k, docs_k in enumerate(batches):
            oa.ingest(_write(tmp / f"day-{k}.ndjson", docs_k), ds, workers=0)
            if k == 4:
                oa.ingest_events(_write(tmp / "events-0.ndjson", events[::2]), ds)
        summary = oa.ingest(_write(tmp / "late.ndjson", moved_late), ds, workers=0)
        assert summary.runs_replaced == len(moved_late)
        summary = oa.ingest(_write(tmp / "again.ndjson", again), ds, workers=0)
        assert summary.runs_replaced == len(again)
        oa.ingest_events(_write(tmp / "events-1.ndjson", events[1::2]), ds)
    finally:
        mp.undo()
    return ds, write_rules(tmp / "rules.toml", 4, seed=3), times


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The parts scanned, by table, counted as the store builds each scan."""
    counts: dict[str, int] = {}
    scan = store_scan._scan

    def counting(root: Any, files: list[str], table: str, check: Any) -> pl.LazyFrame:
        counts[table] = counts.get(table, 0) + len(files)
        return scan(root, files, table, check)

    monkeypatch.setattr(store_scan, "_scan", counting)
    return counts


def _unpruned() -> Iterator[None]:
    """While held, every windowed read opens the whole dataset (the reference)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Dataset, "within", lambda self, since, until: self)
        yield


def _acceptance(ds: Path, rules: Path, since: Any, until: Any, slice_runs: int) -> pl.DataFrame:
    """The acceptance rows of the window, evaluated ``slice_runs`` runs at a time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "acc.parquet"
        oa.write_acceptance(
            ds, out, rules, as_of=AS_OF, since=since, until=until, slice_runs=slice_runs
        )
        return pl.read_parquet(out).sort("run_id", "rule")


def _same_with_and_without_pruning(
    ds: Path, rules: Path, since: Any, until: Any, slice_runs: int = 100_000
) -> pl.DataFrame:
    got = _acceptance(ds, rules, since, until, slice_runs)
    for _ in _unpruned():
        want = _acceptance(ds, rules, since, until, slice_runs)
    assert_frame_equal(got, want)
    return got


def _window(times: list[datetime], a: float, b: float | None) -> tuple[datetime, datetime | None]:
    """The window from the run time at quantile ``a`` to the one at ``b`` (None: to as_of)."""
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    return pick(a), None if b is None else pick(b) + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("a", "b"),
    [(0.0, 0.05), (0.1, 0.2), (0.2, 0.21), (0.45, 0.7), (0.9, None), (0.97, None), (0.0, None)],
)
@pytest.mark.parametrize("slice_runs", [100_000, 130])
def test_a_window_reads_the_same_rows_pruned_or_not(
    daily: tuple[Path, Path, list[datetime]], a: float, b: float | None, slice_runs: int
) -> None:
    ds, rules, times = daily
    since, until = _window(times, a, b)
    got = _same_with_and_without_pruning(ds, rules, since, until, slice_runs)
    assert got.height > 0


@settings(max_examples=examples(12))
@given(
    a=st.floats(0, 1, allow_nan=False),
    width=st.floats(0.001, 0.5, allow_nan=False),
    slice_runs=st.sampled_from([100_000, 90]),
)
def test_windows_anywhere_read_the_same_rows(
    daily: tuple[Path, Path, list[datetime]], a: float, width: float, slice_runs: int
) -> None:
    ds, rules, times = daily
    since, until = _window(times, a, min(1.0, a + width))
    _same_with_and_without_pruning(ds, rules, since, until, slice_runs)


def test_until_only_and_outside_windows(daily: tuple[Path, Path, list[datetime]]) -> None:
    ds, rules, times = daily
    _same_with_and_without_pruning(ds, rules, None, times[len(times) // 3])
    before = _same_with_and_without_pruning(ds, rules, None, times[0] - timedelta(days=1))
    assert before.height == 0


def test_replaced_runs_follow_their_newest_version(
    daily: tuple[Path, Path, list[datetime]],
) -> None:
    """Runs moved out of batch 2's days are gone from its window; those moved in are there."""
    ds, rules, times = daily
    runs = oa.scan_dataset(ds).runs.collect()
    moved_late = runs.filter(pl.col("ended_at") >= times[-PER_BATCH // 2])
    early = times[PER_BATCH // 2]
    window = (early, early + timedelta(hours=1))
    got = _same_with_and_without_pruning(ds, rules, *window)
    # the versions moved early (from batch 6) are in this window, their old times are not
    assert got.filter(pl.col("rule") == "recorded").height >= 15
    late = _same_with_and_without_pruning(ds, rules, times[-PER_BATCH // 2], None)
    assert set(moved_late["run_id"]) <= set(late["run_id"])


def test_late_events_turn_runs_in_a_pruned_read(
    daily: tuple[Path, Path, list[datetime]],
) -> None:
    ds, rules, times = daily
    got = _same_with_and_without_pruning(ds, rules, *_window(times, 0.3, 0.5))
    turned = got.filter(
        pl.col("reasons").list.eval(pl.element().str.starts_with("late:")).list.any()
    )
    assert turned.height > 0


def test_a_narrow_window_opens_few_parts(
    daily: tuple[Path, Path, list[datetime]], opened: dict[str, int]
) -> None:
    ds, rules, times = daily
    whole = oa.scan_dataset(ds)
    total = {t: len(f) for t, f in whole.parts.files.items()}
    opened.clear()
    since, until = _window(times, 0.5, 0.52)
    oa.rates(ds, rules, as_of=AS_OF, since=since, until=until)
    # the pruned scan only (the whole dataset's tables are never built): a window of
    # 2 % of the runs meets one or two of the 27 runs parts, beside the replacing batch's
    assert 0 < opened["runs"] <= 6 < total["runs"]
    assert 0 < opened["signals"] <= 6 < total["signals"]
    assert 0 < opened["attempts"] <= 6
    assert opened["events"] == total["events"]  # late events are never pruned


def test_a_window_reads_the_newer_versions_outside_it(
    daily: tuple[Path, Path, list[datetime]],
) -> None:
    """The replacing batch is opened for run ids and doc ids even when its runs are pruned."""
    ds, _, times = daily
    whole = oa.scan_dataset(ds)
    since, until = _window(times, 0.1, 0.15)  # batch 2's first runs, since moved late
    pruned = whole.within(since, until)
    assert pruned.parts is not None and pruned.parts.pruned > 0
    assert len(pruned.parts.versions) == 1  # the late batch's runs part: run_id and doc_id
    assert not set(pruned.parts.versions) & set(pruned.parts.files["runs"])
    in_window = pl.coalesce("ended_at", "started_at").is_between(since, until, closed="left")
    want = whole.runs.filter(in_window).collect().sort("doc_id")
    got = pruned.runs.filter(in_window).collect().sort("doc_id")
    assert_frame_equal(got, want)
    moved = whole.runs.filter(pl.col("ended_at") >= times[-PER_BATCH // 2]).collect()
    stale = pruned.scans["runs"].filter(in_window).join(moved.lazy(), on="run_id", how="semi")
    assert stale.collect().height == 15  # their old versions are in the window's parts...
    assert not set(got["run_id"]) & set(moved["run_id"])  # ...and replaced


def _strip_ranges(src: Path, dst: Path, first: int | None = None) -> Path:
    """A copy of the dataset whose commit records (the first ``first``) carry no manifest."""
    shutil.copytree(src, dst)
    names = sorted((dst / "_batches").glob("*.json"))
    for path in names[:first]:
        record = orjson.loads(path.read_bytes())
        record.pop("parts", None)
        path.write_bytes(orjson.dumps(record))
    return dst


def test_a_dataset_without_manifest_ranges_is_read_whole(
    daily: tuple[Path, Path, list[datetime]], tmp_path: Path, opened: dict[str, int]
) -> None:
    ds, rules, times = daily
    old = _strip_ranges(ds, tmp_path / "old")
    since, until = _window(times, 0.5, 0.52)
    assert oa.scan_dataset(old).within(since, until).parts.pruned == 0  # type: ignore[union-attr]
    opened.clear()
    got = _acceptance(old, rules, since, until, 100_000)
    assert opened["runs"] == len(oa.scan_dataset(old).parts.files["runs"])  # type: ignore[union-attr]
    assert_frame_equal(got, _acceptance(ds, rules, since, until, 100_000))


def test_records_before_the_manifest_are_read_beside_pruned_ones(
    daily: tuple[Path, Path, list[datetime]], tmp_path: Path
) -> None:
    ds, rules, times = daily
    mixed = _strip_ranges(ds, tmp_path / "mixed", first=3)
    since, until = _window(times, 0.6, 0.65)
    pruned = oa.scan_dataset(mixed).within(since, until).parts
    assert pruned is not None and pruned.pruned > 0
    got = _same_with_and_without_pruning(mixed, rules, since, until, 130)
    assert_frame_equal(got, _acceptance(ds, rules, since, until, 130))


def test_rates_by_period_in_a_window_are_the_same_pruned_or_not(
    daily: tuple[Path, Path, list[datetime]],
) -> None:
    ds, rules, times = daily
    since = times[int(0.8 * len(times))]
    got = oa.rates(ds, rules, as_of=AS_OF, since=since, period="day")
    for _ in _unpruned():
        want = oa.rates(ds, rules, as_of=AS_OF, since=since, period="day")
    assert_frame_equal(got, want)
    assert got.height > 0


@pytest.mark.parametrize(("a", "b"), [(0.1, 0.2), (0.45, 0.7), (0.9, None)])
def test_a_compacted_dataset_reads_the_same_windows(
    daily: tuple[Path, Path, list[datetime]], tmp_path: Path, a: float, b: float | None
) -> None:
    """Compaction keeps doc_ids and the batches' records, so pruning still finds every version."""
    from ocp_analytics.store.maintenance import compact

    ds, rules, times = daily
    compacted = tmp_path / "ds"
    shutil.copytree(ds, compacted)
    compact(compacted, target_bytes=64 << 20)
    since, until = _window(times, a, b)
    want = _acceptance(ds, rules, since, until, 100_000)
    assert_frame_equal(_same_with_and_without_pruning(compacted, rules, since, until), want)


def test_a_nights_refresh_opens_only_the_parts_of_the_runs_it_decides(
    daily: tuple[Path, Path, list[datetime]], opened: dict[str, int], tmp_path: Path
) -> None:
    ds, rules, _ = daily
    work = tmp_path / "ds"
    shutil.copytree(ds, work)
    oa.refresh(work, rules, as_of=AS_OF)
    oa.ingest(_write(tmp_path / "new.ndjson", list(generate_documents(5, 99, 50_000))), work)
    whole = oa.scan_dataset(work).parts.files
    opened.clear()
    night = oa.refresh(work, rules, as_of=AS_OF)
    assert night.decided == 5 * 5 and night.reused > 0  # 4 rules and the recorded one
    # the new batch's parts only (its runs part twice: what arrived, then the runs to
    # decide; its signals once: the rule set's codes take their latest scores from the
    # signals read to decide them); the whole dataset's tables are never built
    read = {t: opened.get(t, 0) for t in ("runs", "signals", "attempts")}
    assert read == {"runs": 2, "signals": 1, "attempts": 1}
    assert len(whole["signals"]) > 8


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), max_size=40))
def test_older_versions_match_a_grouping_by_id(ids: list[str]) -> None:
    # each row a version of its run id, doc_ids shuffled so the newest is anywhere
    docs = list(range(len(ids)))
    docs = docs[::2] + docs[1::2]
    versions = pl.DataFrame(
        {"run_id": ids, "doc_id": docs}, schema={"run_id": pl.String, "doc_id": pl.Int64}
    )
    newest: dict[str, int] = {}
    for run, doc in zip(ids, docs, strict=True):
        newest[run] = max(doc, newest.get(run, doc))
    expected = sorted(d for r, d in zip(ids, docs, strict=True) if d < newest[r])
    found = store_scan.older_versions(versions).get_column("doc_id").sort().to_list()
    assert found == expected
