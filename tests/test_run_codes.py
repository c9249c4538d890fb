"""The report's decisions run-major (#38): a byte per (run, rule) gives the partials of the rows.

``engine/run_codes.py`` codes a decision row in one byte and counts distinct
(group, code, attempts) rows weighted by their runs; held here to
``engine.rates.partials`` over the rows themselves, and the report read that
way (every rule stored) to the report from raw, over every run (the rows
line up with the runs as they are) and over a window (joined).
"""

from __future__ import annotations

import itertools
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
import ocp_analytics.api._scope as scope_module
from ocp_analytics.engine.rates import ATT, combine, partials
from ocp_analytics.engine.run_codes import CELL, cell_code, cell_columns, coded_partials, patched
from ocp_analytics.schemas import OUTCOME_TIERS
from tests.test_refresh_readers import RULES, _docs, _write

AT = datetime(2027, 1, 1, tzinfo=UTC)
OUTCOMES = ["accepted", "rejected", "unknown"]


def test_a_cell_code_keeps_what_the_rates_read_of_a_row() -> None:
    combos = list(itertools.product(OUTCOMES, [*OUTCOME_TIERS, None], [True, False], [1, 2, None]))
    rows = pl.DataFrame(
        combos,
        schema={
            "outcome": pl.String,
            "tier": pl.String,
            "window_open": pl.Boolean,
            "accepted_attempt_n": pl.Int64,
        },
        orient="row",
    )
    coded = rows.select(cell_code())
    assert coded.schema[CELL] == pl.UInt8
    back = coded.select(cell_columns(pl.col(CELL)))
    first = pl.when(pl.col("accepted_attempt_n") == 1).then(pl.lit(1, pl.Int64))
    kept = rows.with_columns(first.alias("accepted_attempt_n"))
    assert_frame_equal(back, kept)
    assert coded.get_column(CELL).n_unique() == kept.n_unique()  # rows differ, codes differ


def _rows(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "_w": rng.random(n) < 0.6,
            "team": rng.choice(["a", "b", "c"], n),
            "outcome": rng.choice(OUTCOMES, n),
            "tier": rng.choice(list(OUTCOME_TIERS), n),
            "window_open": rng.random(n) < 0.2,
            "accepted_attempt_n": pl.Series(rng.choice([1, 2, 3], n)).cast(pl.Int64),
            ATT: pl.Series(rng.choice([1, 2, 3, 4], n)).cast(pl.Int64),
        }
    ).with_columns(
        pl.when(pl.int_range(pl.len()) % 7 != 0).then(pl.col(ATT)).alias(ATT),
        pl.lit("r").alias("rule"),
        pl.lit(AT).dt.cast_time_unit("us").alias("as_of"),
    )


