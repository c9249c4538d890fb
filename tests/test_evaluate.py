"""The evaluation loop: doc_id ranges, slices, superseded versions, carried columns."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.evaluate import doc_ranges, open_tables
from ocp_analytics.rates import flips_from
from tests.conftest import AS_OF, EXAMPLES


def test_ranges_follow_batches(generated: tuple[Path, Path]) -> None:
    ds, _ = generated
    ranges = doc_ranges(oa.scan_dataset(ds).manifest, 400)
    assert len(ranges) >= 4
    assert all(lo < hi for lo, hi in ranges)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    assert doc_ranges(None) == [] and doc_ranges(oa.scan_dataset(ds).manifest.head(0)) == []


def test_sliced_acceptance_file_equals_acceptance(generated: tuple[Path, Path]) -> None:
    ds, rules = generated
    out = ds.parent / "acc.parquet"
    rows = oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=250)
    assert rows == 1500 * 7
    got = pl.read_parquet(out).sort("run_id", "rule")
    want = oa.acceptance(ds, rules, as_of=AS_OF).collect().sort("run_id", "rule")
    assert_frame_equal(got, want)
    meta = pq.read_schema(out).metadata
    assert meta[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"
    assert not list(ds.parent.glob(".acc.parquet.*"))


def test_slices_of_only_superseded_runs(tmp_path: Path) -> None:
    """A batch whose runs were all replaced later gives empty slices: still exact."""
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES / "v0.3", ds)
    changed = []
    for f in sorted((EXAMPLES / "v0.3").glob("*.json")):
        doc = json.loads(f.read_text())
        doc["run"]["title"] = "again"
        changed.append(json.dumps(doc))
    (tmp_path / "again.ndjson").write_text("\n".join(changed) + "\n")
    assert oa.ingest(tmp_path / "again.ndjson", ds).runs_replaced == 7
    matrix, flips = oa.compare(ds, ["tests", "tests+review"], as_of=AS_OF, slice_runs=3)
    whole = oa.acceptance(ds, ["tests", "tests+review"], as_of=AS_OF)
    assert_frame_equal(flips.collect(), flips_from(whole, 5).collect(), check_dtypes=False)
    assert matrix.collect().height == 1
    rated = oa.rates(ds, "tests", as_of=AS_OF, slice_runs=3).collect()
    assert rated["runs"].to_list() == [7, 7]
    oa.write_acceptance(ds, tmp_path / "a.parquet", "tests", as_of=AS_OF, slice_runs=3)
    assert pl.read_parquet(tmp_path / "a.parquet").height == 14


def test_bad_slice_size_and_carry_names_are_refused(generated: tuple[Path, Path]) -> None:
    from ocp_analytics.acceptance import decide
    from ocp_analytics.timeaxis import resolve_as_of

    ds, _ = generated
    with pytest.raises(oa.OcpAnalyticsError, match="slice_runs"):
        oa.rates(ds, slice_runs=0)
    with pytest.raises(ValueError, match="leading '_'"):
        decide(open_tables(ds)[0], [], resolve_as_of(AS_OF), carry=[pl.lit(1).alias("valid")])


def test_sliced_evaluation_matches_late_events_in_every_slice(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES, ds)
    oa.ingest_events(EXAMPLES.parent / "events" / "example-events.ndjson", ds)
    whole = oa.acceptance(ds, "tests", as_of=AS_OF).collect().sort("run_id", "rule")
    out = tmp_path / "acc.parquet"
    oa.write_acceptance(ds, out, "tests", as_of=AS_OF, slice_runs=4)
    sliced = pl.read_parquet(out).sort("run_id", "rule")
    assert_frame_equal(sliced, whole, check_dtypes=False)
    assert whole.filter(pl.col("reasons").list.contains("late:revert")).height >= 1
