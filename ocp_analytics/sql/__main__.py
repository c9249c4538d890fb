"""``python -m ocp_analytics.sql [--check]``: write (or check) ``setup.sql``."""

from ocp_analytics.sql import main

raise SystemExit(main())
