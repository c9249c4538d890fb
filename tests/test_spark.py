"""The Spark engine (#16) against the polars engine, on one module-scoped ``local[2]`` session.

The same sources (generated documents with the generator's awkward cases,
every bad-input fixture, the bundled examples, run ids repeated within and
across batches) go through ``ocp_analytics.spark`` and the package's own
ingest and evaluation; tables, quarantine, findings, acceptance, rates and
flips must be equal row for row. The polars engine is held to the reference
evaluator elsewhere (tests/property). Small slices force several tasks.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pandas")

import ocp_analytics as oa
from benchmarks.generate import generate_documents, write_rules
from ocp_analytics import schemas as S
from ocp_analytics import spark as osp
from ocp_analytics.exceptions import MissingExtraError
from ocp_analytics.spark import tasks as spark_tasks
from ocp_analytics.store import dataset as D
from ocp_analytics.store.storage import store

DATA = Path(__file__).parent / "data"
AS_OF = "2026-11-20T00:00:00Z"  # some windows still open: provisional runs counted
SLICE = 90  # documents per evaluation task: several tasks on ~400 runs


@pytest.fixture(scope="module")
def spark() -> Any:
    try:
        session = osp.session("local[2]", {"spark.sql.shuffle.partitions": "2"})
    except oa.OcpAnalyticsError as exc:  # no Java on this machine
        pytest.skip(str(exc))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _ndjson(path: Path, docs: list[dict[str, Any]], gz: bool = False) -> None:
    data = b"".join(orjson.dumps(d) + b"\n" for d in docs)
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)


def _later(doc: dict[str, Any], hours: int) -> dict[str, Any]:
    """The same run, ended later and with a new title: a newer version."""
    run = {**doc["run"], "ended_at": f"2026-11-30T{hours:02d}:00:00Z", "title": f"v{hours}"}
    return {**doc, "run": run}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two rounds of sources: the second re-emits, replaces and repeats runs of the first."""
    root = tmp_path_factory.mktemp("spark-sources")
    one, two = root / "one", root / "two"
    one.mkdir()
    two.mkdir()
    docs = list(generate_documents(360, seed=16))
    _ndjson(one / "a.ndjson", docs[:150])
    _ndjson(one / "b.ndjson.gz", docs[150:300], gz=True)
    # run ids repeated within the batch: a newer and an older copy in another file
    _ndjson(one / "c.ndjson", [_later(d, 5) for d in docs[:10]] + docs[10:20])
    shutil.copytree(DATA / "bad", one / "bad", ignore=shutil.ignore_patterns("_make.py"))
    shutil.copytree(DATA / "examples", one / "examples")
    # the second batch: new runs, newer versions (replaced), identical copies (unchanged)
    _ndjson(two / "d.ndjson", docs[300:] + [_later(d, 9) for d in docs[20:30]] + docs[30:40])
    return one, two


