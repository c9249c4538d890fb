"""Regenerate the bad-input fixtures: each file has exactly one defect.

Run from the repository root: ``python tests/data/bad/_make.py``. The
expected landing of each defect is in ``expected.json`` beside this file.
"""

import copy
import gzip
import json
from pathlib import Path

HERE = Path(__file__).parent
BASE = {
    "ocp": "0.3",
    "producer": {"name": "fixture"},
    "privacy": {"profile": "metadata_only"},
    "nodes": [{"id": "implement", "kind": "impl"}],
    "run": {
        "id": "run_fixture",
        "started_at": "2026-09-23T10:00:00Z",
        "ended_at": "2026-09-23T11:00:00Z",
        "labels": {"team": "a"},
        "acceptance_rule": {"name": "tests", "definition": "tests pass", "requires": ["tests"]},
        "signals": [
            {
                "id": "s1",
                "kind": "verdict",
                "name": "tests",
                "value": "pass",
                "at_attempt": "implement.a1",
                "observed_at": "2026-09-23T10:59:00Z",
                "tier": "verified",
            }
        ],
    },
    "attempts": [
        {
            "id": "implement.a1",
            "node": "implement",
            "n": 1,
            "status": "done",
            "started_at": "2026-09-23T10:00:00Z",
            "ended_at": "2026-09-23T10:58:00Z",
        }
    ],
}


def doc(**changes):
    d = copy.deepcopy(BASE)
    for path, value in changes.items():
        obj = d
        keys = path.split("__")
        for k in keys[:-1]:
            obj = obj[int(k)] if k.isdigit() else obj[k]
        last = keys[-1]
        if value is DELETE:
            del obj[last]
        elif last.isdigit():
            obj[int(last)] = value
        else:
            obj[last] = value
    return d


DELETE = object()
good = json.dumps(BASE)


def line(d):
    return json.dumps(d)


FILES = {
    # quarantine: not a readable run
    "not_json.ndjson": good.replace("run_fixture", "r1")
    + '\n{"ocp": "0.3", "run": }\n'
    + good.replace("run_fixture", "r3")
    + "\n",
    "truncated.ndjson": good.replace("run_fixture", "r1") + "\n" + good[: len(good) // 2],
    "truncated.json": json.dumps(BASE, indent=1)[:300],
    "not_object.ndjson": "[1, 2, 3]\n",
    "missing_run.json": line(doc(run=DELETE)),
    "run_not_object.json": line(doc(run="run_fixture")),
    "missing_run_id.json": line(doc(run__id=DELETE)),
    "empty_run_id.json": line(doc(run__id="")),
    "unknown_version.json": line(doc(ocp="9.9")),
    # findings: the run is kept, the field is null
    "bad_observed_at.json": line(doc(run__signals__0__observed_at="yesterday")),
    "naive_timestamp.json": line(doc(run__ended_at="2026-09-23T11:00:00")),
    "bad_verdict.json": line(doc(run__signals__0__value="approved")),
    "verdict_boolean.json": line(doc(run__signals__0__value=True)),
    "window_days_string.json": line(doc(run__acceptance_rule__window_days="14")),
    "score_better_up.json": line(
        doc(run__acceptance_rule__score={"name": "runtime_s", "target": 10, "better": "up"})
    ),
    "signal_not_object.json": line(doc(run__signals=["oops", BASE["run"]["signals"][0]])),
    "attempt_n_fraction.json": line(doc(attempts__0__n=1.5)),
    "labels_not_object.json": line(doc(run__labels="team-a")),
    "cost_not_number.json": line(doc(attempts__0__cost={"usd": "cheap"})),
}

if __name__ == "__main__":
    for name, text in FILES.items():
        (HERE / name).write_text(text)
    gz = gzip.compress((good + "\n" + good.replace("run_fixture", "r2") + "\n").encode(), mtime=0)
    (HERE / "truncated.ndjson.gz").write_bytes(gz[: len(gz) - 20])
