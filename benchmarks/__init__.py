"""Benchmarks for ocp-analytics: a seeded document generator and figure scripts.

Every script writes its results into :data:`RESULTS` unless told otherwise;
``benchmarks/RESULTS.md`` reads today's figures from there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
"""Where the scripts write their ``results-*.md`` and ``.json`` by default."""


def package_state() -> str:
    """The commit measured, and any uncommitted change to the package in the work tree."""
    git = ["git", "-C", str(RESULTS.parent.parent)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "ocp_analytics"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    changed = [line[3:] for line in dirty.stdout.splitlines()]
    return head.stdout.strip() + (f" + uncommitted: {', '.join(changed)}" if changed else "")
