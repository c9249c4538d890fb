"""The rule set's codes (#38): ``refresh`` keeps a byte per run and rule, the report reads it.

``api/set_codes.py`` keeps, beside a rule set's stores, one table of each
run's cell code, attempts, rest and latest scores. Held here: the report
read through it is the report from raw after every night (new runs, late
events, new versions, entries folded), at the table's ``as_of`` (scores from
the table) and later (rows decided again put in place); a table another
refresh left behind is not read; ``verify`` checks its files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from benchmarks.events import _ended, event_records
from ocp_analytics.api.set_codes import SetCodes
from ocp_analytics.store.verify import verify
from tests.test_refresh_readers import RULES, SEED, _docs, _write
from tests.test_verify import _flip

pytest.importorskip("altair")


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the rules read from the table and the scores taken from it."""
    seen = {"columns": 0, "score": 0}
    for name in seen:
        real = getattr(SetCodes, name)

        def wrapped(self: SetCodes, *args: Any, _real: Any = real, _name: str = name) -> Any:
            seen[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(SetCodes, name, wrapped)
    return seen


def _same_report(ds: Path, as_of: str, tmp: Path, since: str | None = None) -> None:
    """Every data file of the report is the same read from the stores as from raw."""
    pages = {}
    for decisions in (True, False):
        pages[decisions] = oa.report(
            ds,
            RULES,
            by=["task_type"],
            since=since,
            as_of=as_of,
            out=tmp / f"page-{decisions}.html",
            data_format="parquet",
            use_decisions=decisions,
        )
    for name, path in pages[True].data.items():
        assert_frame_equal(pl.read_parquet(path), pl.read_parquet(pages[False].data[name]))


def _refreshed(tmp: Path, total: int, first: int) -> tuple[Path, list[dict[str, Any]]]:
    """A dataset of the first ``first`` of ``total`` runs, refreshed for RULES; every run."""
    ds = tmp / "ds"
    docs = _docs(0, total)
    oa.ingest(_write(tmp / "a.ndjson", docs[:first]), ds)
    oa.refresh(ds, RULES, as_of="2026-11-10T00:00:00Z")
    return ds, docs


def _tables(ds: Path) -> list[Path]:
    return sorted(ds.glob("decisions/set-*"))


def test_the_report_through_the_rule_sets_codes_is_the_report_from_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two nights before the later entries are folded into one
    monkeypatch.setattr(sys.modules["ocp_analytics.api.set_codes"], "FOLD_NIGHTS", 2)
    seen = _spy(monkeypatch)
    ds, docs = _refreshed(tmp_path, 240, 150)
    assert len(_tables(ds)) == 1
    _same_report(ds, "2026-11-10T00:00:00Z", tmp_path)
    # every rule (the recorded one too) and both scored rules' scores from the table
    assert seen["columns"] >= len(RULES) + 1 and seen["score"] > 0

    nights: list[Any] = [
        lambda: oa.ingest(_write(tmp_path / "b.ndjson", docs[150:200]), ds),
        lambda: oa.ingest_events(_write(tmp_path / "events.ndjson", _events(docs)), ds),
        lambda: oa.ingest(_write(tmp_path / "again.ndjson", _shortened(docs[10:40])), ds),
        lambda: oa.ingest(_write(tmp_path / "c.ndjson", docs[200:]), ds),
    ]
    for day, night in enumerate(nights, 11):
        night()
        when = f"2026-11-{day}T00:00:00Z"
        seen.update(columns=0, score=0)
        oa.refresh(ds, RULES, as_of=when)
        _same_report(ds, when, tmp_path)
        assert seen["columns"] > 0 and seen["score"] > 0
        # later: rows decided again put over the table's, the scores read from the signals
        seen.update(columns=0, score=0)
        _same_report(ds, "2026-12-20T00:00:00Z", tmp_path, since="60d")
        assert seen["columns"] > 0 and seen["score"] == 0
    record = json.loads(sorted(_tables(ds)[0].glob("_generations/*.json"))[-1].read_text())
    assert len(record["chain"]) <= 3  # folded


def _events(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Late events about the first 200 runs."""
    return list(event_records(200, 50, seed=SEED, ended={i: _ended(d) for i, d in enumerate(docs)}))


def _shortened(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New versions of ``docs``: their first signal only."""
    changed = json.loads(json.dumps(docs))
    for d in changed:
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
    return changed


def test_a_table_its_stores_moved_past_is_not_read_until_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, docs = _refreshed(tmp_path, 200, 150)
    oa.ingest(_write(tmp_path / "b.ndjson", docs[150:]), ds)
    # another rule set sharing two of the stores moves them on
    oa.refresh(ds, RULES[:2], as_of="2026-11-11T00:00:00Z")
    seen = _spy(monkeypatch)
    _same_report(ds, "2026-11-11T00:00:00Z", tmp_path)
    assert seen["columns"] == 0  # the stores read one by one
    oa.refresh(ds, RULES, as_of="2026-11-11T00:00:00Z")  # the whole table built again
    _same_report(ds, "2026-11-11T00:00:00Z", tmp_path)
    assert seen["columns"] > 0


def test_verify_checks_the_tables_files_and_readers_name_a_damaged_one(tmp_path: Path) -> None:
    ds, _ = _refreshed(tmp_path, 80, 80)
    assert verify(ds) == []
    part = next((_tables(ds)[0] / "parts").glob("*.parquet"))
    _flip(part)
    found = verify(ds)
    assert [d.file for d in found] == [str(part.relative_to(ds))]
    with pytest.raises(oa.DatasetError, match="verify"):
        oa.report(ds, RULES, as_of="2026-11-10T00:00:00Z", out=tmp_path / "page.html")


def test_a_refresh_killed_before_the_tables_record_leaves_it_unread_then_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stores committed, the table's record not written: the stores are read one by one
    (the table names their older generations); the next refresh builds the table again."""
    from ocp_analytics.store.decisions import DecisionStore

    ds, docs = _refreshed(tmp_path, 120, 90)
    oa.ingest(_write(tmp_path / "b.ndjson", docs[90:]), ds)
    real = DecisionStore.commit

    def killed(self: DecisionStore, *args: Any, **kwargs: Any) -> Any:
        if self.root.name.startswith("set-"):
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DecisionStore, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        oa.refresh(ds, RULES, as_of="2026-11-11T00:00:00Z")
    monkeypatch.undo()
    seen = _spy(monkeypatch)
    _same_report(ds, "2026-11-11T00:00:00Z", tmp_path)
    assert seen["columns"] == 0
    oa.refresh(ds, RULES, as_of="2026-11-11T00:00:00Z")
    _same_report(ds, "2026-11-11T00:00:00Z", tmp_path)
    assert seen["columns"] > 0
    assert verify(ds) == []


@pytest.mark.parametrize("seed", range(6))
def test_a_column_lines_up_with_any_runs_as_a_join_does(seed: int) -> None:
    """By a filter and nulls at the end (runs committed since), else by a gather."""
    import numpy as np

    from ocp_analytics.api.set_codes import _Lined

    rng = np.random.default_rng(seed)
    docs = pl.Series("doc_id", np.unique(rng.integers(0, 400, 200)), pl.Int64)
    kept = docs.filter(pl.Series(rng.random(docs.len()) < 0.8))
    later = pl.Series(np.unique(rng.integers(400, 500, 30)), dtype=pl.Int64)
    stray = pl.Series(np.unique(rng.integers(0, 500, 40)), dtype=pl.Int64)
    values = pl.Series("v", rng.integers(0, 9, docs.len()), pl.UInt8)
    table = pl.DataFrame([docs, values])
    for ids in (docs, kept, pl.concat([kept, later]), stray, docs.clear()):
        ids = ids.unique().sort()
        want = ids.to_frame("doc_id").join(table, on="doc_id", how="left", maintain_order="left")
        lined = _Lined(ids, docs)
        assert lined.take(values).to_list() == want.get_column("v").to_list()


def test_a_store_deleted_and_built_again_is_not_the_one_the_table_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its generations are numbered from 1 again: the table names each by its commit time."""
    import shutil

    from ocp_analytics.engine.finality import fingerprint

    ds, docs = _refreshed(tmp_path, 160, 120)
    shutil.rmtree(ds / "decisions" / fingerprint(RULES[0]))  # as verify --repair does
    oa.ingest(_write(tmp_path / "b.ndjson", docs[120:]), ds)
    # that rule's store alone, at generation 1 again; the others still at the table's
    oa.refresh(ds, RULES[:1], recorded=False, as_of="2026-11-11T00:00:00Z")
    seen = _spy(monkeypatch)
    _same_report(ds, "2026-11-11T00:00:00Z", tmp_path)
    assert seen["columns"] == 0
