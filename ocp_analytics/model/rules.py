"""Acceptance rules: the model, reading and validation (docs/figures.md, "The rule").

One validator (:func:`check_rule_object`) serves both the rules recorded in
documents (a defect marks the rule invalid) and the alternative rules a user
gives (a defect is refused before any work, with the file, rule and field).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ocp_analytics.exceptions import RuleError, hint

if TYPE_CHECKING:
    from ocp_analytics._typing import RulesLike

RECORDED = "recorded"
# The largest window: ended_at + window_days must stay a representable instant
# (microseconds in 64 bits reach the year 294247); 10**8 days is 273,790 years.
MAX_WINDOW_DAYS = 100_000_000
SCALES = ("linear", "log", "fraction")
DEFAULT_EXCLUDES = ("revert", "incident")
DEFAULT_WINDOW_DAYS = 14
_RULE_KEYS = {
    "name",
    "definition",
    "requires",
    "score",
    "excludes_events",
    "window_days",
    "ext",
}
_SCORE_KEYS = {"name", "target", "better", "scale", "unit", "ext"}


@dataclass(frozen=True)
class ScoreTarget:
    """The score part of a rule: ``name`` must reach ``target`` (``better``)."""

    name: str
    target: float
    better: str
    scale: str | None = None


@dataclass(frozen=True)
class Rule:
    """An acceptance rule, with fields as written (``None`` where absent).

    Examples
    --------
    >>> r = Rule.parse("tests+review+runtime_s<=3600")
    >>> r.name, r.requires, r.score.name, r.score.target, r.score.better
    ('tests+review+runtime_s<=3600', ('tests', 'review'), 'runtime_s', 3600.0, 'lower')
    >>> r.effective_excludes, r.effective_window_days
    (('revert', 'incident'), 14)
    """

    name: str
    requires: tuple[str, ...] | None = None
    score: ScoreTarget | None = None
    excludes_events: tuple[str, ...] | None = None
    window_days: int | None = None
    definition: str | None = None

    @property
    def effective_requires(self) -> tuple[str, ...]:
        """``requires`` with duplicates removed (first occurrence kept)."""
        return tuple(dict.fromkeys(self.requires or ()))

    @property
    def effective_excludes(self) -> tuple[str, ...]:
        """``excludes_events``, or ``("revert", "incident")`` when absent."""
        if self.excludes_events is None:
            return DEFAULT_EXCLUDES
        return tuple(dict.fromkeys(self.excludes_events))

    @property
    def effective_window_days(self) -> int:
        """``window_days``, or 14 when absent."""
        return DEFAULT_WINDOW_DAYS if self.window_days is None else self.window_days

    @classmethod
    def parse(cls, text: str) -> Rule:
        """Read the short form: ``tests+review``, ``runtime_s<=3600``, combined."""
        return parse_short_rule(text)

    def to_ocp(self) -> dict[str, Any]:
        """The rule as an OCP ``acceptance_rule`` object."""
        out: dict[str, Any] = {"name": self.name, "definition": self.definition or ""}
        if self.requires is not None:
            out["requires"] = list(self.requires)
        if self.score is not None:
            out["score"] = {
                "name": self.score.name,
                "target": self.score.target,
                "better": self.score.better,
            }
            if self.score.scale is not None:
                out["score"]["scale"] = self.score.scale
        if self.excludes_events is not None:
            out["excludes_events"] = list(self.excludes_events)
        if self.window_days is not None:
            out["window_days"] = self.window_days
        return out


@dataclass(frozen=True)
class RuleProblem:
    """One reason a rule object cannot be read."""

    path: str  # relative to the rule, e.g. ``.score.better``
    message: str


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_number(value: Any) -> bool:
    """A finite JSON number (a bool is not one; an integer beyond a float is not finite)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _window_days(value: Any) -> int | None:
    ok = _is_number(value) and 0 <= value <= MAX_WINDOW_DAYS
    return int(value) if ok and float(value).is_integer() else None


def _check_score(score: Any) -> list[RuleProblem]:
    if not isinstance(score, dict):
        return [RuleProblem(".score", "score must be an object or null")]
    problems = []
    name = score.get("name")
    if not isinstance(name, str) or not name:
        problems.append(RuleProblem(".score.name", "score.name must be a non-empty string"))
    if not _is_number(score.get("target")):
        problems.append(RuleProblem(".score.target", "score.target must be a number"))
    if score.get("better") not in ("higher", "lower"):
        problems.append(RuleProblem(".score.better", 'score.better must be "higher" or "lower"'))
    if score.get("scale") is not None and score.get("scale") not in SCALES:
        problems.append(
            RuleProblem(".score.scale", 'score.scale must be "linear", "log" or "fraction"')
        )
    return problems