@pytest.mark.parametrize(
    ("seed", "att"), [(1, pl.Int64), (2, pl.UInt8), (3, pl.UInt16), (4, pl.UInt8)]
)
def test_coded_partials_are_the_partials_of_the_rows(seed: int, att: pl.DataType) -> None:
    """Counts and histograms of distinct coded rows, weighted, are those of the rows; a run
    with no row under the rule (a null cell) counts nowhere. Attempts as the rule set's
    codes keep them (the smallest unsigned type) are grouped packed with the cell."""
    rows = _rows(40_000 if seed == 4 else 5_000, seed)
    if seed == 4:  # more groups than a packed 32-bit key holds: packed in 64 bits
        rows = rows.with_columns(team=pl.int_range(pl.len()).cast(pl.String))
    cells = rows.select(cell_code(), pl.col(ATT).cast(att)).with_columns(
        pl.when(pl.int_range(pl.len()) % 11 != 5).then(pl.col(CELL)).alias(CELL)
    )
    kept = rows.filter(cells.get_column(CELL).is_not_null())
    for keys in (["_w", "team"], ["team"], []):  # no key: one group
        want = combine(*(f.lazy() for f in pl.collect_all(partials(kept.lazy(), keys, None))), keys)
        c, h = pl.collect_all(coded_partials(rows, cells, "r", AT, keys))
        got = combine(c.lazy(), h.lazy(), keys)
        order = [*keys, "rule"]
        assert_frame_equal(got.collect().sort(order), want.collect().sort(order))


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The heights of the runs each run-major read of the stores returned (none: not read)."""
    seen: list[int] = []
    real = scope_module.window_codes

    def spy(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        if found is not None:
            seen.append(found.runs.height)
        return found

    monkeypatch.setattr(scope_module, "window_codes", spy)
    return seen


def _refreshed_then_ingested(tmp_path: Path) -> Path:
    """120 runs refreshed, then 40 more ingested (their rows decided again at read time)."""
    ds = tmp_path / "ds"
    docs = _docs(0, 160)
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:120]), ds)
    oa.refresh(ds, RULES, as_of="2026-11-10T00:00:00Z")
    oa.ingest(_write(tmp_path / "b.ndjson", docs[120:]), ds)
    return ds


@pytest.mark.parametrize("since", [None, "120d"])
def test_the_report_from_the_stores_run_major_is_the_report_from_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, since: str | None
) -> None:
    """Every data file is the same read run-major from the stores as from raw: over every run
    and over a window, by two groups, after a later ingest (rows decided again in memory)."""
    pytest.importorskip("altair")
    ds = _refreshed_then_ingested(tmp_path)
    seen = _spy(monkeypatch)
    # the sweep's latest scores found 7 runs at a time: many chunks
    monkeypatch.setattr(sys.modules["ocp_analytics.api.set_codes"], "SCORE_RUNS", 7)
    pages = {}
    for decisions in (True, False):
        pages[decisions] = oa.report(
            ds,
            RULES,
            by=["task_type", "label.team"],
            since=since,
            as_of="2026-12-01T00:00:00Z",
            out=tmp_path / f"page-{decisions}.html",
            data_format="parquet",
            use_decisions=decisions,
        )
    # the stored report read its window run-major once (the sweep takes its current runs),
    # raw's did not
    assert len(seen) == 1 and seen[0] > 0
    for name, path in pages[True].data.items():
        assert_frame_equal(pl.read_parquet(path), pl.read_parquet(pages[False].data[name]))


def test_rates_and_compare_from_the_stores_run_major_are_those_from_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rates``, the distribution and ``compare`` (its flips too) read the window run-major
    when every rule is stored, with the frames of a full evaluation: by groups and periods, a
    window and a filter, a minimum tier, after a later ingest; with a cluster (its partials
    per run) the slices."""
    ds = _refreshed_then_ingested(tmp_path)
    seen = _spy(monkeypatch)
    at = "2026-12-01T00:00:00Z"
    calls: list[dict[str, object]] = [
        {"by": ["task_type", "label.team"], "period": "month"},
        {"since": "120d", "where": ["label.env=prod"]},
        {"by": ["task_type"], "min_tier": "reported"},
    ]
    for kwargs in calls:
        seen.clear()
        got = oa.rates(ds, RULES, as_of=at, **kwargs)  # type: ignore[arg-type]
        assert len(seen) == 1  # run-major
        want = oa.rates(ds, RULES, as_of=at, use_decisions=False, **kwargs)  # type: ignore[arg-type]
        assert_frame_equal(got, want)
    seen.clear()
    got = oa.attempts_distribution(ds, RULES, by=["task_type"], as_of=at)
    want = oa.attempts_distribution(ds, RULES, by=["task_type"], as_of=at, use_decisions=False)
    assert len(seen) == 1
    assert_frame_equal(got, want)
    # by groups, the flips are counted 7 runs at a time: many parts that add up
    monkeypatch.setattr(sys.modules["ocp_analytics.api._partials"], "FLIP_RUNS", 7)
    for by in ([], ["task_type", "label.team"]):
        seen.clear()
        got_c = oa.compare(ds, RULES, by=by, as_of=at, sample=3)
        assert len(seen) == 1
        want_c = oa.compare(ds, RULES, by=by, as_of=at, sample=3, use_decisions=False)
        for g, w in zip(got_c, want_c, strict=True):
            assert_frame_equal(g, w)
    seen.clear()
    got = oa.rates(ds, RULES, cluster="task_id", as_of=at)
    assert seen == []  # the cluster's partials are per run: the slices
    assert_frame_equal(got, oa.rates(ds, RULES, cluster="task_id", as_of=at, use_decisions=False))


