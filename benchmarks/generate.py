"""Seeded, deterministic generator of realistic OCP 0.3 run documents.

Every document is a function of ``(seed, index)`` alone: the generator seeds a
private ``random.Random`` from the pair before building document ``index``, so
any slice of the stream, written by any number of worker processes, is
byte-identical to the same slice of a single-process run.

The documents imitate a fleet of eight teams running agent workflows
(``solo``, ``implement_review``, ``best_of_n``, ``swarm``...) on 200
repositories through the year 2026, each team with its own acceptance rule.
About 5 % of the documents carry one awkward case (ties across offsets, naive
or missing timestamps, odd verdict words, dangling ``at_attempt``...); those
runs name the case in ``run.ext["dev.ocp-analytics.bench"]["case"]``. Nothing
is observed after ``HORIZON`` (2026-12-01T00:00:00Z), so an ``as_of`` at or
after it sees every signal.

Command line::

    python -m benchmarks.generate --docs 2000000 --seed 0 --out /tmp/ocp \\
        --workers 2 --rules 50 --rules-out /tmp/ocp/rules.toml
"""

from __future__ import annotations

import argparse
import gc
import gzip as gzip_module
import hashlib
import os
import random
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "HORIZON",
    "generate_documents",
    "main",
    "write_ndjson",
    "write_rules",
]

# --------------------------------------------------------------------------
# Time: every instant is an int of UTC epoch seconds until it is formatted.

_UTC = UTC
_RUN_FIRST = int(datetime(2026, 1, 1, tzinfo=_UTC).timestamp())
_RUN_SPAN = int(timedelta(days=318).total_seconds())  # runs start before Nov 15
HORIZON = "2026-12-01T00:00:00Z"
_HORIZON = int(datetime(2026, 12, 1, tzinfo=_UTC).timestamp())
_DAY = 86_400

_FIRST_DAY = date(2025, 12, 25)
_DAY0 = int(datetime(2025, 12, 25, tzinfo=_UTC).timestamp()) // _DAY
_DAYS = [(_FIRST_DAY + timedelta(days=i)).isoformat() for i in range(400)]
_HMS = [f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(_DAY)]

# (suffix, shift in seconds); "" is a naive timestamp (an awkward case only)
_Z = ("Z", 0)
_OFFSETS = {
    "Z": _Z,
    "+00:00": ("+00:00", 0),
    "-07:00": ("-07:00", -25_200),
    "+05:30": ("+05:30", 19_800),
    "+02:00": ("+02:00", 7_200),
    "-04:00": ("-04:00", -14_400),
    "+09:00": ("+09:00", 32_400),
}


def _ts(t: int, off: tuple[str, int], frac: str = "") -> str:
    d, s = divmod(t + off[1], _DAY)
    return f"{_DAYS[d - _DAY0]}T{_HMS[s]}{frac}{off[0]}"


def _frac(r: Any, digits: int) -> str:
    if digits == 0:
        return ""
    if digits == 3:
        return f".{int(r() * 1e3):03d}"
    if digits == 6:
        return f".{int(r() * 1e6):06d}"
    return f".{int(r() * 1e9):09d}"


def _table(pairs: Sequence[tuple[Any, float]], size: int = 1000) -> list[Any]:
    """A lookup table for weighted draws: ``table[int(random() * len(table))]``."""
    total = sum(w for _, w in pairs)
    out: list[Any] = []
    acc = 0.0
    for value, w in pairs:
        acc += w
        out.extend([value] * (round(acc / total * size) - len(out)))
    return out


# --------------------------------------------------------------------------
# The world: teams, repositories, rules, workflow shapes, configurations.
# Built once from a fixed seed, so it is the same whatever the document seed.

_RULES: dict[str, tuple[Any, ...]] = {
    # name: (definition, requires, score, excludes_events, window_days)
    "tests": ("tests pass", ("tests",), None, None, None),
    "tests+review": (
        "tests pass and the reviewer approves",
        ("tests", "review"),
        None,
        ("revert", "incident"),
        14,
    ),
    "tests+referee": (
        "tests pass and the referee accepts the selected candidate",
        ("tests", "referee"),
        None,
        ("revert", "incident"),
        14,
    ),
    "tests+review+runtime": (
        "tests pass, the reviewer approves and the run finishes under 60 minutes",
        ("tests", "review"),
        ("runtime_s", 3600, "lower", "log"),
        ("revert", "incident"),
        14,
    ),
    "perf>=2400": (
        "the benchmark score reaches 2400",
        (),
        ("bench_score", 2400, "higher", None),
        ("revert",),
        14,
    ),
    "tests-7d": (
        "tests pass and nothing is reverted or hotfixed within a week",
        ("tests",),
        None,
        ("revert", "incident", "hotfix"),
        7,
    ),
    "tests+review-30d": (
        "tests pass, the reviewer approves, no revert within 30 days",
        ("tests", "review"),
        None,
        ("revert",),
        30,
    ),
    "tests+review+referee": (
        "tests pass, review approves and the security referee accepts",
        ("tests", "review", "referee"),
        None,
        ("revert", "incident"),
        30,
    ),
}

# shape: (pre nodes, body ((node, width; 0 = set by the configuration)), gate,
#         max rounds)
_SHAPES: dict[str, tuple[Any, ...]] = {
    "solo": ((), (("implement", 1),), None, 3),
    "plan_implement": (("plan",), (("implement", 1),), None, 3),
    "implement_review": ((), (("implement", 1),), "review", 3),
    "plan_implement_review": (("plan",), (("implement", 1),), "review", 3),
    "implement_test": ((), (("implement", 1),), "test", 3),
    "plan_implement_test_review": (
        ("plan",),
        (("implement", 1), ("test", 1)),
        "review",
        3,
    ),
    "best_of_n": ((), (("implement", 0),), "select", 2),
    "swarm": (("plan",), (("work", 0),), "review", 3),
}

