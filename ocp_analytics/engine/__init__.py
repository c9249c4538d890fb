"""Pure decisions: per-run features, acceptance under rules, the one slice
loop, rates and their partials, the time axis.

``acceptance`` is the door to the decisions; its parts are private modules:
rules compiled into columns (``_compiled``), each run's own rule
(``_recorded``) and the one finish of docs/figures.md "Per run: the acceptance table" (``_finish``).

Imports the ground, ``model`` and ``store`` (the slice loop reads a dataset);
never ``ingestion``.
"""
