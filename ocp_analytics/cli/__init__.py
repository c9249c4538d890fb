"""The ``ocp-analytics`` command: parse arguments, call the API, map errors.

Exit codes: 0 success; 1 an error the message explains (bad dataset, rule,
source, output path); 2 wrong usage (an unknown option, a value out of
range); 3 ``ingest --strict`` quarantined something.

Options mean the same in every command: ``-o/--out`` the file written,
``-f/--format`` its format (by default the extension of ``--out``, else a
table), ``--rules`` a rules file and ``--rule`` a short rule (both
repeatable), ``--as-of`` the instant late events are judged at.

The modules: ``root`` (the typer ``app``, ``--version``, exit codes, the
command list, ``main``), ``options`` (the shared options and how they are
read), ``output`` (tables, CSV, JSON, Parquet), and one module a group of
commands: ``ingest`` (ingest, ingest-events, unmatched-events),
``evaluate`` (accept, rates, compare), ``report``, ``sql``. Nothing imports
this package.
"""

from ocp_analytics.cli.root import app, main

__all__ = ["app", "main"]

if __name__ == "__main__":  # spark-submit runs this file as a script (docs/spark.md)
    main()
