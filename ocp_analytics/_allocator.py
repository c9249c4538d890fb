"""How long polars' allocator keeps freed memory, set before polars is first imported.

polars 2 configures its allocator (jemalloc) when it is imported: freed pages
go back to the system after 0.5 s (dirty) and 1 s (muzzy), unless the
environment variable ``_RJEM_MALLOC_CONF`` says otherwise. Evaluation frees
and allocates buffers of the same sizes slice after slice, every second or
two, so with those decays most pages are handed back and faulted in again,
which costs seconds of system time at a few million runs. Keeping freed
pages 10 s halves the faults, for a higher peak RSS (the figures are in
benchmarks/RESULTS.md, History).

This module only reads and writes ``os.environ``: importing it never
imports polars.
"""

from __future__ import annotations

import os
import sys

ENV = "_RJEM_MALLOC_CONF"
SETTING = "dirty_decay_ms:10000,muzzy_decay_ms:10000"

__all__ = ["ENV", "SETTING", "keep_freed_pages"]


def keep_freed_pages() -> bool:
    """Ask polars' allocator to keep freed pages 10 s; true when the setting was made.

    Nothing is changed when polars is already imported (its allocator is
    configured by then) or when ``_RJEM_MALLOC_CONF`` is set: the user's
    setting wins (``_RJEM_MALLOC_CONF=dirty_decay_ms:500,muzzy_decay_ms:1000``
    restores polars' own).

    Examples
    --------
    >>> import polars  # already imported here: nothing is changed
    >>> keep_freed_pages()
    False
    """
    if "polars" in sys.modules or ENV in os.environ:
        return False
    os.environ[ENV] = SETTING
    return True
