"""ocp-analytics: columnar analytics for OCP run documents."""

# before anything imports polars: its allocator reads this once (see _allocator)
from ocp_analytics._allocator import keep_freed_pages

keep_freed_pages()

# ruff: noqa: E402
from ocp_analytics._version import __version__
from ocp_analytics.api import (
    acceptance,
    attempts_distribution,
    compare,
    rates,
    write_acceptance,
)
from ocp_analytics.dataset import Dataset, scan_dataset
from ocp_analytics.evaluate import evaluate_slice
from ocp_analytics.events import EventsSummary, ingest_events, unmatched_events
from ocp_analytics.exceptions import (
    DatasetError,
    MissingExtraError,
    OcpAnalyticsError,
    RuleError,
    SourceError,
    StrictIngestError,
)
from ocp_analytics.ingest import IngestSummary, ingest, read_documents
from ocp_analytics.rates import label
from ocp_analytics.report import report
from ocp_analytics.rules import Rule, ScoreTarget, read_rules_file
from ocp_analytics.sql import connect, run_query
from ocp_analytics.timeaxis import resolve_window

__all__ = [
    "Dataset",
    "DatasetError",
    "EventsSummary",
    "IngestSummary",
    "MissingExtraError",
    "OcpAnalyticsError",
    "Rule",
    "RuleError",
    "ScoreTarget",
    "SourceError",
    "StrictIngestError",
    "__version__",
    "acceptance",
    "attempts_distribution",
    "compare",
    "connect",
    "evaluate_slice",
    "ingest",
    "ingest_events",
    "label",
    "rates",
    "read_documents",
    "read_rules_file",
    "report",
    "resolve_window",
    "run_query",
    "scan_dataset",
    "unmatched_events",
    "write_acceptance",
]
