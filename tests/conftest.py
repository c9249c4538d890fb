"""Shared fixtures: generated and bundled datasets, a tiny dataset from literal dicts,
the reference evaluator and a frame-equality helper."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, settings
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from tests import reference as _reference

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(ROOT))

from benchmarks.generate import generate_documents, write_rules  # noqa: E402

# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE: each property test asks
# for examples(n), its share of the profile's budget (n at dev and ci, 10n at
# thorough, n/5 at quick). ci prints the blob that replays a failure.
_RELAXED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=100, **_RELAXED)
settings.register_profile("ci", max_examples=100, print_blob=True, **_RELAXED)
settings.register_profile("thorough", max_examples=1000, **_RELAXED)
settings.register_profile("quick", max_examples=20, **_RELAXED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def examples(n: int) -> int:
    """``n`` examples scaled by the loaded profile (n under ``dev`` and ``ci``)."""
    return max(1, n * settings.default.max_examples // 100)


AS_OF = "2027-01-01T00:00:00Z"
DATA = Path(__file__).parent / "data"
EXAMPLES = DATA / "examples"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """1,500 generated runs over three batches, the last replacing 50 runs."""
    tmp = tmp_path_factory.mktemp("gen")
    docs = list(generate_documents(1500, seed=7))
    for i, part in enumerate((docs[:700], docs[700:1500])):
        (tmp / f"part-{i}.ndjson").write_bytes(b"\n".join(orjson.dumps(d) for d in part) + b"\n")
    changed = []
    for d in docs[100:150]:
        d = json.loads(json.dumps(d))
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
        changed.append(d)
    (tmp / "again.ndjson").write_bytes(b"\n".join(orjson.dumps(d) for d in changed) + b"\n")
    ds = tmp / "ds"
    oa.ingest([tmp / "part-0.ndjson", tmp / "part-1.ndjson"], ds, commit_docs=500, chunk_docs=300)
    summary = oa.ingest(tmp / "again.ndjson", ds)
    assert summary.runs_replaced == 50
    return ds, write_rules(tmp / "rules.toml", 6, seed=3)


@pytest.fixture(scope="session")
def examples_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled examples, ingested once per test session."""
    ds = tmp_path_factory.mktemp("examples") / "ds"
    oa.ingest(EXAMPLES, ds)
    return ds


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Callable[[Iterable[dict]], Path]:
    """Build a dataset from literal document dicts: ``tiny_dataset([doc, ...])``."""

    def build(docs: Iterable[dict]) -> Path:
        src = tmp_path / f"docs-{len(list(tmp_path.iterdir()))}.ndjson"
        src.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
        ds = tmp_path / "ds"
        oa.ingest(src, ds)
        return ds

    return build


@pytest.fixture(scope="session")
def reference():
    """The plain per-document reference evaluator (``tests/reference.py``)."""
    return _reference


def frames_equal(
    got: pl.DataFrame, want: pl.DataFrame | dict, sort: list[str] | None = None
) -> None:
    """Assert two frames (or a frame and a dict of columns) hold the same rows."""
    want_df = want if isinstance(want, pl.DataFrame) else pl.DataFrame(want)
    if sort:
        got, want_df = got.sort(sort), want_df.sort(sort)
    assert_frame_equal(got, want_df, check_dtypes=False)


__all__ = ["AS_OF", "EXAMPLES", "examples", "frames_equal", "json"]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Four commits (runs, a late revert, a new version of a run, more events), and a copy
    of the dataset as each commit left it: what snapshots and commit logs are tested on."""
    import shutil

    solo = EXAMPLES / "v0.3" / "solo.ocp.json"
    tmp = tmp_path_factory.mktemp("history")
    ds, copies = tmp / "ds", []
    events = (DATA / "events" / "example-events.ndjson").read_bytes().splitlines(keepends=True)
    (tmp / "events-1.ndjson").write_bytes(b"".join(events[:2]))  # the revert of late-revert
    (tmp / "events-2.ndjson").write_bytes(b"".join(events[2:]))
    newer = orjson.loads(solo.read_bytes())
    newer["run"].update(title="solo, again", ended_at="2026-09-23T11:00:00-07:00")
    (tmp / "solo-again.json").write_bytes(orjson.dumps(newer))
    steps = [
        lambda: oa.ingest([EXAMPLES / "late-revert.ocp.json", solo.parent], ds),
        lambda: oa.ingest_events(tmp / "events-1.ndjson", ds),
        lambda: oa.ingest(tmp / "solo-again.json", ds),
        lambda: oa.ingest_events(tmp / "events-2.ndjson", ds),
    ]
    for i, step in enumerate(steps, 1):
        step()
        copies.append(tmp / f"as-of-{i}")
        shutil.copytree(ds, copies[-1])
    return ds, copies


@pytest.fixture(scope="module")
def _spark_backend() -> Iterable[Any]:
    """A local Spark session for the ``backend`` fixture; skipped without pyspark or Java."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    from ocp_analytics import spark as osp
    from tests.backends import SparkBackend

    try:
        session = osp.session("local[2]", {"spark.sql.shuffle.partitions": "2"})
    except oa.OcpAnalyticsError as exc:  # no Java 17+ on this machine
        pytest.skip(str(exc))
    session.sparkContext.setLogLevel("ERROR")
    yield SparkBackend(session)
    session.stop()