# team: (org, rule, {shape: weight}, p_success, weight among runs)
_TEAMS: dict[str, tuple[Any, ...]] = {
    "payments": (
        "acme",
        "tests+review",
        {"implement_review": 40, "plan_implement_review": 10, "solo": 45, "swarm": 5},
        0.72,
        18,
    ),
    "search": (
        "globex",
        "tests+referee",
        {"best_of_n": 30, "solo": 50, "implement_review": 20},
        0.70,
        14,
    ),
    "platform": (
        "initech",
        "tests+review+runtime",
        {
            "implement_review": 65,
            "plan_implement_review": 20,
            "plan_implement_test_review": 15,
        },
        0.68,
        14,
    ),
    "mobile": (
        "acme",
        "tests",
        {"solo": 70, "plan_implement": 18, "implement_test": 12},
        0.75,
        12,
    ),
    "perf": (
        "globex",
        "perf>=2400",
        {"best_of_n": 20, "implement_test": 25, "solo": 55},
        0.60,
        8,
    ),
    "infra": (
        "initech",
        "tests-7d",
        {"solo": 65, "plan_implement": 15, "implement_test": 20},
        0.80,
        12,
    ),
    "growth": (
        "acme",
        "tests+review-30d",
        {"implement_review": 40, "swarm": 5, "solo": 55},
        0.70,
        12,
    ),
    "security": (
        "initech",
        "tests+review+referee",
        {
            "implement_review": 55,
            "plan_implement_review": 20,
            "plan_implement_test_review": 10,
            "best_of_n": 15,
        },
        0.62,
        10,
    ),
}

# node: (node kind, role, min s, spread s, input tokens, output tokens)
_NODES: dict[str, tuple[Any, ...]] = {
    "plan": ("plan", "planner", 180, 720, 6_000, 9_000),
    "implement": ("impl", "implementer", 300, 2_100, 12_000, 22_000),
    "work": ("impl", "worker", 300, 1_500, 8_000, 14_000),
    "review": ("review", "reviewer", 180, 720, 9_000, 6_000),
    "test": ("test", "tester", 120, 480, 3_000, 2_500),
    "select": ("gate", "referee", 120, 360, 10_000, 3_000),
}
_GATE_VERDICT = {
    "review": ("review", "accept", "reject"),
    "select": ("referee", "accept", "reject"),
    "test": ("tests", "pass", "fail"),
}

# model id: (raw labels, harness, usd per million input, cached input, output tokens)
_MODELS: dict[str, tuple[Any, ...]] = {
    "claude-opus-5-5": (("claude-opus-5-5", "opus-5.5"), "claude-code", 5.0, 0.5, 25.0),
    "claude-fable-5-1": (("claude-fable-5-1", "fable"), "claude-code", 1.0, 0.1, 5.0),
    "gpt-6-astra": (("gpt-6-astra", "astra"), "codex", 2.5, 0.25, 15.0),
    "gpt-6-mini": (("gpt-6-mini",), "codex", 0.4, 0.04, 1.6),
    "gemini-4-pro": (
        ("gemini-4-pro", "gemini-4-pro-preview"),
        "gemini-cli",
        2.0,
        0.2,
        12.0,
    ),
    "qwen-4-coder": (("qwen-4-coder",), "opencode", 0.3, 0.03, 1.2),
}
_NODE_MODELS = {
    "plan": ("claude-opus-5-5", "gpt-6-astra", "gemini-4-pro"),
    "implement": ("claude-opus-5-5", "claude-fable-5-1", "gpt-6-astra", "qwen-4-coder"),
    "work": ("claude-fable-5-1", "gpt-6-mini", "qwen-4-coder"),
    "review": ("gpt-6-astra", "claude-opus-5-5", "gemini-4-pro"),
    "test": ("gpt-6-mini", "claude-fable-5-1"),
    "select": ("gpt-6-astra", "claude-opus-5-5"),
}
_EFFORT_SCALE = {"low": 0.5, "medium": 1.0, "high": 1.6, "xhigh": 2.4}

_TASK_TYPES = {
    "bug_fix": (30, ("regression", "crash", "flaky_test", "data_race", "auth/session")),
    "feature": (
        25,
        ("cli_flag", "api_endpoint", "ui/form", "payments/refunds", "export/csv"),
    ),
    "refactor": (12, ("module_split", "rename", "dead_code", "types")),
    "tests": (10, ("unit", "integration", "property", "e2e")),
    "docs": (6, ("readme", "api_reference", "runbook")),
    "infra": (7, ("ci/pipeline", "deploy/k8s", "terraform")),
    "data": (5, ("migration", "backfill", "schema_change")),
    "research": (5, ("spike", "benchmark")),
}
_TYPE_TITLE = {
    "bug_fix": "Fix",
    "feature": "Add",
    "refactor": "Refactor",
    "tests": "Test",
    "docs": "Document",
    "infra": "Rework",
    "data": "Migrate",
    "research": "Explore",
}
_PRODUCERS = (
    (("orchestrator-x", "2.3.1", "claude-code", False), 45),
    (("orchestrator-x", "2.4.0", "claude-code", False), 20),
    (("relay", "0.9.2", "langgraph", False), 20),
    (("loopmath", "0.2.0", "loopmath", True), 15),
)
_CFG_SOURCES = (
    ("alternative", 40),
    ("exploration", 30),
    ("designed", 15),
    ("user_edit", 15),
)

