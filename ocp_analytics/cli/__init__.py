"""The ``ocp-analytics`` command line. Nothing imports this package."""

from ocp_analytics.cli.app import main

__all__ = ["main"]
