"""One document: a function of ``(seed, index)`` alone."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.generator.attempts import build_attempts
from benchmarks.generator.cases import add_awkward_case
from benchmarks.generator.signals import build_signals
from benchmarks.generator.world import (
    NODES,
    OFFSETS,
    RULES,
    RUN_FIRST,
    RUN_SPAN,
    SHAPES,
    TASK_TYPES,
    TEAMS,
    TYPE_TITLE,
    WORLD,
    stamp,
)


def build_document(seed: int, index: int, rng: random.Random) -> dict[str, Any]:
    """Document ``index`` of the stream ``seed``; ``rng`` is reseeded from the pair."""
    rng.seed(((seed & 0xFFFF_FFFF_FFFF_FFFF) << 64) | index)
    r = rng.random
    w = WORLD
    team = w["teams"][int(r() * 1000)]
    org, rule_name, _, p_success, _ = TEAMS[team]
    shape = w["shapes"][team][int(r() * 1000)]
    repo_i = int(r() * 25)
    repo = w["repos"][team][repo_i]
    ttype = w["types"][int(r() * 1000)]
    subtypes = TASK_TYPES[ttype][1]
    subtype = subtypes[int(r() * len(subtypes))]
    configs = w["configs"][team, shape]
    cfg_k = 0 if r() < 0.65 else 1 + int(r() * 3)
    cfg = configs[cfg_k]
    off = OFFSETS[w["doc_offsets"][int(r() * 1000)]]
    att_frac = w["att_frac"][int(r() * 1000)]
    success = r() < p_success
    open_run = r() < 0.03
    t0 = RUN_FIRST + int(r() * RUN_SPAN)
    name, version, framework, caps = w["producers"][int(r() * 1000)]
    role_evidence = "workflow piece role" if name == "loopmath" else None
    ctx = {
        "r": r,
        "off": off,
        "att_frac": att_frac,
        "t0": t0,
        "role_evidence": role_evidence,
    }

    attempts, timeline = build_attempts(ctx, shape, cfg, success, open_run)
    t_last = max((e for _, _, e in timeline if e is not None), default=t0 + 600)
    t_end = t_last + 30 + int(r() * 270)
    ctx["t_last"] = t_last
    ctx["t_end"] = None if open_run else t_end

    run: dict[str, Any] = {
        "id": f"run_{seed}_{index:09d}",
        "title": f"{TYPE_TITLE[ttype]} {subtype} in {repo}",
        "started_at": stamp(t0, off),
    }
    if not open_run:
        run["ended_at"] = stamp(t_end, off)
    run["labels"] = {
        "team": team,
        "env": w["envs"][int(r() * 1000)],
        "trigger": w["triggers"][int(r() * 1000)],
    }
    run["task"] = {
        "id": f"tsk_{team[:3]}{repo_i:02d}_{int(r() * 3000):04d}",
        "type": ttype,
        "subtype": subtype,
        "repo": repo,
        "org": org,
    }
    run["configuration"] = {"id": cfg[0], "source": _cfg_source(r, cfg_k)}
    run["provenance"] = _provenance(r, run["configuration"]["source"])
    rule = None if r() < 0.02 else _rule_dict(rule_name)
    if rule is not None:
        run["acceptance_rule"] = rule
    signals = build_signals(ctx, team, rule_name, attempts, timeline, success)
    run["signals"] = [s for _, _, _, s in signals]

    doc: dict[str, Any] = {
        "ocp": "0.3",
        "producer": _producer(name, version, framework, caps),
        "privacy": {"profile": "metadata_only"},
        "run": run,
        "nodes": _nodes(shape, attempts),
    }
    doc["attempts"] = attempts
    if r() < 0.0005 and not open_run:
        doc["artifacts"] = [_commit_artifact(rng, attempts, timeline, off)]
    if r() < 0.05:
        add_awkward_case(ctx, rng, doc, signals, timeline)
    return doc


def _producer(name: str, version: str, framework: str, caps: bool) -> dict[str, Any]:
    producer: dict[str, Any] = {"name": name, "version": version, "framework": framework}
    if caps:
        producer["capabilities"] = {"signals": True, "cost_usd": True, "cost_tokens": True}
    return producer


def _cfg_source(r: Any, cfg_k: int) -> str:
    if cfg_k == 0:
        return "usual" if r() < 0.8 else "habit"
    return WORLD["cfg_sources"][int(r() * 1000)]


def _provenance(r: Any, source: str) -> dict[str, str]:
    if source == "habit" or (source == "usual" and r() < 0.7):
        return {"kind": "logged"}
    return {
        "kind": "designed",
        "chooser": "user" if source == "user_edit" else "loopmath",
    }


def _rule_dict(name: str) -> dict[str, Any]:
    definition, requires, score, excludes, window = RULES[name]
    rule: dict[str, Any] = {
        "name": name,
        "definition": definition,
        "requires": list(requires),
    }
    if score is None:
        rule["score"] = None
    else:
        rule["score"] = {"name": score[0], "target": score[1], "better": score[2]}
        if score[3]:
            rule["score"]["scale"] = score[3]
    if excludes is not None:
        rule["excludes_events"] = list(excludes)
    if window is not None:
        rule["window_days"] = window
    return rule


def _nodes(shape: str, attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    state: dict[str, str] = {}
    for a in attempts:
        state[a["node"]] = a["status"]
    pre, body, gate, _ = SHAPES[shape]
    order = list(pre) + [n for n, _ in body] + ([gate] if gate else [])
    return [{"id": n, "kind": NODES[n][0], "state": state[n]} for n in order if n in state]


def _commit_artifact(
    rng: random.Random,
    attempts: list[dict[str, Any]],
    timeline: list[tuple[str, int | None, int | None]],
    off: tuple[str, int],
) -> dict[str, Any]:
    sha = f"{rng.getrandbits(160):040x}"
    i = max(
        (k for k, (_, _, e) in enumerate(timeline) if e is not None),
        key=lambda k: timeline[k][2] or 0,
    )
    producer = attempts[i]["id"]
    return {
        "id": sha,
        "path": sha,
        "kind": {
            "value": "commit",
            "tier": "verified",
            "evidence": "git rev-parse HEAD",
        },
        "producer": producer,
        "writers": [producer],
        "consumers": [],
        "first_write_at": stamp(timeline[i][2] or 0, off),
        "n_writes": 1,
        "n_reads": 0,
    }
