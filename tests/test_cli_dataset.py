"""The dataset's own commands (#38): ``verify``, ``log``, and one line for a damaged part.

Every command that reads a dataset, on a damaged part, exits 1 with one
``error:`` line naming the part and suggesting ``verify``: never a
traceback, never a panic's report from Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.exceptions import PanicException
from typer.testing import CliRunner, Result

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.store import dataset as D
from ocp_analytics.store.read_check import unhashed

DATA = Path(__file__).parent / "data"
EXAMPLES = DATA / "examples"
SHA = "its bytes differ from the manifest's SHA-256 (flipped or replaced)"
READ_SUM = "its bytes differ from the manifest's XXH3 (flipped or replaced)"  # what reads check
runner = CliRunner()


def run(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def lines(result: Result) -> list[str]:
    return result.output.splitlines()


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three commits: runs (one document quarantined), one more run, late events."""
    ds = tmp_path_factory.mktemp("cli-dataset") / "ds"
    oa.ingest([EXAMPLES / "v0.3", DATA / "bad" / "not_json.ndjson"], ds)
    oa.ingest(EXAMPLES / "late-revert.ocp.json", ds)
    oa.ingest_events(DATA / "events" / "example-events.ndjson", ds)
    return ds


@pytest.fixture
def ds(whole: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(whole, copy)
    return copy


def _part(ds: Path, table: str) -> tuple[dict, str]:
    """The first committed part of ``table`` and the record that lists it."""
    record = next(r for r in D.read_commits(ds) if r["files"][table])
    return record, record["files"][table][0]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path, at: int, width: int = 16) -> None:
    data = bytearray(path.read_bytes())
    data[at : at + width] = bytes(b ^ 0x5A for b in data[at : at + width])
    path.write_bytes(bytes(data))


