"""``python -m ocp_analytics.cli``: the same as the ``ocp-analytics`` command."""

from ocp_analytics.cli import main

main()
