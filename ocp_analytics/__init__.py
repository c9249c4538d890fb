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
from ocp_analytics.api.check import CheckResult, check
from ocp_analytics.api.cost import cost, run_costs
from ocp_analytics.api.refresh import RefreshSummary, refresh
from ocp_analytics.api.sweep import sweep
from ocp_analytics.api.tries import flaky_tasks, passk
from ocp_analytics.engine.evaluate import evaluate_slice
from ocp_analytics.engine.rates import label
from ocp_analytics.engine.timeaxis import resolve_window
from ocp_analytics.exceptions import (
    DatasetError,
    MissingExtraError,
    OcpAnalyticsError,
    RuleError,
    SourceError,
    SqlSetupError,
    StrictIngestError,
)
from ocp_analytics.ingestion.batch import IngestSummary, ingest, read_documents
from ocp_analytics.ingestion.events import EventsSummary, ingest_events, unmatched_events
from ocp_analytics.model.rules import Rule, ScoreTarget, read_rules_file
from ocp_analytics.reporting.page import report
from ocp_analytics.sql import connect, run_query
from ocp_analytics.store.maintenance import compact, vacuum
from ocp_analytics.store.scan import Dataset, scan_dataset

__all__ = [
    "CheckResult",
    "Dataset",
    "DatasetError",
    "EventsSummary",
    "IngestSummary",
    "MissingExtraError",
    "OcpAnalyticsError",
    "RefreshSummary",
    "Rule",
    "RuleError",
    "ScoreTarget",
    "SourceError",
    "SqlSetupError",
    "StrictIngestError",
    "__version__",
    "acceptance",
    "attempts_distribution",
    "check",
    "compact",
    "compare",
    "connect",
    "cost",
    "evaluate_slice",
    "flaky_tasks",
    "ingest",
    "ingest_events",
    "label",
    "passk",
    "rates",
    "read_documents",
    "read_rules_file",
    "refresh",
    "report",
    "resolve_window",
    "run_costs",
    "run_query",
    "scan_dataset",
    "sweep",
    "unmatched_events",
    "vacuum",
    "write_acceptance",
]
