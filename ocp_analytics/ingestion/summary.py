"""The one shape of an ingest's outcome: counts per source that reconcile.

An ingest of runs (:class:`~ocp_analytics.ingestion.batch.IngestSummary`)
and one of late events (:class:`~ocp_analytics.ingestion.events.EventsSummary`)
report alike: a :class:`SourceCounts` per source (its path, size, hash and
what it contributed), totals summed over the sources, and one check that
every entry read is accounted for (:attr:`Summary.reconciles`): read = kept
+ quarantined. Each subclass names its own counts; the sums, the check, the
printed summary and the ``strict`` error live here once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from ocp_analytics.exceptions import StrictIngestError, hint
from ocp_analytics.store.storage import Store


def _counts(c: Counter[str]) -> str:
    """Counts by code, sorted by code: ``"a 1, b 2,000"``."""
    return ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()))


@dataclass
class SourceCounts:
    """What one source contributed; a subclass adds its counts (``COUNTS``).

    ``resolved`` (the absolute resolved path) and ``sha256`` are the
    re-ingest key; ``skipped``: the source was already ingested with the
    same content.
    """

    COUNTS: ClassVar[tuple[str, ...]]  # the counts of a commit record, in order

    path: str
    size: int
    sha256: str
    resolved: str = ""
    _: KW_ONLY
    quarantined: int = 0
    skipped: bool = False

    def record(self) -> dict[str, Any]:
        """The commit record entry of this source."""
        keys = ("path", "resolved", "size", "sha256", *self.COUNTS)
        return {k: getattr(self, k) for k in keys}


_S = TypeVar("_S", bound=SourceCounts)


@dataclass
class Summary(Generic[_S]):
    """The reconciled outcome of one ingest: ``READ == sum(KEPT) + quarantined``."""

    READ: ClassVar[str]  # the count of entries read, per source
    KEPT: ClassVar[tuple[str, ...]]  # the counts that, with quarantined, add up to it
    UNIT: ClassVar[str]  # what an entry is, in messages: "document(s)"

    dataset: Store
    sources: list[_S] = field(default_factory=list)
    quarantine_by_code: Counter[str] = field(default_factory=Counter)
    orphans_removed: int = 0
    seconds: float = 0.0

    def _sum(self, key: str) -> int:
        return sum(getattr(s, key) for s in self.sources)

    quarantined = property(lambda self: self._sum("quarantined"))

    @property
    def reconciles(self) -> bool:
        """Whether every entry read was kept or quarantined."""
        return self._sum(self.READ) == sum(self._sum(k) for k in self.KEPT) + self.quarantined

    def _reconciliation(self) -> str:
        """The line of the printed summary that shows the counts adding up."""
        raise NotImplementedError

    def _time(self) -> str:
        return f"time: {self.seconds:.2f} s"

    def _notes(self) -> list[str]:
        """Lines after the time: counts by code, and the like."""
        return self._by_code("quarantined by code", self.quarantine_by_code)

    @staticmethod
    def _by_code(label: str, counts: Counter[str]) -> list[str]:
        return [f"{label}: {_counts(counts)}"] if counts else []

    def __str__(self) -> str:
        skipped = sum(s.skipped for s in self.sources)
        lines = [
            f"dataset: {self.dataset}",
            f"sources: {len(self.sources)} ({skipped} already ingested, skipped)",
            self._reconciliation() + ("" if self.reconciles else "  ** DOES NOT RECONCILE **"),
            self._time(),
            *self._notes(),
        ]
        if self.orphans_removed:
            lines.append(f"removed {self.orphans_removed} part(s) left by an interrupted ingest")
        return "\n".join(lines)

    def _quarantine_note(self) -> str:
        return ""

    def raise_if_quarantined(self) -> None:
        """Raise :class:`~ocp_analytics.exceptions.StrictIngestError` when anything was quarantined.

        Called after the commit (``strict=True``): what was read is ingested.
        """
        if self.quarantined:
            raise StrictIngestError(
                hint(
                    f"{self.quarantined} {self.UNIT} were quarantined{self._quarantine_note()}.",
                    "inspect them with scan_dataset(path).quarantine; the rest was ingested.",
                )
            )