def check_rule_object(obj: Any) -> list[RuleProblem]:
    """Every reason an OCP ``acceptance_rule`` object cannot be read (docs/figures.md, "The rule").

    An empty list means the rule is valid. ``name`` and ``definition`` are not
    needed to evaluate a rule and are not checked here.

    Examples
    --------
    >>> check_rule_object({"name": "t", "requires": ["tests"]})
    []
    >>> [p.path for p in check_rule_object({"window_days": "14"})]
    ['.window_days']
    """
    if not isinstance(obj, dict):
        return [RuleProblem("", "acceptance_rule must be an object")]
    problems = []
    for key in ("requires", "excludes_events"):
        if obj.get(key) is not None and not _is_str_list(obj[key]):
            problems.append(RuleProblem(f".{key}", f"{key} must be a list of strings"))
    wd = obj.get("window_days")
    if wd is not None and _window_days(wd) is None:
        problems.append(
            RuleProblem(
                ".window_days", f"window_days must be a whole number from 0 to {MAX_WINDOW_DAYS:,}"
            )
        )
    if obj.get("score") is not None:
        problems += _check_score(obj["score"])
    return problems


def rule_row(obj: Any) -> dict[str, Any]:
    """The ``rules`` table row of a recorded rule object (fields as written).

    A defective field is null and the row is marked ``valid=False``.
    """
    problems = check_rule_object(obj)
    bad = {p.path for p in problems}
    o = obj if isinstance(obj, dict) else {}
    raw_score = o.get("score")
    score: dict[str, Any] = raw_score if isinstance(raw_score, dict) else {}

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) else None

    return {
        "name": text(o.get("name")),
        "definition": text(o.get("definition")),
        "requires": None if ".requires" in bad else o.get("requires"),
        "score_name": None if ".score.name" in bad else text(score.get("name")),
        "score_target": (float(score["target"]) if _is_number(score.get("target")) else None),
        "score_better": None if ".score.better" in bad else score.get("better"),
        "score_scale": None if ".score.scale" in bad else text(score.get("scale")),
        "excludes_events": None if ".excludes_events" in bad else o.get("excludes_events"),
        "window_days": _window_days(o.get("window_days")),
        "valid": not problems,
        "invalid_reason": "; ".join(p.message for p in problems) or None,
        "problems": problems,
    }


