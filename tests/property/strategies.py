"""Hypothesis strategies for differential tests against ``tests/reference.py``.

``documents()`` draws raw OCP 0.3-like run documents that are deliberately
awkward: colliding names, ties across written offsets, naive and garbage
timestamps, odd verdict words, non-numeric scores, late and future events,
signals of every kind observed after ``as_of`` (not yet known, SEMANTICS §4),
unknown tiers, dangling ``at_attempt`` and invalid recorded rules. Every value
is JSON-serialisable (no NaN or Infinity, small integers only).

``document_batches()`` gives lists of documents with unique run ids,
``alternative_rules()`` lists of valid user rules, and ``as_of_instants()``
aware UTC instants placed around the drawn timestamps.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone

import hypothesis.strategies as st

_MISSING = object()  # a drawn field value meaning "leave the key out"

# ------------------------------------------------------------------ instants

RUN_START = datetime(2026, 9, 23, 17, 0, tzinfo=UTC)
RUN_END = datetime(2026, 9, 23, 17, 56, tzinfo=UTC)

# A small pool, so that equal instants (ties) are frequent. Around the run,
# at window boundaries (1 and 14 days after the end, exactly and 1 µs later),
# long after the window, and far in the future (after most as_of values).
INSTANTS = (
    RUN_START,
    RUN_START + timedelta(minutes=27),
    RUN_START + timedelta(minutes=27, microseconds=500_000),
    RUN_END - timedelta(days=1),
    RUN_END,
    RUN_END + timedelta(microseconds=123_456),
    RUN_END + timedelta(days=1),
    RUN_END + timedelta(days=1, microseconds=1),
    RUN_END + timedelta(days=14),
    RUN_END + timedelta(days=14, microseconds=1),
    RUN_END + timedelta(days=40),
    datetime(2031, 1, 1, tzinfo=UTC),
)

OFFSETS = ("Z", "+00:00", "-07:00", "+05:30", "")  # "" = naive (read as UTC)

GARBAGE_TIMESTAMPS = (
    "garbage",
    "",
    "2026-02-30T00:00:00Z",
    "2026-09-23 17:56:00Z",
    "2026-09-23t17:56:00z",
    "2026-09-23T24:00:00Z",
    "2026-09-23T17:56:00+24:00",
    "2026-09-23",
    "2026-09-23T23:59:60Z",  # a leap second: no instant (SEMANTICS §2, Python)
    "0000-01-01T00:00:00Z",  # year 0
    "0001-01-01T00:30:00+01:00",  # year 0 once moved to UTC
    "9999-12-31T23:30:00-01:00",  # year 10000 once moved to UTC
)


def render(instant: datetime, offset: str, digits: int, extra: int = 0) -> str:
    """Write ``instant`` in ``offset`` ("" = naive) with ``digits`` fraction
    digits (0, 3, 6 or 9; the 9-digit form adds ``extra`` nanoseconds)."""
    if offset in ("", "Z"):
        local = instant.astimezone(UTC)
    else:
        sign = -1 if offset[0] == "-" else 1
        delta = timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
        local = instant.astimezone(timezone(sign * delta))
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if digits == 9:
        text += f".{local.microsecond:06d}{extra:03d}"
    elif digits:
        text += f".{local.microsecond:06d}"[: digits + 1]
    return text + offset


@st.composite
def rendered_instants(draw, pool=INSTANTS) -> str:
    """A pool instant written in one of several offsets and fraction lengths."""
    return render(
        draw(st.sampled_from(pool)),
        draw(st.sampled_from(OFFSETS)),
        draw(st.sampled_from((0, 0, 3, 6, 9))),
        draw(st.integers(0, 999)),
    )


def timestamps() -> st.SearchStrategy:
    """A field value meant as a timestamp: mostly valid, sometimes broken or
    missing (``_MISSING``), sometimes null or a number."""
    return _weighted(
        (6, rendered_instants()),
        (1, st.sampled_from(GARBAGE_TIMESTAMPS)),
        (1, st.sampled_from((_MISSING, None, 20260923))),
    )


def as_of_instants() -> st.SearchStrategy[datetime]:
    """Aware UTC ``as_of`` values: the pool instants themselves (boundaries),
    points between them, instants among the run's signals (so that some of
    a document's verdicts, scores and events are observed after ``as_of``
    and others before), and arbitrary instants from before to after."""
    shifted = st.builds(
        lambda t, d: t + d,
        st.sampled_from(INSTANTS),
        st.sampled_from((timedelta(microseconds=-1), timedelta(hours=1), timedelta(days=3))),
    )
    among_signals = st.datetimes(
        min_value=(RUN_START - timedelta(hours=1)).replace(tzinfo=None),
        max_value=(RUN_END + timedelta(days=41)).replace(tzinfo=None),
        timezones=st.just(UTC),
    )
    anywhere = st.datetimes(
        min_value=datetime(2026, 9, 1),
        max_value=datetime(2032, 1, 1),
        timezones=st.just(UTC),
    )
    return st.one_of(st.sampled_from(INSTANTS), shifted, among_signals, anywhere)


# ------------------------------------------------------------------- pools

VERDICT_NAMES = ("tests", "review", "referee")
SCORE_NAMES = ("runtime_s", "bench_score")
EVENT_NAMES = ("revert", "incident", "issue")
NAMES = VERDICT_NAMES + SCORE_NAMES + EVENT_NAMES
TIERS = ("verified", "reported", "heuristic", "asserted")
NODES = ("implement", "review", "test")
NUMBERS = (0, 1, -2, 3.5, 2400, 2400.0, 2400.5, 3300, 3600, 3600.0, -0.25)

VERDICT_VALUES = ("accept", "pass", "reject", "fail", "error")
ODD_VERDICT_VALUES = ("ACCEPT", "Pass", "approved", "", 1, True, None)
# Weighted copies (sampled_from picks uniformly by slot): common names first,
# so that the rule's names and the signals' names meet often.
NAMES_BY_KIND = {
    "verdict": ("tests", "tests", "tests", "review", "review", "referee"),
    "score": ("runtime_s", "runtime_s", "runtime_s", "bench_score"),
    "event": EVENT_NAMES,
}


def _weighted(*options: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """Pick one of the strategies with integer weights, then draw from it.

    (``st.one_of(s, s, s)`` does not weight: equal branches collapse.)
    """
    slots = [i for i, (weight, _) in enumerate(options) for _ in range(weight)]
    return st.sampled_from(slots).flatmap(lambda i: options[i][1])


def _verdict_values() -> st.SearchStrategy:
    return _weighted(
        (3, st.sampled_from(("accept", "pass"))),
        (1, st.sampled_from(VERDICT_VALUES)),
        (1, st.sampled_from(ODD_VERDICT_VALUES)),
    )


def _score_values() -> st.SearchStrategy:
    return _weighted(
        (3, st.sampled_from(NUMBERS)),
        (1, st.integers(-10, 5000)),
        (1, st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)),
        (1, st.sampled_from((None, True, False, "3.5", "3600"))),
    )


def _event_values() -> st.SearchStrategy:
    return st.sampled_from(("issue/431", "commit/abc123", "", None))


def _kinds() -> st.SearchStrategy:
    return _weighted(
        (5, st.just("verdict")),
        (3, st.just("score")),
        (2, st.just("event")),
        (1, st.sampled_from(("note", "Verdict", 7, None))),
    )


def _names(kind: object) -> st.SearchStrategy:
    """Mostly a name of the signal's own kind; sometimes any pool name (so
    kinds collide on a name) or an odd one (wrong case, empty, not a str)."""
    own = st.sampled_from(NAMES_BY_KIND.get(kind, NAMES))
    return _weighted(
        (6, own),
        (1, st.sampled_from(NAMES)),
        (1, st.sampled_from(("Tests", "", 3))),
    )


def _tiers() -> st.SearchStrategy:
    return _weighted(
        (4, st.sampled_from(TIERS)),
        (1, st.sampled_from(("Verified", "REPORTED", "bogus", _MISSING, None))),
    )


def _drop_missing(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if v is not _MISSING}


# ------------------------------------------------------------------ signals


_VALUES_BY_KIND = {
    "verdict": _verdict_values,
    "score": _score_values,
    "event": _event_values,
}


@st.composite
def signals(draw, attempt_ids: list[str], kind: object = _MISSING, name: object = _MISSING):
    """One signal dict without its ``id``. With ``kind``/``name`` left out
    they are drawn too, and the element is now and then not a dict at all."""
    if kind is _MISSING:
        if draw(st.integers(0, 19)) == 0:
            return draw(st.sampled_from(("oops", 42, None, ["x"])))
        kind = draw(_kinds())
    if name is _MISSING:
        name = draw(_names(kind))
    values = _VALUES_BY_KIND.get(kind, _event_values)()
    if draw(st.integers(0, 9)) == 0:  # a value meant for another kind
        values = st.one_of(_verdict_values(), _score_values(), _event_values())
    at_attempt_choices = [_MISSING, "ghost.a9", 3] + attempt_ids * 4
    return _drop_missing(
        {
            "kind": kind,
            "name": name,
            "value": draw(values),
            "observed_at": draw(timestamps()),
            "tier": draw(_tiers()),
            "at_attempt": draw(st.sampled_from(at_attempt_choices)),
            "source": {"kind": "orchestrator"},
        }
    )


# Names a typical run reports on; documents often carry a signal for each.
_PLANNED = (("verdict", "tests"), ("verdict", "review"), ("verdict", "referee"))
_PLANNED += (("score", "runtime_s"), ("score", "bench_score"))


@st.composite
def signal_lists(draw, attempt_ids: list[str]) -> list:
    """``run.signals``: random noise, plus (in most documents) one signal for
    several usual verdict and score names, so rules often get decided; then
    shuffled and given ids sig_0, sig_1, …"""
    out = [draw(signals(attempt_ids)) for _ in range(draw(st.integers(0, 8)))]
    if draw(st.integers(0, 5)):
        for kind, name in _PLANNED:
            if draw(st.integers(0, 4)):
                out.append(draw(signals(attempt_ids, kind, name)))
    out = draw(st.permutations(out))
    return [{"id": f"sig_{i}", **s} if isinstance(s, dict) else s for i, s in enumerate(out)]


# ----------------------------------------------------------------- attempts


def _ordinals() -> st.SearchStrategy:
    """``n`` / ``round``: absent, a small int, an integral float, or junk."""
    return _weighted(
        (2, st.just(_MISSING)),
        (3, st.integers(1, 4)),
        (1, st.sampled_from((2.0, 1.5, "2", True, None, 0))),
    )


@st.composite
def attempts(draw) -> list:
    """0–6 attempts over a small node pool; ids sometimes shared, start times
    sometimes missing, broken or tied."""
    count = draw(st.integers(0, 6))
    out = []
    per_node: dict[object, int] = {}
    for _ in range(count):
        node = draw(st.sampled_from((*NODES, None, 5)))  # None = key left out
        per_node[node] = per_node.get(node, 0) + 1
        attempt_id = f"{node}.a{per_node[node]}"
        if out and draw(st.integers(0, 9)) == 0:
            attempt_id = out[-1]["id"]  # a duplicated id
        out.append(
            _drop_missing(
                {
                    "id": attempt_id,
                    "node": node if node is not None else _MISSING,
                    "n": draw(_ordinals()),
                    "round": draw(_ordinals()),
                    "status": "done",
                    "started_at": draw(timestamps()),
                }
            )
        )
    if out and draw(st.integers(0, 14)) == 0:
        out.insert(draw(st.integers(0, len(out))), "not-an-attempt")
    return out


# -------------------------------------------------------------------- rules


def _valid_requires() -> st.SearchStrategy:
    names = st.sampled_from(NAMES_BY_KIND["verdict"] * 3 + ("runtime_s", "revert"))
    return _weighted(
        (1, st.sampled_from((_MISSING, None, []))),
        (4, st.lists(names, min_size=1, max_size=2)),  # duplicates happen
        (1, st.lists(names, min_size=3, max_size=4)),
    )


def _valid_scores() -> st.SearchStrategy:
    score = st.fixed_dictionaries(
        {
            "name": st.sampled_from(NAMES_BY_KIND["score"] * 2 + ("tests",)),
            "target": st.sampled_from(NUMBERS),
            "better": st.sampled_from(("higher", "lower")),
        },
        optional={"scale": st.sampled_from(("linear", "log", "fraction"))},
    )
    return _weighted((1, st.sampled_from((_MISSING, None))), (1, score))


def _valid_excludes() -> st.SearchStrategy:
    return _weighted(
        (2, st.sampled_from((_MISSING, None, []))),
        (
            1,
            st.lists(st.sampled_from(EVENT_NAMES), min_size=1, max_size=3, unique=True),
        ),
    )


def _valid_window_days() -> st.SearchStrategy:
    return st.sampled_from((_MISSING, _MISSING, None, 0, 1, 14, 14, 14.0))


@st.composite
def valid_rules(draw, name: str = "gen_rule") -> dict:
    """A rule dict that passes ``rule_is_valid`` (fresh objects, never shared)."""
    fields = _drop_missing(
        {
            "name": name,
            "definition": "generated",
            "requires": draw(_valid_requires()),
            "score": draw(_valid_scores()),
            "excludes_events": draw(_valid_excludes()),
            "window_days": draw(_valid_window_days()),
        }
    )
    return copy.deepcopy(fields)


INVALID_PATCHES = (
    {"requires": "tests"},
    {"score": {"name": "runtime_s", "target": 3600, "better": "up"}},
    {"score": {"name": "runtime_s", "better": "lower"}},
    {"window_days": "14"},
    {"window_days": -1},
    {"window_days": 1.5},
)


@st.composite
def recorded_rules(draw):
    """``run.acceptance_rule``: absent, null, valid, or (less often) invalid."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return _MISSING
    if choice == 1:
        return None
    rule = draw(valid_rules(name="recorded_rule"))
    if choice == 2:
        rule = {**rule, **copy.deepcopy(draw(st.sampled_from(INVALID_PATCHES)))}
    return rule


