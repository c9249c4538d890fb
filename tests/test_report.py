"""The nightly report (issue #10): the page's numbers are those of ``oa.rates``; empty inputs.

The numbers are read back from the data files written beside the page
(``--data-out``), and the headline's formatted rates are looked up in the
HTML itself. The browser test is ``tests/test_report_browser.py``.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from datetime import datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

import ocp_analytics as oa
from benchmarks.generate import write_ndjson, write_rules
from ocp_analytics.engine.flips import format_difference, format_p
from ocp_analytics.engine.stats.changes import MIN_DECIDED
from ocp_analytics.exceptions import MissingExtraError
from ocp_analytics.reporting.figures import FIGURES, TOP_FLIPS
from ocp_analytics.reporting.numbers import change_text, rate_text
from ocp_analytics.reporting.page import ReportFiles

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

AS_OF = "2026-12-01T00:00:00Z"


def _data(folder: Path, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / f"{name}.json").read_text())
    return doc


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b)


def _same_rows(got: list[dict[str, Any]], frame: pl.DataFrame, cols: list[str]) -> None:
    want = [{c: r[c] for c in cols} for r in frame.iter_rows(named=True)]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for c in cols:
            value = w[c].isoformat() if hasattr(w[c], "isoformat") else w[c]
            got_value = g[c]
            if isinstance(got_value, str) and isinstance(value, str) and "T" in value:
                got_value = got_value.replace("Z", "+00:00")
            assert _close(got_value, value), f"{c}: page data {g[c]!r}, oa.rates {w[c]!r}"


def newcombe_reference(
    x_new: int, n_new: int, x_base: int, n_base: int
) -> tuple[float | None, float | None, float | None, str]:
    """Change, bounds and call from statsmodels' Newcombe interval and the documented floor."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    if n_new == 0 or n_base == 0:
        return None, None, None, "not enough data"
    low, high = confint_proportions_2indep(
        x_new, n_new, x_base, n_base, method="newcomb", compare="diff"
    )
    call = "within noise"
    if min(n_new, n_base) < MIN_DECIDED:
        call = "not enough data"
    elif low > 0:
        call = "improved"
    elif high < 0:
        call = "regressed"
    return x_new / n_new - x_base / n_base, float(low), float(high), call


def same_change(row: dict[str, Any], x_base: int, n_base: int) -> None:
    """A data row's change, bounds and call are statsmodels' against the base counts."""
    want = newcombe_reference(row["accepted"], row["accepted"] + row["rejected"], x_base, n_base)
    got = (row["change"], row["change_low"], row["change_high"], row["call"])
    for g, w in zip(got, want, strict=True):
        assert g == w if w is None or isinstance(w, str) else math.isclose(g, w, abs_tol=1e-12), (
            row,
            want,
        )


def fleet_report(
    root: Path, runs: int, seed: int, **options: Any
) -> tuple[Path, Path, ReportFiles]:
    """``runs`` generated runs of eight teams, four alternative rules, and their report by team."""
    write_ndjson(root / "docs", runs, seed=seed)
    oa.ingest(root / "docs", root / "ds")
    rules = write_rules(root / "rules.toml", 4, seed=seed)
    files = oa.report(root / "ds", rules, by="label.team", as_of=AS_OF, **options)
    return root / "ds", rules, files


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """2,000 generated runs of eight teams, four alternative rules, and their report."""
    root = tmp_path_factory.mktemp("report")
    out, data = root / "out" / "report.html", root / "data"
    ds, rules, files = fleet_report(root, 2000, 5, since="60d", out=out, data_out=data)
    assert files.html == out
    return ds, rules, data


RATE_COLS = ["rule", "runs", "accepted", "rejected", "unknown", "accept_rate", "ci_low", "ci_high"]