_REPO_HEADS = (
    "ledger", "billing", "search", "index", "gateway", "auth", "mobile", "deploy",
    "metrics", "pipeline", "catalog", "checkout", "profile", "notify", "router",
    "cache", "queue", "sync", "ingest", "export", "reports", "vault", "edge",
    "scheduler", "ranking", "feeds", "media", "orders", "pricing", "identity",
)  # fmt: skip
_REPO_TAILS = (
    "api",
    "service",
    "core",
    "ui",
    "cli",
    "lib",
    "jobs",
    "sdk",
    "web",
    "app",
)


def _build_world() -> dict[str, Any]:
    wr = random.Random(20260923)
    names = [f"{h}-{t}" for h in _REPO_HEADS for t in _REPO_TAILS]
    wr.shuffle(names)
    teams = list(_TEAMS)
    repos: dict[str, list[str]] = {t: [] for t in teams}
    for i in range(200):
        team = teams[i % len(teams)]
        repos[team].append(f"{_TEAMS[team][0]}/{names[i]}")
    configs: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for team, (_, _, shapes, _, _) in _TEAMS.items():
        for shape in shapes:
            configs[team, shape] = [_build_config(wr, shape) for _ in range(4)]
    types = [(t, w) for t, (w, _) in _TASK_TYPES.items()]
    return {
        "teams": _table([(t, spec[4]) for t, spec in _TEAMS.items()]),
        "repos": repos,
        "configs": configs,
        "shapes": {t: _table(list(spec[2].items())) for t, spec in _TEAMS.items()},
        "types": _table(types),
        "producers": _table(list(_PRODUCERS)),
        "cfg_sources": _table(list(_CFG_SOURCES)),
        "doc_offsets": _table(
            [
                ("-07:00", 35),
                ("Z", 25),
                ("+00:00", 10),
                ("+05:30", 10),
                ("+02:00", 10),
                ("-04:00", 5),
                ("+09:00", 5),
            ]
        ),
        "sig_offsets": _table([(None, 55), ("Z", 25), ("+00:00", 8), ("+05:30", 6), ("-07:00", 6)]),
        "sig_frac": _table([(0, 50), (3, 25), (6, 20), (9, 5)]),
        "att_frac": _table([(0, 80), (3, 12), (6, 8)]),
        "envs": _table([("ci", 35), ("dev", 30), ("staging", 20), ("prod", 15)]),
        "triggers": _table([("backlog", 40), ("manual", 30), ("schedule", 15), ("webhook", 15)]),
    }


def _build_config(wr: random.Random, shape: str) -> tuple[Any, ...]:
    """One configuration: (cfg id, widths {node: w}, settings {node: tuple})."""
    pre, body, gate, _ = _SHAPES[shape]
    nodes = list(pre) + [n for n, _ in body] + ([gate] if gate else [])
    widths = {n: (w or wr.randint(2, 3)) for n, w in body}
    pieces = [{"id": n, "role": _NODES[n][1], "width": widths.get(n, 1)} for n in nodes]
    settings: dict[str, tuple[Any, ...]] = {}
    json_settings = {}
    for node in nodes:
        mid = wr.choice(_NODE_MODELS[node])
        raws, harness, p_in, p_cached, p_out = _MODELS[mid]
        effort = wr.choice(tuple(_EFFORT_SCALE))
        settings[node] = (mid, raws, harness, effort, p_in, p_cached, p_out)
        json_settings[node] = {
            "harness": harness,
            "model": {"raw": mid, "id": mid},
            "effort": effort,
            "context_policy": "fresh",
            "options": {},
        }
    canonical = orjson.dumps(
        {"workflow": {"pieces": pieces}, "settings": json_settings},
        option=orjson.OPT_SORT_KEYS,
    )
    cfg_id = "cfg_" + hashlib.sha256(canonical).hexdigest()[:12]
    return cfg_id, widths, settings


_W = _build_world()


# --------------------------------------------------------------------------
# One document.


def _document(seed: int, index: int, rng: random.Random) -> dict[str, Any]:
    rng.seed(((seed & 0xFFFF_FFFF_FFFF_FFFF) << 64) | index)
    r = rng.random
    w = _W
    team = w["teams"][int(r() * 1000)]
    org, rule_name, _, p_success, _ = _TEAMS[team]
    shape = w["shapes"][team][int(r() * 1000)]
    repo_i = int(r() * 25)
    repo = w["repos"][team][repo_i]
    ttype = w["types"][int(r() * 1000)]
    subtypes = _TASK_TYPES[ttype][1]
    subtype = subtypes[int(r() * len(subtypes))]
    configs = w["configs"][team, shape]
    cfg_k = 0 if r() < 0.65 else 1 + int(r() * 3)
    cfg = configs[cfg_k]
    off = _OFFSETS[w["doc_offsets"][int(r() * 1000)]]
    att_frac = w["att_frac"][int(r() * 1000)]
    success = r() < p_success
    open_run = r() < 0.03
    t0 = _RUN_FIRST + int(r() * _RUN_SPAN)
    name, version, framework, caps = w["producers"][int(r() * 1000)]
    role_evidence = "workflow piece role" if name == "loopmath" else None
    ctx = {
        "r": r,
        "off": off,
        "att_frac": att_frac,
        "t0": t0,
        "role_evidence": role_evidence,
    }

    attempts, timeline = _attempts(ctx, shape, cfg, success, open_run)
    t_last = max((e for _, _, e in timeline if e is not None), default=t0 + 600)
    t_end = t_last + 30 + int(r() * 270)
    ctx["t_last"] = t_last
    ctx["t_end"] = None if open_run else t_end

    producer: dict[str, Any] = {
        "name": name,
        "version": version,
        "framework": framework,
    }
    if caps:
        producer["capabilities"] = {
            "signals": True,
            "cost_usd": True,
            "cost_tokens": True,
        }
    run: dict[str, Any] = {
        "id": f"run_{seed}_{index:09d}",
        "title": f"{_TYPE_TITLE[ttype]} {subtype} in {repo}",
        "started_at": _ts(t0, off),
    }
    if not open_run:
        run["ended_at"] = _ts(t_end, off)
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
    signals = _signals(ctx, team, rule_name, attempts, timeline, success)
    run["signals"] = [s for _, _, _, s in signals]

    doc: dict[str, Any] = {
        "ocp": "0.3",
        "producer": producer,
        "privacy": {"profile": "metadata_only"},
        "run": run,
        "nodes": _nodes(shape, attempts),
    }
    doc["attempts"] = attempts
    if r() < 0.0005 and not open_run:
        doc["artifacts"] = [_commit_artifact(rng, attempts, timeline, off)]
    if r() < 0.05:
        _awkward(ctx, rng, doc, signals, timeline)
    return doc


