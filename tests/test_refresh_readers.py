"""The readers of the decisions store (#38): ``acceptance``, ``write_acceptance``, ``rates``,
``compare`` and ``attempts_distribution`` give the same frames with the stores as without
(``use_decisions=False``, a full evaluation), after every step of a dataset's life: ingests
with and without a refresh after them (a stale store), late events, re-ingested runs, a rule
change, an ``as_of`` later than the stores' (windows closing, signals becoming known) and
an earlier one, windows, filters, groups and several slices."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from benchmarks.events import _ended, _with_commit, event_records
from benchmarks.generate import generate_documents
from ocp_analytics.api.refresh import RefreshSummary
from ocp_analytics.api.stored import observing
from ocp_analytics.model.rules import Rule

SEED = 11
KEY = ["run_id", "rule"]
RULES = [
    Rule.parse("tests"),
    Rule.parse("tests+review"),
    Rule.parse("bench_score>=0.5"),
    Rule.parse("tests+review+bench_score>=0.5"),
]
SLICE = 70  # several slices over the few hundred runs


def _docs(start: int, n: int) -> list[dict[str, Any]]:
    return [
        _with_commit(d, SEED, i) for i, d in enumerate(generate_documents(n, SEED, start), start)
    ]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _both(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any, list[RefreshSummary]]:
    """``call`` with the stores (and what they said), then from raw."""
    with observing() as seen:
        stored = call(*args, **kwargs)
    raw = call(*args, use_decisions=False, **kwargs)
    return stored, raw, seen


def _same(
    ds: Path, rules: list[Rule], as_of: str, tmp: Path, full: bool = False
) -> list[RefreshSummary]:
    """Every reader gives the same frames with the stores as from raw; the summaries said.

    Acceptance, rates by groups and periods and compare over several slices;
    with ``full``, windows, filters, ``late_only``, the written file (and
    its metadata), the cluster interval, ``min_tier`` and the distribution too.
    """
    said: list[RefreshSummary] = []

    def check(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        stored, raw, seen = _both(call, *args, as_of=as_of, **kwargs)
        said.extend(seen)
        return stored, raw

    got, want = check(oa.acceptance, ds, rules)
    assert_frame_equal(got.sort(KEY), want.sort(KEY))
    got, want = check(oa.rates, ds, rules, by=[oa.label("team")], period="month", slice_runs=SLICE)
    assert_frame_equal(got, want)
    got, want = check(oa.compare, ds, rules, by=[oa.label("team")], slice_runs=SLICE)
    assert_frame_equal(got[0], want[0])
    assert_frame_equal(got[1], want[1])
    _same_curves(ds, rules, as_of, [{"by": [oa.label("team")]}])
    if full:
        _same_in_full(ds, rules, as_of, tmp, check)
        _same_curves(ds, rules, as_of, [{}, {"since": "2026-07-01", "where": ["label.env=prod"]}])
    return said


def _same_curves(ds: Path, rules: list[Rule], as_of: str, calls: list[dict[str, Any]]) -> None:
    """The sweep's curves of the rules with a score: each rest read from the rule's own rows
    (its store's, where usable) as from deciding the rest rule from raw."""
    from ocp_analytics.api.sweep import curves

    scored = [r for r in rules if r.score is not None]
    for kwargs in calls:
        got = curves(ds, scored, as_of=as_of, slice_runs=SLICE, decisions=True, **kwargs)
        want = curves(ds, scored, as_of=as_of, slice_runs=SLICE, **kwargs)
        for g, w in zip(got, want, strict=True):
            assert_frame_equal(g, w)


def _same_in_full(ds: Path, rules: list[Rule], as_of: str, tmp: Path, check: Any) -> None:
    for kwargs in ({"since": "2026-07-01", "until": "2026-10-01"}, {"where": "label.env=prod"}):
        got, want = check(oa.acceptance, ds, rules, **kwargs)
        assert_frame_equal(got.sort(KEY), want.sort(KEY))
    got, want = check(oa.acceptance, ds, rules, recorded=False, late_only=True)
    assert_frame_equal(got.sort(KEY), want.sort(KEY))
    out = {d: tmp / f"{d}.parquet" for d in (True, False)}
    for decisions, path in out.items():
        oa.write_acceptance(ds, path, rules, as_of=as_of, slice_runs=SLICE, use_decisions=decisions)
    assert_frame_equal(*(pl.read_parquet(p).sort(KEY) for p in out.values()))
    meta = [pl.read_parquet_metadata(p) for p in out.values()]
    assert meta[0] == meta[1]
    for kwargs in (
        {"by": ["task_type"], "min_tier": "reported", "cluster": "task_id"},
        {"by": ["task_type"], "min_tier": "verified"},
        {"where": ["label.env=prod"], "since": "2026-08-01"},
    ):
        got, want = check(oa.rates, ds, rules, slice_runs=SLICE, **kwargs)
        assert_frame_equal(got, want)
    got, want = check(oa.attempts_distribution, ds, rules, by=[oa.label("team")])
    assert_frame_equal(got, want)


def _reused(said: list[RefreshSummary]) -> int:
    return sum(s.reused for s in said)


def test_readers_give_a_full_evaluations_frames_after_every_step(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    docs = _docs(0, 240)
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:160]), ds)

    # 0. no store yet: the ordinary loop, nothing said
    assert _same(ds, RULES, "2026-11-10T00:00:00Z", tmp_path) == []

    # 1. refreshed: read at its as_of, later (windows close, signals become known) and earlier
    oa.refresh(ds, RULES, as_of="2026-11-10T00:00:00Z")
    said = _same(ds, RULES, "2026-11-10T00:00:00Z", tmp_path)
    assert said and all(s.decided == 0 and s.from_raw == () for s in said)
    later = _same(ds, RULES, "2026-12-20T00:00:00Z", tmp_path, full=True)
    assert _reused(later) > 0 and any(s.decided > 0 for s in later)
    assert _same(ds, RULES, "2026-11-01T00:00:00Z", tmp_path) == []  # before the stores: raw

    # 2. new runs, no refresh: the stale store and the runs committed since
    oa.ingest(_write(tmp_path / "b.ndjson", docs[160:]), ds)
    stale = _same(ds, RULES, "2026-11-20T00:00:00Z", tmp_path, full=True)
    full = stale[0]
    # five rows a run: the recorded rule and the four named
    assert full.reused > 0 and full.decided >= 80 * 5 and full.reused + full.decided == 240 * 5

    # 3. late events about old runs, still no refresh: the runs they match are decided again
    ended = {i: _ended(d) for i, d in enumerate(docs)}
    feed = list(event_records(240, 60, seed=SEED, ended=ended))
    oa.ingest_events(_write(tmp_path / "events.ndjson", feed), ds)
    _same(ds, RULES, "2026-12-01T00:00:00Z", tmp_path)

    # 4. new versions of old runs
    changed = json.loads(json.dumps(docs[10:40]))
    for d in changed:
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
    oa.ingest(_write(tmp_path / "again.ndjson", changed), ds)
    _same(ds, RULES, "2026-12-01T00:00:00Z", tmp_path)

    # 5. refreshed again, read at its as_of and a month later
    oa.refresh(ds, RULES, as_of="2026-12-01T00:00:00Z")
    fresh = _same(ds, RULES, "2026-12-01T00:00:00Z", tmp_path)
    assert fresh[0].decided == 0
    _same(ds, RULES, "2027-01-05T00:00:00Z", tmp_path)

    # 6. one rule changed: that rule from raw, the others from their stores
    changed_rules = [Rule("tests", requires=("tests",), window_days=30), *RULES[1:]]
    mixed = _same(ds, changed_rules, "2026-12-10T00:00:00Z", tmp_path, full=True)
    assert mixed[0].from_raw == ("tests",) and mixed[0].reused > 0

    # 7. an older snapshot (the stores are ahead of it): raw, the same frames
    got, want, seen = _both(oa.rates, ds, RULES, as_of="2026-12-01T00:00:00Z", snapshot=1)
    assert seen == []
    assert_frame_equal(got, want)


