"""Documents to tables to a batch: find and read sources, decode, flatten, commit.

Imports the ground (``schemas``, ``exceptions``), ``model`` and ``store``;
never ``engine``. The public names are re-exported by ``ocp_analytics``.
"""
