"""One error tree for the package.

Every message says what was found, what was expected, and ends with a
``Hint:`` on how to fix it.
"""

from __future__ import annotations


class OcpAnalyticsError(Exception):
    """Base class of every error raised by ocp-analytics."""


class SourceError(OcpAnalyticsError):
    """An input source cannot be found or opened at all."""


class DatasetError(OcpAnalyticsError):
    """A dataset folder is missing, not a dataset, or locked by another ingest."""


class SqlSetupError(OcpAnalyticsError):
    """The package's own SQL (views, macros) failed on a dataset: its files are the cause."""


class RuleError(OcpAnalyticsError):
    """An alternative rule cannot be read; raised before any work is done."""


class StrictIngestError(OcpAnalyticsError):
    """Raised by ``ingest(..., strict=True)`` when a document was quarantined."""


class MissingExtraError(OcpAnalyticsError, ImportError):
    """An optional dependency is not installed."""


def hint(message: str, fix: str) -> str:
    """Join a message and its hint the way every error of the package reads."""
    return f"{message}\n\nHint: {fix}"