def test_headline_equals_rates(fleet: tuple[Path, Path, Path]) -> None:
    ds, rules, data = fleet
    head = _data(data, "headline")
    assert head["since"].startswith("2026-10-02T00:00:00")
    want = oa.rates(ds, [rules], as_of=AS_OF, since="60d").sort("rule")
    got = sorted(head["rows"], key=lambda r: r["rule"])
    _same_rows(got, want, [*RATE_COLS, "decided_share", "provisional", "tier_verified"])
    prev = oa.rates(
        ds, [rules], as_of=AS_OF, since="2026-08-03T00:00:00Z", until="2026-10-02T00:00:00Z"
    )
    prev_df = prev.sort("rule")
    assert [r["prev_runs"] for r in got] == prev_df["runs"].to_list()
    assert [r["prev_accept_rate"] for r in got] == prev_df["accept_rate"].to_list()
    assert [r["prev_accepted"] for r in got] == prev_df["accepted"].to_list()
    assert [r["prev_rejected"] for r in got] == prev_df["rejected"].to_list()
    assert "significant" not in got[0] and "direction" not in got[0]  # replaced by the call
    for r, p in zip(got, prev_df.iter_rows(named=True), strict=True):
        same_change(r, p["accepted"], p["accepted"] + p["rejected"])


def test_headline_rates_are_shown_in_the_page(fleet: tuple[Path, Path, Path]) -> None:
    _, _, data = fleet
    html = (data.parent / "out" / "report.html").read_text()
    for r in _data(data, "headline")["rows"]:
        decided = r["accepted"] + r["rejected"]
        shown = rate_text(r["accept_rate"], r["ci_low"], r["ci_high"], decided)
        assert f"<td>{shown}</td>" in html, shown
        assert f"<td>{r['runs']:,}</td>" in html
        change = change_text(r["change"], r["change_low"], r["change_high"], r["call"])
        css = {"improved": "improved", "regressed": "regressed", "within noise": "noise"}
        assert f'<td class="{css.get(r["call"], "nodata")}">{change}</td>' in html, change


def test_largest_flips_are_shown_with_their_paired_test(fleet: tuple[Path, Path, Path]) -> None:
    _, _, data = fleet
    html = (data.parent / "out" / "report.html").read_text()
    table = html[html.index('<table id="flips-table">') :]
    table = table[: table.index("</table>")]
    heads = ["decided under both", "difference [95 %]", "p (McNemar)", "p (Holm)"]
    assert "".join(f"<th>{h}</th>" for h in heads) in table
    rows = [r for r in _data(data, "flips")["rows"] if r["flips"] > 0][:TOP_FLIPS]
    assert rows and table.count("<tr>") == len(rows) + 1
    real = 0
    for r in rows:
        diff = format_difference(r["difference"], r["difference_low"], r["difference_high"])
        mcnemar = escape(format_p(r["p_value"], r["p_method"]))
        holm = escape(format_p(r["p_holm"]))
        if r["p_holm"] is not None and r["p_holm"] < 0.05:
            real += 1
            cells = f'<td class="real">{diff}</td><td class="num">{mcnemar}</td>'
            cells += f'<td class="real">{holm} real difference</td>'
        else:
            cells = f'<td class="num">{diff}</td><td class="num">{mcnemar}</td><td>{holm}</td>'
        assert f"<td>{r['n']:,}</td>{cells}" in table, r
    assert 0 < real < len(rows)  # the fleet has pairs on both sides of the line
    assert table.count("real difference") == real
    assert 'id="paired-test">Paired test: over the runs decided under both rules' in html


def test_trend_and_matrix_equal_rates(fleet: tuple[Path, Path, Path]) -> None:
    ds, rules, data = fleet
    index = _data(data, "index")
    assert index["period"] == "day"
    trend = oa.rates(ds, [rules], by="label.team", as_of=AS_OF, since="60d", period="day")
    want = trend.sort("period", "label.team", "rule", nulls_last=True)
    got = sorted(
        _data(data, "rates_by_period")["rows"],
        key=lambda r: (r["period"], r["label.team"] is None, r["label.team"] or "", r["rule"]),
    )
    _same_rows(got, want, ["period", "label.team", *RATE_COLS])
    by_team = oa.rates(ds, [rules], by="label.team", as_of=AS_OF, since="60d")
    cells = {(r["label.team"], r["rule"]): r for r in _data(data, "rates_by_group")["rows"]}
    assert len(cells) == by_team.height
    for r in by_team.iter_rows(named=True):
        cell = cells[(r["label.team"], r["rule"])]
        for c in ("accept_rate", "ci_low", "ci_high"):
            assert _close(cell[c], r[c]), (r, c)


