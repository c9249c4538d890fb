"""Pure decisions: per-run features, acceptance under rules, the one slice
loop, rates and their partials, the time axis.

Imports the ground, ``model`` and ``store`` (the slice loop reads a dataset);
never ``ingestion``.
"""
