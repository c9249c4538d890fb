"""Awkward cases: about 5 % of documents get one (sometimes two).

The run names the cases it got in ``run.ext["dev.ocp-analytics.bench"]["case"]``.
"""

from __future__ import annotations

import random
from typing import Any

from benchmarks.generator.signals import (
    POINTS,
    RUNTIME,
    USER,
    Sig,
    event_value,
    make_signal,
)
from benchmarks.generator.world import OFFSETS, UTC_Z, stamp

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


def add_awkward_case(
    ctx: dict[str, Any],
    rng: random.Random,
    doc: dict[str, Any],
    sigs: list[Sig],
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
    sigs: list[Sig],
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
        other = OFFSETS["+05:30"] if off[1] != 19_800 else UTC_Z
        twin["observed_at"] = stamp(t, other, frac)
        signals.insert(next(k for k, x in enumerate(signals) if x is s) + 1, twin)
        return True
    if case == "naive_timestamp" and timed:
        t, frac, off, s = sigs[timed[int(r() * len(timed))]]
        if t is None:
            return False
        s["observed_at"] = stamp(t, ("", off[1]), frac)
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
        unit = RUNTIME if name == "runtime_s" else POINTS
        t = max((x[0] for x in sigs if x[0] is not None), default=ctx["t0"]) + 60
        sig = make_signal(ctx, "score", name, None, t, "asserted", USER, None, unit)
        sig[3]["id"] = f"sig_{len(signals) + 1:02d}"
        signals.append(sig[3])
        return True
    if case in ("event_before_end", "event_without_time") and room:
        name = "revert" if r() < 0.5 else "incident"
        t0 = ctx["t0"]
        t = t0 + 1 + int(r() * ((ctx["t_end"] or ctx["t_last"]) - t0 - 1))
        value = event_value(r, name)
        sig = make_signal(
            ctx, "event", name, value, t, "reported", {"kind": "tracker", "ref": value}
        )
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