def test_a_rule_without_a_store_reads_the_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule with no store: the report runs the slice loop (that rule from raw)."""
    pytest.importorskip("altair")
    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 60)), ds)
    oa.refresh(ds, RULES[:2], as_of="2026-11-10T00:00:00Z")
    seen = _spy(monkeypatch)
    oa.report(ds, RULES[:3], as_of="2026-12-01T00:00:00Z", out=tmp_path / "page.html")
    assert seen == []


@pytest.mark.parametrize("seed", range(8))
def test_patched_rows_are_the_live_rows_in_doc_order(seed: int) -> None:
    """The oldest entry with the later rows put in place is the filtered, merged, sorted rows:
    runs decided again, replaced (removed, no later row), new after or among the old ones."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10_000, 2_000, replace=False))
    base = pl.DataFrame({"doc_id": ids, "x": rng.integers(0, 9, ids.size).astype(np.uint8)})
    removed = rng.choice(ids, 300, replace=False)
    again = rng.choice(removed, 200, replace=False)  # decided again: same doc_id, a new row
    fresh = rng.choice(np.setdiff1d(np.arange(20_000), ids), 50, replace=False)
    if seed % 2:  # new runs only after the old ones: appended
        fresh = fresh[fresh > ids.max()]
    later_ids = rng.permutation(np.concatenate([again, fresh]))
    later = pl.DataFrame(
        {"doc_id": later_ids, "x": rng.integers(9, 20, later_ids.size).astype(np.uint8)}
    )
    got = patched(base, later, pl.Series(removed))
    live = base.filter(~pl.col("doc_id").is_in(pl.Series(removed).implode()))
    assert_frame_equal(got, pl.concat([live, later]).sort("doc_id"))


def test_a_later_row_over_a_live_row_is_refused() -> None:
    base = pl.DataFrame({"doc_id": [1, 2], "x": [0, 0]})
    with pytest.raises(AssertionError, match="still live"):
        patched(base, pl.DataFrame({"doc_id": [2], "x": [1]}), pl.Series([], dtype=pl.Int64))


def test_a_typo_in_a_stored_sweep_warns_at_the_callers_line(tmp_path: Path) -> None:
    """Read run-major from the stores, ``oa.sweep``'s warning of a name no run carries points
    at the caller's line, as from raw."""
    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", _docs(0, 40)), ds)
    rule = oa.Rule.parse("tsets+runtime_s<=3600")
    oa.refresh(ds, [rule], as_of="2026-11-10T00:00:00Z")
    for decisions in (True, False):
        with pytest.warns(UserWarning, match="names a verdict 'tsets'") as caught:
            oa.sweep(ds, rule, as_of="2026-11-10T00:00:00Z", use_decisions=decisions)
        assert [w.filename for w in caught] == [__file__]


def test_the_newest_run_end_is_not_an_older_runs_in_a_recent_part(tmp_path: Path) -> None:
    """A part read for the last week also holds older runs: when none ended in that week, the
    newest end is read from every part (a part not read may hold a newer one)."""
    from types import SimpleNamespace

    from benchmarks.generate import generate_documents
    from ocp_analytics.reporting.freshness import _newest_run_end

    docs = [d for d in generate_documents(10, 3) if d["run"].get("started_at")][:3]
    ends = ["2026-05-01T00:00:00Z", "2026-06-04T00:00:00Z", "2026-05-15T00:00:00Z"]
    for doc, end in zip(docs, ends, strict=True):
        doc["run"]["started_at"] = doc["run"]["ended_at"] = end
    ds = tmp_path / "ds"
    oa.ingest(_write(tmp_path / "a.ndjson", docs[:2]), ds)  # a part over May 1 - June 4
    oa.ingest(_write(tmp_path / "b.ndjson", docs[2:]), ds)  # May 15: outside the last week
    as_of = datetime(2026, 6, 1, tzinfo=UTC)
    ctx = SimpleNamespace(dataset=oa.scan_dataset(ds), as_of=as_of)
    assert _newest_run_end(ctx) == datetime(2026, 5, 15, tzinfo=UTC)  # type: ignore[arg-type]