def _cfg_source(r: Any, cfg_k: int) -> str:
    if cfg_k == 0:
        return "usual" if r() < 0.8 else "habit"
    return _W["cfg_sources"][int(r() * 1000)]


def _provenance(r: Any, source: str) -> dict[str, str]:
    if source == "habit" or (source == "usual" and r() < 0.7):
        return {"kind": "logged"}
    return {
        "kind": "designed",
        "chooser": "user" if source == "user_edit" else "loopmath",
    }


def _rule_dict(name: str) -> dict[str, Any]:
    definition, requires, score, excludes, window = _RULES[name]
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


def _attempts(
    ctx: dict[str, Any], shape: str, cfg: tuple[Any, ...], success: bool, open_run: bool
) -> tuple[list[dict[str, Any]], list[tuple[str, int | None, int | None]]]:
    """Attempts in array order and their (node, start, end) timeline."""
    r = ctx["r"]
    pre, body, gate, max_rounds = _SHAPES[shape]
    _, widths, settings = cfg
    x = r()
    if success:
        rounds = 1 if x < 0.85 else 2 if x < 0.97 else 3
    else:
        rounds = 1 if x < 0.6 else 2 if x < 0.88 else 3
    rounds = min(rounds, max_rounds)
    per_round = sum(widths.get(n, 1) for n, _ in body) + (1 if gate else 0)
    while len(pre) + rounds * per_round > 12:
        rounds -= 1
    crash = not success and r() < 0.15

    mk = _AttemptMaker(ctx, settings)
    t = ctx["t0"] + 20 + int(r() * 100)
    for node in pre:
        t = mk.add(node, 1, t, "done", None) + 5 + int(r() * 85)
    prev_gate: str | None = None
    for rnd in range(1, rounds + 1):
        last = rnd == rounds
        for node, _ in body:
            t = mk.parallel(node, rnd, t, widths.get(node, 1), prev_gate, gate)
        if crash and last:
            mk.fail_last()
            break
        if gate:
            passed = last and success
            status = "done" if passed else ("failed" if gate == "test" else "rejected")
            t = mk.add(gate, rnd, t, status, None) + 5 + int(r() * 85)
            prev_gate = mk.attempts[-1]["id"]
    if open_run:
        mk.leave_working()
    if r() < 0.08 and len(mk.attempts) > 2:
        i = 1 + int(r() * (len(mk.attempts) - 2))
        mk.swap(i)
    return mk.attempts, mk.timeline


class _AttemptMaker:
    """Builds attempt dicts, keeping n per node and a (node, start, end) timeline."""

    def __init__(self, ctx: dict[str, Any], settings: dict[str, tuple[Any, ...]]) -> None:
        self.r = ctx["r"]
        self.off = ctx["off"]
        self.frac = ctx["att_frac"]
        self.role_evidence = ctx["role_evidence"]
        self.settings = settings
        self.n: dict[str, int] = {}
        self.attempts: list[dict[str, Any]] = []
        self.timeline: list[tuple[str, int | None, int | None]] = []

    def add(self, node: str, rnd: int, start: int, status: str, cause: Any) -> int:
        r = self.r
        kind, role, d_min, d_spread, base_in, base_out = _NODES[node]
        mid, raws, harness, effort, p_in, p_cached, p_out = self.settings[node]
        scale = _EFFORT_SCALE[effort]
        end = start + int((d_min + r() * d_spread) * (0.6 + 0.4 * scale))
        n = self.n[node] = self.n.get(node, 0) + 1
        factor = 0.4 + 1.4 * r()
        tok_in = int(base_in * factor)
        tok_cached = int(tok_in * (4 + 36 * r()))
        tok_out = int(base_out * factor * scale * (0.6 + 0.8 * r()))
        usd = round((tok_in * p_in + tok_cached * p_cached + tok_out * p_out) * 1e-6, 4)
        frac = self.frac
        a: dict[str, Any] = {
            "id": f"{node}.a{n}",
            "node": node,
            "n": n,
            "round": rnd,
            "status": status,
            "started_at": _ts(start, self.off, _frac(r, frac)),
            "ended_at": _ts(end, self.off, _frac(r, frac)),
            "model": {"raw": raws[0] if r() < 0.8 else raws[-1], "id": mid},
            "effort": effort,
            "harness": harness,
            "role": {"value": role, "tier": "verified", "evidence": self.role_evidence},
            "cost": {
                "usd": usd,
                "input_tokens": tok_in,
                "cached_input_tokens": tok_cached,
                "output_tokens": tok_out,
                "basis": "measured",
            },
            "outcome": {
                "result": status,
                "evidence": "verified" if kind == "test" else "reported",
            },
        }
        if cause is not None:
            a["cause"] = cause
        self.attempts.append(a)
        self.timeline.append((node, start, end))
        return end

    def parallel(
        self,
        node: str,
        rnd: int,
        t: int,
        width: int,
        prev_gate: str | None,
        gate: str | None,
    ) -> int:
        """``width`` copies of ``node`` in round ``rnd``; returns the next start."""
        r = self.r
        cause = None
        if rnd > 1:
            if prev_gate is not None:
                cause = {"type": "gate_failed", "ref": prev_gate, "by": gate}
            else:
                cause = {"type": "sent_back", "ref": f"{node}.a{self.n.get(node, 1)}"}
        ends = []
        for _ in range(width):
            status = "failed" if width > 1 and r() < 0.08 else "done"
            copy_cause = None if cause is None else dict(cause)
            ends.append(self.add(node, rnd, t + int(r() * 90), status, copy_cause))
        return max(ends) + 5 + int(r() * 85)

    def fail_last(self) -> None:
        a = self.attempts[-1]
        a["status"] = "failed"
        a["outcome"]["result"] = "failed"

    def leave_working(self) -> None:
        a = self.attempts[-1]
        a["status"] = "working"
        del a["ended_at"]
        del a["outcome"]
        node, start, _ = self.timeline[-1]
        self.timeline[-1] = (node, start, None)

    def swap(self, i: int) -> None:
        at, tl = self.attempts, self.timeline
        at[i], at[i + 1] = at[i + 1], at[i]
        tl[i], tl[i + 1] = tl[i + 1], tl[i]


