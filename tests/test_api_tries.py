"""Repeated tries, what acceptance costs, and the cluster-robust interval, end to end (#37).

The public functions (``oa.passk``, ``oa.flaky_tasks``, ``oa.cost``,
``oa.run_costs``, ``oa.rates(cluster=...)``) run the evaluation loop into
sinks that merge partials slice by slice. Each is held here to a plain
reading of the same runs: pass@k enumerated over every k-subset, costs
summed by hand from the documents, the cluster figures of the engine's
one-shot statistic over the whole acceptance table; and a small
``slice_runs`` (many slices) gives the same figures as one slice.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ocp_analytics as oa
from ocp_analytics.engine.evaluate import doc_ranges
from ocp_analytics.engine.stats import cluster_partials, cluster_rates, cost_per_accepted
from ocp_analytics.engine.stats.cost import cost_partials
from ocp_analytics.exceptions import OcpAnalyticsError
from tests.conftest import AS_OF, EXAMPLES

SOLO = json.loads((EXAMPLES / "v0.3" / "solo.ocp.json").read_text())


def document(
    run_id: str,
    task: str | None,
    verdict: str,
    costs: Iterable[float | None] = (0.5,),
    at: int | None = None,
    team: str = "a",
) -> dict:
    """A run of ``task`` whose tests give ``verdict`` at attempt ``at`` (1-based; default last).

    Attempt ``i`` starts at minute ``10 + i`` and lasts ``i + 1`` minutes, and
    costs ``costs[i]`` (``None``: not recorded).
    """
    doc = copy.deepcopy(SOLO)
    costs = list(costs)
    attempts = []
    for i, usd in enumerate(costs):
        attempt = copy.deepcopy(SOLO["attempts"][0])
        attempt.update(
            id=f"implement.a{i + 1}",
            n=i + 1,
            started_at=f"2026-09-23T10:{10 + i:02d}:00-07:00",
            ended_at=f"2026-09-23T10:{11 + 2 * i:02d}:00-07:00",
        )
        if usd is None:
            del attempt["cost"]
        else:
            attempt["cost"] = {"usd": usd, "output_tokens": int(usd * 1000)}
        attempts.append(attempt)
    doc["attempts"] = attempts
    run = doc["run"]
    run["id"] = run_id
    run["labels"] = {"team": team}
    if task is None:
        del run["task"]["id"]
    else:
        run["task"]["id"] = task
    tests = run["signals"][0]
    tests["value"] = verdict
    tests["at_attempt"] = f"implement.a{at or len(costs)}"
    return doc


@pytest.fixture(scope="module")
def tries(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """Runs of 9 tasks (and some with no task), 1 to 7 runs each, each run passing or
    failing its tests at random; two teams."""
    rng = random.Random(37)
    docs = []
    for t in range(9):
        for r in range(rng.randint(1, 7)):
            verdict = rng.choice(["pass", "pass", "fail", "error"])  # error: unknown
            docs.append(document(f"t{t}-r{r}", f"t{t}", verdict, team=rng.choice("ab")))
    docs += [document(f"none-{i}", None, "pass", team="a") for i in range(3)]
    rng.shuffle(docs)
    src = tmp_path_factory.mktemp("tries") / "runs.ndjson"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    ds = src.parent / "ds"
    oa.ingest(src, ds)
    return ds, docs


def _outcomes(docs: list[dict]) -> pl.DataFrame:
    """Each run's team, task and outcome under the recorded rule (tests), read from the dicts."""
    words = {"pass": "accepted", "fail": "rejected", "error": "unknown"}
    return pl.DataFrame(
        [
            {
                "run_id": d["run"]["id"],
                "team": d["run"]["labels"]["team"],
                "task": d["run"]["task"].get("id"),
                "outcome": words[d["run"]["signals"][0]["value"]],
            }
            for d in docs
        ]
    )


def _enumerated(n: int, c: int, k: int) -> tuple[float, float]:
    """pass@k and pass^k by drawing every k-subset of n runs, c of them accepted."""
    runs = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(runs, k))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


# -- pass@k -----------------------------------------------------------------------------------