def rule_from_object(obj: Any, *, where: str) -> Rule:
    """Build a :class:`Rule` from an OCP object, or raise :class:`RuleError`."""
    label = f"{where}"
    if not isinstance(obj, dict):
        raise RuleError(
            hint(
                f"{label}: a rule must be an object (a table in TOML).",
                "write each rule as [[rule]] in TOML or an object in JSON.",
            )
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RuleError(
            hint(
                f"{label}: field 'name' is missing or empty.",
                'give every rule a unique name, e.g. name = "team_a".',
            )
        )
    label = f"{where}, rule {name!r}"
    unknown = sorted(set(obj) - _RULE_KEYS)
    if unknown:
        raise RuleError(
            hint(
                f"{label}: unknown field(s) {', '.join(unknown)}.",
                f"the fields of a rule are {', '.join(sorted(_RULE_KEYS))}.",
            )
        )
    if isinstance(obj.get("score"), dict):
        unknown = sorted(set(obj["score"]) - _SCORE_KEYS)
        if unknown:
            raise RuleError(
                hint(
                    f"{label}: unknown score field(s) {', '.join(unknown)}.",
                    "a score has name, target, better and optional scale.",
                )
            )
    problems = check_rule_object(obj)
    if problems:
        p = problems[0]
        raise RuleError(
            hint(
                f"{label}: field '{p.path.lstrip('.')}' is invalid: {p.message}.",
                "see the rule format in the README (Alternative rules).",
            )
        )
    score = obj.get("score")
    return Rule(
        name=name,
        definition=obj.get("definition") if isinstance(obj.get("definition"), str) else None,
        requires=tuple(obj["requires"]) if obj.get("requires") is not None else None,
        excludes_events=(
            tuple(obj["excludes_events"]) if obj.get("excludes_events") is not None else None
        ),
        window_days=_window_days(obj.get("window_days")),
        score=(
            ScoreTarget(score["name"], float(score["target"]), score["better"], score.get("scale"))
            if score is not None
            else None
        ),
    )


_SCORE_TOKEN = re.compile(
    r"^(?P<name>[^<>=\s+]+)\s*(?P<op><=|>=)\s*(?P<num>[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)$"
)
_NAME_TOKEN = re.compile(r"^[^<>=\s+]+$")


def parse_short_rule(text: str) -> Rule:
    """Read a rule in the short form of the command line.

    ``tests+review`` (verdict names joined by ``+``), ``runtime_s<=3600`` or
    ``bench_score>=2400`` (one score target), or both combined. The rule's
    name is the text itself.

    Examples
    --------
    >>> parse_short_rule("bench_score>=2400").score
    ScoreTarget(name='bench_score', target=2400.0, better='higher', scale=None)
    >>> parse_short_rule("tests+review").requires
    ('tests', 'review')
    >>> parse_short_rule("tests,review")
    Traceback (most recent call last):
    ...
    ocp_analytics.exceptions.RuleError: rule 'tests,review': a comma does not join verdicts.
    <BLANKLINE>
    Hint: write 'tests+review' (verdict names joined by '+'), or give each rule on its own.
    """
    spec = text.strip()
    if "," in spec:  # read as one verdict named "tests,review", it would pass no run
        joined = "+".join(t.strip() for t in spec.split(",") if t.strip())
        raise RuleError(
            hint(
                f"rule {text!r}: a comma does not join verdicts.",
                f"write {joined!r} (verdict names joined by '+'), or give each rule on its own.",
            )
        )
    requires: list[str] = []
    score: ScoreTarget | None = None
    for token in (t.strip() for t in spec.split("+")):
        m = _SCORE_TOKEN.match(token)
        if m:
            if score is not None:
                raise RuleError(
                    hint(
                        f"rule {text!r}: more than one score target.",
                        "a rule has at most one score, e.g. tests+runtime_s<=3600.",
                    )
                )
            better = "lower" if m["op"] == "<=" else "higher"
            score = ScoreTarget(m["name"], float(m["num"]), better)
        elif token and _NAME_TOKEN.match(token):
            requires.append(token)
        else:
            raise RuleError(
                hint(
                    f"rule {text!r}: cannot read {token!r}.",
                    "write verdict names joined by '+', and at most one "
                    "score as NAME<=NUMBER or NAME>=NUMBER.",
                )
            )
    return Rule(name=spec, requires=tuple(requires), score=score)


def read_rules_file(path: str | Path) -> list[Rule]:
    """Read alternative rules from a TOML (``[[rule]]``) or JSON (a list) file.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "rules.toml")
    >>> _ = open(p, "w").write('[[rule]]\\nname = "strict"\\nrequires = ["tests", "review"]\\n')
    >>> [r.name for r in read_rules_file(p)]
    ['strict']
    """
    p = Path(path)
    if not p.is_file():
        raise RuleError(
            hint(
                f"rules file {str(p)!r} does not exist.",
                "pass the path of a .toml or .json rules file.",
            )
        )
    raw = p.read_bytes()
    table: dict[str, Any] = {}
    try:
        if p.suffix.lower() == ".json":
            data = orjson.loads(raw)
            items = data.get("rules", data) if isinstance(data, dict) else data
        else:
            table = tomllib.loads(raw.decode("utf-8"))
            items = table.get("rule", [])
    except (orjson.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RuleError(
            hint(
                f"rules file {str(p)!r} cannot be parsed: {exc}",
                "check the syntax; TOML rules are [[rule]] tables.",
            )
        ) from exc
    if not isinstance(items, list):
        items = [items]
    if not items:
        fix = "write each rule as a [[rule]] table (TOML) or an object in a JSON list."
        if "rules" in table and p.suffix.lower() != ".json":
            fix = "the tables are [[rule]], not [[rules]]: rename them."
        elif table:
            fix += f" The file has only: {', '.join(sorted(table))}."
        raise RuleError(hint(f"rules file {str(p)!r} holds no rule.", fix))
    return [rule_from_object(o, where=f"{p}: rule #{i + 1}") for i, o in enumerate(items)]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_names(rule: Rule) -> None:
    names = [rule.name, *(rule.requires or ()), *(rule.excludes_events or ())]
    if rule.score is not None:
        names.append(rule.score.name)
    for n in names:
        if _CONTROL.search(n):
            raise RuleError(
                hint(
                    f"rule {rule.name!r}: the name {n!r} contains a control character.",
                    "signal and rule names are plain text; remove tabs, newlines and "
                    "other control characters.",
                )
            )


def resolve_rules(rules: RulesLike) -> list[Rule]:
    """Normalise the ``rules`` argument of the API into unique, valid rules.

    Accepts a :class:`Rule`, a short-form string, a path to a rules file, or
    a sequence of those. ``None`` means no alternative rules.

    Examples
    --------
    >>> [r.name for r in resolve_rules(["tests+review", Rule("strict", requires=("tests",))])]
    ['tests+review', 'strict']
    >>> resolve_rules(None)
    []
    """
    if rules is None:
        return []
    items: list[Rule | str | Path] = (
        [rules] if isinstance(rules, Rule | str | Path) else list(rules)
    )
    out: list[Rule] = []
    for item in items:
        if isinstance(item, Rule):
            out.append(item)
        elif isinstance(item, Path) or (
            isinstance(item, str) and item.endswith((".toml", ".json"))
        ):
            out += read_rules_file(item)
        elif isinstance(item, str):
            out.append(parse_short_rule(item))
        else:
            raise RuleError(
                hint(
                    f"cannot read a rule from {item!r}.",
                    "pass Rule objects, short forms like 'tests+review', or a rules file.",
                )
            )
    seen: set[str] = set()
    for r in out:
        if r.name == RECORDED:
            raise RuleError(
                hint(
                    "the rule name 'recorded' is reserved for each run's own rule.",
                    "rename the rule.",
                )
            )
        _check_names(r)
        if r.name in seen:
            raise RuleError(hint(f"two rules are named {r.name!r}.", "rule names must be unique."))
        seen.add(r.name)
    return out
