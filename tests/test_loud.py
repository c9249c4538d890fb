"""Numbers that cannot mislead (issue #39): loud typos, counts beside rates, filters, frames.

Literal cases over the bundled v0.3 examples: seven runs (task_type feature x5,
bug_fix, refactor), verdicts ``tests``, ``review``, ``referee`` and scores
``quality``, ``runtime_s``; one run has the label ``example=full-fields``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest

import ocp_analytics as oa
from tests.conftest import AS_OF, EXAMPLES


@pytest.fixture(scope="module")
def v03(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled v0.3 examples, ingested once for this module."""
    ds = tmp_path_factory.mktemp("v03") / "ds"
    oa.ingest(EXAMPLES / "v0.3", ds)
    return ds


def _quiet(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    """``call``'s result, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call(*args, **kwargs)


# ------------------------------------------------------------ frames, not plans


def test_computing_functions_return_data_frames(v03: Path) -> None:
    ds = v03
    assert isinstance(oa.acceptance(ds, as_of=AS_OF), pl.DataFrame)
    assert isinstance(oa.rates(ds, as_of=AS_OF), pl.DataFrame)
    assert isinstance(oa.attempts_distribution(ds, as_of=AS_OF), pl.DataFrame)
    matrix, flips = oa.compare(ds, ["tests"], as_of=AS_OF)
    assert isinstance(matrix, pl.DataFrame) and isinstance(flips, pl.DataFrame)
    assert isinstance(oa.scan_dataset(ds).runs, pl.LazyFrame)  # nothing computed yet


# ------------------------------------------------------------ by=oa.label(...)


def test_by_a_label_expression_equals_by_its_name(v03: Path) -> None:
    by_expr = oa.rates(v03, by=oa.label("example"), as_of=AS_OF)
    by_name = oa.rates(v03, by="label.example", as_of=AS_OF)
    assert by_expr.equals(by_name)
    assert by_expr.filter(rule="recorded").select("label.example", "runs").rows() == [
        ("full-fields", 1),
        (None, 6),
    ]
    m1, _ = oa.compare(v03, ["tests"], by=["task_type", oa.label("example")])
    assert m1.columns[:2] == ["task_type", "label.example"]


def test_by_any_other_expression_is_refused(v03: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match=r'oa\.label\("KEY"\)'):
        oa.rates(v03, by=pl.col("repo"), as_of=AS_OF)


# ------------------------------------------------------------ typos are loud


def test_a_verdict_no_run_carries_warns_with_the_closest_name(
    v03: Path,
) -> None:
    with pytest.warns(UserWarning) as caught:
        out = oa.rates(v03, "tests+reveiw", as_of=AS_OF)
    assert [str(w.message) for w in caught] == [
        "rule 'tests+reveiw' names a verdict 'reveiw' that no run carries; did you mean 'review'?"
    ]
    assert out.filter(rule="tests+reveiw")["accepted"].item() == 0  # the believable 0 %


def test_a_score_no_run_carries_warns_on_every_public_function(v03: Path, tmp_path: Path) -> None:
    want = (
        "rule 'runtme_s<=3600' names a score 'runtme_s' that no run carries; "
        "did you mean 'runtime_s'?"
    )
    calls = [
        lambda: oa.acceptance(v03, "runtme_s<=3600", as_of=AS_OF),
        lambda: oa.write_acceptance(v03, tmp_path / "a.parquet", "runtme_s<=3600", as_of=AS_OF),
        lambda: oa.rates(v03, "runtme_s<=3600", as_of=AS_OF),
        lambda: oa.attempts_distribution(v03, "runtme_s<=3600", as_of=AS_OF),
        lambda: oa.compare(v03, ["tests", "runtme_s<=3600"], as_of=AS_OF),
    ]
    for call in calls:
        with pytest.warns(UserWarning) as caught:
            call()
        assert [str(w.message) for w in caught] == [want]


def test_a_name_far_from_any_gets_no_suggestion(v03: Path) -> None:
    with pytest.warns(UserWarning, match=r"names a verdict 'zzz' that no run carries\.$"):
        oa.acceptance(v03, "zzz", as_of=AS_OF)


def test_a_name_carried_only_outside_the_selection_warns(
    v03: Path,
) -> None:
    # 'review' is carried, but not by the bug_fix run
    with pytest.warns(UserWarning, match="names a verdict 'review' that no run carries"):
        oa.rates(v03, "review", where=["task_type=bug_fix"], as_of=AS_OF)


def test_well_spelt_rules_do_not_warn(v03: Path) -> None:
    _quiet(oa.rates, v03, ["tests+review", "quality>=0.5"], as_of=AS_OF)
    _quiet(oa.compare, v03, ["tests", "tests+review+referee"], as_of=AS_OF)


def test_an_empty_selection_does_not_call_every_name_a_typo(
    v03: Path,
) -> None:
    out = _quiet(oa.rates, v03, "tests", since="2020-01-01", until="2020-02-01")
    assert out.height == 0


def test_a_short_form_with_a_comma_is_refused(v03: Path) -> None:
    with pytest.raises(oa.RuleError, match=r"(?s)a comma does not join verdicts.*'tests\+review'"):
        oa.rates(v03, "tests,review", as_of=AS_OF)


# ------------------------------------------------------------ counts beside every rate


def test_the_compare_matrix_carries_runs_decided_and_accepted(
    v03: Path,
) -> None:
    matrix, _ = oa.compare(v03, ["tests+review"], by="task_type", as_of=AS_OF)
    got = matrix.select(
        "task_type",
        "tests+review",
        "tests+review__runs",
        "tests+review__decided",
        "tests+review__accepted",
    ).rows()
    assert got == [
        ("bug_fix", None, 1, 0, 0),
        ("feature", 1.0, 5, 4, 4),
        ("refactor", None, 1, 0, 0),
    ]
    assert matrix.columns[1:7] == [
        "recorded", "recorded__low", "recorded__high",
        "recorded__runs", "recorded__decided", "recorded__accepted",
    ]  # fmt: skip


def test_a_rule_named_like_a_count_column_is_refused(v03: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match="collides with a column"):
        oa.compare(v03, ["tests", "tests__decided"], as_of=AS_OF)


# ------------------------------------------------------------ where: a label filter


def test_where_keeps_the_runs_meeting_every_filter(v03: Path, tmp_path: Path) -> None:
    ds = v03
    feature = oa.rates(ds, where=["task_type=feature"], as_of=AS_OF)
    assert feature["runs"].to_list() == [5]
    both = oa.rates(ds, where=["task_type=feature", "label.example=full-fields"], as_of=AS_OF)
    assert both["runs"].to_list() == [1]
    assert oa.rates(ds, where=["task_type=refactor", "label.example=full-fields"]).height == 0
    acc = oa.acceptance(ds, where=["label.example=full-fields"], as_of=AS_OF)
    assert acc["run_id"].to_list() == ["run_ex_full_a"]
    rows = oa.write_acceptance(ds, tmp_path / "a.parquet", where=["task_type=bug_fix"])
    assert rows == 1
    matrix, flips = oa.compare(ds, ["tests"], where=["task_type=feature"], as_of=AS_OF)
    assert matrix["tests__runs"].to_list() == [5]
    assert flips["runs_compared"].to_list() == [5, 5]


def test_where_on_a_missing_column_is_refused_with_a_hint(v03: Path) -> None:
    with pytest.raises(oa.OcpAnalyticsError, match=r"(?s)cannot filter on 'team'.*label\.KEY"):
        oa.rates(v03, where=["team=payments"], as_of=AS_OF)
    with pytest.raises(oa.OcpAnalyticsError, match=r"cannot read the filter 'label\.team'"):
        oa.rates(v03, where=["label.team"], as_of=AS_OF)


def test_a_verdict_in_another_case_counts_and_has_its_own_finding(tiny_dataset) -> None:
    doc = {
        "ocp": "0.3",
        "run": {
            "id": "r1",
            "ended_at": "2026-09-23T17:56:00Z",
            "acceptance_rule": {"name": "t", "definition": "d", "requires": ["tests"]},
            "signals": [
                {"kind": "verdict", "name": "tests", "value": "Accept", "tier": "verified"}
            ],
        },
        "attempts": [],
    }
    ds = tiny_dataset([doc])
    assert oa.acceptance(ds, as_of=AS_OF)["outcome"].to_list() == ["accepted"]
    findings = oa.scan_dataset(ds).findings.select("code", "json_path").collect().rows()
    assert findings == [("verdict_case", "$.run.signals[0].value")]


def test_a_source_holding_no_run_document_warns(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ocp_analytics.cli import app

    readme = tmp_path / "README.md"
    readme.write_text("# a title\n\nsome prose\nmore prose\n")
    with pytest.warns(UserWarning, match=r"README.md holds no OCP run document: all 3 "):
        summary = oa.ingest(readme, tmp_path / "ds")
    assert summary.quarantined == 3
    done = CliRunner().invoke(app, ["ingest", str(readme), "-o", str(tmp_path / "ds2"), "-q"])
    assert done.exit_code == 0
    assert "warning: " in done.output and "holds no OCP run document" in done.output


def test_a_source_with_runs_does_not_warn(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oa.ingest(EXAMPLES / "v0.3", tmp_path / "ds")
