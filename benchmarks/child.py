"""Run one benchmark figure in a fresh Python process and read its report.

The child is ``python -m MODULE ARGS…`` started in the repository root; its
last line on standard output is a JSON object (at least ``seconds`` and
``rows``). ``os.wait4`` gives the child's own resource usage: its peak RSS
(``ru_maxrss``) and CPU time, without counting this process.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).parent.parent


class FigureFailed(RuntimeError):
    """A figure's process failed (for example, killed for lack of memory)."""


def run_child(
    module: str, args: Sequence[str], what: str
) -> tuple[dict[str, Any], resource.struct_rusage, float]:
    """The child's JSON report, its resource usage and the wall seconds of the process.

    Raises :class:`FigureFailed` naming ``what`` when the child exits with an error.
    """
    cmd = [sys.executable, "-m", module, *args]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise FigureFailed(f"{what} failed with exit code {code}")
    return orjson.loads(out.splitlines()[-1]), usage, wall
