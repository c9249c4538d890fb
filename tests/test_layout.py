"""The package's shape holds: imports run one way, and no module outgrows its seam.

docs/architecture.md draws the folders; these tests keep the drawing true.
Imports under ``TYPE_CHECKING`` are names for the type checker only and do
not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ocp_analytics"
GROUND = {"schemas", "exceptions", "_typing", "_version", "_allocator"}
# what each folder may import besides itself and the ground
ALLOWED = {
    "model": set(),
    "store": set(),
    "ingestion": {"model", "store"},
    "engine": {"model", "store"},
    "api": {"model", "store", "engine"},
    "reporting": {"model", "store", "engine", "api"},
    "sql": {"model", "store", "engine", "api"},
    "spark": {"model", "store", "engine", "api", "ingestion"},
    "cli": {"model", "store", "engine", "api", "ingestion", "reporting", "sql", "spark"},
}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _runtime_imports(tree: ast.Module) -> list[str]:
    """Modules of ours imported at run time (not under ``if TYPE_CHECKING:``)."""
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ocp_analytics"):
            module = node.module or ""
            if module == "ocp_analytics":
                found += [f"ocp_analytics.{a.name}" for a in node.names]
            else:
                found.append(module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("ocp_analytics")]
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_each_folder_imports_only_the_layers_below_it(room: str) -> None:
    wrong = []
    for module, path in _modules():
        if _room(module) != room:
            continue
        for target in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            dest = _room(target)
            if dest and dest != room and dest not in GROUND and dest not in ALLOWED[room]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_the_ground_imports_nothing_of_ours_at_run_time() -> None:
    wrong = []
    for module, path in _modules():
        if _room(module) in GROUND:
            for target in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
                if _room(target) not in GROUND:
                    wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_module_passes_600_lines() -> None:
    long = {
        module: n
        for module, path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