# A signal under construction: (instant or None, fraction, offset, signal dict).
_Sig = tuple[int | None, str, tuple[str, int], dict[str, Any]]
_ORCH = {"kind": "orchestrator"}
_USER = {"kind": "user"}
_BENCH = {"kind": "ci", "ref": "bench/nightly"}
# score signals: (unit, better, scale)
_RUNTIME = ("s", "lower", None)
_RUNTIME_LOG = ("s", "lower", "log")
_POINTS = ("points", "higher", None)
_FRACTION = ("points", "higher", "fraction")


def _signal(
    ctx: dict[str, Any],
    kind: str,
    name: str,
    value: Any,
    t: int,
    tier: str,
    source: dict[str, str],
    at: str | None = None,
    score: tuple[str, str, str | None] | None = None,
) -> _Sig:
    """A signal observed at ``t``, with a drawn offset and fraction.

    ``score`` is (unit, better, scale) for a score signal.
    """
    r = ctx["r"]
    off_name = _W["sig_offsets"][int(r() * 1000)]
    off = ctx["off"] if off_name is None else _OFFSETS[off_name]
    frac = _frac(r, _W["sig_frac"][int(r() * 1000)])
    s: dict[str, Any] = {"id": None, "kind": kind, "name": name, "value": value}
    if score is not None:
        s["unit"] = score[0]
        s["better"] = score[1]
        if score[2] is not None:
            s["scale"] = score[2]
    if at is not None:
        s["at_attempt"] = at
    s["observed_at"] = _ts(t, off, frac)
    s["source"] = dict(source)
    s["tier"] = tier
    return t, frac, off, s


def _signals(
    ctx: dict[str, Any],
    team: str,
    rule_name: str,
    attempts: list[dict[str, Any]],
    timeline: list[tuple[str, int | None, int | None]],
    success: bool,
) -> list[_Sig]:
    """Verdicts from gates and CI, scores and late events: 2 to 12 signals."""
    r = ctx["r"]
    out: list[_Sig] = []
    for a, (node, _, end) in zip(attempts, timeline, strict=True):
        if end is None or node not in _GATE_VERDICT:
            continue
        name, yes, no = _GATE_VERDICT[node]
        value = yes if a["status"] == "done" else no
        if node == "test":
            tier = "verified" if r() < 0.7 else "reported"
        else:
            tier = "reported" if r() < 0.8 else ("asserted" if name == "review" else "heuristic")
        t = end + 3 + int(r() * 57)
        out.append(_signal(ctx, "verdict", name, value, t, tier, _ORCH, a["id"]))
    _ci_tests(ctx, out, attempts, timeline, success)
    last = attempts[-1]["id"]
    t_last = ctx["t_last"]
    for name in _RULES[rule_name][1]:
        if r() < 0.92 and not any(s[3]["name"] == name for s in out):
            value = "pass" if name == "tests" else ("accept" if success else "reject")
            who = {"kind": "user"} if name == "review" else {"kind": "judge"}
            tier = "asserted" if name == "review" else "heuristic"
            t = t_last + 60 + int(r() * 900)
            out.append(_signal(ctx, "verdict", name, value, t, tier, who, last))
    _scores(ctx, out, team, success, last)
    _events(ctx, out)
    while len(out) < 2:
        quality = round(r(), 3) if r() < 0.5 else None
        t = t_last + 120
        out.append(_signal(ctx, "score", "quality", quality, t, "asserted", _USER, None, _FRACTION))
    if r() < 0.9:
        out.sort(key=_sig_time)
    del out[12:]
    for k, sig in enumerate(out, 1):
        sig[3]["id"] = f"sig_{k:02d}"
    return out


def _sig_time(sig: _Sig) -> int:
    return sig[0] if sig[0] is not None else 0


def _ci_tests(
    ctx: dict[str, Any],
    out: list[_Sig],
    attempts: list[dict[str, Any]],
    timeline: list[tuple[str, int | None, int | None]],
    success: bool,
) -> None:
    """CI test verdicts after the final round and after some earlier rounds."""
    r = ctx["r"]
    if any(s[3]["name"] == "tests" for s in out) and r() < 0.7:
        return
    by_round: dict[int, int] = {}
    for i, a in enumerate(attempts):
        if timeline[i][2] is not None:
            by_round[a["round"]] = i
    final = max(by_round, default=0)
    for rnd, i in sorted(by_round.items()):
        if rnd != final and r() < 0.75:
            continue
        if rnd != final:
            value = "fail" if r() < 0.6 else "pass"
        elif success:
            value = "pass"
        elif attempts[i]["status"] == "failed":
            value = "error" if r() < 0.4 else "fail"
        else:
            value = "pass" if r() < 0.4 else "fail"
        t = (timeline[i][2] or 0) + 30 + int(r() * 570)
        src = {"kind": "ci", "ref": f"ci/run/{1000 + int(r() * 900_000)}"}
        tier = "verified" if r() < 0.85 else "reported"
        out.append(_signal(ctx, "verdict", "tests", value, t, tier, src, attempts[i]["id"]))


