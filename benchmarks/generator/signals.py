"""A run's signals: gate and CI verdicts, the rule's own verdicts, scores, late events."""

from __future__ import annotations

from typing import Any

from benchmarks.generator.world import (
    DAY,
    GATE_VERDICT,
    HORIZON_S,
    OFFSETS,
    RULES,
    WORLD,
    draw_fraction,
    stamp,
)

# A signal under construction: (instant or None, fraction, offset, signal dict).
Sig = tuple[int | None, str, tuple[str, int], dict[str, Any]]
_ORCH = {"kind": "orchestrator"}
USER = {"kind": "user"}
_BENCH = {"kind": "ci", "ref": "bench/nightly"}
# score signals: (unit, better, scale)
RUNTIME = ("s", "lower", None)
_RUNTIME_LOG = ("s", "lower", "log")
POINTS = ("points", "higher", None)
_FRACTION = ("points", "higher", "fraction")


def make_signal(
    ctx: dict[str, Any],
    kind: str,
    name: str,
    value: Any,
    t: int,
    tier: str,
    source: dict[str, str],
    at: str | None = None,
    score: tuple[str, str, str | None] | None = None,
) -> Sig:
    """A signal observed at ``t``, with a drawn offset and fraction.

    ``score`` is (unit, better, scale) for a score signal.
    """
    r = ctx["r"]
    off_name = WORLD["sig_offsets"][int(r() * 1000)]
    off = ctx["off"] if off_name is None else OFFSETS[off_name]
    frac = draw_fraction(r, WORLD["sig_frac"][int(r() * 1000)])
    s: dict[str, Any] = {"id": None, "kind": kind, "name": name, "value": value}
    if score is not None:
        s["unit"] = score[0]
        s["better"] = score[1]
        if score[2] is not None:
            s["scale"] = score[2]
    if at is not None:
        s["at_attempt"] = at
    s["observed_at"] = stamp(t, off, frac)
    s["source"] = dict(source)
    s["tier"] = tier
    return t, frac, off, s


def build_signals(
    ctx: dict[str, Any],
    team: str,
    rule_name: str,
    attempts: list[dict[str, Any]],
    timeline: list[tuple[str, int | None, int | None]],
    success: bool,
) -> list[Sig]:
    """Verdicts from gates and CI, scores and late events: 2 to 12 signals."""
    r = ctx["r"]
    out: list[Sig] = []
    for a, (node, _, end) in zip(attempts, timeline, strict=True):
        if end is None or node not in GATE_VERDICT:
            continue
        name, yes, no = GATE_VERDICT[node]
        value = yes if a["status"] == "done" else no
        if node == "test":
            tier = "verified" if r() < 0.7 else "reported"
        else:
            tier = "reported" if r() < 0.8 else ("asserted" if name == "review" else "heuristic")
        t = end + 3 + int(r() * 57)
        out.append(make_signal(ctx, "verdict", name, value, t, tier, _ORCH, a["id"]))
    _ci_tests(ctx, out, attempts, timeline, success)
    last = attempts[-1]["id"]
    t_last = ctx["t_last"]
    for name in RULES[rule_name][1]:
        if r() < 0.92 and not any(s[3]["name"] == name for s in out):
            value = "pass" if name == "tests" else ("accept" if success else "reject")
            who = {"kind": "user"} if name == "review" else {"kind": "judge"}
            tier = "asserted" if name == "review" else "heuristic"
            t = t_last + 60 + int(r() * 900)
            out.append(make_signal(ctx, "verdict", name, value, t, tier, who, last))
    _scores(ctx, out, team, success, last)
    _events(ctx, out)
    while len(out) < 2:
        quality = round(r(), 3) if r() < 0.5 else None
        t = t_last + 120
        out.append(
            make_signal(ctx, "score", "quality", quality, t, "asserted", USER, None, _FRACTION)
        )
    if r() < 0.9:
        out.sort(key=_sig_time)
    del out[12:]
    for k, sig in enumerate(out, 1):
        sig[3]["id"] = f"sig_{k:02d}"
    return out


def _sig_time(sig: Sig) -> int:
    return sig[0] if sig[0] is not None else 0


def _ci_tests(
    ctx: dict[str, Any],
    out: list[Sig],
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
        out.append(make_signal(ctx, "verdict", "tests", value, t, tier, src, attempts[i]["id"]))


def _scores(ctx: dict[str, Any], out: list[Sig], team: str, success: bool, last: str) -> None:
    r = ctx["r"]
    t_end, t_last = ctx["t_end"], ctx["t_last"]
    value: float | None
    if t_end is not None and r() < 0.92:
        unit = _RUNTIME_LOG if r() < 0.5 else RUNTIME
        value = float(t_end - ctx["t0"])
        out.append(
            make_signal(ctx, "score", "runtime_s", value, t_end, "verified", _ORCH, None, unit)
        )
    if team == "perf" or r() < 0.04:
        delta = 1 + r() * 600
        value = round(2400 + delta if success else 2400 - delta, 1)
        tier = "verified" if r() < 0.8 else "heuristic"
        t = t_last + 300 + int(r() * 1500)
        if r() < 0.08:
            value = None  # declared, not measured yet
        elif r() < 0.1:  # measured, then declared again and not yet measured
            out.append(
                make_signal(ctx, "score", "bench_score", value, t, tier, _BENCH, last, POINTS)
            )
            value, t = None, t + 600
        out.append(make_signal(ctx, "score", "bench_score", value, t, tier, _BENCH, last, POINTS))
    if r() < 0.12:
        value = round(0.3 + 0.7 * r(), 3) if r() < 0.65 else None
        t = t_last + 600 + int(r() * 7200)
        out.append(
            make_signal(ctx, "score", "quality", value, t, "asserted", USER, None, _FRACTION)
        )


_EVENTS = (
    # name, probability, source kind, tier
    ("issue", 0.09, "tracker", "reported"),
    ("revert", 0.03, "ci", "verified"),
    ("incident", 0.02, "tracker", "reported"),
    ("hotfix", 0.012, "user", "asserted"),
)


def event_value(r: Any, name: str) -> str:
    k = int(r() * 90_000) + 100
    if name == "issue":
        return f"issue/{k}"
    if name == "incident":
        return f"INC-{k}"
    if name == "revert":
        return f"revert/{int(r() * 0xFFFFFFF):07x}"
    return f"hotfix/{k}"


def _events(ctx: dict[str, Any], out: list[Sig]) -> None:
    """Late events: 70 % within 14 days of the end, the rest 14 to 60 days later."""
    r = ctx["r"]
    base = ctx["t_end"] if ctx["t_end"] is not None else ctx["t_last"]
    for name, p, src_kind, tier in _EVENTS:
        if r() >= p:
            continue
        in_window = r() < 0.7
        t = base + int(r() * 14 * DAY) if in_window else base + 14 * DAY + int(r() * 46 * DAY)
        if t > HORIZON_S:
            continue  # not observed yet when the documents were recorded
        value = event_value(r, name)
        src = {"kind": src_kind, "ref": value}
        out.append(make_signal(ctx, "event", name, value, t, tier, src))
