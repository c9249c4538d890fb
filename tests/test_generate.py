"""The benchmark document generator: determinism, valid lines, rules files."""

from __future__ import annotations

import gzip
import json
import re
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(ROOT))

from benchmarks.generate import (  # noqa: E402
    generate_documents,
    main,
    write_ndjson,
    write_rules,
)

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
VERDICTS = {"accept", "reject", "pass", "fail", "error"}


def read_bytes(paths: list[Path]) -> list[bytes]:
    return [p.read_bytes() for p in paths]


def read_lines(paths: list[Path]) -> list[bytes]:
    lines: list[bytes] = []
    for p in paths:
        data = p.read_bytes()
        if p.suffix == ".gz":
            data = gzip.decompress(data)
        assert data.endswith(b"\n")
        lines.extend(data.splitlines())
    return lines


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    a = write_ndjson(tmp_path / "a", 1500, seed=3, chunk_docs=400)
    b = write_ndjson(tmp_path / "b", 1500, seed=3, chunk_docs=400)
    assert [p.name for p in a] == [f"part-{k:05d}.ndjson" for k in range(4)]
    assert read_bytes(a) == read_bytes(b)


def test_different_seed_gives_different_documents(tmp_path: Path) -> None:
    a = write_ndjson(tmp_path / "a", 50, seed=1)
    b = write_ndjson(tmp_path / "b", 50, seed=2)
    assert read_bytes(a) != read_bytes(b)


@pytest.mark.parametrize("gz", [False, True])
def test_worker_count_does_not_change_output(tmp_path: Path, gz: bool) -> None:
    one = write_ndjson(tmp_path / "one", 1200, seed=9, chunk_docs=300, gzip=gz)
    two = write_ndjson(tmp_path / "two", 1200, seed=9, chunk_docs=300, gzip=gz, workers=2)
    assert [p.name for p in one] == [p.name for p in two]
    assert read_bytes(one) == read_bytes(two)


def test_slices_of_the_stream_match(tmp_path: Path) -> None:
    whole = list(generate_documents(30, seed=4))
    assert list(generate_documents(10, seed=4, start=20)) == whole[20:]
    paths = write_ndjson(tmp_path, 30, seed=4, chunk_docs=7)
    assert read_lines(paths) == [orjson.dumps(d) for d in whole]


def test_every_line_is_an_ocp_document(tmp_path: Path) -> None:
    n = 2000
    lines = read_lines(write_ndjson(tmp_path, n, seed=0, chunk_docs=900, gzip=True))
    assert len(lines) == n
    docs = [json.loads(line) for line in lines]
    run_ids = [d["run"]["id"] for d in docs]
    assert len(set(run_ids)) == n
    for doc in docs:
        assert doc["ocp"] == "0.3"
        assert doc["privacy"] == {"profile": "metadata_only"}
        assert TIMESTAMP.match(doc["run"]["started_at"])
        attempts = doc["attempts"]
        assert 1 <= len(attempts) <= 12
        assert len({a["id"] for a in attempts}) == len(attempts)
        assert {a["node"] for a in attempts} == {node["id"] for node in doc["nodes"]}
        assert 1 <= len(doc["nodes"]) <= 4
        assert 2 <= len(doc["run"]["signals"]) <= 12


def test_documents_are_realistic_and_sometimes_awkward() -> None:
    docs = list(generate_documents(2000, seed=11))
    cases = [d["run"].get("ext", {}).get("dev.ocp-analytics.bench") for d in docs]
    awkward = sum(c is not None for c in cases)
    assert 50 <= awkward <= 160  # about 5 %
    plain = [d for d, c in zip(docs, cases, strict=True) if c is None]
    teams = {d["run"]["labels"]["team"] for d in plain}
    assert len(teams) == 8
    assert 0.01 <= sum("ended_at" not in d["run"] for d in plain) / len(plain) <= 0.06
    assert 0.005 <= sum("acceptance_rule" not in d["run"] for d in plain) / len(plain) <= 0.04
    for d in plain:
        attempt_ids = {a["id"] for a in d["attempts"]}
        for s in d["run"]["signals"]:
            assert TIMESTAMP.match(s["observed_at"])
            assert s["tier"] in {"verified", "reported", "heuristic", "asserted"}
            if s["kind"] == "verdict":
                assert s["value"] in VERDICTS
            if "at_attempt" in s:
                assert s["at_attempt"] in attempt_ids
        for a in d["attempts"]:
            assert a["id"] == f"{a['node']}.a{a['n']}"
            if "outcome" in a:
                assert a["outcome"]["result"] == a["status"]
            assert re.fullmatch(r"cfg_[0-9a-f]{12}", d["run"]["configuration"]["id"])


