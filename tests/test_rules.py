"""Rules files: what is read, and what is refused with a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

import ocp_analytics as oa


@pytest.mark.parametrize(
    ("name", "text", "hint"),
    [
        ("empty.toml", "", "write each rule as a [[rule]] table"),
        ("typo.toml", '[[rules]]\nname = "a"\nrequires = ["tests"]\n', "not [[rules]]"),
        ("empty.json", "[]", "write each rule as a [[rule]] table"),
    ],
)
def test_a_rules_file_with_no_rule_is_refused(
    tmp_path: Path, name: str, text: str, hint: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(oa.RuleError, match="holds no rule") as info:
        oa.read_rules_file(path)
    assert hint in str(info.value)


def test_rules_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bars.toml"
    path.write_text('[[rule]]\nname = "a"\nrequires = ["tests"]\nwindow_days = 0\n')
    [rule] = oa.read_rules_file(path)
    assert (rule.name, rule.requires, rule.effective_window_days) == ("a", ("tests",), 0)