def test_each_period_is_compared_with_the_period_before(fleet: tuple[Path, Path, Path]) -> None:
    """Per team and rule, each day against the day before (none before the window's first)."""
    _, _, data = fleet
    rows = _data(data, "rates_by_period")["rows"]
    by_key = {(datetime.fromisoformat(r["period"]), r["label.team"], r["rule"]): r for r in rows}
    compared = 0
    for r in rows:
        day = datetime.fromisoformat(r["period"]) - timedelta(days=1)
        base = by_key.get((day, r["label.team"], r["rule"]))
        if base is None:
            assert (r["prev_accepted"], r["prev_rejected"]) == (None, None)
            assert (r["change"], r["call"]) == (None, "not enough data")
            continue
        assert (r["prev_accepted"], r["prev_rejected"]) == (base["accepted"], base["rejected"])
        same_change(r, base["accepted"], base["accepted"] + base["rejected"])
        compared += r["change"] is not None
    assert compared > 100  # most cells have a day before with decided runs


def test_attempts_and_flips_equal_the_api(fleet: tuple[Path, Path, Path]) -> None:
    ds, rules, data = fleet
    dist = oa.attempts_distribution(ds, [rules], as_of=AS_OF, since="60d")
    cols = ["rule", "attempts_to_acceptance", "accepted", "share", "cumulative_share"]
    got = sorted(
        _data(data, "attempts_distribution")["rows"],
        key=lambda r: (r["rule"], r["attempts_to_acceptance"]),
    )
    _same_rows(got, dist.sort("rule", "attempts_to_acceptance"), cols)
    matrix, _ = oa.compare(ds, [rules], by="label.team", as_of=AS_OF, since="60d")
    # the page's flips are over every run of the window: those of compare without groups
    _, flips = oa.compare(ds, [rules], as_of=AS_OF, since="60d")
    got = sorted(_data(data, "flips")["rows"], key=lambda r: (r["rule_a"], r["rule_b"]))
    want = flips
    assert want["b"].sum() > 0 and want["p_holm"].min() < 1  # the test sees real differences
    _same_rows(got, want, want.columns)
    m = matrix.sort("label.team", nulls_last=True)
    got = sorted(
        _data(data, "compare_matrix")["rows"],
        key=lambda r: (r["label.team"] is None, r["label.team"] or ""),
    )
    _same_rows(got, m, m.columns)


def test_index_names_every_figure(fleet: tuple[Path, Path, Path]) -> None:
    _, _, data = fleet
    index = _data(data, "index")
    assert set(index["figures"]) == set(FIGURES)
    for entry in index["figures"].values():
        assert (data / entry["file"]).is_file()


def test_page_is_self_contained(fleet: tuple[Path, Path, Path]) -> None:
    _, _, data = fleet
    html = (data.parent / "out" / "report.html").read_text()
    assert "<script" not in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html), "no remote resource"
    assert html.count("<svg") == 9  # eight sections, and the sweep of alt_004 (it has a score)


# --- empty inputs ---------------------------------------------------------------------