def test_passk_averages_the_enumerated_pass_at_k_of_each_task_per_group(tries) -> None:
    ds, docs = tries
    got = oa.passk(ds, k=4, by="label.team", as_of=AS_OF, slice_runs=5)
    decided = _outcomes(docs).filter(pl.col("outcome") != "unknown")
    for row in got.iter_rows(named=True):
        team = decided.filter(team=row["label.team"])
        per_task = (
            team.filter(pl.col("task").is_not_null())
            .group_by("task")
            .agg(pl.len().alias("n"), (pl.col("outcome") == "accepted").sum().alias("c"))
        )
        values = [_enumerated(n, c, row["k"]) for _, n, c in per_task.rows() if n >= row["k"]]
        assert row["rule"] == "recorded"
        assert row["tasks"] == len(values)
        assert row["decided_without_task"] == team.filter(pl.col("task").is_null()).height
        if values:
            assert row["pass_at_k"] == pytest.approx(sum(v[0] for v in values) / len(values))
            assert row["pass_hat_k"] == pytest.approx(sum(v[1] for v in values) / len(values))
        else:
            assert (row["pass_at_k"], row["pass_hat_k"]) == (None, None)
    assert sorted(set(got["k"])) == [1, 2, 3, 4]


def test_passk_counts_add_up_across_slices(tries) -> None:
    ds, _ = tries
    assert len(doc_ranges(oa.scan_dataset(ds).manifest, 4)) > 5  # many slices indeed
    whole = oa.passk(ds, "tests", k=3, by="label.team", as_of=AS_OF)
    sliced = oa.passk(ds, "tests", k=3, by="label.team", as_of=AS_OF, slice_runs=4)
    # the means of the same tasks, added in another order
    assert_frame_equal(whole, sliced, check_exact=False, rel_tol=1e-12)


def test_passk_honours_where_task_and_period(tries) -> None:
    ds, docs = tries
    only = oa.passk(ds, k=1, where=["label.team=b"], as_of=AS_OF)
    grouped = oa.passk(ds, k=1, by="label.team", as_of=AS_OF).filter(pl.col("label.team") == "b")
    assert_frame_equal(only, grouped.drop("label.team"), check_exact=False, rel_tol=1e-12)
    # the team as the task: two tasks, every run of the team one try of it
    teams = oa.passk(ds, k=1, task="label.team", as_of=AS_OF).row(0, named=True)
    assert teams["tasks"] == 2
    weekly = oa.passk(ds, k=1, period="week", as_of=AS_OF)
    assert weekly.columns[:2] == ["period", "rule"]
    decided = _outcomes(docs).filter(pl.col("outcome") != "unknown", pl.col("task").is_not_null())
    assert weekly["tasks"].to_list() == [decided["task"].n_unique()]


def test_passk_refuses_k_below_1_and_the_task_as_a_group(tries) -> None:
    ds, _ = tries
    with pytest.raises(OcpAnalyticsError, match="k must be at least 1"):
        oa.passk(ds, k=0, as_of=AS_OF)
    with pytest.raises(OcpAnalyticsError, match="both a group and the task"):
        oa.passk(ds, by="task_id", as_of=AS_OF)


# -- flaky tasks --------------------------------------------------------------------------------


def test_flaky_tasks_are_those_with_accepted_and_rejected_runs_ranked_by_runs(tries) -> None:
    ds, docs = tries
    got = oa.flaky_tasks(ds, sample=2, as_of=AS_OF, slice_runs=3)
    decided = _outcomes(docs).filter(pl.col("outcome") != "unknown", pl.col("task").is_not_null())
    want = []
    for task, runs in decided.sort("run_id").group_by("task", maintain_order=True):
        accepted = runs.filter(outcome="accepted")["run_id"].to_list()
        rejected = runs.filter(outcome="rejected")["run_id"].to_list()
        if accepted and rejected:
            n = runs.height
            want.append((task[0], n, len(accepted), accepted[:2], rejected[:2]))
    want.sort(key=lambda w: (-w[1], w[0]))
    cols = ["task_id", "decided", "accepted", "sample_accepted", "sample_rejected"]
    assert got.select(cols).rows() == want
    assert want  # the corpus has flaky tasks
    assert (got["accepted"] / got["decided"]).to_list() == got["accept_rate"].to_list()


def test_flaky_tasks_per_slice_equal_one_slice(tries) -> None:
    ds, _ = tries
    whole = oa.flaky_tasks(ds, "tests", by="label.team", sample=3, as_of=AS_OF)
    sliced = oa.flaky_tasks(ds, "tests", by="label.team", sample=3, as_of=AS_OF, slice_runs=2)
    assert_frame_equal(whole, sliced)