def _scores(ctx: dict[str, Any], out: list[_Sig], team: str, success: bool, last: str) -> None:
    r = ctx["r"]
    t_end, t_last = ctx["t_end"], ctx["t_last"]
    value: float | None
    if t_end is not None and r() < 0.92:
        unit = _RUNTIME_LOG if r() < 0.5 else _RUNTIME
        value = float(t_end - ctx["t0"])
        out.append(_signal(ctx, "score", "runtime_s", value, t_end, "verified", _ORCH, None, unit))
    if team == "perf" or r() < 0.04:
        delta = 1 + r() * 600
        value = round(2400 + delta if success else 2400 - delta, 1)
        tier = "verified" if r() < 0.8 else "heuristic"
        t = t_last + 300 + int(r() * 1500)
        if r() < 0.08:
            value = None  # declared, not measured yet
        elif r() < 0.1:  # measured, then declared again and not yet measured
            out.append(_signal(ctx, "score", "bench_score", value, t, tier, _BENCH, last, _POINTS))
            value, t = None, t + 600
        out.append(_signal(ctx, "score", "bench_score", value, t, tier, _BENCH, last, _POINTS))
    if r() < 0.12:
        value = round(0.3 + 0.7 * r(), 3) if r() < 0.65 else None
        t = t_last + 600 + int(r() * 7200)
        out.append(_signal(ctx, "score", "quality", value, t, "asserted", _USER, None, _FRACTION))


_EVENTS = (
    # name, probability, source kind, tier
    ("issue", 0.09, "tracker", "reported"),
    ("revert", 0.03, "ci", "verified"),
    ("incident", 0.02, "tracker", "reported"),
    ("hotfix", 0.012, "user", "asserted"),
)


def _event_value(r: Any, name: str) -> str:
    k = int(r() * 90_000) + 100
    if name == "issue":
        return f"issue/{k}"
    if name == "incident":
        return f"INC-{k}"
    if name == "revert":
        return f"revert/{int(r() * 0xFFFFFFF):07x}"
    return f"hotfix/{k}"


def _events(ctx: dict[str, Any], out: list[_Sig]) -> None:
    """Late events: 70 % within 14 days of the end, the rest 14 to 60 days later."""
    r = ctx["r"]
    base = ctx["t_end"] if ctx["t_end"] is not None else ctx["t_last"]
    for name, p, src_kind, tier in _EVENTS:
        if r() >= p:
            continue
        in_window = r() < 0.7
        t = base + int(r() * 14 * _DAY) if in_window else base + 14 * _DAY + int(r() * 46 * _DAY)
        if t > _HORIZON:
            continue  # not observed yet when the documents were recorded
        value = _event_value(r, name)
        src = {"kind": src_kind, "ref": value}
        out.append(_signal(ctx, "event", name, value, t, tier, src))


def _nodes(shape: str, attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    state: dict[str, str] = {}
    for a in attempts:
        state[a["node"]] = a["status"]
    pre, body, gate, _ = _SHAPES[shape]
    order = list(pre) + [n for n, _ in body] + ([gate] if gate else [])
    return [{"id": n, "kind": _NODES[n][0], "state": state[n]} for n in order if n in state]


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
        "first_write_at": _ts(timeline[i][2] or 0, off),
        "n_writes": 1,
        "n_reads": 0,
    }


# --------------------------------------------------------------------------
# Awkward cases: about 5 % of documents get one (sometimes two).

_CASES = (
    "tie_offsets",
    "naive_timestamp",
    "missing_observed_at",
    "odd_verdict",
    "null_score",
    "event_before_end",
    "event_without_time",
    "no_ended_at",
    "duplicate_requires",
    "dangling_at_attempt",
    "attempt_without_start",
)
_ODD_VERDICTS = ("error", "PASS", "Accept", "REJECT", "Fail", "error")


def _awkward(
    ctx: dict[str, Any],
    rng: random.Random,
    doc: dict[str, Any],
    sigs: list[_Sig],
    timeline: list[tuple[str, int | None, int | None]],
) -> None:
    r = ctx["r"]
    cases = [_CASES[int(r() * len(_CASES))]]
    if r() < 0.2:
        second = _CASES[int(r() * len(_CASES))]
        if second != cases[0]:
            cases.append(second)
    done = []
    for case in cases:
        if _apply_case(ctx, case, doc, sigs, timeline):
            done.append(case)
    if done:
        doc["run"]["ext"] = {"dev.ocp-analytics.bench": {"case": "+".join(done)}}