def alternative_rules() -> st.SearchStrategy[list[dict]]:
    """1–6 valid rules named alt_1, alt_2, … (never "recorded")."""
    return st.integers(1, 6).flatmap(
        lambda k: st.tuples(*(valid_rules(name=f"alt_{i + 1}") for i in range(k))).map(list)
    )


# ---------------------------------------------------------------- documents

_RUN_ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


@st.composite
def documents(draw) -> dict:
    """One raw OCP 0.3-like document with a single run and its attempts."""
    attempt_list = draw(attempts())
    attempt_ids = [a["id"] for a in attempt_list if isinstance(a, dict)]
    signal_list = draw(signal_lists(attempt_ids))
    ended_at = draw(
        _weighted(
            (3, st.just(render(RUN_END, "Z", 0))),
            (3, rendered_instants(pool=(RUN_END, RUN_END - timedelta(days=1)))),
            (1, st.just(_MISSING)),
            (1, st.sampled_from(("garbage", None))),
        )
    )
    run = _drop_missing(
        {
            "id": draw(st.text(_RUN_ID_CHARS, min_size=1, max_size=12)),
            "started_at": render(RUN_START, "-07:00", 0),
            "ended_at": ended_at,
            "acceptance_rule": draw(recorded_rules()),
            "signals": signal_list if draw(st.integers(0, 14)) else _MISSING,
        }
    )
    return {
        "ocp": "0.3",
        "producer": {"name": "gen"},
        "privacy": {"profile": "metadata_only"},
        "nodes": [],
        "run": run,
        "attempts": attempt_list,
    }


def _with_run_ids(docs: list[dict]) -> list[dict]:
    return [{**doc, "run": {**doc["run"], "id": f"run_{i}"}} for i, doc in enumerate(docs)]


def document_batches(min_size: int = 1, max_size: int = 20) -> st.SearchStrategy:
    """Lists of documents whose run ids are unique: run_0, run_1, …"""
    return st.lists(documents(), min_size=min_size, max_size=max_size).map(_with_run_ids)