def _doc(rid: str, team: str, verdict: str | None, ended: str) -> dict[str, Any]:
    signals = []
    if verdict is not None:
        signals.append(
            {
                "id": "s0",
                "kind": "verdict",
                "name": "tests",
                "value": verdict,
                "tier": "verified",
                "observed_at": ended,
            }
        )
    return {
        "ocp": "0.3",
        "producer": {"name": "t"},
        "privacy": {"profile": "metadata_only"},
        "run": {
            "id": rid,
            "started_at": ended,
            "ended_at": ended,
            "labels": {"team": team},
            "acceptance_rule": {"name": "t", "requires": ["tests"]},
            "signals": signals,
        },
        "nodes": [],
        "attempts": [],
    }


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Team a decides its runs, team b never does (no verdict)."""
    root = tmp_path_factory.mktemp("small")
    docs = [
        _doc("a1", "a", "pass", "2026-11-20T10:00:00Z"),
        _doc("a2", "a", "fail", "2026-11-21T10:00:00Z"),
        _doc("b1", "b", None, "2026-11-21T11:00:00Z"),
    ]
    (root / "docs.ndjson").write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
    oa.ingest(root / "docs.ndjson", root / "ds")
    return root / "ds"


def test_no_runs_in_the_window(small: Path, tmp_path: Path) -> None:
    files = oa.report(
        small,
        "tests+review",
        by="label.team",
        since="2026-01-01",
        until="2026-02-01",
        as_of=AS_OF,
        out=tmp_path / "r.html",
    )
    html = files.html.read_text()
    assert "No runs in the window" in html
    assert "<svg" not in html
    head = _data(files.data_dir, "headline")["rows"]
    assert [(r["rule"], r["runs"], r["accept_rate"]) for r in head] == [
        ("recorded", 0, None),
        ("tests+review", 0, None),
    ]
    assert _data(files.data_dir, "rates_by_period")["rows"] == []


def test_group_with_no_decided_run_and_a_rule_no_run_can_decide(
    small: Path, tmp_path: Path
) -> None:
    files = oa.report(
        small,
        "nobody_reports_this",
        by="label.team",
        since="30d",
        as_of=AS_OF,
        out=tmp_path / "r.html",
    )
    cells = {
        (r["label.team"], r["rule"]): r["accept_rate"]
        for r in _data(files.data_dir, "rates_by_group")["rows"]
    }
    assert cells == {
        ("a", "recorded"): 0.5,
        ("a", "nobody_reports_this"): None,
        ("b", "recorded"): None,
        ("b", "nobody_reports_this"): None,
    }
    head = {r["rule"]: r for r in _data(files.data_dir, "headline")["rows"]}
    assert head["nobody_reports_this"]["accept_rate"] is None
    assert head["nobody_reports_this"]["decided_share"] == 0.0
    html = files.html.read_text()
    assert '<figure class="chart" data-figure="rates_by_group">' in html
    assert "<td>–</td>" in html


def test_no_window_means_all_runs_and_no_previous_window(small: Path, tmp_path: Path) -> None:
    files = oa.report(small, as_of=AS_OF, out=tmp_path / "r.html", data_format="parquet")
    head = pl.read_parquet(files.data["headline"])
    assert head.select("rule", "runs", "accepted", "prev_runs").rows() == [("recorded", 3, 1, 0)]
    assert head["change"].to_list() == [None]
    assert head["call"].to_list() == ["not enough data"]
    assert "none: the window has no start" in files.html.read_text()


def test_a_fall_on_ten_runs_a_side_is_not_enough_data(tmp_path: Path) -> None:
    """Ten runs accepted in the previous week, ten rejected in this one: under the floor."""
    docs = [_doc(f"p{i}", "a", "pass", f"2026-11-2{i // 5}T10:00:00Z") for i in range(10)]
    docs += [_doc(f"c{i}", "a", "fail", f"2026-11-2{5 + i // 5}T10:00:00Z") for i in range(10)]
    (tmp_path / "d.ndjson").write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
    oa.ingest(tmp_path / "d.ndjson", tmp_path / "ds")
    files = oa.report(
        tmp_path / "ds",
        since="2026-11-25",
        until="2026-12-01",
        as_of=AS_OF,
        out=tmp_path / "r.html",
    )
    (row,) = _data(files.data_dir, "headline")["rows"]
    assert (row["runs"], row["accept_rate"], row["prev_runs"], row["prev_accept_rate"]) == (
        10,
        0.0,
        10,
        1.0,
    )
    assert (row["change"], row["call"]) == (-1.0, "not enough data")
    same_change(row, 10, 10)
    html = files.html.read_text()
    assert '<td class="nodata">-100.0 pts [' in html and "] not enough data</td>" in html


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "altair" else real(name, *a)
    )
    with pytest.raises(MissingExtraError) as err:
        oa.report("nowhere", out="never.html")
    message = str(err.value)
    assert "\n" not in message
    assert "pip install 'ocp-analytics[report]'" in message
    assert isinstance(err.value, ImportError)


def test_cli_report(small: Path, tmp_path: Path) -> None:
    from ocp_analytics.cli import app

    out = tmp_path / "page.html"
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(small),
            "--rule",
            "tests",
            "--by",
            "label.team",
            "--since",
            "30d",
            "--as-of",
            AS_OF,
            "--out",
            str(out),
            "--data-out",
            str(tmp_path / "d"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert out.is_file() and (tmp_path / "d" / "headline.json").is_file()
    assert str(out) in result.output


# ------------------------------------------------------------- issue 39


EXAMPLES39 = Path(__file__).parent / "data" / "examples"


@pytest.fixture(scope="module")
def examples_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report39") / "ds"
    oa.ingest(EXAMPLES39, path)
    return path


def test_headline_says_how_fresh_the_data_is(examples_ds: Path, tmp_path: Path) -> None:
    files = oa.report(examples_ds, by="task_type", as_of="2027-01-01", out=tmp_path / "r.html")
    fresh = _data(files.data_dir, "headline")["freshness"]
    assert fresh["newest_run_end"].startswith("2026-11-30T10:00:00")
    assert (fresh["newest_run_end_age"], fresh["newest_run_end_age_s"]) == ("31d 14h", 2728800.0)
    assert fresh["last_ingest"] is not None and fresh["last_ingest_age_s"] > 0
    page = files.html.read_text()
    assert "newest run ended 2026-11-30T10:00:00Z (31d 14h before as_of); last ingest" in page


def test_max_staleness_refuses_a_stale_page(examples_ds: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    out = tmp_path / "r.html"
    args = ["report", str(examples_ds), "--as-of", "2027-01-01", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--max-staleness", "2d"])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "error: stale data: the newest run ended 31d 14h before as_of "
        "2027-01-01T00:00:00+00:00, more than 2d; no page written."
    )
    assert not out.exists()
    fresh = CliRunner().invoke(app, [*args, "--max-staleness", "32d"])
    assert fresh.exit_code == 0 and out.exists()


def test_heatmap_counts_and_greys_undecided_cells(examples_ds: Path, tmp_path: Path) -> None:
    from ocp_analytics.reporting.charts import DECIDED_FLOOR

    files = oa.report(
        examples_ds, "tests+review", by="task_type", as_of="2027-01-01", out=tmp_path / "r.html"
    )
    rows = _data(files.data_dir, "rates_by_group")["rows"]
    cell = next(r for r in rows if (r["task_type"], r["rule"]) == ("feature", "recorded"))
    assert (cell["runs"], cell["decided"], cell["accepted"], cell["decided_share"]) == (
        15,
        15,
        15,
        1.0,
    )
    assert DECIDED_FLOOR == 0.2
    page = files.html.read_text()
    assert "of 15 decided" in page
    assert "fewer than 20 % of the runs were decided" in page


def test_a_rule_naming_an_unknown_verdict_is_a_banner(examples_ds: Path, tmp_path: Path) -> None:
    files = oa.report(examples_ds, "tests+reveiw", as_of="2027-01-01", out=tmp_path / "r.html")
    page = files.html.read_text()
    assert (
        '<p class="banner">warning: rule &#39;tests+reveiw&#39; names a verdict &#39;reveiw&#39; '
        "that no run carries; did you mean &#39;review&#39;?</p>"
    ) in page


def test_a_page_never_writes_over_another_pages_data(examples_ds: Path, tmp_path: Path) -> None:
    first = oa.report(examples_ds, as_of="2027-01-01", out=tmp_path / "nightly.html")
    assert first.data_dir == tmp_path / "nightly-data"
    assert _data(first.data_dir, "index")["page"] == "nightly.html"
    with pytest.raises(oa.OcpAnalyticsError, match=r"holds the data of the page 'nightly\.html'"):
        oa.report(examples_ds, as_of="2027-01-01", out=tmp_path / "nightly.htm")
    again = oa.report(examples_ds, as_of="2027-01-01", out=tmp_path / "nightly.html")
    assert again.data_dir == first.data_dir  # the same page may rewrite its own data


def test_rates_read_one_way_on_the_page(examples_ds: Path, tmp_path: Path) -> None:
    files = oa.report(examples_ds, "tests+review", as_of="2027-01-01", out=tmp_path / "r.html")
    assert "100.0 % [78.5–100.0] of 14 decided" in files.html.read_text()


def test_the_newest_run_end_ignores_a_replaced_version(tmp_path: Path) -> None:
    """Freshness reads the runs' current versions: a replaced version's later end is not news."""
    from types import SimpleNamespace

    from benchmarks.generate import generate_documents
    from ocp_analytics.reporting.freshness import _newest_run_end

    docs = [d for d in generate_documents(40, 5) if d["run"].get("ended_at")]
    newest = max(docs, key=lambda d: d["run"]["ended_at"])
    ds = tmp_path / "ds"
    oa.ingest(_ndjson(tmp_path / "a.ndjson", docs), ds)
    again = json.loads(json.dumps(newest))
    again["run"]["ended_at"] = again["run"]["started_at"] = "2025-01-01T00:00:00Z"
    oa.ingest(_ndjson(tmp_path / "b.ndjson", [again]), ds)
    scanned = oa.scan_dataset(ds)
    assert scanned.superseded() is not None and scanned.superseded().height == 1
    ctx = SimpleNamespace(
        dataset=scanned, as_of=datetime.fromisoformat("2027-01-01T00:00:00+00:00")
    )
    found = _newest_run_end(ctx)  # type: ignore[arg-type]
    current = scanned["runs"].select(pl.col("ended_at").max()).collect().item()
    assert found == current
    assert found.isoformat() < newest["run"]["ended_at"].replace("Z", "+00:00")


def _ndjson(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
    return path


def test_current_versions_read_through_the_shared_superseded_read(tmp_path: Path) -> None:
    """``Dataset.current`` holds the rows ``ds[table]`` holds, for every run table.

    The report's data quality and freshness read the tables through it, so the
    replaced versions are read once for the passes and them; a window's
    tables (``within``) keep its runs only, findings too.
    """
    from benchmarks.generate import generate_documents
    from ocp_analytics.schemas import RUN_TABLES

    docs = sorted(generate_documents(60, 11), key=lambda d: d["run"].get("ended_at") or "")
    docs = [d for d in docs if d["run"].get("ended_at")]
    docs[0]["run"]["ended_at"] = "not a time"  # a finding in the first batch, out of the window
    ds = tmp_path / "ds"
    oa.ingest(_ndjson(tmp_path / "a.ndjson", docs[:30]), ds)
    oa.ingest(_ndjson(tmp_path / "b.ndjson", docs[30:]), ds)
    again = json.loads(json.dumps(docs[40:47]))
    for d in again:  # new versions of 7 runs, each moved to another team
        d["run"].setdefault("labels", {})["team"] = "moved"
    oa.ingest(_ndjson(tmp_path / "c.ndjson", again), ds)
    scanned = oa.scan_dataset(ds)
    assert scanned.superseded() is not None and scanned.superseded().height == 7
    since = datetime.fromisoformat(docs[35]["run"]["ended_at"].replace("Z", "+00:00"))
    windowed = scanned.within(since, None)
    assert windowed.parts is not None and windowed.parts.pruned
    for read in (scanned, windowed):
        for table in RUN_TABLES:
            want = read[table].collect()
            got = read.current(table).collect()
            assert got.sort(got.columns).equals(want.sort(want.columns)), table
    assert scanned.current("findings").collect().height > windowed["findings"].collect().height


def test_the_newest_run_end_reads_the_last_days_first(tmp_path: Path) -> None:
    """A run ended in the week before as_of: only the parts of those days are read, and the
    figure is the whole dataset's (a replaced version's later end still not news)."""
    from types import SimpleNamespace

    from benchmarks.generate import generate_documents
    from ocp_analytics.reporting.freshness import _newest_run_end

    docs = sorted(
        (d for d in generate_documents(60, 7) if d["run"].get("ended_at")),
        key=lambda d: d["run"]["ended_at"],
    )
    ds = tmp_path / "ds"
    oa.ingest(_ndjson(tmp_path / "old.ndjson", docs[:-5]), ds)
    oa.ingest(_ndjson(tmp_path / "new.ndjson", docs[-5:]), ds)
    again = json.loads(json.dumps(docs[-1]))
    again["run"]["ended_at"] = again["run"]["started_at"] = "2025-01-01T00:00:00Z"
    oa.ingest(_ndjson(tmp_path / "again.ndjson", [again]), ds)
    as_of = datetime.fromisoformat(docs[-1]["run"]["ended_at"].replace("Z", "+00:00"))
    scanned = oa.scan_dataset(ds)
    recent = scanned.within(as_of - timedelta(days=7), as_of + timedelta(microseconds=1))
    assert recent is not scanned  # the old batch's parts are not read
    ctx = SimpleNamespace(dataset=scanned, as_of=as_of)
    found = _newest_run_end(ctx)  # type: ignore[arg-type]
    at = pl.lit(as_of).dt.cast_time_unit("us")
    ended = pl.col("ended_at")
    whole = scanned["runs"].filter(ended <= at).select(ended.max()).collect().item()
    assert found == whole
    assert found < as_of  # the newest run's own end went with its replaced version
