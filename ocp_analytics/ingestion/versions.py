"""Which version of a run is current: the run-version rule of one ingest batch.

A run id read again in a *later* ingest batch replaces the earlier version
(re-ingest is an update). Within *one* batch, when several documents carry
the same run id, the current version is decided by their content, never by
file names or read order:

1. the latest ``run.ended_at`` wins (a missing or unreadable one loses to
   any time);
2. on a tie, the latest ``observed_at`` among the run's signals wins (a
   re-emitted document with a late event appended is the newer one);
3. on a tie, the larger ``doc_sha256`` wins (compared on its first 15 hex
   digits; identical content is simply ``unchanged``).

A version that loses is *outranked*: it is not written when it is read after
the winner, or stays as a superseded version when it was read before it.
Either way a ``duplicate_run`` finding on the current version names it.

:func:`ranked` reads what the rule needs of a chunk's runs (on a worker),
:func:`classify` labels each run against the run index and the batch's
:class:`Versions`; both serve the one-machine ingest and the Spark one.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ocp_analytics.ingestion.tables import ChunkTables

_NO_TIME = -(2**63)
_RANK = ("e", "o", "s")
_RULE = "later run.ended_at, then later latest signal observed_at, then larger doc_sha256"
_WHERE = ("source_path", "source_line", "source_index")
_VERSION_COLS = {"k": pl.UInt64, "cur": pl.Int64, "h": pl.UInt64, **dict.fromkeys(_RANK, pl.Int64)}


def ranked(tables: ChunkTables) -> pl.DataFrame:
    """Each run of a chunk: its hashes and the rank of its version (built on a worker)."""
    last_obs = tables["signals"].group_by("doc_id").agg(pl.col("observed_at").max().alias("o"))
    r = (
        tables["runs"]
        .select("run_id", "doc_id", "doc_sha256", "ended_at", *_WHERE)
        .join(last_obs, on="doc_id", how="left")
        .select(
            "run_id",
            "doc_id",
            "doc_sha256",
            *_WHERE,
            pl.col("run_id").hash().alias("k"),
            pl.col("doc_sha256").hash().alias("h"),
            pl.col("ended_at").dt.epoch("us").fill_null(_NO_TIME).alias("e"),
            pl.col("o").dt.epoch("us").fill_null(_NO_TIME).alias("o"),
            pl.col("doc_sha256").str.slice(0, 15).str.to_integer(base=16).alias("s"),
        )
        .sort("doc_id")
    )
    return r


class Versions:
    """The current version of every run id written in one batch, with its rank.

    ``cur`` is its ``doc_id`` (-1: the dataset's version, read again unchanged).
    Consulted only for runs that are already known or repeat within a chunk,
    so a batch of new runs costs one append a chunk.
    """

    def __init__(self) -> None:
        self.frames: list[pl.DataFrame] = []

    def current(self, keys: pl.DataFrame) -> dict[int, tuple[tuple[int, ...], int, int]]:
        """(rank, doc_id, hash) of the current version of each key seen in this batch."""
        if not self.frames:
            return {}
        seen = (
            pl.concat(self.frames)
            .join(keys, on="k", how="semi")
            .sort([*_RANK, "cur"])
            .group_by("k", maintain_order=True)
            .last()
        )
        return {r[0]: ((r[3], r[4], r[5]), r[1], r[2]) for r in seen.iter_rows()}

    def add(self, frame: pl.DataFrame) -> None:
        self.frames.append(frame.select(list(_VERSION_COLS)).cast(_VERSION_COLS))  # type: ignore[arg-type]


def classify(r: pl.DataFrame, versions: Versions) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Label each run new / replaced / unchanged / outranked (see the module docstring).

    Returns the runs with ``status`` and ``cur`` (the current version's
    ``doc_id`` after this one), and the ``duplicate_run`` findings.
    """
    kh, h = pl.col("kh"), pl.col("h")
    status = (
        pl.when(kh.is_null())
        .then(pl.lit("new"))
        .when(kh == h)
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("replaced"))
    )
    cur = pl.when(status == "unchanged").then(pl.lit(-1)).otherwise(pl.col("doc_id"))
    r = r.with_columns(status.alias("status")).with_columns(cur.alias("cur"))
    dup = r.get_column("k").is_duplicated()
    keys = r.filter(kh.is_not_null() | dup).select("k").unique()
    state = versions.current(keys) if keys.height else {}
    compete = set(state) | set(r.filter(dup).get_column("k").to_list())
    if not compete:
        return r, []
    return _compete(r, state, compete)


def _compete(
    r: pl.DataFrame, state: dict[int, tuple[tuple[int, ...], int, int]], compete: set[int]
) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """The per-document slow path for run ids read more than once in a batch."""
    statuses = r.get_column("status").to_list()
    curs = r.get_column("cur").to_list()
    findings: list[dict[str, Any]] = []
    for i, row in enumerate(r.iter_rows(named=True)):
        k = row["k"]
        if k not in compete:
            continue
        rank = tuple(row[c] for c in _RANK)
        have = state.get(k)
        if have is None:
            state[k] = (rank, curs[i], row["h"])
            continue
        best, best_doc, best_h = have
        if row["h"] == best_h:
            statuses[i], curs[i] = "unchanged", best_doc
        elif rank > best:
            statuses[i] = "replaced"
            state[k] = (rank, row["doc_id"], row["h"])
            other = f"doc_id {best_doc}" if best_doc >= 0 else "the dataset's version"
            findings.append(
                _duplicate(
                    row,
                    row["doc_id"],
                    f"another document of this run in the same ingest ({other}) is outranked "
                    f"by this one ({_RULE}); it stays only as a superseded version",
                )
            )
        else:
            statuses[i], curs[i] = "outranked", best_doc
            if best_doc >= 0:
                findings.append(
                    _duplicate(
                        row,
                        best_doc,
                        "the document of this run at this finding's source_path and line "
                        f"(doc_sha256 {row['doc_sha256'][:16]}…) is outranked by the current "
                        f"version ({_RULE}); it is not written",
                    )
                )
    out = r.with_columns(
        pl.Series("status", statuses, dtype=pl.String), pl.Series("cur", curs, dtype=pl.Int64)
    )
    return out, findings


def _duplicate(row: dict[str, Any], doc_id: int, message: str) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "doc_id": doc_id,
        "code": "duplicate_run",
        "json_path": "$.run.id",
        "message": message,
        **{c: row[c] for c in _WHERE},
    }
