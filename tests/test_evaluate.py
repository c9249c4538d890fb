"""The evaluation loop: doc_id ranges, slices, superseded versions, carried columns."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
import xxhash
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.engine.evaluate import doc_ranges, evaluate_slice, open_tables, slices
from ocp_analytics.engine.rates import flips_from
from ocp_analytics.engine.timeaxis import resolve_as_of
from ocp_analytics.model.links import attempt_positions, link_attempts
from ocp_analytics.model.rules import resolve_rules
from ocp_analytics.store.dataset import read_commits
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
    want = oa.acceptance(ds, rules, as_of=AS_OF).sort("run_id", "rule")
    assert_frame_equal(got, want)
    meta = pq.read_schema(out).metadata
    assert meta[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"
    assert not list(ds.parent.glob(".acc.parquet.*"))
    # written from string views, declared (and read back) as the package's types
    from ocp_analytics.schemas import ACCEPTANCE

    assert pq.read_schema(out).equals(ACCEPTANCE)
    assert pq.read_table(out).schema.equals(ACCEPTANCE)
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall() == [(rows,)]
    # only the four attempt columns may be null: the others are REQUIRED in the file
    optional = {
        c.path.split(".")[0]
        for c in pq.ParquetFile(out).schema
        if c.max_definition_level > (1 if c.path.startswith("reasons.") else 0)
    }
    assert optional == {
        "accepted_attempt",
        "attempts_to_acceptance",
        "accepted_attempt_n",
        "accepted_round",
    }
    # min/max of the rule only: a row group holds one rule of one slice
    group = pq.ParquetFile(out).metadata.row_group(0)
    stats = {
        group.column(i).path_in_schema
        for i in range(group.num_columns)
        if group.column(i).is_stats_set
    }
    assert stats == {"rule"}


def test_written_in_slice_then_rule_order(generated: tuple[Path, Path]) -> None:
    """Frames written ahead on the writer's thread keep their order: slice, then rule."""
    ds, rules = generated
    out = ds.parent / "ordered.parquet"
    oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=250)
    got = pl.read_parquet(out)
    alt, when = resolve_rules(rules), resolve_as_of(AS_OF)
    want = pl.concat(
        evaluate_slice({k: v.collect() for k, v in part.items()}, alt, when)
        for part in slices(ds, 250)
    )
    assert len(list(slices(ds, 250))) * 7 > 3  # more frames than are written ahead

    def blocks(f: pl.DataFrame) -> pl.DataFrame:  # rows within a frame come in any order
        return f.with_columns(pl.col("rule").rle_id().alias("block")).sort("block", "run_id")

    assert_frame_equal(blocks(got), blocks(want))


