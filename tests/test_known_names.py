"""A name no run carries (the loud typo warning) is ruled out from the manifest: the parts'
entries list their verdict and score names, so the warning costs one slice's read, not all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import ocp_analytics as oa
from benchmarks.generate import generate_documents
from ocp_analytics.engine import known as K
from ocp_analytics.model.rules import Rule
from ocp_analytics.store.commits import read_commits

AS_OF = "2027-01-01T00:00:00Z"
RULES = [Rule.parse("tests+reveiw"), Rule.parse("tests+review")]


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    docs = list(generate_documents(240, seed=7))
    for i in range(3):
        path = tmp_path / f"b{i}.ndjson"
        path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs[i * 80 : (i + 1) * 80]))
        oa.ingest(path, out)
    return out


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per slice whose signals KnownNames read."""
    reads: list[int] = []
    real = K.KnownNames.add

    def add(self: K.KnownNames, signals: Any) -> None:
        if not self.done:
            reads.append(1)
        real(self, signals)

    monkeypatch.setattr(K.KnownNames, "add", add)
    return reads


def _warned(ds: Path, **kwargs: Any) -> list[str]:
    with pytest.warns(UserWarning) as caught:
        oa.rates(ds, RULES, as_of=AS_OF, slice_runs=40, **kwargs)
    return [str(w.message) for w in caught]


def test_a_name_no_part_holds_costs_one_slice(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [p for r in read_commits(ds) for p in r["parts"] if p["table"] == "signals"]
    assert entries and all("verdict:review" in p["names"] for p in entries)
    reads = _reads(monkeypatch)
    warned = _warned(ds)
    assert warned == [
        "rule 'tests+reveiw' names a verdict 'reveiw' that no run carries; did you mean 'review'?"
    ]
    assert len(reads) == 1
    reads.clear()
    assert _warned(ds, use_decisions=False, since="2026-01-01") == warned
    assert len(reads) == 1


def test_parts_without_names_are_read_as_before(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records written before entries listed names: every slice is read, the same warning."""
    want = _warned(ds)
    for path in sorted((ds / "_batches").glob("*.json")):
        record = orjson.loads(path.read_bytes())
        for part in record["parts"]:
            part.pop("names", None)
        path.write_bytes(orjson.dumps(record))
    assert oa.scan_dataset(ds).signal_names() is None
    reads = _reads(monkeypatch)
    assert _warned(ds) == want
    assert len(reads) == 6  # every slice of 40 runs


def test_compaction_keeps_the_names(ds: Path) -> None:
    before = oa.scan_dataset(ds).signal_names()
    oa.compact(ds)
    assert oa.scan_dataset(ds).signal_names() == before and before
