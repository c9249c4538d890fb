"""A damaged file of a dataset, named as every command names it: one line, its batch, a hint.

:class:`Damage` is what ``verify`` reports per damaged file and what a reader
that finds one raises through :func:`damage_error`; :func:`blame` says which
batch and sources wrote a file, from the commit record that lists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ocp_analytics.exceptions import DatasetError

__all__ = ["REPAIR_STORE", "Damage", "blame", "damage_error"]

# What a damaged decisions store file costs, said after its problem.
REPAIR_STORE = ": `verify --repair` deletes it, the next refresh builds it again"


@dataclass(frozen=True)
class Damage:
    """A damaged part or commit record, and the batch that wrote it.

    Examples
    --------
    >>> d = Damage("runs/2-ab-0.parquet", "missing", "runs", 2, "2-ab", ("a.json", "b.json", "c"))
    >>> print(d)
    runs/2-ab-0.parquet: missing (batch 2 2-ab, sources: a.json, b.json and 1 more)
    """

    file: str  # relative to the dataset root
    problem: str
    table: str | None = None  # None: a commit record
    seq: int | None = None
    batch_id: str | None = None
    sources: tuple[str, ...] = ()

    def __str__(self) -> str:
        batch = " ".join(str(v) for v in (self.seq, self.batch_id) if v is not None)
        origin = [f"batch {batch}"] if batch else []
        if self.sources:
            shown = ", ".join(self.sources[:2])
            more = len(self.sources) - 2
            origin.append(f"sources: {shown}" + (f" and {more} more" if more > 0 else ""))
        return f"{self.file}: {self.problem}" + (f" ({', '.join(origin)})" if origin else "")


def blame(record: Any, file: str, name: str) -> Damage:
    """The damage of ``file`` as the record named ``name`` says who wrote it (no problem yet).

    Examples
    --------
    >>> r = {"seq": 3, "batch_id": "00000003-ab", "sources": [{"path": "a.ndjson"}]}
    >>> print(blame(r, "runs/00000003-ab-00000.parquet", "00000003.json"))
    runs/00000003-ab-00000.parquet:  (batch 3 00000003-ab, sources: a.ndjson)
    """
    stem = name.removesuffix(".json")
    seq, batch_id, sources = (int(stem) if stem.isdigit() else None), None, []
    if isinstance(record, dict):
        if seq is None and isinstance(record.get("seq"), int):  # the name's, else the record's
            seq = record["seq"]
        batch_id = record["batch_id"] if isinstance(record.get("batch_id"), str) else None
        for key in ("sources", "event_sources"):
            found = record.get(key)
            sources += [s["path"] for s in found if has_path(s)] if isinstance(found, list) else []
    return Damage(file, "", None, seq, batch_id, tuple(sources))


def has_path(source: Any) -> bool:
    """Whether a record's source is an object with a text ``path``."""
    return isinstance(source, dict) and isinstance(source.get("path"), str)


def damage_error(where: str, damages: list[Damage], what: str = "part") -> DatasetError:
    """The one line a command ends with on a damaged dataset: the first damage, a hint.

    ``what`` names the first damaged file's kind: ``part``, ``commit record``,
    ``decisions store file``, ...

    Examples
    --------
    >>> print(damage_error("ds", [Damage("runs/a.parquet", "missing", "runs", 2, "2-ab")]))
    ds: damaged part runs/a.parquet: missing (batch 2 2-ab). Hint: run `ocp-analytics verify ds`.
    """
    more = f" (and {len(damages) - 1} more damaged)" if len(damages) > 1 else ""
    return DatasetError(
        f"{where}: damaged {what} {damages[0]}{more}. Hint: run `ocp-analytics verify {where}`."
    )
