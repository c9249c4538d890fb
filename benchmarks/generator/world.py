"""The generator's fixed world, and how its instants are written.

Teams, repositories, acceptance rules, workflow shapes, models and
configurations are built once from a fixed seed (:data:`WORLD`), so they are
the same whatever the document seed. Every instant is an int of UTC epoch
seconds until :func:`stamp` writes it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson

# --------------------------------------------------------------------------
# Time: every instant is an int of UTC epoch seconds until it is formatted.

_UTC = UTC
RUN_FIRST = int(datetime(2026, 1, 1, tzinfo=_UTC).timestamp())
RUN_SPAN = int(timedelta(days=318).total_seconds())  # runs start before Nov 15
HORIZON = "2026-12-01T00:00:00Z"
HORIZON_S = int(datetime(2026, 12, 1, tzinfo=_UTC).timestamp())
DAY = 86_400

_FIRST_DAY = date(2025, 12, 25)
_DAY0 = int(datetime(2025, 12, 25, tzinfo=_UTC).timestamp()) // DAY
_DAYS = [(_FIRST_DAY + timedelta(days=i)).isoformat() for i in range(400)]
_HMS = [f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(DAY)]

# (suffix, shift in seconds); "" is a naive timestamp (an awkward case only)
UTC_Z = ("Z", 0)
OFFSETS = {
    "Z": UTC_Z,
    "+00:00": ("+00:00", 0),
    "-07:00": ("-07:00", -25_200),
    "+05:30": ("+05:30", 19_800),
    "+02:00": ("+02:00", 7_200),
    "-04:00": ("-04:00", -14_400),
    "+09:00": ("+09:00", 32_400),
}


def stamp(t: int, off: tuple[str, int], frac: str = "") -> str:
    d, s = divmod(t + off[1], DAY)
    return f"{_DAYS[d - _DAY0]}T{_HMS[s]}{frac}{off[0]}"


def draw_fraction(r: Any, digits: int) -> str:
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

RULES: dict[str, tuple[Any, ...]] = {
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
SHAPES: dict[str, tuple[Any, ...]] = {
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
TEAMS: dict[str, tuple[Any, ...]] = {
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
NODES: dict[str, tuple[Any, ...]] = {
    "plan": ("plan", "planner", 180, 720, 6_000, 9_000),
    "implement": ("impl", "implementer", 300, 2_100, 12_000, 22_000),
    "work": ("impl", "worker", 300, 1_500, 8_000, 14_000),
    "review": ("review", "reviewer", 180, 720, 9_000, 6_000),
    "test": ("test", "tester", 120, 480, 3_000, 2_500),
    "select": ("gate", "referee", 120, 360, 10_000, 3_000),
}
GATE_VERDICT = {
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
EFFORT_SCALE = {"low": 0.5, "medium": 1.0, "high": 1.6, "xhigh": 2.4}

TASK_TYPES = {
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
TYPE_TITLE = {
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
    teams = list(TEAMS)
    repos: dict[str, list[str]] = {t: [] for t in teams}
    for i in range(200):
        team = teams[i % len(teams)]
        repos[team].append(f"{TEAMS[team][0]}/{names[i]}")
    configs: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for team, (_, _, shapes, _, _) in TEAMS.items():
        for shape in shapes:
            configs[team, shape] = [_build_config(wr, shape) for _ in range(4)]
    types = [(t, w) for t, (w, _) in TASK_TYPES.items()]
    return {
        "teams": _table([(t, spec[4]) for t, spec in TEAMS.items()]),
        "repos": repos,
        "configs": configs,
        "shapes": {t: _table(list(spec[2].items())) for t, spec in TEAMS.items()},
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
    pre, body, gate, _ = SHAPES[shape]
    nodes = list(pre) + [n for n, _ in body] + ([gate] if gate else [])
    widths = {n: (w or wr.randint(2, 3)) for n, w in body}
    pieces = [{"id": n, "role": NODES[n][1], "width": widths.get(n, 1)} for n in nodes]
    settings: dict[str, tuple[Any, ...]] = {}
    json_settings = {}
    for node in nodes:
        mid = wr.choice(_NODE_MODELS[node])
        raws, harness, p_in, p_cached, p_out = _MODELS[mid]
        effort = wr.choice(tuple(EFFORT_SCALE))
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


WORLD = _build_world()
