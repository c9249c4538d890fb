"""The allocator setting made before polars is imported (ocp_analytics._allocator)."""

from __future__ import annotations

import os
import subprocess
import sys

from ocp_analytics._allocator import ENV, SETTING

_SHOW = "import os, ocp_analytics, polars; print(os.environ.get('_RJEM_MALLOC_CONF'))"


def _conf(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _SHOW], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_freed_pages_are_kept_when_the_user_set_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    # polars puts its own decays first; the later setting (ours) wins in jemalloc
    assert _conf(env).endswith("," + SETTING)


def test_the_users_allocator_setting_wins() -> None:
    env = {**os.environ, ENV: "dirty_decay_ms:500,muzzy_decay_ms:1000"}
    assert SETTING not in _conf(env)