def test_a_typo_warns_the_same_with_the_stores(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 40)), ds)
    rules = [Rule.parse("tests+reveiw")]
    oa.refresh(ds, rules, as_of="2026-11-10T00:00:00Z")
    messages = []
    for decisions in (True, False):
        with pytest.warns(UserWarning, match="did you mean 'review'") as caught:
            oa.rates(ds, rules, as_of="2026-11-10T00:00:00Z", use_decisions=decisions)
        messages.append([str(w.message) for w in caught])
        assert {w.filename for w in caught} == {__file__}  # at the caller's line, both ways
    assert messages[0] == messages[1]


def test_the_sweep_from_the_stores_warns_of_a_typo_unless_told_it_was_warned(
    tmp_path: Path,
) -> None:
    """The report's sweep (``names=False``) reads no signal names: its evaluation has warned."""
    from ocp_analytics.api.sweep import curves

    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 40)), ds)
    rules = [Rule.parse("tests+reveiw+bench_score>=0.5")]
    oa.refresh(ds, rules, as_of="2026-11-10T00:00:00Z")
    at = "2026-11-10T00:00:00Z"
    with pytest.warns(UserWarning, match="did you mean 'review'"):
        warned = curves(ds, rules, as_of=at, decisions=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = curves(ds, rules, as_of=at, decisions=True, names=False)
    assert_frame_equal(warned[0], quiet[0])


def test_the_cli_says_what_it_reused_and_no_decisions_reads_raw(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli.root import app

    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 30)), ds)
    at = ["--as-of", "2026-12-01T00:00:00Z"]
    assert CliRunner().invoke(app, ["refresh", str(ds), "--rule", "tests", *at]).exit_code == 0
    for command in (["accept", "-f", "csv"], ["rates", "-f", "csv"], ["compare", "-f", "json"]):
        args = [*command, str(ds), "--rule", "tests", *at]
        stored = CliRunner().invoke(app, args)
        raw = CliRunner().invoke(app, [*args, "--no-decisions"])
        assert stored.exit_code == 0 and raw.exit_code == 0, stored.output + raw.output
        assert "decisions: 60 reused, 0 decided" in stored.stderr
        assert "decisions:" not in raw.stderr
        assert stored.stdout == raw.stdout