def _apply_case(
    ctx: dict[str, Any],
    case: str,
    doc: dict[str, Any],
    sigs: list[_Sig],
    timeline: list[tuple[str, int | None, int | None]],
) -> bool:
    r = ctx["r"]
    run = doc["run"]
    signals = run["signals"]
    verdicts = [i for i, (_, _, _, s) in enumerate(sigs) if s["kind"] == "verdict"]
    timed = [i for i, (_, _, _, s) in enumerate(sigs) if "observed_at" in s]
    room = len(signals) < 12
    if case == "tie_offsets" and verdicts and room:
        i = verdicts[-1]
        t, frac, off, s = sigs[i]
        if t is None or "observed_at" not in s:
            return False
        twin = dict(s)
        twin["source"] = dict(s["source"])
        twin["id"] = s["id"] + "b"
        flip = {"accept": "reject", "reject": "accept", "pass": "fail", "fail": "pass"}
        twin["value"] = flip.get(str(s["value"]), "pass")
        other = _OFFSETS["+05:30"] if off[1] != 19_800 else _Z
        twin["observed_at"] = _ts(t, other, frac)
        signals.insert(next(k for k, x in enumerate(signals) if x is s) + 1, twin)
        return True
    if case == "naive_timestamp" and timed:
        t, frac, off, s = sigs[timed[int(r() * len(timed))]]
        if t is None:
            return False
        s["observed_at"] = _ts(t, ("", off[1]), frac)
        return True
    if case == "missing_observed_at" and verdicts:
        s = sigs[verdicts[int(r() * len(verdicts))]][3]
        s.pop("observed_at", None)
        return True
    if case == "odd_verdict" and verdicts:
        s = sigs[verdicts[int(r() * len(verdicts))]][3]
        s["value"] = _ODD_VERDICTS[int(r() * len(_ODD_VERDICTS))]
        return True
    if case == "null_score" and room:
        rule = run.get("acceptance_rule")
        name = rule["score"]["name"] if rule and rule["score"] else "runtime_s"
        unit = _RUNTIME if name == "runtime_s" else _POINTS
        t = max((x[0] for x in sigs if x[0] is not None), default=ctx["t0"]) + 60
        sig = _signal(ctx, "score", name, None, t, "asserted", _USER, None, unit)
        sig[3]["id"] = f"sig_{len(signals) + 1:02d}"
        signals.append(sig[3])
        return True
    if case in ("event_before_end", "event_without_time") and room:
        name = "revert" if r() < 0.5 else "incident"
        t0 = ctx["t0"]
        t = t0 + 1 + int(r() * ((ctx["t_end"] or ctx["t_last"]) - t0 - 1))
        value = _event_value(r, name)
        sig = _signal(ctx, "event", name, value, t, "reported", {"kind": "tracker", "ref": value})
        sig[3]["id"] = f"sig_{len(signals) + 1:02d}"
        if case == "event_without_time":
            del sig[3]["observed_at"]
        signals.append(sig[3])
        return True
    if case == "no_ended_at" and "ended_at" in run:
        del run["ended_at"]
        return True
    if case == "duplicate_requires":
        rule = run.get("acceptance_rule")
        if not rule or not rule["requires"]:
            return False
        rule["requires"].append(rule["requires"][0])
        return True
    if case == "dangling_at_attempt" and verdicts:
        s = sigs[verdicts[int(r() * len(verdicts))]][3]
        s["at_attempt"] = "deploy.a1" if r() < 0.5 else f"{timeline[0][0]}.a{len(timeline) + 7}"
        return True
    if case == "attempt_without_start":
        a = doc["attempts"][int(r() * len(doc["attempts"]))]
        return a.pop("started_at", None) is not None
    return False


# --------------------------------------------------------------------------
# Public API.


def generate_documents(n: int, seed: int = 0, start: int = 0) -> Iterator[dict[str, Any]]:
    """Yield the documents ``start`` .. ``start + n - 1`` of the stream ``seed``.

    Each document depends only on ``(seed, index)``, so slices of the stream
    can be generated independently and concatenated.

    Parameters
    ----------
    n
        Number of documents.
    seed
        Stream seed, a non-negative integer.
    start
        Index of the first document.

    Examples
    --------
    >>> docs = list(generate_documents(3, seed=7))
    >>> [d["run"]["id"] for d in docs]
    ['run_7_000000000', 'run_7_000000001', 'run_7_000000002']
    >>> docs[2] == next(generate_documents(1, seed=7, start=2))
    True
    >>> docs[0]["ocp"], docs[0]["privacy"]
    ('0.3', {'profile': 'metadata_only'})
    """
    if n < 0 or start < 0 or seed < 0:
        raise ValueError(f"n, seed and start must be >= 0; got n={n}, seed={seed}, start={start}")
    rng = random.Random()
    for index in range(start, start + n):
        yield _document(seed, index, rng)


def _write_chunk(job: tuple[Path, int, int, int, bool]) -> tuple[Path, int, int, int]:
    """Write one part file; return (path, docs, uncompressed bytes, file bytes)."""
    path, seed, start, n, gz = job
    gc_was_enabled = gc.isenabled()
    gc.disable()  # documents hold no cycles; collections only cost time here
    try:
        return _write_part(path, seed, start, n, gz)
    finally:
        if gc_was_enabled:
            gc.enable()


def _write_part(path: Path, seed: int, start: int, n: int, gz: bool) -> tuple[Path, int, int, int]:
    dumps = orjson.dumps
    opt = orjson.OPT_APPEND_NEWLINE
    raw = 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        sink: Any = fh
        if gz:
            sink = gzip_module.GzipFile(
                filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=6
            )
        batch: list[bytes] = []
        for doc in generate_documents(n, seed, start):
            batch.append(dumps(doc, option=opt))
            if len(batch) == 2000:
                buf = b"".join(batch)
                raw += len(buf)
                sink.write(buf)
                batch.clear()
        buf = b"".join(batch)
        raw += len(buf)
        sink.write(buf)
        if gz:
            sink.close()
    os.replace(tmp, path)
    return path, n, raw, path.stat().st_size


