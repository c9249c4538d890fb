"""Plain, per-document reference evaluator of the acceptance semantics.

This module is the yardstick: it reads ONE raw decoded OCP document (defects
and all) exactly as ``/work/shared/SEMANTICS.md`` says, in ordinary Python with
the standard library only. The vectorized engine and the SQL implementation are
held to it field by field, so every step is written for clarity and cites the
section of SEMANTICS.md it implements. Where SEMANTICS.md leaves a choice open,
the policy of the task brief is followed (it is repeated in the docstrings).

Public API: ``RECORDED``, ``TIER_ORDER``, ``TIER_Q``, ``parse_ts``,
``rule_is_valid`` and ``evaluate``.

``as_of`` is the instant of knowledge (§1): a signal of any kind observed
after it is set aside before anything else is read (:func:`known_at`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

RECORDED = "recorded"
# The fields evaluate() returns, in the order of the engine's output columns.
RESULT_FIELDS = (
    "outcome",
    "reasons",
    "tier",
    "q",
    "accepted_attempt",
    "attempts_to_acceptance",
    "accepted_attempt_n",
    "accepted_round",
    "window_open",
)
TIER_ORDER = ("verified", "reported", "heuristic", "asserted")  # strongest first
TIER_Q = {"verified": 0.98, "reported": 0.95, "heuristic": 0.80, "asserted": 0.70}

DEFAULT_EXCLUDES = ("revert", "incident")
DEFAULT_WINDOW_DAYS = 14

ACCEPTED, REJECTED, UNKNOWN = "accepted", "rejected", "unknown"
PASS, FAIL = "pass", "fail"

# re.ASCII: ``\d`` must mean 0-9 only, not every Unicode digit.
_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?$",
    re.ASCII,
)
_UTC = UTC
_MIN_UTC = datetime.min.replace(tzinfo=_UTC)  # placeholder key for unknown times
_MICROS_PER_DAY = 86_400 * 1_000_000
_ONE_MICRO = timedelta(microseconds=1)


# ---------------------------------------------------------------- §2 timestamps


def parse_ts(value: object) -> datetime | None:
    """§2: parse an RFC 3339 timestamp into an aware UTC datetime, else None.

    Only a ``str`` matching the whole pattern counts (``fullmatch``, so a
    trailing newline is rejected). The fraction is truncated to microseconds;
    no offset means UTC; offset hours must be <= 23 and minutes <= 59.
    Impossible calendar values, and instants that fall outside the range of
    ``datetime`` once moved to UTC, are unknown (None).
    """
    if not isinstance(value, str):
        return None
    match = _TS_RE.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, offset = match.group(7), match.group(8)
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    tz = _parse_offset(offset)
    if tz is None:
        return None
    try:
        local = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        return local.astimezone(_UTC)
    except (ValueError, OverflowError):
        return None


def _parse_offset(offset: str | None) -> timezone | None:
    """§2: ``Z`` or no offset is UTC; ``±HH:MM`` needs HH <= 23, MM <= 59."""
    if offset is None or offset == "Z":
        return _UTC
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        return None
    delta = timedelta(hours=hours, minutes=minutes)
    return timezone(-delta if offset[0] == "-" else delta)


# ------------------------------------------------------------ §3 rule validity


def rule_is_valid(rule: object) -> bool:
    """§3 "a rule that cannot be read": True iff every rule field has its type.

    ``requires`` / ``excludes_events``: absent, None or a list of str.
    ``window_days``: absent, None, an int >= 0 (not bool) or a finite integral
    float >= 0. ``score``: absent, None or a dict with a non-empty str
    ``name``, a numeric (not bool) ``target`` and ``better`` in higher/lower.
    ``name`` and ``definition`` of the rule are not checked.
    """
    if not isinstance(rule, dict):
        return False
    return (
        _is_str_list_or_none(rule.get("requires"))
        and _is_str_list_or_none(rule.get("excludes_events"))
        and _is_window_days_or_none(rule.get("window_days"))
        and _is_score_or_none(rule.get("score"))
    )


def _is_str_list_or_none(value: object) -> bool:
    if value is None:
        return True
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _is_window_days_or_none(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer() and value >= 0
    return False


def _is_score_or_none(score: object) -> bool:
    if score is None:
        return True
    if not isinstance(score, dict):
        return False
    name, target, better = score.get("name"), score.get("target"), score.get("better")
    return (
        isinstance(name, str)
        and name != ""
        and _is_number(target)
        and isinstance(better, str)
        and better in ("higher", "lower")
    )


def _is_number(value: object) -> bool:
    """A JSON number: int or float, but never bool (finite or not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Rule:
    """§3: a valid rule with its defaults filled in."""

    requires: tuple[str, ...]
    score: dict | None
    excludes_events: tuple[str, ...]
    window_days: int


def effective_rule(rule: dict) -> Rule:
    """§3 defaults: requires [] ; excludes ["revert","incident"] ; window 14.

    Duplicate names in ``requires`` count once (first occurrence kept).
    ``window_days`` 0 stays 0; an integral float becomes an int.
    """
    requires = rule.get("requires")
    excludes = rule.get("excludes_events")
    window = rule.get("window_days")
    return Rule(
        requires=tuple(dict.fromkeys(requires or ())),
        score=rule.get("score"),
        excludes_events=DEFAULT_EXCLUDES if excludes is None else tuple(excludes),
        window_days=DEFAULT_WINDOW_DAYS if window is None else int(window),
    )


# ----------------------------------------------------------------- §1 inputs


@dataclass(frozen=True)
class Signal:
    """One dict element of ``run.signals``; a field of the wrong type is None."""

    position: int  # index in the ORIGINAL list (non-dicts included)
    kind: str | None
    name: str | None
    value: object
    observed_at: datetime | None
    tier: object
    at_attempt: str | None


@dataclass(frozen=True)
class Attempt:
    """One dict element of the top-level ``attempts``."""

    position: int  # index in the ORIGINAL list (non-dicts included)
    id: str | None
    node: str | None
    n: object
    round: object
    started_at: datetime | None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _run_of(doc: dict) -> dict:
    """§1: the ``run`` object (a missing or non-dict run reads as empty)."""
    run = doc.get("run") if isinstance(doc, dict) else None
    return run if isinstance(run, dict) else {}


def read_signals(run: dict) -> list[Signal]:
    """§1: ``run.signals`` (not a list -> []); non-dict elements are skipped
    but keep their slot, so positions are the original list indexes."""
    raw = run.get("signals")
    if not isinstance(raw, list):
        return []
    return [
        Signal(
            position=i,
            kind=_str_or_none(s.get("kind")),
            name=_str_or_none(s.get("name")),
            value=s.get("value"),
            observed_at=parse_ts(s.get("observed_at")),
            tier=s.get("tier"),
            at_attempt=_str_or_none(s.get("at_attempt")),
        )
        for i, s in enumerate(raw)
        if isinstance(s, dict)
    ]


def read_attempts(doc: dict) -> list[Attempt]:
    """§1/§8: top-level ``attempts`` (not a list -> []); non-dicts skipped."""
    raw = doc.get("attempts") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        return []
    return [
        Attempt(
            position=i,
            id=_str_or_none(a.get("id")),
            node=_str_or_none(a.get("node")),
            n=a.get("n"),
            round=a.get("round"),
            started_at=parse_ts(a.get("started_at")),
        )
        for i, a in enumerate(raw)
        if isinstance(a, dict)
    ]


# ------------------------------------------------------------------ §4 latest


def known_at(signals: list[Signal], as_of: datetime) -> list[Signal]:
    """§1/§4: the signals known at ``as_of``; the rest are set aside first.

    A signal whose ``observed_at`` is a known time after ``as_of`` is not yet
    observed and takes no part anywhere (not as the latest verdict or score,
    not as an excluded event). A signal with no readable time is always
    known; one observed exactly at ``as_of`` is known.
    """
    return [s for s in signals if s.observed_at is None or s.observed_at <= as_of]


def latest(candidates: list[Signal]) -> Signal | None:
    """§4: order by (time known?, observed_at, position); the last one wins.

    Unknown time sorts before every known time; equal instants (whatever
    their written offsets) are ties broken by position.
    """
    if not candidates:
        return None
    return max(
        candidates,
        key=lambda s: (
            s.observed_at is not None,
            s.observed_at or _MIN_UTC,
            s.position,
        ),
    )


# ------------------------------------------------------------------- §5 parts


@dataclass(frozen=True)
class Part:
    """§5: one part of the rule. ``signal`` is the signal used (for §7 tier and
    §8 deciding signals), None when the part is unknown."""

    status: str  # pass | fail | unknown
    reason: str | None
    signal: Signal | None


def verdict_part(signals: list[Signal], name: str) -> Part:
    """§5 requires: the latest verdict named NAME (any value).

    Its value lower-cased (non-str reads as ""): accept/pass -> pass,
    reject/fail -> fail (``failed:NAME``), else or none -> unknown
    (``missing:NAME``).
    """
    found = latest([s for s in signals if s.kind == "verdict" and s.name == name])
    word = found.value.lower() if found and isinstance(found.value, str) else ""
    if word in ("accept", "pass"):
        return Part(PASS, None, found)
    if word in ("reject", "fail"):
        return Part(FAIL, f"failed:{name}", found)
    return Part(UNKNOWN, f"missing:{name}", None)


def score_part(signals: list[Signal], score: dict) -> Part:
    """§5 score: the latest score named score.name whose value is a number.

    None -> unknown (``missing:NAME``). NaN -> fail. Otherwise pass when
    value <= target (lower) / value >= target (higher), else fail with
    ``below_target:NAME``. ``scale`` plays no part.
    """
    name, target, better = score["name"], score["target"], score["better"]
    numeric = [s for s in signals if s.kind == "score" and s.name == name and _is_number(s.value)]
    found = latest(numeric)
    if found is None:
        return Part(UNKNOWN, f"missing:{name}", None)
    value = found.value
    is_nan = isinstance(value, float) and math.isnan(value)
    reaches = value <= target if better == "lower" else value >= target
    if reaches and not is_nan:
        return Part(PASS, None, found)
    return Part(FAIL, f"below_target:{name}", found)


# --------------------------------------------------------------- §6 combining


def combine(parts: list[Part]) -> str:
    """§6: no parts -> unknown; any fail -> rejected; all pass -> accepted;
    otherwise unknown (a fail beats an unknown)."""
    statuses = [p.status for p in parts]
    if not statuses:
        return UNKNOWN
    if FAIL in statuses:
        return REJECTED
    if all(s == PASS for s in statuses):
        return ACCEPTED
    return UNKNOWN


def _micros(delta: timedelta) -> int:
    """Exact length of a timedelta in microseconds (no overflow possible)."""
    return delta // _ONE_MICRO


def counted_events(signals: list[Signal], rule: Rule, ended_at: datetime | None) -> list[Signal]:
    """§6 excluded events among the signals known at ``as_of`` (:func:`known_at`),
    in position order.

    An event (kind "event", name in excludes_events, value ignored) counts
    when the run has no ``ended_at``, the event has no time, or observed_at -
    ended_at <= window_days days (no lower bound: events before the end count).
    """
    counted = []
    for s in sorted(signals, key=lambda s: s.position):
        if s.kind != "event" or s.name not in rule.excludes_events:
            continue
        if _within_window(s.observed_at, ended_at, rule.window_days):
            counted.append(s)
    return counted


def _within_window(
    observed_at: datetime | None, ended_at: datetime | None, window_days: int
) -> bool:
    """§6: true when either time is unknown, or observed_at - ended_at is at
    most ``window_days`` days (no lower bound)."""
    if ended_at is None or observed_at is None:
        return True
    return _micros(observed_at - ended_at) <= window_days * _MICROS_PER_DAY


# -------------------------------------------------------------------- §7 tier


def tier_word(tier: object) -> str:
    """§7: a tier compared lower-cased; non-str or unknown words -> asserted."""
    if isinstance(tier, str) and tier.lower() in TIER_ORDER:
        return tier.lower()
    return "asserted"


def weakest_tier(used: list[Signal]) -> str:
    """§7: the weakest tier among the signals used; asserted when none."""
    words = [tier_word(s.tier) for s in used]
    return max(words, key=TIER_ORDER.index, default="asserted")


# ----------------------------------------------------- §8 attempt at acceptance

_NO_ATTEMPT = {
    "accepted_attempt": None,
    "attempts_to_acceptance": None,
    "accepted_attempt_n": None,
    "accepted_round": None,
}


def _as_int(value: object) -> int | None:
    """An int (not bool), or a finite integral float, as int; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def attempt_order(attempts: list[Attempt]) -> list[Attempt]:
    """§8: by (time unknown?, started_at, position): unknown time LAST."""
    return sorted(
        attempts,
        key=lambda a: (a.started_at is None, a.started_at or _MIN_UTC, a.position),
    )


def attempt_at_acceptance(doc: dict, deciding: list[Signal]) -> dict:
    """§8: the attempt named (``at_attempt``) by a deciding signal that comes
    last in the attempt order.

    An ``at_attempt`` matches the FIRST attempt (in the order) with that id.
    ``attempts_to_acceptance`` is its 1-based position in the order;
    ``accepted_attempt_n`` its ``n`` (integer rule) or else its 1-based
    position among attempts of the same node (non-str node = None group);
    ``accepted_round`` its ``round`` (integer rule) or None. All None when no
    deciding signal names an attempt of the run.
    """
    order = attempt_order(read_attempts(doc))
    first_index: dict[str, int] = {}
    for i, attempt in enumerate(order):
        if attempt.id is not None:
            first_index.setdefault(attempt.id, i)
    named = [first_index[s.at_attempt] for s in deciding if s.at_attempt in first_index]
    if not named:
        return dict(_NO_ATTEMPT)
    index = max(named)
    chosen = order[index]
    n = _as_int(chosen.n)
    if n is None:
        n = sum(1 for a in order[: index + 1] if a.node == chosen.node)
    return {
        "accepted_attempt": chosen.id,
        "attempts_to_acceptance": index + 1,
        "accepted_attempt_n": n,
        "accepted_round": _as_int(chosen.round),
    }


# -------------------------------------------------------------- §9 open window


def window_open(rule: Rule, ended_at: datetime | None, as_of: datetime) -> bool:
    """§9: ended_at known, excludes non-empty and as_of < ended_at + window."""
    if ended_at is None or not rule.excludes_events:
        return False
    return _micros(as_of - ended_at) < rule.window_days * _MICROS_PER_DAY


# ---------------------------------------------------------------- evaluation


def _not_applicable(reason: str) -> dict:
    """§3: no recorded rule (``no_rule``) or an unreadable one (``invalid_rule``)."""
    return {
        "outcome": UNKNOWN,
        "reasons": [reason],
        "tier": "asserted",
        "q": TIER_Q["asserted"],
        **_NO_ATTEMPT,
        "window_open": False,
    }


def evaluate(doc: dict, rule: dict | str, as_of: datetime) -> dict:
    """Evaluate one raw document under RECORDED or an alternative rule dict.

    Steps: §3 pick and read the rule; §4 set aside the signals observed after
    ``as_of``; §5 one part per required name, then the score part; §6
    combine, then excluded events; §7 tier and q; §8 the attempt at
    acceptance (accepted outcomes only); §9 the open window.
    """
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise ValueError("as_of must be timezone-aware")
    run = _run_of(doc)
    if isinstance(rule, str):
        if rule != RECORDED:
            raise ValueError(f"unknown rule selector {rule!r}")
        rule = run.get("acceptance_rule")
        if rule is None:
            return _not_applicable("no_rule")
        if not rule_is_valid(rule):
            return _not_applicable("invalid_rule")
    elif not rule_is_valid(rule):
        raise ValueError("alternative rules must be valid")

    eff = effective_rule(rule)
    signals = known_at(read_signals(run), as_of)
    ended_at = parse_ts(run.get("ended_at"))

    parts = [verdict_part(signals, name) for name in eff.requires]
    if eff.score is not None:
        parts.append(score_part(signals, eff.score))
    outcome = combine(parts)
    events = counted_events(signals, eff, ended_at)
    if events:
        outcome = REJECTED

    used = [p.signal for p in parts if p.signal is not None]
    reasons = [p.reason for p in parts if p.reason is not None]
    reasons += [f"late:{e.name}" for e in events]
    tier = weakest_tier(used + events)
    attempt = dict(_NO_ATTEMPT)
    if outcome == ACCEPTED:
        attempt = attempt_at_acceptance(doc, used)
    return {
        "outcome": outcome,
        "reasons": reasons,
        "tier": tier,
        "q": TIER_Q[tier],
        **attempt,
        "window_open": window_open(eff, ended_at, as_of),
    }


# --- §11: late events that arrive apart from the run ---------------------------

COMMIT_KINDS = ("commit", "merge")


def commits_of(doc: dict) -> set[str]:
    """§11: the commits a run names: its artifacts of kind ``commit`` or ``merge``,
    each by its ``path`` (a string), else its ``id``."""
    out: set[str] = set()
    artifacts = doc.get("artifacts") if isinstance(doc, dict) else None
    for art in artifacts if isinstance(artifacts, list) else []:
        if not isinstance(art, dict):
            continue
        kind = art.get("kind")
        value = kind.get("value") if isinstance(kind, dict) else None
        if value not in COMMIT_KINDS:
            continue
        path, ident = art.get("path"), art.get("id")
        commit = path if isinstance(path, str) else ident if isinstance(ident, str) else None
        if commit is not None:
            out.add(commit)
    return out


def with_late_events(doc: dict, events: list[dict]) -> dict:
    """§11: the document with every event about one of its commits appended to
    ``run.signals`` (by time, unknown first, then event id), as a plain reading
    of "treated as if appended to the run's signals"."""
    commits = commits_of(doc)
    matched = [e for e in events if e.get("kind") == "event" and e.get("commit") in commits]
    low = datetime.min.replace(tzinfo=UTC)

    def order(e: dict) -> tuple:
        t = parse_ts(e.get("observed_at"))
        return (t is not None, t or low, e["id"])

    appended = [
        {k: e[k] for k in ("kind", "name", "value", "observed_at", "tier") if k in e}
        for e in sorted(matched, key=order)
    ]
    run = dict(_run_of(doc))
    own = run.get("signals")
    run["signals"] = (own if isinstance(own, list) else []) + appended
    return {**doc, "run": run}
