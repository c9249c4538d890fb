"""Acceptance, rates and compare from the dataset and the command line.

Sliced evaluation (a ``doc_id`` range at a time) must give exactly what one
pass over every run gives, including across batches and replaced runs.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import ocp_analytics as oa
from ocp_analytics.cli import app
from ocp_analytics.evaluate import doc_ranges, open_tables
from ocp_analytics.rates import flips_from, group_exprs, rates_from

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(ROOT))

from benchmarks.generate import generate_documents, write_rules  # noqa: E402

AS_OF = "2027-01-01T00:00:00Z"
EXAMPLES = Path(__file__).parent / "data" / "examples"


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


def _unsliced_rates(ds: Path, rules: Path, by: list[str], min_tier: str | None) -> pl.DataFrame:
    """Rates from every acceptance row at once, groups joined on run_id."""
    frames = open_tables(ds)[0]
    acc = oa.acceptance(frames, rules, as_of=AS_OF)
    if by:
        groups = group_exprs(by, frames["runs"].collect_schema())
        acc = acc.join(frames["runs"].select("run_id", *groups), on="run_id", how="left")
    return rates_from(acc, by, min_tier).collect()


def test_ranges_follow_batches(generated: tuple[Path, Path]) -> None:
    ds, _ = generated
    ranges = doc_ranges(oa.scan_dataset(ds).manifest, 400)
    assert len(ranges) >= 4
    assert all(lo < hi for lo, hi in ranges)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    assert doc_ranges(None) == [] and doc_ranges(oa.scan_dataset(ds).manifest.head(0)) == []


@pytest.mark.parametrize(
    ("by", "min_tier"),
    [([], None), (["label.team"], None), (["task_type", "label.team"], "reported")],
)
def test_sliced_rates_equal_one_pass(
    generated: tuple[Path, Path], by: list[str], min_tier: str | None
) -> None:
    ds, rules = generated
    sliced = oa.rates(ds, rules, by=by, min_tier=min_tier, as_of=AS_OF, slice_runs=250).collect()
    assert_frame_equal(sliced, _unsliced_rates(ds, rules, by, min_tier))
    assert sliced.filter(pl.col("rule") == "recorded")["runs"].sum() == 1500


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


def test_sliced_compare_equals_one_pass(generated: tuple[Path, Path]) -> None:
    ds, rules = generated
    matrix, flips = oa.compare(ds, rules, by="label.team", as_of=AS_OF, sample=4, slice_runs=250)
    acc = oa.acceptance(ds, rules, as_of=AS_OF)
    assert_frame_equal(flips.collect(), flips_from(acc, 4).collect(), check_dtypes=False)
    rated = _unsliced_rates(ds, rules, ["label.team"], None)
    got = matrix.collect().unpivot(index="label.team")
    got = got.filter(~pl.col("variable").str.contains("__"))
    want = rated.select("label.team", pl.col("rule").alias("variable"), "accept_rate")
    assert_frame_equal(
        got.sort("label.team", "variable"),
        want.rename({"accept_rate": "value"}).sort("label.team", "variable"),
        check_dtypes=False,
    )


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


def test_compare_with_a_run_id_twice_in_memory() -> None:
    doc = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())
    tables = oa.read_documents([doc, doc])
    _, flips = oa.compare(tables, ["tests"], as_of=AS_OF)
    assert flips.collect()["runs_compared"].to_list() == [2, 2]


def test_bad_slice_size_and_carry_names_are_refused(generated: tuple[Path, Path]) -> None:
    from ocp_analytics.acceptance import decide
    from ocp_analytics.timeaxis import resolve_as_of

    ds, _ = generated
    with pytest.raises(oa.OcpAnalyticsError, match="slice_runs"):
        oa.rates(ds, slice_runs=0)
    with pytest.raises(ValueError, match="leading '_'"):
        decide(open_tables(ds)[0], [], resolve_as_of(AS_OF), carry=[pl.lit(1).alias("valid")])


def test_rates_by_unknown_column_says_what_to_use(generated: tuple[Path, Path]) -> None:
    ds, _ = generated
    with pytest.raises(oa.OcpAnalyticsError, match=r"label\.KEY"):
        oa.rates(ds, by=["no_such_column"])


def test_rates_median_and_shares_from_histogram() -> None:
    acc = pl.LazyFrame(
        {
            "rule": ["r"] * 6,
            "outcome": ["accepted"] * 5 + ["rejected"],
            "tier": ["verified"] * 6,
            "window_open": [False, True, False, False, False, False],
            "attempts_to_acceptance": [1, 4, 2, 1, None, None],
            "accepted_attempt_n": [1, 2, 1, 1, None, None],
            "as_of": [None] * 6,
        },
        schema_overrides={"as_of": pl.Datetime("us", "UTC")},
    )
    row = rates_from(acc).collect().row(0, named=True)
    assert (row["runs"], row["accepted"], row["rejected"], row["provisional"]) == (6, 5, 1, 1)
    assert row["attempts_median"] == 1.5  # (1, 1, 2, 4): middle two are 1 and 2
    assert row["attempts_mean"] == 2.0
    assert row["first_attempt_share"] == 0.5
    assert row["first_node_attempt_share"] == 0.75  # attempt 2 of run 3 is its node's first


# --- command line ------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture(scope="module")
def examples_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("cli") / "ds"
    result = runner.invoke(app, ["ingest", str(EXAMPLES), "--out", str(ds)])
    assert result.exit_code == 0, result.output
    return ds


def test_cli_accept_formats(examples_ds: Path, tmp_path: Path) -> None:
    args = ["accept", str(examples_ds), "--rule", "tests+review", "--as-of", AS_OF]
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "as_of: 2027-01-01T00:00:00+00:00" in table.output
    as_json = runner.invoke(app, [*args, "--format", "json"])
    body = json.loads(as_json.stdout)
    assert body["as_of"] == "2027-01-01T00:00:00+00:00"
    assert {r["rule"] for r in body["rows"]} == {"recorded", "tests+review"}
    out = tmp_path / "acc.parquet"
    written = runner.invoke(app, [*args, "--format", "parquet", "--out", str(out)])
    assert written.exit_code == 0, written.output
    assert pl.read_parquet(out).height == len(body["rows"])
    csv = runner.invoke(app, [*args, "--format", "csv", "--out", str(tmp_path / "a.csv")])
    assert csv.exit_code == 0
    assert pl.read_csv(tmp_path / "a.csv").height == len(body["rows"])


def test_cli_rates_and_compare(examples_ds: Path) -> None:
    rates = runner.invoke(
        app,
        ["rates", str(examples_ds), "--rule", "tests", "--by", "ocp_version", "--format", "json"],
    )
    assert rates.exit_code == 0, rates.output
    rows = json.loads(rates.stdout)["rows"]
    assert {r["rule"] for r in rows} == {"recorded", "tests"}
    compare = runner.invoke(
        app, ["compare", str(examples_ds), "--rule", "tests", "--rule", "tests+review"]
    )
    assert compare.exit_code == 0, compare.output
    assert "flips" in compare.output


def test_cli_errors_exit_1_with_a_hint(examples_ds: Path, tmp_path: Path) -> None:
    bad_rule = runner.invoke(app, ["accept", str(examples_ds), "--rule", "tests+"])
    assert bad_rule.exit_code == 1
    assert "Hint" in bad_rule.output
    bad_by = runner.invoke(app, ["rates", str(examples_ds), "--by", "nope"])
    assert bad_by.exit_code == 1 and "label.KEY" in bad_by.output
    missing = runner.invoke(app, ["rates", str(tmp_path / "nothing")])
    assert missing.exit_code == 1
