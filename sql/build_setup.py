"""Write sql/setup.sql from the files it concatenates; ``--check`` only compares.

Usage: ``python sql/build_setup.py [--check]`` (exit 1 when setup.sql is stale).
The order of the files is ``ocp_analytics.sql.SETUP_FILES``.
"""

from ocp_analytics.sql import main

if __name__ == "__main__":
    raise SystemExit(main())