@pytest.fixture(scope="module")
def datasets(spark: Any, sources: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """(polars dataset, Spark dataset, their summaries), both after the two rounds."""
    root = tmp_path_factory.mktemp("spark-datasets")
    p, q = root / "polars", root / "spark"
    summaries = []
    for src in sources:
        summaries.append((oa.ingest(src, p), osp.ingest(spark, src, q)))
    return p, q, summaries


def _table(path: Path, table: str, scans: bool = False) -> pl.DataFrame:
    ds = oa.scan_dataset(path)
    frame = (ds.scans if scans else ds.frames)[table].collect()
    frame = frame.drop("batch_id") if "batch_id" in frame.columns else frame
    return frame.sort(frame.columns, nulls_last=True)


def _lines(summary: oa.IngestSummary) -> list[str]:
    return [x for x in str(summary).splitlines() if not x.startswith(("dataset:", "time:"))]


def _per_source(summary: oa.IngestSummary) -> list[tuple[Any, ...]]:
    """Each source's counts: documents, runs by status, quarantined, findings."""
    fields = ("documents", "runs_new", "runs_replaced", "runs_unchanged", "runs_outranked")
    return sorted(
        (s.path, *(getattr(s, f) for f in fields), s.quarantined, s.findings)
        for s in summary.sources
    )


def test_ingest_writes_the_same_tables_quarantine_and_findings(datasets) -> None:
    p, q, summaries = datasets
    for table in S.TABLES:
        for scans in (False, True):  # current versions, and every committed row
            a, b = _table(p, table, scans), _table(q, table, scans)
            assert a.equals(b), (table, scans, a.height, b.height)
    quarantine = _table(q, "quarantine")
    assert quarantine.height > 10  # the bad fixtures, truncated streams included
    assert "truncated" in quarantine["code"].to_list()
    findings = _table(q, "findings")["code"].to_list()
    assert "duplicate_run" in findings
    meta = ["batch_id", "committed_at"]
    assert oa.scan_dataset(p).manifest.drop(meta).equals(oa.scan_dataset(q).manifest.drop(meta))
    for polars_summary, spark_summary in summaries:
        assert spark_summary.reconciles
        assert _lines(spark_summary) == _lines(polars_summary)
        assert _per_source(spark_summary) == _per_source(polars_summary)
    second = summaries[1][1]
    assert (second.runs_replaced, second.runs_unchanged) == (10, 10)


def _rules(tmp: Path) -> list[Any]:
    return [
        "tests",
        "tests+review",
        "runtime_s<=3600",
        *oa.read_rules_file(write_rules(tmp / "rules.toml", 4, seed=16)),
    ]


def _manifest(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    """Each batch's manifest by table, without file names: rows, doc_id and time ranges, fields."""
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for record in D.read_commits(path):
        assert sorted(e["file"] for e in record["parts"]) == sorted(
            f for files in record["files"].values() for f in files
        )
        for e in record["parts"]:
            t = out.setdefault(
                (record["seq"], e["table"]), {"rows": 0, "doc_id": [], "time": [], "fields": set()}
            )
            t["rows"] += e["rows"]
            t["fields"] |= set(e) - {"file"}
            for key in ("doc_id", "time"):
                t[key] = _widest(t[key], e.get(key, []))
    return out


def _widest(a: list[Any], b: list[Any]) -> list[Any]:
    """The range spanning two ranges (``[]``: empty)."""
    return [min(a[0], b[0]), max(a[1], b[1])] if a and b else a or b


def test_ingest_writes_the_same_manifest(datasets) -> None:
    """Spark batches carry a manifest entry per part, spanning what the polars ingest's do."""
    from ocp_analytics.store.verify import verify

    p, q, _ = datasets
    assert _manifest(q) == _manifest(p)
    assert verify(q) == []  # every Spark entry holds its file's size, SHA-256 and rows


def test_acceptance_is_row_for_row_the_same(spark: Any, datasets, tmp_path: Path) -> None:
    p, q, _ = datasets
    rules = _rules(tmp_path)
    got = osp.to_polars(osp.acceptance(spark, q, rules, AS_OF, slice_runs=SLICE))
    want = oa.acceptance(p, rules, as_of=AS_OF)
    order = ["run_id", "rule"]
    assert got.schema == want.schema
    assert got.sort(order).equals(want.sort(order))
    assert got["rule"].n_unique() == len(rules) + 1  # recorded + every alternative rule
    assert got["window_open"].any() and got["outcome"].n_unique() == 3

    windowed = osp.acceptance(spark, q, "tests", AS_OF, since="60d", recorded=False)
    local = oa.acceptance(p, "tests", as_of=AS_OF, since="60d", recorded=False)
    assert osp.to_polars(windowed).sort(order).equals(local.sort(order))


def test_write_acceptance_parts_carry_as_of(spark: Any, datasets, tmp_path: Path) -> None:
    p, q, _ = datasets
    out = tmp_path / "acceptance.parquet"
    rows = osp.write_acceptance(spark, q, out, ["tests+review"], AS_OF, slice_runs=SLICE)
    parts = sorted(out.glob("*.parquet"))
    assert len(parts) > 1 and not list(out.glob(".*"))
    import pyarrow.parquet as pq

    meta = pq.read_schema(parts[0]).metadata
    assert meta[b"ocp_analytics.as_of"] == b"2026-11-20T00:00:00+00:00"
    got = pl.read_parquet(out).sort("run_id", "rule")
    want = oa.acceptance(p, ["tests+review"], as_of=AS_OF).sort("run_id", "rule")
    assert rows == got.height and got.equals(want)


def test_rates_and_flips_are_the_same(spark: Any, datasets, tmp_path: Path) -> None:
    p, q, _ = datasets
    rules = _rules(tmp_path)
    for kwargs in (
        {"by": ["label.team"]},
        {"by": ["label.team", "task_type"], "min_tier": "reported"},
        {"period": "month"},
    ):
        got = osp.rates(spark, q, rules, as_of=AS_OF, slice_runs=SLICE, **kwargs)
        want = oa.rates(p, rules, as_of=AS_OF, **kwargs)
        assert got.equals(want), kwargs
    m, f = osp.compare(spark, q, rules, by="label.team", as_of=AS_OF, sample=3, slice_runs=SLICE)
    m2, f2 = oa.compare(p, rules, by="label.team", as_of=AS_OF, sample=3)
    assert m.equals(m2)
    assert f.equals(f2)
    assert f["flips"].sum() > 0


def test_a_flipped_part_stops_a_spark_job_in_one_line(spark: Any, datasets, tmp_path: Path) -> None:
    """The job's first stage hashes every part (spread over its tasks) before any is read."""
    _, q, _ = datasets
    ds = tmp_path / "ds"
    shutil.copytree(q, ds)
    rel = D.read_commits(ds)[0]["files"]["signals"][0]
    data = bytearray((ds / rel).read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit inside the data: it may still decode
    (ds / rel).write_bytes(bytes(data))
    with pytest.raises(oa.DatasetError, match=f"damaged part {rel}: its bytes differ") as caught:
        osp.rates(spark, ds, "tests", as_of=AS_OF, slice_runs=SLICE)
    assert "\n" not in str(caught.value)


def _fail_at(stage: str, task: int) -> Callable[[str, int], None]:
    """A task hook (``ocp_analytics.spark.tasks.HOOK``) failing one task of one stage.

    A closure, so Spark ships it to the executors by value (cloudpickle).
    """

    def hook(at: str, index: int) -> None:
        if (at, index) == (stage, task):
            raise RuntimeError(f"injected fault in {stage} task {task}")

    return hook


def _state(path: Path) -> tuple[list[dict[str, Any]], dict[str, pl.DataFrame]]:
    from ocp_analytics.store.dataset import read_commits

    tables = {t: _table(path, t, scans=True) for t in S.TABLES}
    return read_commits(path), tables


def test_failed_task_leaves_the_dataset_unchanged_and_a_rerun_converges(
    spark: Any, datasets, sources: tuple[Path, Path], tmp_path: Path, monkeypatch
) -> None:
    p, _, _ = datasets
    one, two = sources
    ds = tmp_path / "ds"
    osp.ingest(spark, one, ds)
    before = _state(ds)
    extra = tmp_path / "extra.ndjson"
    _ndjson(extra, list(generate_documents(3, seed=17)))
    # task 0 fails after reading its first source, then after staging its parts; count
    # task 1 fails earlier
    for stage, task in (("build", 0), ("written", 0), ("count", 1)):
        monkeypatch.setattr(spark_tasks, "HOOK", _fail_at(stage, task))
        with pytest.raises(Exception, match="injected fault"):
            osp.ingest(spark, [two, extra], ds)
        after = _state(ds)
        assert after[0] == before[0]
        assert all(after[1][t].equals(before[1][t]) for t in S.TABLES)
        assert not (ds / D.STAGING).exists()
    monkeypatch.setattr(spark_tasks, "HOOK", None)
    summary = osp.ingest(spark, two, ds)
    assert summary.runs_new == 60 and summary.orphans_removed == 0
    for table in S.TABLES:
        assert _table(ds, table, scans=True).equals(_table(p, table, scans=True)), table
    again = osp.ingest(spark, [one, two], ds)  # everything already ingested: nothing written
    assert again.documents_read == 0 and len(again.batches) == 0


def test_small_sources_share_parts_and_count_as_on_one_machine(spark: Any, tmp_path: Path) -> None:
    """A task's one-document files share parts; each file's counts are still its own.

    The files' quarantined lines and findings are told apart by their path
    (a few tasks of 80 files: a part a table and task, not 80), and the tables and the
    summary are those of the package's ingest.
    """
    src = tmp_path / "src"
    src.mkdir()
    docs = list(generate_documents(80, seed=18))
    for i, doc in enumerate(docs):
        lines = [orjson.dumps(doc)] + ([b"{not json"] if i % 9 == 0 else [])
        (src / f"run-{i:03d}.json").write_bytes(b"\n".join(lines) + b"\n")
    p, q = tmp_path / "polars", tmp_path / "spark"
    local, distributed = oa.ingest(src, p), osp.ingest(spark, src, q)
    assert distributed.reconciles and _lines(distributed) == _lines(local)
    assert _per_source(distributed) == _per_source(local)
    assert sum(s.quarantined for s in distributed.sources) == 9
    for table in S.TABLES:
        assert _table(q, table).equals(_table(p, table)), table
    [record] = D.read_commits(q)
    tasks = len(_tasks(sorted(src.iterdir()), spark))
    assert len(record["files"]["runs"]) == tasks < 10  # a part per task, not per file
    assert len(record["files"]["quarantine"]) <= tasks


def test_a_task_shares_chunks_and_parts_and_keeps_each_source_apart(tmp_path: Path) -> None:
    """One build task, run in process: small chunks and parts cut across its sources.

    Each source's texts keep the ``doc_id`` its count gave them, its runs'
    rank keys are its own, and every part names the sources it holds (two
    shown by one path never share one).
    """
    from ocp_analytics.ingestion.sources import find_sources
    from ocp_analytics.spark.ingest import IngestJob

    src = tmp_path / "src"
    src.mkdir()
    docs = list(generate_documents(40, seed=19))
    for i, doc in enumerate(docs[:25]):
        (src / f"a{i:02d}.json").write_bytes(orjson.dumps(doc))
    _ndjson(src / "b.ndjson", docs[25:])
    with (src / "b.ndjson").open("ab") as f:
        f.write(b'{"cut short')  # a truncated last line: quarantined, of b.ndjson
    (src / "c.json").write_bytes(b"")  # an empty file: quarantined, no text
    found = find_sources([str(src)])
    staging = store(tmp_path / "staging")
    job = IngestJob(found, staging, "00000001-test", chunk_docs=7, part_runs=10)
    job.groups = [list(range(len(found)))]
    counts = job.counts(0)
    job.bases = [(1 << 32) + sum(counts[:i]) for i in range(len(found))]
    built = job.builds(0)
    runs = pl.concat(
        pl.read_parquet(staging.child("runs", p.name).uri)
        for p in built[0].files
        if p.table == "runs"
    )
    assert runs.height == 40 and runs["doc_id"].is_unique().all()
    for i, (source, b) in enumerate(zip(found, built, strict=True)):
        mine = runs.filter(pl.col("source_path") == source.path)
        if b.ranks is None:
            assert mine.height == 0
            continue
        assert sorted(b.ranks["doc_id"]) == sorted(mine["doc_id"])
        assert mine["doc_id"].min() == job.bases[i]
    assert [b.documents for b in built] == [*([1] * 25), 16, 1]
    # chunks of 7 texts, a part once 10 runs are held: 14, 14 and the task's last 12
    assert [p.rows for p in built[0].files if p.table == "runs"] == [14, 14, 12]
    for part in built[0].files:
        if part.codes is not None:
            assert set(part.codes["source_path"]) <= set(part.sources or {})
    quarantined = [p for p in built[0].files if p.table == "quarantine"]
    held = pl.concat(pl.read_parquet(staging.child("quarantine", p.name).uri) for p in quarantined)
    assert sorted(Path(x).name for x in held["source_path"]) == ["b.ndjson", "c.json"]


def test_a_part_never_holds_two_sources_shown_by_one_path(tmp_path: Path) -> None:
    from ocp_analytics.spark.commit import PartWriter

    writer = PartWriter(store(tmp_path), "t")
    row = {"run_id": "r", "doc_id": 1, "code": "x", "source_path": "same.json"}
    rows = pl.DataFrame([row], schema=S.polars_schema("findings"))
    writer.source({"same.json": 0, "other.json": 1})
    writer.add({"findings": rows})
    writer.source({"same.json": 2})  # another source shown by the same path: a new part
    writer.add({"findings": rows})
    writer.flush()
    assert [dict(p.sources or {}) for p in writer.files] == [
        {"same.json": 0, "other.json": 1},
        {"same.json": 2},
    ]


def test_the_rule_takes_runs_of_sources_each_path_once() -> None:
    """Sources shown by one path are never classified together: rows tell sources by path."""
    from ocp_analytics.ingestion.batch import SourceSummary
    from ocp_analytics.ingestion.sources import Source
    from ocp_analytics.spark.commit import Built
    from ocp_analytics.spark.versions import _read_runs

    paths = ["a", "b", "a", "c", "d"]
    todo = [(Source(p, Path(p), 0), SourceSummary(p, 0, "")) for p in paths]
    built = [Built(0, [], None) for _ in paths]
    runs = [[item[0].path for item, _ in run] for run in _read_runs(todo, built)]
    assert runs == [["a", "b"], ["a", "c", "d"]]


def _tasks(files: list[Path], spark: Any) -> list[list[int]]:
    """The build tasks of ``files`` (``spark.ingest._groups``)."""
    from ocp_analytics.spark.ingest import _groups

    return _groups([f.stat().st_size for f in files], spark.sparkContext.defaultParallelism)


def test_cli_spark_engine_prints_the_same_table(spark: Any, tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    runner = CliRunner()
    examples = str(DATA / "examples")
    outputs = {}
    for engine in ("polars", "spark"):
        ds = str(tmp_path / engine)
        done = runner.invoke(app, ["ingest", examples, "-o", ds, "-q", "--engine", engine])
        assert done.exit_code == 0, done.output
        args = ["accept", ds, "--rule", "tests+review", "--as-of", "2027-01-01T00:00:00Z"]
        shown = runner.invoke(app, [*args, "--engine", engine])
        assert shown.exit_code == 0, shown.output
        rates = runner.invoke(app, ["rates", ds, "--rule", "tests", *args[3:], "--engine", engine])
        outputs[engine] = (shown.output, rates.output)
    assert outputs["spark"] == outputs["polars"]
    assert spark.sparkContext._jsc is not None  # the CLI left the running session alone


def test_without_pyspark_one_line_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ocp-analytics\[spark\]'"):
        osp.require_pyspark()
    done = CliRunner().invoke(
        app, ["ingest", str(DATA / "examples"), "-o", str(tmp_path / "d"), "--engine", "spark"]
    )
    assert done.exit_code == 1
    assert done.output.strip().splitlines() == [
        "error: the Spark engine needs pyspark and pandas: pip install 'ocp-analytics[spark]'"
    ]


def test_paths_and_java() -> None:
    assert store("file:///data/a%20b.dataset").path == Path("/data/a b.dataset")
    assert store("s3a://bucket/runs.dataset").uri == "s3://bucket/runs.dataset"
    assert store("abfs://c@acct.dfs.core.windows.net/ds").uri.startswith("abfss://c@acct.")
    with pytest.raises(oa.OcpAnalyticsError, match="mount"):
        store("hdfs://namenode:8020/runs.dataset")
    assert osp.java_major('openjdk version "21.0.2" 2024-01-16') == 21
    assert osp.parse_conf(["spark.executor.memory=8g"]) == {"spark.executor.memory": "8g"}
    with pytest.raises(oa.OcpAnalyticsError, match="KEY=VALUE"):
        osp.parse_conf(["no-equals"])


@pytest.mark.slow
def test_killed_driver_leaves_the_dataset_unchanged_and_a_rerun_converges(
    sources: tuple[Path, Path], tmp_path: Path
) -> None:
    """SIGKILL of the whole CLI process group (driver, JVM, workers) once parts are staged."""
    import os
    import signal
    import subprocess
    import time

    one, two = sources
    ds = tmp_path / "ds"
    oa.ingest(one, ds)
    before = _state(ds)
    cmd = [sys.executable, "-m", "ocp_analytics.cli", "ingest", str(two), "-o", str(ds)]
    cmd += ["-q", "--engine", "spark", "--spark-master", "local[2]"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 300
    staging = ds / D.STAGING
    while time.time() < deadline and proc.poll() is None:
        if staging.exists() and any(staging.rglob("*.parquet")):
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    after = _state(ds)
    assert after[0] == before[0]
    assert all(after[1][t].equals(before[1][t]) for t in S.TABLES)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not staging.exists()
    p = tmp_path / "polars"
    for src in sources:
        oa.ingest(src, p)
    for table in S.TABLES:
        assert _table(ds, table, scans=True).equals(_table(p, table, scans=True)), table


def test_object_store_ingest_and_acceptance_match_the_local_polars_engine(
    spark: Any, sources: tuple[Path, Path], bucket: str, tmp_path: Path, monkeypatch
) -> None:
    """Sources and dataset on S3 / Azure: tasks read and write through the store."""
    from tests.test_object_store import alias, table, upload

    one, _ = sources
    picked = tmp_path / "in"  # fewer, larger files than `one`: each object costs requests
    shutil.copytree(one, picked, ignore=shutil.ignore_patterns("examples", "*.json"))
    shutil.copy(one / "bad" / "empty.json", picked / "bad")
    upload(picked, f"{bucket}/spark-in")
    assert len(list(picked.rglob("*.*"))) == 14  # truncated, corrupt, misnamed, CR, BOM, …
    local, uri = tmp_path / "local", alias(f"{bucket}/spark.dataset")
    local_summary = oa.ingest(picked, local)
    # a task that has written a part fails: nothing becomes visible, no part is left
    monkeypatch.setattr(spark_tasks, "HOOK", _fail_at("build", 0))
    with pytest.raises(Exception, match="injected fault"):
        osp.ingest(spark, alias(f"{bucket}/spark-in"), uri)
    assert D.read_commits(uri) == [] and oa.scan_dataset(uri).runs.collect().height == 0
    monkeypatch.setattr(spark_tasks, "HOOK", None)
    # (a task still running when the job aborted may have put a part since: an orphan)
    summary = osp.ingest(spark, alias(f"{bucket}/spark-in"), uri)
    assert summary.reconciles and summary.quarantined == local_summary.quarantined >= 8

    def unlisted() -> set[str]:
        records = D.read_commits(uri)
        listed = {f for r in records for fs in r["files"].values() for f in fs}
        stored = {f.uri.split(".dataset/")[1] for f in store(uri).files()}
        assert listed <= stored
        return {f for f in stored if f.split("/")[0] in S.TABLES} - listed

    # a task of the failed job still running when the driver cleaned up may have put
    # a part since: never one of the committed batch, and the next ingest removes it
    committed = D.read_commits(uri)[0]["batch_id"]
    assert not [f for f in unlisted() if committed in f]
    oa.ingest([], uri)
    assert not unlisted()
    for name in S.TABLES:
        assert table(local, name).equals(table(uri, name)), name
    rules = ["tests", "tests+review"]
    got = osp.to_polars(osp.acceptance(spark, uri, rules, AS_OF, slice_runs=2 * SLICE))
    want = oa.acceptance(local, rules, as_of=AS_OF)
    assert got.sort("run_id", "rule").equals(want.sort("run_id", "rule"))
    out = f"{bucket}/acceptance.parquet"
    rows = osp.write_acceptance(spark, uri, out, rules, AS_OF, slice_runs=2 * SLICE)
    parts = [f.uri for f in store(out).files()]
    assert len(parts) > 1 and rows == want.height
    written = pl.read_parquet(parts, storage_options=store(out).storage_options())
    assert written.sort("run_id", "rule").equals(want.sort("run_id", "rule"))
    polars_rates = oa.rates(local, rules, as_of=AS_OF)
    assert osp.rates(spark, uri, rules, as_of=AS_OF).equals(polars_rates)