def test_the_report_reads_the_stores_and_gives_the_same_data(tmp_path: Path) -> None:
    """Every data file of the report is the same with the stores as from raw, late events too."""
    pytest.importorskip("altair")
    ds = tmp_path / "ds"
    docs = _docs(0, 200)
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:150]), ds)
    oa.refresh(ds, RULES, as_of="2026-11-10T00:00:00Z")
    oa.ingest(_write(tmp_path / "b.ndjson", docs[150:]), ds)  # a stale store, then late events
    ended = {i: _ended(d) for i, d in enumerate(docs)}
    oa.ingest_events(_write(tmp_path / "e.ndjson", list(event_records(200, 40, SEED, ended))), ds)
    pages = {}
    for decisions in (True, False):
        with observing() as seen:
            files = oa.report(
                ds,
                RULES,
                by=["label.team"],
                since="90d",
                as_of="2026-12-01T00:00:00Z",
                out=tmp_path / f"page-{decisions}.html",
                data_format="parquet",
                use_decisions=decisions,
            )
        assert bool(seen) == decisions and (not seen or seen[0].reused > 0)
        pages[decisions] = files
    assert pages[True].data.keys() == pages[False].data.keys()
    for name, path in pages[True].data.items():
        assert_frame_equal(pl.read_parquet(path), pl.read_parquet(pages[False].data[name]))


def test_sweep_reads_the_rest_from_the_store_and_gives_the_same_curve(tmp_path: Path) -> None:
    """``oa.sweep`` and ``sweep`` read a refreshed rule's rest from its store, and say so."""
    from typer.testing import CliRunner

    from ocp_analytics.cli.root import app

    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 80)), ds)
    rule, at = "tests+review+bench_score>=0.5", "2026-11-10T00:00:00Z"
    oa.refresh(ds, [Rule.parse(rule)], as_of=at)
    oa.ingest(_write(tmp_path / "b.ndjson", _docs(80, 20)), ds)  # 20 runs the store lacks
    for kwargs in ({}, {"by": [oa.label("team")]}, {"for_rate": 0.5, "since": "2026-07-01"}):
        stored, raw, seen = _both(oa.sweep, ds, rule, as_of=at, slice_runs=SLICE, **kwargs)
        assert_frame_equal(stored, raw)
        assert len(seen) == 1 and seen[0].reused > 0 and seen[0].decided > 0, kwargs
    args = ["sweep", str(ds), "--rule", rule, "--as-of", at, "-f", "csv"]
    stored_cli = CliRunner().invoke(app, args)
    raw_cli = CliRunner().invoke(app, [*args, "--no-decisions"])
    assert stored_cli.exit_code == 0 and raw_cli.exit_code == 0, stored_cli.output
    assert "decisions: 80 reused, 20 decided" in stored_cli.stderr, stored_cli.stderr
    assert "decisions:" not in raw_cli.stderr
    assert stored_cli.stdout == raw_cli.stdout
