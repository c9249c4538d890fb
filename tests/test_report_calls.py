"""The report's calls and group columns (issues #37 and #39).

A change against the previous window, and each period against the one
before it, is Newcombe's difference with its interval and a call, held to
statsmodels (``tests.test_report.same_change``) on a corpus built so that
every call appears once in the per-period view. Every data file names its
group columns as ``--by`` spells them and ``oa.rates`` returns them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.reporting.numbers import change_text
from tests.test_report import _data, _doc, same_change

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

AS_OF = "2026-12-01T00:00:00Z"
# (day of November 2026, runs passing, runs failing): the previous window is
# Nov 19-25 (40 accepted); this one Nov 25 - Dec 1, by day
DAYS = [(20, 40, 0), (25, 40, 0), (26, 0, 40), (27, 40, 0), (28, 39, 1), (29, 10, 0)]
# each day's call against the day before: none before the window's first day
CALLS = {
    25: "not enough data",
    26: "regressed",
    27: "improved",
    28: "within noise",
    29: "not enough data",
}


@pytest.fixture(scope="module")
def swings(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("calls")
    docs = [
        _doc(f"d{day}-{i}", "a", "pass" if i < passing else "fail", f"2026-11-{day}T10:00:00Z")
        for day, passing, failing in DAYS
        for i in range(passing + failing)
    ]
    (root / "d.ndjson").write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n")
    oa.ingest(root / "d.ndjson", root / "ds")
    return oa.report(
        root / "ds",
        since="2026-11-25",
        until="2026-12-01",
        as_of=AS_OF,
        period="day",
        by="label.team",
        out=root / "r.html",
    )


def test_the_headline_calls_a_fall_beyond_noise_regressed(swings: Any) -> None:
    (row,) = _data(swings.data_dir, "headline")["rows"]
    assert (row["prev_accepted"], row["prev_rejected"], row["accepted"], row["rejected"]) == (
        40,
        0,
        129,
        41,
    )
    assert row["call"] == "regressed"
    same_change(row, 40, 40)
    page = swings.html.read_text()
    change = change_text(row["change"], row["change_low"], row["change_high"], "regressed")
    assert f'<td class="regressed">{change}</td>' in page
    bounds = f"[{100 * row['change_low']:+.1f}, {100 * row['change_high']:+.1f}]"
    assert '<div class="card regressed">' in page
    assert f"95 % interval {bounds}: regressed" in page


def test_each_day_is_called_against_the_day_before(swings: Any) -> None:
    rows = _data(swings.data_dir, "rates_by_period")["rows"]
    got = {int(r["period"][8:10]): r for r in rows if r["rule"] == "recorded"}
    assert {d: r["call"] for d, r in got.items()} == CALLS
    counts = {day: (passing, passing + failing) for day, passing, failing in DAYS}
    for day, r in got.items():
        if day == 25:  # the day before is outside the window: no base
            assert (r["prev_accepted"], r["change"]) == (None, None)
            continue
        assert r["label.team"] == "a"
        same_change(r, *counts[day - 1])


def test_the_page_lists_the_called_periods_newest_first(swings: Any) -> None:
    page = swings.html.read_text()
    summary = (
        "Against the previous day, per group and rule: 1 improved, 1 regressed, "
        "1 within noise, 2 not enough data (fewer than 30 decided runs on a side)."
    )
    assert summary in page
    table = page[page.index('<table id="period-changes-table">') :]
    table = table[: table.index("</table>")]
    rows = _data(swings.data_dir, "rates_by_period")["rows"]
    by_day = {int(r["period"][8:10]): r for r in rows if r["rule"] == "recorded"}
    shown = [(27, "improved"), (26, "regressed")]
    assert table.count("<tr>") == len(shown) + 1
    at = [table.index(f"<td>2026-11-{day}</td><td>a</td><td>recorded</td>") for day, _ in shown]
    assert at == sorted(at)  # newest first
    for day, call in shown:
        r = by_day[day]
        text = change_text(r["change"], r["change_low"], r["change_high"], call)
        assert f'<td class="{call}">{text}</td>' in table
    # the trend chart marks the called periods and names the marks in its legend
    chart = page[page.index('data-figure="rates_by_period"') :]
    assert "against the previous period" in chart[: chart.index("</figure>")]


# --- one spelling for groups (#39) ---------------------------------------------------


EXAMPLES = Path(__file__).parent / "data" / "examples"
BY = ["task_type", "label.team"]


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The examples' report by a runs column and a label (which no example run has)."""
    root = tmp_path_factory.mktemp("groups")
    oa.ingest(EXAMPLES, root / "ds")
    out = {}
    for fmt in ("json", "parquet"):
        out[fmt] = oa.report(
            root / "ds",
            "tests+review",
            by=BY,
            as_of="2027-01-01",
            period="month",
            out=root / f"{fmt}.html",
            data_format=fmt,
        )
    return root / "ds", out


def _columns(files: Any, fmt: str) -> dict[str, list[str]]:
    if fmt == "parquet":
        return {n: list(pl.read_parquet_schema(p)) for n, p in files.data.items()}
    cols = {}
    for name, path in files.data.items():
        rows = json.loads(path.read_text())["rows"]
        cols[name] = list(rows[0]) if rows else []
    return cols


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_no_data_file_carries_a_joined_group_column(grouped: Any, fmt: str) -> None:
    ds, files = grouped
    cols = _columns(files[fmt], fmt)
    assert all("group" not in c for c in cols.values()), cols
    rates = oa.rates(ds, "tests+review", by=BY, as_of="2027-01-01", period="month")
    keys = rates.columns[: 1 + len(BY)]
    assert keys == ["period", *BY]
    assert cols["rates_by_period"][: len(keys) + 1] == [*keys, "rule"]
    assert cols["rates_by_group"][: len(BY) + 1] == [*BY, "rule"]
    matrix, _ = oa.compare(ds, "tests+review", by=BY, as_of="2027-01-01")
    assert cols["compare_matrix"] == matrix.columns


def test_group_cells_are_those_of_rates_by_the_same_columns(grouped: Any) -> None:
    ds, files = grouped
    want = oa.rates(ds, "tests+review", by=BY, as_of="2027-01-01")
    got = pl.read_parquet(files["parquet"].data["rates_by_group"])
    assert got["label.team"].null_count() == got.height  # null labels join as groups too
    cols = [*BY, "rule", "accept_rate", "ci_low", "ci_high", "runs", "accepted"]
    order = [*BY, "rule"]
    assert got.select(cols).sort(order).to_dicts() == want.select(cols).sort(order).to_dicts()


def test_without_groups_the_rows_have_no_group_column(grouped: Any, tmp_path: Path) -> None:
    ds, _ = grouped
    files = oa.report(ds, as_of="2027-01-01", out=tmp_path / "r.html")
    rows = _data(files.data_dir, "rates_by_group")["rows"]
    assert rows and {next(iter(r)) for r in rows} == {"rule"}
    assert list(_data(files.data_dir, "rates_by_period")["rows"][0])[:2] == ["period", "rule"]
