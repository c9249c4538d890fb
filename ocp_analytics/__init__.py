"""ocp-analytics: columnar analytics for OCP run documents."""

from ocp_analytics.acceptance import acceptance, write_acceptance
from ocp_analytics.dataset import Dataset, scan_dataset
from ocp_analytics.exceptions import (
    DatasetError,
    MissingExtraError,
    OcpAnalyticsError,
    RuleError,
    SourceError,
    StrictIngestError,
)
from ocp_analytics.ingest import IngestSummary, ingest, read_documents
from ocp_analytics.rates import compare, label, rates
from ocp_analytics.report import report
from ocp_analytics.rules import Rule, ScoreTarget, read_rules_file
from ocp_analytics.sql import connect, run_query

__version__ = "0.1.0"

__all__ = [
    "Dataset",
    "DatasetError",
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
    "compare",
    "connect",
    "ingest",
    "label",
    "rates",
    "read_documents",
    "read_rules_file",
    "report",
    "run_query",
    "scan_dataset",
    "write_acceptance",
]