@pytest.fixture(params=["polars", "sql", "spark"])
def backend(request: pytest.FixtureRequest) -> Any:
    """Each engine in turn (``tests/backends.py``): one test body, every engine."""
    from tests.backends import PolarsBackend, SqlBackend

    if request.param == "spark":
        return request.getfixturevalue("_spark_backend")
    return PolarsBackend() if request.param == "polars" else SqlBackend()


def _missing(why: str) -> None:
    """Skip a test whose local server is missing; fail instead under CI."""
    import os

    if os.environ.get("OCP_REQUIRE_TEST_SERVERS"):
        pytest.fail(why)
    pytest.skip(why)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(cmd: list[str], port: int, ready: Callable[[], object]) -> Any:
    """Start a local server, wait until it listens on ``port`` (30 s at most), call ``ready``."""
    import socket
    import subprocess
    import time

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                raise
            time.sleep(0.2)
    try:
        ready()
    except BaseException:
        proc.kill()
        raise
    return proc


@pytest.fixture(scope="session")
def s3_bucket() -> Iterable[str]:
    """An S3 bucket on a local moto server, with the ``AWS_*`` variables pointing at it.

    Yields ``s3://BUCKET``. Skipped when moto (the test extra) is missing.
    """
    try:
        import boto3
        import moto.server  # noqa: F401
    except ImportError:
        _missing("moto or boto3 is not installed (the test extra)")
    port = _free_port()
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.delenv("AWS_SESSION_TOKEN", raising=False)
        mp.delenv("AWS_PROFILE", raising=False)
        cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        proc = _serve(cmd, port, lambda: boto3.client("s3").create_bucket(Bucket="ocp-test"))
        try:
            yield "s3://ocp-test"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


# Azurite's documented development account (public, not a secret)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@pytest.fixture(scope="session")
def azure_container(tmp_path_factory: pytest.TempPathFactory) -> Iterable[str]:
    """A container on a local Azurite server, with ``AZURE_STORAGE_*`` pointing at it.

    Yields ``abfss://CONTAINER@ACCOUNT.dfs.core.windows.net``. Skipped when
    ``azurite-blob`` (npm) is not on PATH; ``.ci/run`` installs it.
    """
    import shutil

    azurite = shutil.which("azurite-blob")
    if azurite is None:
        _missing("azurite-blob is not on PATH (npm install azurite; .ci/run does)")
    from pyarrow.fs import AzureFileSystem

    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AZURE_STORAGE_ACCOUNT_KEY", AZURITE_KEY)
        mp.setenv("AZURE_STORAGE_ENDPOINT", endpoint)
        mp.delenv("AZURE_STORAGE_SAS_TOKEN", raising=False)
        fs = AzureFileSystem(
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
            blob_storage_authority=f"127.0.0.1:{port}",
            blob_storage_scheme="http",
            dfs_storage_authority=f"127.0.0.1:{port}",
            dfs_storage_scheme="http",
        )
        data = tmp_path_factory.mktemp("azurite")
        cmd = [azurite, "--blobHost", "127.0.0.1", "--blobPort", str(port)]
        cmd += [
            "--location",
            str(data),
            "--silent",
            "--skipApiVersionCheck",
            "--disableTelemetry",
        ]
        proc = _serve(cmd, port, lambda: fs.create_dir("ocp-test"))
        try:
            yield f"abfss://ocp-test@{AZURITE_ACCOUNT}.dfs.core.windows.net"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.fixture(params=["s3", "azure"])
def bucket(request: pytest.FixtureRequest) -> str:
    """The root of a test bucket on each object store (see ``s3_bucket``, ``azure_container``)."""
    name = "s3_bucket" if request.param == "s3" else "azure_container"
    return str(request.getfixturevalue(name))