def test_rules_toml_parses_with_unique_names(tmp_path: Path) -> None:
    path = write_rules(tmp_path / "rules.toml", 40, seed=2)
    rules = tomllib.loads(path.read_text(encoding="utf-8"))["rule"]
    assert [r["name"] for r in rules] == [f"alt_{k:03d}" for k in range(1, 41)]
    for rule in rules:
        assert isinstance(rule["definition"], str) and rule["definition"]
        assert isinstance(rule["requires"], list)
        if "score" in rule:
            assert set(rule["score"]) >= {"name", "target", "better"}
            assert rule["score"]["better"] in {"higher", "lower"}
        else:
            assert rule["requires"]
    assert any("score" in r for r in rules)
    assert write_rules(tmp_path / "again.toml", 40, seed=2).read_bytes() == path.read_bytes()


def test_rules_json_is_a_list_of_acceptance_rules(tmp_path: Path) -> None:
    rules = json.loads(write_rules(tmp_path / "rules.json", 12).read_text(encoding="utf-8"))
    assert len({r["name"] for r in rules}) == 12
    assert all(set(r) >= {"name", "definition", "requires", "score"} for r in rules)


def test_cli_writes_files_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs"
    rules = tmp_path / "rules.toml"
    argv = ["--docs", "300", "--seed", "1", "--out", str(out), "--chunk-docs", "100"]
    assert main([*argv, "--rules", "5", "--rules-out", str(rules)]) == 0
    printed = capsys.readouterr().out
    assert "documents: 300" in printed
    assert "mean document:" in printed
    assert sorted(p.name for p in out.iterdir()) == [f"part-0000{k}.ndjson" for k in range(3)]
    assert len(tomllib.loads(rules.read_text(encoding="utf-8"))["rule"]) == 5


def _leaves(value: object, path: tuple[object, ...] = ()) -> dict[tuple[object, ...], object]:
    if isinstance(value, dict):
        return {p: v for k, x in value.items() for p, v in _leaves(x, (*path, k)).items()}
    if isinstance(value, list):
        return {p: v for i, x in enumerate(value) for p, v in _leaves(x, (*path, i)).items()}
    return {path: value}


def test_mistyped_share_writes_one_value_of_a_chosen_document_in_another_type() -> None:
    plain = list(generate_documents(400, seed=5))
    assert list(generate_documents(400, seed=5, mistyped=0.0)) == plain
    odd = list(generate_documents(400, seed=5, mistyped=0.5))
    changed = 0
    for a, b in zip(plain, odd, strict=True):
        x, y = _leaves(a), _leaves(b)
        assert x.keys() == y.keys()
        differ = [p for p in x if orjson.dumps(x[p]) != orjson.dumps(y[p])]
        assert len(differ) <= 1
        if differ:
            changed += 1
            before, after = x[differ[0]], y[differ[0]]
            assert type(before) is not type(after), (differ, before, after)
    assert 160 <= changed <= 240  # about half
    again = list(generate_documents(100, seed=5, start=300, mistyped=0.5))
    assert again == odd[300:]


@pytest.mark.parametrize("kind", ["verdict_boolean", "score_text", "count_boolean", "text_number"])
def test_each_kind_of_mistyped_value(kind: str) -> None:
    docs = list(generate_documents(200, seed=6, mistyped=1.0, kind=kind))
    signals = [s for d in docs for s in d["run"]["signals"]]
    verdicts = sum(isinstance(s["value"], bool) for s in signals if s["kind"] == "verdict")
    scores = sum(isinstance(s["value"], str) for s in signals if s["kind"] == "score")
    counts = sum(a["n"] is True for d in docs for a in d["attempts"])
    texts = sum(isinstance(a.get("effort"), int) for d in docs for a in d["attempts"])
    found = {"verdict_boolean": verdicts, "score_text": scores}
    found |= {"count_boolean": counts, "text_number": texts}
    assert found[kind] >= 150  # every document that has such a value
    assert sum(found.values()) == 200  # one a document
    with pytest.raises(ValueError, match=r"mistyped must be in 0\.\.1"):
        next(generate_documents(1, mistyped=1.5))


def test_files_with_mistyped_values_are_reproducible(tmp_path: Path) -> None:
    one = write_ndjson(tmp_path / "one", 600, seed=9, chunk_docs=200, mistyped=0.15)
    two = write_ndjson(tmp_path / "two", 600, seed=9, chunk_docs=200, workers=2, mistyped=0.15)
    plain = write_ndjson(tmp_path / "plain", 600, seed=9, chunk_docs=200)
    assert read_bytes(one) == read_bytes(two) != read_bytes(plain)
    argv = ["--docs", "50", "--out", str(tmp_path / "cli"), "--mistyped", "1", "--mistype"]
    assert main([*argv, "score_text"]) == 0
    docs = [json.loads(line) for line in read_lines(sorted((tmp_path / "cli").glob("part-*")))]
    scores = [[s for s in d["run"]["signals"] if s["kind"] == "score"] for d in docs]
    assert sum(any(isinstance(s["value"], str) for s in found) for found in scores) >= 40