def _write(
    out_dir: Path, n: int, seed: int, chunk_docs: int, gzip: bool, workers: int
) -> list[tuple[Path, int, int, int]]:
    if chunk_docs < 1 or workers < 1:
        raise ValueError(f"chunk_docs and workers must be >= 1; got {chunk_docs}, {workers}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".ndjson.gz" if gzip else ".ndjson"
    jobs = [
        (
            out_dir / f"part-{k:05d}{suffix}",
            seed,
            start,
            min(chunk_docs, n - start),
            gzip,
        )
        for k, start in enumerate(range(0, n, chunk_docs))
    ]
    if workers == 1 or len(jobs) <= 1:
        return [_write_chunk(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(_write_chunk, jobs))


def write_ndjson(
    out_dir: Path,
    n: int,
    seed: int = 0,
    chunk_docs: int = 100_000,
    gzip: bool = False,
    workers: int = 1,
) -> list[Path]:
    """Write ``n`` documents as ``part-00000.ndjson[.gz]`` files, one document a line.

    File ``k`` holds documents ``k * chunk_docs`` onwards. The bytes depend on
    ``(n, seed, chunk_docs, gzip)`` only, never on ``workers``. Gzip members
    carry no name or time, so they are reproducible too. Existing files of
    the same names are replaced; other files in ``out_dir`` are left alone.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_ndjson(Path(tmp), 5, seed=1, chunk_docs=2)
    ...     [p.name for p in paths]
    ['part-00000.ndjson', 'part-00001.ndjson', 'part-00002.ndjson']
    """
    return [p for p, *_ in _write(out_dir, n, seed, chunk_docs, gzip, workers)]


# --------------------------------------------------------------------------
# Alternative acceptance rules.

_ALT_VERDICTS = ("tests", "review", "referee", "ci", "merge")
_ALT_SCORES = (
    # name, better, scale, low target, high target, digits
    ("runtime_s", "lower", "log", 600, 7200, 0),
    ("bench_score", "higher", None, 2000, 3000, 0),
    ("quality", "higher", "fraction", 0.5, 0.95, 2),
)


def _alt_rule(rr: random.Random, k: int) -> dict[str, Any]:
    requires = [v for v in _ALT_VERDICTS if rr.random() < (0.8 if v == "tests" else 0.3)]
    score = None
    if not requires or rr.random() < 0.3:
        name, better, scale, lo, hi, digits = _ALT_SCORES[rr.randrange(len(_ALT_SCORES))]
        target = round(lo + (hi - lo) * rr.random(), digits)
        score = {
            "name": name,
            "target": target if digits else int(target),
            "better": better,
        }
        if scale is not None:
            score["scale"] = scale
    parts = [f"{v} passes" for v in requires]
    if score is not None:
        op = "<=" if score["better"] == "lower" else ">="
        parts.append(f"{score['name']} {op} {score['target']}")
    rule: dict[str, Any] = {
        "name": f"alt_{k:03d}",
        "definition": " and ".join(parts),
        "requires": requires,
    }
    if rr.random() < 0.6:
        pool = ("revert", "incident", "hotfix", "issue")
        rule["excludes_events"] = [e for e in pool if rr.random() < 0.5]
    if rr.random() < 0.6:
        rule["window_days"] = rr.choice((0, 3, 7, 14, 30, 90))
    rule["score"] = score
    return rule


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def write_rules(path: Path, k: int, seed: int = 0) -> Path:
    """Write ``k`` alternative acceptance rules named ``alt_001`` ... ``alt_<k>``.

    A path ending in ``.json`` gets a JSON list of OCP ``acceptance_rule``
    objects (``score`` is ``null`` for a binary rule); any other path gets TOML
    ``[[rule]]`` tables with an optional ``[rule.score]`` sub-table.

    Examples
    --------
    >>> import tempfile, tomllib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = write_rules(Path(tmp) / "rules.toml", 3)
    ...     [r["name"] for r in tomllib.loads(p.read_text())["rule"]]
    ['alt_001', 'alt_002', 'alt_003']
    """
    if k < 0 or k > 999_999:
        raise ValueError(f"k must be in 0..999999; got {k}")
    rr = random.Random(seed)
    rules = [_alt_rule(rr, i) for i in range(1, k + 1)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_bytes(orjson.dumps(rules, option=orjson.OPT_INDENT_2) + b"\n")
        return path
    lines = [f"# {k} alternative acceptance rules, seed {seed}"]
    for rule in rules:
        lines += ["", "[[rule]]"]
        lines += [f"{key} = {_toml_value(v)}" for key, v in rule.items() if key != "score"]
        if rule["score"] is not None:
            lines.append("[rule.score]")
            lines += [f"{key} = {_toml_value(v)}" for key, v in rule["score"].items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------
# Command line.


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.generate",
        description="Write seeded synthetic OCP 0.3 run documents as NDJSON files.",
    )
    p.add_argument("--docs", type=int, required=True, help="number of documents")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--gzip", action="store_true", help="write .ndjson.gz")
    p.add_argument("--chunk-docs", type=int, default=100_000, help="documents per file")
    p.add_argument("--workers", type=int, default=1, help="worker processes")
    p.add_argument("--rules", type=int, default=0, help="also write K alternative rules")
    p.add_argument("--rules-out", type=Path, help="rules file (.toml or .json)")
    args = p.parse_args(argv)
    if args.rules and args.rules_out is None:
        p.error("--rules needs --rules-out")

    t = time.perf_counter()
    stats = _write(args.out, args.docs, args.seed, args.chunk_docs, args.gzip, args.workers)
    secs = time.perf_counter() - t
    docs = sum(s[1] for s in stats)
    raw = sum(s[2] for s in stats)
    disk = sum(s[3] for s in stats)
    for path, *_ in stats:
        print(path)
    print(f"files: {len(stats)} in {args.out}")
    print(f"documents: {docs:,}")
    print(f"bytes: {disk:,} on disk, {raw:,} uncompressed")
    print(f"mean document: {raw / max(docs, 1):,.0f} bytes")
    print(f"time: {secs:.1f} s, {docs / max(secs, 1e-9):,.0f} docs/s (workers={args.workers})")
    if args.rules:
        path = write_rules(args.rules_out, args.rules, args.seed)
        print(f"rules: {args.rules} to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
