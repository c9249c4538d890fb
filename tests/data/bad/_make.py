"""Regenerate the bad-input fixtures: each file has exactly one defect.

Run from the repository root: ``python tests/data/bad/_make.py``. The
expected landing of each defect is in ``expected.json`` beside this file.
"""

import copy
import gzip
import hashlib
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
    "verdict_case.json": line(doc(run__signals__0__value="Accept")),
    "window_days_string.json": line(doc(run__acceptance_rule__window_days="14")),
    "score_better_up.json": line(
        doc(run__acceptance_rule__score={"name": "runtime_s", "target": 10, "better": "up"})
    ),
    "signal_not_object.json": line(doc(run__signals=["oops", BASE["run"]["signals"][0]])),
    "attempt_n_fraction.json": line(doc(attempts__0__n=1.5)),
    "labels_not_object.json": line(doc(run__labels="team-a")),
    "cost_not_number.json": line(doc(attempts__0__cost={"usd": "cheap"})),
    # issue 9: input that must never abort a batch
    "empty.json": "",
    "whitespace_only.json": "  \n\t\r\n",
    "attempt_n_1e30.json": line(doc(attempts__0__n=1e30)),
    "round_beyond_64_bits.json": line(doc(attempts__0__round=2**64 + 1)),
    "tokens_beyond_64_bits.json": line(
        doc(attempts__0__cost={"output_tokens": 123456789012345678901234567890})
    ),
    "window_days_1e30.json": line(doc(run__acceptance_rule__window_days=1e30)),
    "cost_usd_1e400.json": line(doc(attempts__0__cost={"usd": 1.5})).replace("1.5", "1e400"),
    "lone_surrogate_title.json": line(doc(run__title="X")).replace('"X"', '"\\ud800"'),
    "lone_surrogate_unread.json": line(doc(nodes__0__note="X")).replace('"X"', '"a\\udfffb"'),
    "lone_surrogate_label.json": line(doc(run__labels={"team": "X"})).replace('"X"', '"\\ud800"'),
    "lone_surrogate_rule.json": line(doc(run__acceptance_rule__definition="X")).replace(
        '"X"', '"\\udc00"'
    ),
    "lone_surrogate_run_id.json": line(doc(run__id="X")).replace('"X"', '"\\ud800"'),
    "null_signal.json": line(doc(run__signals=[None, BASE["run"]["signals"][0]])),
    "null_attempt.json": line(doc(attempts=[BASE["attempts"][0], None])),
    "label_number.json": line(doc(run__labels={"team": "a", "priority": 3})),
    "label_null.json": line(doc(run__labels={"team": None})),
    "configuration_source_unknown.json": line(
        doc(run__configuration={"id": "cfg", "source": "whim"})
    ),
    "provenance_kind_unknown.json": line(doc(run__provenance={"kind": "guessed"})),
    "outcome_result_unknown.json": line(doc(attempts__0__outcome={"result": "passed"})),
    "score_scale_unknown.json": line(
        doc(
            run__acceptance_rule__score={
                "name": "runtime_s",
                "target": 10,
                "better": "lower",
                "scale": "cubic",
            }
        )
    ),
}

# Defects in the bytes themselves (not text), and clean inputs in odd shapes.
G1, G2 = good.replace("run_fixture", "r1"), good.replace("run_fixture", "r2")
BYTES = {
    "invalid_utf8_title.ndjson": (
        G1 + "\n" + line(doc(run__title="X")).replace('"X"', '"caf\u00e9"') + "\n"
    )
    .encode()
    .replace("caf\u00e9".encode(), b"caf\xe9"),
    "bom.ndjson": b"\xef\xbb\xbf" + (G1 + "\n" + G2 + "\n").encode(),
    "bom.json": b"\xef\xbb\xbf" + json.dumps(BASE, indent=2).encode(),
    "cr_only.ndjson": (G1 + "\r" + G2 + "\r").encode(),
    "misnamed.ndjson.gz": (G1 + "\n").encode(),
}


def compressed() -> dict[str, bytes]:
    """Compressed fixtures: cut short, followed by junk."""
    import zstandard

    two = (G1 + "\n" + G2 + "\n").encode()
    many = "".join(
        line(doc(run__id=f"r{i}", run__title=hashlib.sha256(str(i).encode()).hexdigest())) + "\n"
        for i in range(400)
    ).encode()
    zst = zstandard.ZstdCompressor(level=3).compress(many)
    return {
        "gzip_then_junk.ndjson.gz": gzip.compress(two, mtime=0) + b"not gzip at all",
        "truncated_mid.ndjson.zst": zst[: len(zst) // 2],
    }


if __name__ == "__main__":
    for name, text in FILES.items():
        (HERE / name).write_text(text)
    gz = gzip.compress((good + "\n" + good.replace("run_fixture", "r2") + "\n").encode(), mtime=0)
    (HERE / "truncated.ndjson.gz").write_bytes(gz[: len(gz) - 20])
    for name, data in {**BYTES, **compressed()}.items():
        (HERE / name).write_bytes(data)
