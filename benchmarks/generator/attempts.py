"""A run's attempts: rounds of a workflow shape's nodes, and their timeline."""

from __future__ import annotations

from typing import Any

from benchmarks.generator.world import EFFORT_SCALE, NODES, SHAPES, draw_fraction, stamp


def build_attempts(
    ctx: dict[str, Any], shape: str, cfg: tuple[Any, ...], success: bool, open_run: bool
) -> tuple[list[dict[str, Any]], list[tuple[str, int | None, int | None]]]:
    """Attempts in array order and their (node, start, end) timeline."""
    r = ctx["r"]
    pre, body, gate, max_rounds = SHAPES[shape]
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
        kind, role, d_min, d_spread, base_in, base_out = NODES[node]
        mid, raws, harness, effort, p_in, p_cached, p_out = self.settings[node]
        scale = EFFORT_SCALE[effort]
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
            "started_at": stamp(start, self.off, draw_fraction(r, frac)),
            "ended_at": stamp(end, self.off, draw_fraction(r, frac)),
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