# -- cost ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def costly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs with known costs: accepted at an attempt before the last, costs missing in part
    or whole, rejected runs that cost too."""
    docs = [
        document("acc-early", "t1", "pass", [1.0, 2.0, 4.0], at=2),  # 7 in all, 3 to acceptance
        document("acc-last", "t1", "pass", [0.5, 0.25]),  # 0.75, 0.75
        document("acc-gap", "t2", "pass", [None, 1.5], at=1),  # 1.5, no cost to acceptance
        document("acc-none", "t2", "pass", [None, None]),  # no cost: counted apart
        document("rej-1", "t1", "fail", [2.0]),
        document("rej-none", "t3", "fail", [None]),
        document("unknown", "t3", "error", [9.0]),  # not decided: left out
    ]
    src = tmp_path_factory.mktemp("cost") / "runs.ndjson"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    oa.ingest(src, src.parent / "ds")
    return src.parent / "ds"


def test_run_costs_sum_the_attempts_and_those_up_to_acceptance(costly: Path) -> None:
    got = oa.run_costs(costly, as_of=AS_OF, slice_runs=2)
    assert got.select("run_id", "outcome", "cost", "cost_to_acceptance").rows() == [
        ("acc-early", "accepted", 7.0, 3.0),
        ("acc-gap", "accepted", 1.5, None),
        ("acc-last", "accepted", 0.75, 0.75),
        ("acc-none", "accepted", None, None),
        ("rej-1", "rejected", 2.0, None),
        ("rej-none", "rejected", None, None),
        ("unknown", "unknown", 9.0, None),
    ]


def test_cost_per_accepted_by_hand_and_the_median_cost_to_acceptance(costly: Path) -> None:
    row = oa.cost(costly, as_of=AS_OF).row(0, named=True)
    # decided runs with a cost: 7, 0.75, 1.5 (accepted), 2 (rejected)
    assert (row["runs_with_cost"], row["accepted_with_cost"]) == (4, 3)
    assert (row["runs_without_cost"], row["accepted_without_cost"]) == (2, 1)
    assert row["cost_total"] == pytest.approx(11.25)
    assert row["cost_per_accepted"] == pytest.approx(11.25 / 3)
    engine = cost_per_accepted(
        cost_partials(
            pl.DataFrame(
                {"outcome": ["accepted"] * 3 + ["rejected"], "cost": [7.0, 0.75, 1.5, 2.0]}
            ),
            [],
            "cost",
        ),
        [],
    ).row(0, named=True)
    for col in ("cost_se", "cost_ci_low", "cost_ci_high"):
        assert row[col] == pytest.approx(engine[col])
    # costs to acceptance: 3 and 0.75 (acc-gap's first attempt records none)
    assert row["accepted_with_cost_to_acceptance"] == 2
    assert row["cost_to_acceptance_median"] == pytest.approx(1.875)
    assert (row["measure"], row["rule"]) == ("cost_usd", "recorded")


def test_cost_partials_per_slice_equal_one_slice(costly: Path, tries) -> None:
    for ds in (costly, tries[0]):
        kwargs = {"by": "label.team", "as_of": AS_OF, "measure": "output_tokens"}
        whole = oa.cost(ds, "tests", **kwargs)
        sliced = oa.cost(ds, "tests", slice_runs=2, **kwargs)
        assert_frame_equal(whole, sliced, check_exact=False, rel_tol=1e-12)


def test_cost_measures_tokens_and_wall_time(costly: Path) -> None:
    tokens = oa.run_costs(costly, measure="output_tokens", as_of=AS_OF)
    assert tokens.filter(run_id="acc-early")["cost"].item() == 7000
    # attempt i lasts i + 1 minutes, whether or not it records a cost
    wall = oa.run_costs(costly, measure="wall_s", as_of=AS_OF).filter(run_id="acc-none")
    assert wall.select("cost", "cost_to_acceptance").row(0) == (180.0, 180.0)
    with pytest.raises(OcpAnalyticsError, match="cannot measure cost as 'dollars'"):
        oa.cost(costly, measure="dollars", as_of=AS_OF)  # type: ignore[arg-type]


def test_cost_of_the_bundled_examples_by_hand(examples_dataset: Path) -> None:
    """tests+review accepts full_a and implement_review (3.52 each), plan_implement_review
    (0.99 + 0.99 + 0.77) and swarm (3.39), each at its last attempt."""
    got = oa.cost(examples_dataset, "tests+review", recorded=False, as_of=AS_OF)
    row = got.row(0, named=True)
    assert (row["runs_with_cost"], row["accepted_with_cost"]) == (14, 14)
    assert row["cost_total"] == pytest.approx(3.52 * 12 + 2.75 + 3.39)
    assert row["cost_to_acceptance_median"] == pytest.approx(3.52)


# -- the cluster-robust interval beside rates ---------------------------------------------------


def _one_shot_cluster(ds: Path, rule: str, by: list[str], cluster: str) -> pl.DataFrame:
    acc = oa.acceptance(ds, rule, as_of=AS_OF)
    runs = oa.scan_dataset(ds)["runs"].select("run_id", "task_id", oa.label("team")).collect()
    joined = acc.join(runs, on="run_id")
    keys = [*by, "rule"]
    return cluster_rates(cluster_partials(joined, keys, cluster), keys, cluster)


@pytest.mark.parametrize("by", [[], ["label.team"]])
def test_rates_cluster_equals_the_one_shot_statistic_over_many_slices(tries, by) -> None:
    ds, _ = tries
    got = oa.rates(ds, "tests", by=by, cluster="task_id", as_of=AS_OF, slice_runs=3)
    want = _one_shot_cluster(ds, "tests", by, "task_id")
    cols = [*by, "rule", "clusters", "cluster_se", "cluster_ci_low", "cluster_ci_high"]
    assert_frame_equal(
        got.select(*cols, "design_effect").sort([*by, "rule"]),
        want.select(*cols, "design_effect").sort([*by, "rule"]),
        check_exact=False,
        rel_tol=1e-12,
    )
    assert (got["accepted"] + got["rejected"]).to_list() == want.sort([*by, "rule"])[
        "decided"
    ].to_list()
    at = got.columns.index("ci_high")
    assert got.columns[at + 1 : at + 6] == [
        "clusters",
        "cluster_se",
        "cluster_ci_low",
        "cluster_ci_high",
        "design_effect",
    ]


def test_rates_without_cluster_keep_their_columns(tries) -> None:
    ds, _ = tries
    plain = oa.rates(ds, as_of=AS_OF)
    clustered = oa.rates(ds, as_of=AS_OF, cluster="label.team")
    assert "clusters" not in plain.columns
    assert_frame_equal(clustered.select(plain.columns), plain)
    assert clustered["clusters"].item() == 2


def test_rates_cluster_honours_min_tier_and_refuses_a_group(tries) -> None:
    ds, _ = tries
    # every tests verdict of the corpus is verified: nothing changes at verified
    same = oa.rates(ds, cluster="task_id", min_tier="verified", as_of=AS_OF)
    assert_frame_equal(same, oa.rates(ds, cluster="task_id", as_of=AS_OF))
    with pytest.raises(OcpAnalyticsError, match="both a group and the cluster"):
        oa.rates(ds, by="task_id", cluster="task_id", as_of=AS_OF)


def test_documented_functions_are_public() -> None:
    for name in ("passk", "flaky_tasks", "cost", "run_costs"):
        assert name in oa.__all__
        assert callable(getattr(oa, name))
    f: Callable[..., pl.DataFrame] = oa.passk
    assert f.__doc__ is not None and "pass^k" in f.__doc__


def test_sql_passk_query_gives_the_engine_figures(tries: tuple[Path, list[dict]]) -> None:
    """``sql/queries/passk.sql`` is oa.passk without groups, to the last bit but float sums."""
    from ocp_analytics.sql import run_query, sql_files

    ds, _ = tries
    engine = oa.passk(ds, ["tests", "tests+review"], k=8, as_of=AS_OF).sort("rule", "k")
    sql = run_query(
        ds,
        sql_files() / "queries" / "passk.sql",
        rules=["tests", "tests+review"],
        as_of=AS_OF,
        variables={"ocp_k": 8},
    )
    assert_frame_equal(sql, engine, check_dtypes=False, rel_tol=1e-12)
    with pytest.raises(Exception, match="ocp_k must be a whole number"):
        run_query(ds, sql_files() / "queries" / "passk.sql", as_of=AS_OF)


@pytest.mark.parametrize("measure", ["cost_usd", "output_tokens", "wall_s"])
def test_sql_cost_query_gives_the_engine_figures(
    tries: tuple[Path, list[dict]], costly: Path, measure: str
) -> None:
    """``sql/queries/cost.sql`` is oa.cost without groups, to the last bit but float sums."""
    from ocp_analytics.sql import run_query, sql_files

    for ds in (tries[0], costly):
        engine = oa.cost(ds, ["tests"], measure=measure, as_of=AS_OF)  # type: ignore[arg-type]
        sql = run_query(
            ds,
            sql_files() / "queries" / "cost.sql",
            rules=["tests"],
            as_of=AS_OF,
            variables={"ocp_measure": measure},
        )
        assert_frame_equal(sql, engine, rel_tol=1e-12)
    with pytest.raises(Exception, match="cannot measure cost as 'dollars'"):
        run_query(
            costly,
            sql_files() / "queries" / "cost.sql",
            as_of=AS_OF,
            variables={"ocp_measure": "dollars"},
        )