def test_a_failed_write_raises_and_leaves_no_file(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, rules = generated
    calls: list[int] = []
    real = pq.ParquetWriter.write_table

    def failing(self: pq.ParquetWriter, table: object, *a: object, **k: object) -> None:
        calls.append(1)
        if len(calls) == 5:
            raise OSError("disk full")
        real(self, table, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    out = ds.parent / "failed.parquet"
    with pytest.raises(OSError, match="disk full"):
        oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=250)
    assert not out.exists()
    assert not list(ds.parent.glob(".failed.parquet.*"))


def test_pipelined_loop_keeps_sink_order_and_progress(
    generated: tuple[Path, Path],
) -> None:
    """Two slices in flight: sinks still see slice then rule, from one thread."""
    import threading

    from ocp_analytics.engine.evaluate import run

    ds, rules = generated
    alt, when = resolve_rules(rules), resolve_as_of(AS_OF)

    class Record:
        columns = ("run_id", "rule")

        def __init__(self) -> None:
            self.frames: list[pl.DataFrame] = []
            self.threads: set[int] = set()

        def add(self, decisions: pl.DataFrame) -> None:
            self.threads.add(threading.get_ident())
            self.frames.append(decisions)

    sink, seen = Record(), []
    run(ds, alt, when, [sink], slice_runs=250, progress=lambda i, n: seen.append((i, n)))
    parts = list(slices(ds, 250))
    assert seen == [(i, len(parts)) for i in range(1, len(parts) + 1)]
    assert len(sink.threads) == 1 and len(sink.frames) == len(parts) * 7
    want = [
        frame.select("run_id", "rule").sort("run_id")
        for part in parts
        for frame in evaluate_slice(
            {k: v.collect() for k, v in part.items()}, alt, when
        ).partition_by("rule", maintain_order=True)
    ]
    for got, expected in zip(sink.frames, want, strict=True):
        assert_frame_equal(got.sort("run_id"), expected)


def test_an_error_in_a_later_slice_stops_the_loop(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice failing while the previous one is handed over raises its own error."""
    from ocp_analytics.engine import evaluate

    ds, rules = generated
    real, calls = evaluate.decide, []

    def failing(*a: object, **k: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("slice 3 is broken")
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "decide", failing)
    out = ds.parent / "stopped.parquet"
    with pytest.raises(RuntimeError, match="slice 3 is broken"):
        oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=250)
    assert not out.exists() and not list(ds.parent.glob(".stopped.parquet.*"))


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
    whole = oa.acceptance(ds, ["tests", "tests+review"], as_of=AS_OF).lazy()
    assert_frame_equal(flips, flips_from(whole, 5).collect(), check_dtypes=False)
    assert matrix.height == 1
    rated = oa.rates(ds, "tests", as_of=AS_OF, slice_runs=3)
    assert rated["runs"].to_list() == [7, 7]
    oa.write_acceptance(ds, tmp_path / "a.parquet", "tests", as_of=AS_OF, slice_runs=3)
    assert pl.read_parquet(tmp_path / "a.parquet").height == 14


def test_bad_slice_size_and_carry_names_are_refused(generated: tuple[Path, Path]) -> None:
    from ocp_analytics.engine.acceptance import decide
    from ocp_analytics.engine.timeaxis import resolve_as_of

    ds, _ = generated
    with pytest.raises(oa.OcpAnalyticsError, match="slice_runs"):
        oa.rates(ds, slice_runs=0)
    with pytest.raises(ValueError, match="leading '_'"):
        decide(open_tables(ds)[0], [], resolve_as_of(AS_OF), carry=[pl.lit(1).alias("valid")])


def test_sliced_evaluation_matches_late_events_in_every_slice(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    oa.ingest(EXAMPLES, ds)
    oa.ingest_events(EXAMPLES.parent / "events" / "example-events.ndjson", ds)
    whole = oa.acceptance(ds, "tests", as_of=AS_OF).sort("run_id", "rule")
    out = tmp_path / "acc.parquet"
    oa.write_acceptance(ds, out, "tests", as_of=AS_OF, slice_runs=4)
    sliced = pl.read_parquet(out).sort("run_id", "rule")
    assert_frame_equal(sliced, whole, check_dtypes=False)
    assert whole.filter(pl.col("reasons").list.contains("late:revert")).height >= 1
    # late_only filters the writer's frames, whose words are dictionary-coded
    late = tmp_path / "late.parquet"
    rows = oa.write_acceptance(ds, late, "tests", as_of=AS_OF, slice_runs=4, late_only=True)
    want = oa.acceptance(ds, "tests", as_of=AS_OF, late_only=True)
    assert rows == want.height >= 1
    assert_frame_equal(pl.read_parquet(late).sort("run_id", "rule"), want.sort("run_id", "rule"))


# --- the attempt each signal names, stored at ingest (#12) -------------------

_LINKS = ["attempt_pos", "attempt_n", "attempt_round"]


def test_ingest_stores_the_attempt_each_signal_names(
    generated: tuple[Path, Path],
) -> None:
    """The stored link equals the attempt positions computed from the attempts (§8)."""
    ds, _ = generated
    t = oa.scan_dataset(ds)
    signals = t.signals.select("doc_id", "sig_idx", "at_attempt", *_LINKS).collect()
    want = link_attempts(signals.drop(_LINKS).lazy(), attempt_positions(t.attempts)).collect()
    assert_frame_equal(signals.sort("doc_id", "sig_idx"), want.sort("doc_id", "sig_idx"))
    # the generated runs name attempts of their own, and some name none
    assert signals.filter(pl.col("attempt_pos") > 0).height > 1000
    assert signals.filter(pl.col("attempt_pos") == 0).height > 0
    assert signals.get_column("attempt_pos").null_count() == 0


def test_stored_links_leave_the_attempts_table_unread(
    generated: tuple[Path, Path],
) -> None:
    """With every link stored, evaluation needs no attempt rows: same decisions without them."""
    ds, rules = generated
    t = oa.scan_dataset(ds)
    tables = {k: t[k].collect() for k in ("runs", "signals", "attempts", "rules")}
    alt = oa.read_rules_file(rules)
    as_of = datetime(2027, 1, 1, tzinfo=UTC)
    want = evaluate_slice(tables, alt, as_of).sort("run_id", "rule")
    no_attempts = {**tables, "attempts": tables["attempts"].head(0)}
    assert_frame_equal(evaluate_slice(no_attempts, alt, as_of).sort("run_id", "rule"), want)
    assert want.filter(pl.col("attempts_to_acceptance") > 1).height > 100


def _strip_links(ds: Path, seqs: set[int]) -> None:
    """Make batches ``seqs`` and the schema file look written before the link was stored."""
    files = [f for r in read_commits(ds) if r["seq"] in seqs for f in r["files"]["signals"]]
    for part in [*(ds / f for f in files), ds / "_schema" / "signals.parquet"]:
        table = pq.read_table(part)
        pq.write_table(table.drop_columns([c for c in _LINKS if c in table.column_names]), part)
    for seq in seqs:
        record = ds / "_batches" / f"{seq:08d}.json"
        old = {k: v for k, v in json.loads(record.read_text()).items() if k != "signal_links"}
        for entry in old.get("parts", []):  # the manifest says what the rewritten parts hold
            if entry["file"] in files:
                data = (ds / entry["file"]).read_bytes()
                sha, fast = hashlib.sha256(data).hexdigest(), xxhash.xxh3_128_hexdigest(data)
                entry.update(size=len(data), sha256=sha, xxh3=fast)
        record.write_text(json.dumps(old))


def test_datasets_written_before_the_link_evaluate_the_same(
    generated: tuple[Path, Path], tmp_path: Path
) -> None:
    """Old parts (no link columns) beside new ones: the engine links them from the attempts.

    Every slice mixes old and new parts; the SQL views read the mixed dataset
    too, and the next ingest gives the dataset's schema files today's columns.
    """
    ds, rules = generated
    want = oa.acceptance(ds, rules, as_of=AS_OF).sort("run_id", "rule")
    mixed = tmp_path / "mixed"
    shutil.copytree(ds, mixed)
    _strip_links(mixed, {1, 3})
    scans = oa.scan_dataset(mixed)
    assert scans.signals.select(pl.col("attempt_pos").null_count()).collect().item() > 0
    got = oa.acceptance(mixed, rules, as_of=AS_OF).sort("run_id", "rule")
    assert_frame_equal(got, want)
    out = tmp_path / "acc.parquet"
    oa.write_acceptance(mixed, out, rules, as_of=AS_OF, slice_runs=250)
    assert_frame_equal(pl.read_parquet(out).sort("run_id", "rule"), want)
    con = oa.connect(mixed, rules=rules, as_of=AS_OF)
    sql = con.sql("SELECT * FROM acceptance").pl().sort("run_id", "rule")
    assert_frame_equal(sql, want)
    # every batch old: the slices read no link columns at all
    _strip_links(mixed, {2})
    assert set(oa.scan_dataset(mixed).signal_links.values()) == {False}
    frames = next(slices(mixed, 250))
    assert "attempt_pos" not in frames["signals"].collect_schema().names()
    oa.write_acceptance(mixed, out, rules, as_of=AS_OF, slice_runs=250)
    assert_frame_equal(pl.read_parquet(out).sort("run_id", "rule"), want)
    # parts of today listed before an old schema file (an old dataset whose
    # early batches held no signals): DuckDB refuses that file until the next
    # ingest gives the schema files today's columns
    fresh = tmp_path / "fresh"
    shutil.copytree(ds, fresh)
    _strip_links(fresh, set())
    with pytest.raises(duckdb.Error, match="attempt_pos"):
        oa.connect(fresh, as_of=AS_OF).sql("SELECT * FROM signals").fetchall()
    oa.ingest(EXAMPLES / "v0.3" / "solo.ocp.json", fresh)
    assert set(_LINKS) <= set(pq.read_schema(fresh / "_schema" / "signals.parquet").names)
    con = oa.connect(fresh, rules=rules, as_of=AS_OF)
    signals = con.sql("SELECT * FROM signals").pl()
    assert signals.height == oa.scan_dataset(fresh).signals.collect().height
    assert signals.get_column("attempt_pos").null_count() == 0


def test_nothing_selected_writes_an_empty_readable_file(tmp_path: Path) -> None:
    """No run in the window: a file of the package's schema, no row group, as_of kept."""
    from ocp_analytics.schemas import ACCEPTANCE

    ds, out = tmp_path / "ds", tmp_path / "none.parquet"
    oa.ingest(EXAMPLES, ds)
    assert oa.write_acceptance(ds, out, "tests", as_of=AS_OF, until="2000-01-01") == 0
    assert pq.ParquetFile(out).metadata.num_row_groups == 0
    assert pq.read_schema(out).equals(ACCEPTANCE)
    assert pq.read_schema(out).metadata[b"ocp_analytics.as_of"] == b"2027-01-01T00:00:00+00:00"
    assert pl.read_parquet(out).height == 0


def test_run_id_encoded_once_a_slice_and_the_file_as_one_writer_writes(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Parts encoded on threads leave out the slice's run_id after its first rule;
    the joined file is the one a single ParquetWriter writes from the same frames."""
    import pyarrow as pa

    from ocp_analytics.api import evaluation as api
    from ocp_analytics.store import parquet_writer
    from ocp_analytics.store.parquet_writer import ThreadedParquetWriter

    ds, rules = generated
    frames: list[pa.Table] = []
    encoded: list[list[str]] = []
    real_write, real_encode = ThreadedParquetWriter.write, parquet_writer.encode

    def write(self: ThreadedParquetWriter, table: pa.Table) -> None:
        real_write(self, table)
        assert table.num_rows > 0
        frames.append(table)  # the frame as converted for the writer

    def encode(table: pa.Table, *a: object, **k: object) -> pa.Buffer:
        encoded.append(table.column_names)
        return real_encode(table, *a, **k)

    monkeypatch.setattr(ThreadedParquetWriter, "write", write)
    monkeypatch.setattr(parquet_writer, "encode", encode)
    out = tmp_path / "acc.parquet"
    rows = oa.write_acceptance(ds, out, rules, as_of=AS_OF, slice_runs=250)
    n_slices = len(list(slices(ds, 250)))
    assert len(frames) == n_slices * 7 and rows == sum(f.num_rows for f in frames)
    # run_id is encoded for the recorded rule's frame of a slice (its own run
    # order) and the first alternative rule's, then written again for the others
    assert n_slices <= sum("run_id" in names for names in encoded) <= 2 * n_slices
    meta = pq.read_metadata(out).metadata
    # in the order write_acceptance gives them
    keys = [b"ARROW:schema", b"ocp_analytics.as_of", b"ocp_analytics.snapshot"]
    one = tmp_path / "one.parquet"
    with pq.ParquetWriter(
        one,
        api._as_written(api.ACCEPTANCE),
        write_statistics=api._STATISTICS,
        use_dictionary=api._DICTIONARY,
        store_schema=False,
    ) as writer:
        for f in frames:
            writer.write_table(f)
        writer.add_key_value_metadata({k: meta[k] for k in keys})
    assert out.read_bytes() == one.read_bytes()


def test_frames_of_several_row_groups_and_parts_larger_than_their_buffer(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A frame longer than a row group (slices above 1Mi runs) leaves out no column;
    a part larger than the buffer it was meant for goes to fresh memory."""
    from ocp_analytics.store import parquet_parallel as _parquet_parallel
    from ocp_analytics.store import parquet_writer

    ds, rules = generated
    plain = tmp_path / "plain.parquet"
    oa.write_acceptance(ds, plain, rules, as_of=AS_OF, slice_runs=250)
    monkeypatch.setattr(parquet_writer, "PART_SPACE", 1024)  # every part overflows its first buffer
    small = tmp_path / "small.parquet"
    oa.write_acceptance(ds, small, rules, as_of=AS_OF, slice_runs=250)
    assert small.read_bytes() == plain.read_bytes()
    monkeypatch.setattr(_parquet_parallel, "ROW_GROUP_ROWS", 100)
    split = tmp_path / "split.parquet"
    rows = oa.write_acceptance(ds, split, rules, as_of=AS_OF, slice_runs=250)
    assert pq.ParquetFile(split).metadata.num_row_groups > len(list(slices(ds, 250))) * 7
    assert pq.read_table(split).equals(pq.read_table(plain)) and rows == 1500 * 7