def _flip_until(ds: Path, rel: str, fails: Callable[[BaseException], bool]) -> bool:
    """Flip bytes of the part ``rel`` where evaluating ``ds`` fails as ``fails`` wants.

    A flip in a column no evaluation reads changes no figure and raises
    nothing; the search skips those. False when no flip fails that way.
    """
    path = ds / rel
    original = path.read_bytes()
    for at in range(4, len(original) - 8, max(1, len(original) // 200)):
        _flip(path, at, 4)
        try:
            with unhashed():  # the reader's own failure, as with a part that has no checksum
                oa.acceptance(ds, as_of="2027-01-01")
        except BaseException as exc:  # a panic is a BaseException
            if fails(exc):
                return True
        path.write_bytes(original)
    return False


def _sources(record: dict) -> str:
    paths = [s["path"] for s in [*record["sources"], *record.get("event_sources", [])]]
    shown = ", ".join(paths[:2])
    return shown + (f" and {len(paths) - 2} more" if len(paths) > 2 else "")


# ------------------------------------------------------------ verify


def _totals(ds: Path) -> tuple[int, int, int]:
    files = [ds / f for r in D.read_commits(ds) for fs in r["files"].values() for f in fs]
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    return len(files), sum(f.stat().st_size for f in files), rows


def test_verify_prints_one_ok_line_for_a_whole_dataset(whole: Path) -> None:
    parts, size, rows = _totals(whole)
    result = run("verify", whole)
    assert result.exit_code == 0, result.output
    checked = f"3 commit records, {parts} parts ({size:,} bytes, {rows} rows) checked"
    assert lines(result) == [f"ok: {checked}: sizes, SHA-256, footers and rows"]
    quick = run("verify", whole, "--no-checksums")
    assert quick.exit_code == 0
    assert lines(quick) == [f"ok: {checked}: sizes, footers and rows"]


def test_verify_prints_one_line_per_damaged_part_and_exits_1(ds: Path) -> None:
    (runs_record, runs), (_, signals) = _part(ds, "runs"), _part(ds, "signals")
    size = (ds / runs).stat().st_size
    _truncate(ds / runs)
    _flip(ds / signals, (ds / signals).stat().st_size // 2)
    result = run("verify", ds)
    assert result.exit_code == 1
    batch = f"batch 1 {runs_record['batch_id']}, sources: {_sources(runs_record)}"
    assert lines(result)[:2] == [
        f"{runs}: {size // 2} bytes, the manifest says {size} ({batch})",
        f"{signals}: {SHA} ({batch})",
    ]
    assert lines(result)[2].startswith("2 damaged; 3 commit records, 12 parts (")
    assert len(lines(result)) == 3


def test_verify_as_json_is_one_document(ds: Path) -> None:
    record, runs = _part(ds, "runs")
    (ds / runs).unlink()
    result = run("verify", ds, "--format", "json")
    assert result.exit_code == 1
    body = result.output[: result.output.rindex("}") + 1]
    document = orjson.loads(body)
    assert {k: document[k] for k in ("dataset", "ok", "checksums", "commit_records")} == {
        "dataset": str(ds),
        "ok": False,
        "checksums": True,
        "commit_records": 3,
    }
    assert document["damaged"] == [
        {
            "file": runs,
            "table": "runs",
            "problem": "missing",
            "seq": 1,
            "batch_id": record["batch_id"],
            "sources": [s["path"] for s in record["sources"]],
        }
    ]
    assert lines(result)[-1] == f"error: 1 damaged file(s) in {ds}"


def test_verify_writes_damaged_files_as_csv_rows(ds: Path, tmp_path: Path) -> None:
    _, runs = _part(ds, "runs")
    (ds / runs).unlink()
    out = tmp_path / "damage.csv"
    result = run("verify", ds, "-o", out)
    assert result.exit_code == 1
    assert pl.read_csv(out).select("file", "table", "problem", "seq").rows() == [
        (runs, "runs", "missing", 1)
    ]


def test_verify_names_a_damaged_commit_record(ds: Path) -> None:
    (ds / D.BATCHES / "00000002.json").write_text("[]")
    result = run("verify", ds, "--no-checksums")
    assert result.exit_code == 1
    assert lines(result)[0] == "_batches/00000002.json: a JSON list, not an object (batch 2)"


# ------------------------------------------------------------ log

LOG_COLUMNS = [
    "seq",
    "committed_at",
    "batch_id",
    "kind",
    "sources",
    "documents",
    "runs_new",
    "runs_replaced",
    "runs_unchanged",
    "events_new",
    "quarantined",
    "parts",
    "bytes",
]


def test_log_lists_every_commit_with_its_counts(whole: Path, tmp_path: Path) -> None:
    out = tmp_path / "log.json"
    assert run("log", whole, "-o", out).exit_code == 0
    rows = orjson.loads(out.read_bytes())["rows"]
    assert list(rows[0]) == LOG_COLUMNS
    records = D.read_commits(whole)
    assert [(r["seq"], r["batch_id"], r["committed_at"]) for r in rows] == [
        (r["seq"], r["batch_id"], r["committed_at"]) for r in records
    ]
    counts = [{k: r[k] for k in LOG_COLUMNS[3:] if k not in ("sources", "bytes")} for r in rows]
    assert counts == [
        dict(kind="runs", documents=10, runs_new=9, runs_replaced=0, runs_unchanged=0,
             events_new=0, quarantined=1, parts=6),
        dict(kind="runs", documents=1, runs_new=1, runs_replaced=0, runs_unchanged=0,
             events_new=0, quarantined=0, parts=5),
        dict(kind="events", documents=0, runs_new=0, runs_replaced=0, runs_unchanged=0,
             events_new=3, quarantined=0, parts=1),
    ]  # fmt: skip
    assert rows[1]["sources"] == [str(EXAMPLES / "late-revert.ocp.json")]
    assert len(rows[0]["sources"]) == 8
    for row, record in zip(rows, records, strict=True):
        files = [whole / f for fs in record["files"].values() for f in fs]
        assert row["bytes"] == sum(f.stat().st_size for f in files)


def test_log_prints_a_table_with_a_line_per_commit(whole: Path) -> None:
    result = run("log", whole)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "best_of_n.ocp.json and 7 more" in text
    assert "late-revert.ocp.json " in text and "example-events.ndjson " in text
    assert len([x for x in lines(result) if x.startswith("│")]) == 4  # header and 3 commits


def test_log_takes_a_snapshot(whole: Path, tmp_path: Path) -> None:
    out = tmp_path / "log.csv"
    assert run("log", whole, "--snapshot", "2", "-o", out).exit_code == 0
    assert pl.read_csv(out)["seq"].to_list() == [1, 2]
    at = D.read_commits(whole)[0]["committed_at"]
    assert run("log", whole, "--snapshot", at, "-o", out).exit_code == 0
    assert pl.read_csv(out)["seq"].to_list() == [1]


@pytest.mark.parametrize(
    ("snapshot", "first"),
    [
        ("9", "has no commit 9 (its commits are 1 to 3)."),
        ("1999-01-01", "has no commit at or before 1999-01-01T00:00:00.000000Z (its commits"),
        ("yesterday", "cannot read the snapshot 'yesterday' as a commit's seq or an instant."),
    ],
)
def test_log_refuses_a_snapshot_no_commit_matches(whole: Path, snapshot: str, first: str) -> None:
    result = run("log", whole, "--snapshot", snapshot)
    assert result.exit_code == 1
    assert lines(result)[0].startswith("error: ") and first in lines(result)[0]
    assert lines(result)[-1].startswith("Hint: ")


def test_log_of_an_empty_dataset_says_so(tmp_path: Path) -> None:
    D.create(tmp_path / "ds")
    result = run("log", tmp_path / "ds")
    assert (result.exit_code, lines(result)) == (0, ["commits: 0 (nothing ingested yet)"])


def test_log_of_a_folder_that_is_no_dataset_exits_1(tmp_path: Path) -> None:
    result = run("log", tmp_path)
    assert result.exit_code == 1
    assert "is not an ocp-analytics dataset" in lines(result)[0]


# ------------------------------------------------------------ a damaged part, at the edges


def _one_line(result: Result, ds: Path, rel: str) -> None:
    """Exit 1 with one line naming ``rel`` and suggesting verify; nothing else printed."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert len(lines(result)) == 1, result.output
    line = lines(result)[0]
    assert line.startswith(f"error: {ds}: damaged part {rel}: ")
    assert line.endswith(f"Hint: run `ocp-analytics verify {ds}`.")


AS_OF = ["--as-of", "2027-01-01"]


@pytest.mark.parametrize(
    ("command", "table"),
    [
        (["rates", *AS_OF], "runs"),
        (["accept", *AS_OF], "runs"),
        (["compare", "--rule", "tests", "--rule", "tests+review", *AS_OF], "runs"),
        (["report", "-o", "{tmp}/report.html", *AS_OF], "runs"),
        (["unmatched-events"], "artifacts"),  # it reads artifacts and events
        (["sql", "SELECT count(*) FROM runs"], "runs"),
    ],
    ids=lambda c: c[0] if isinstance(c, list) else c,
)
def test_a_truncated_part_is_one_line(
    ds: Path, tmp_path: Path, command: list[str], table: str
) -> None:
    """The issue's first scenario: ``rates`` used to print a 40-line polars traceback."""
    if command[0] == "report":
        pytest.importorskip("jinja2")
    _, rel = _part(ds, table)
    _truncate(ds / rel)
    _one_line(run(command[0], ds, *(a.format(tmp=tmp_path) for a in command[1:])), ds, rel)


def test_ingest_into_a_dataset_with_a_damaged_runs_part_is_one_line(ds: Path) -> None:
    _, runs = _part(ds, "runs")
    _truncate(ds / runs)
    _one_line(run("ingest", EXAMPLES / "minimal.ocp.json", "--out", ds), ds, runs)


@pytest.mark.parametrize("command", ["accept", "rates"])
def test_flipped_bytes_in_a_signals_part_are_one_line(ds: Path, command: str) -> None:
    """The issue's second scenario: ``accept`` used to die with a PanicException."""
    _, signals = _part(ds, "signals")
    assert _flip_until(ds, signals, lambda exc: True)  # bytes whose read fails
    _one_line(run(command, ds, *AS_OF), ds, signals)


def test_a_panic_on_a_damaged_part_is_one_line_from_python(ds: Path) -> None:
    """Bytes that make the Parquet reader panic: exit 1 and our line last, no Python traceback.

    The command hashes the part before the reader meets it, so it stops with
    the checksum's line and no panic at all; a part no checksum covers is
    named after the panic instead (tests/test_verify_fuzz.py), the reader's
    Rust panic hook writing its own report to standard error first.
    """
    _, signals = _part(ds, "signals")
    if not _flip_until(ds, signals, lambda exc: isinstance(exc, PanicException)):
        pytest.skip("no flipped bytes make this polars panic on this part")
    env = {**os.environ, "RUST_BACKTRACE": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "ocp_analytics.cli", "accept", str(ds), "--as-of", "2027-01-01"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and "PanicException" not in proc.stderr
    last = proc.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"error: {ds}: damaged part {signals}: {READ_SUM} (batch 1 ")
    assert "panicked" not in proc.stderr


def test_errors_that_are_not_damage_are_left_as_they_were(whole: Path) -> None:
    """A query's own mistake costs no check of the parts and keeps its message."""
    result = run("sql", whole, "SELEC 1")
    assert result.exit_code == 1
    assert "Parser Error" in lines(result)[0] and "verify" not in result.output
