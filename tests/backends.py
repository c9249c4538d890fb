"""One test body, every engine: the polars engine, the DuckDB SQL views and Spark.

A test that takes the ``backend`` fixture (``tests/conftest.py``) runs once per
engine, with the same literal expectations; an engine that is not installed
(pyspark, Java 17+) is skipped, never silently passed. Each backend answers
in the polars engine's shape: ``acceptance`` one row per (run, rule) with the
columns of ``accept``, ``rates`` one row per (group, rule) with the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import pytest

import ocp_analytics as oa
from ocp_analytics.sql import sql_files

# the columns every engine gives for a rate; the rest are the engine's own extras
RATE_COUNTS = ["rule", "runs", "accepted", "rejected", "unknown"]


class Backend(Protocol):
    """What a test asks of an engine."""

    name: str

    def acceptance(self, dataset: Path, rules: Sequence[str], as_of: str) -> pl.DataFrame: ...

    def rates(
        self,
        dataset: Path,
        rules: Sequence[str],
        as_of: str,
        by_label: str | None = None,
        where: Sequence[str] = (),
    ) -> pl.DataFrame: ...


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    keys = [c for c in ("run_id", "group", "rule") if c in frame.columns]
    return frame.sort(keys, nulls_last=True)


class PolarsBackend:
    """The package's own engine (``oa.acceptance``, ``oa.rates``)."""

    name = "polars"

    def acceptance(self, dataset: Path, rules: Sequence[str], as_of: str) -> pl.DataFrame:
        return _sorted(oa.acceptance(dataset, list(rules), as_of=as_of))

    def rates(
        self,
        dataset: Path,
        rules: Sequence[str],
        as_of: str,
        by_label: str | None = None,
        where: Sequence[str] = (),
    ) -> pl.DataFrame:
        by = [f"label.{by_label}"] if by_label else []
        out = oa.rates(dataset, list(rules), by=by, as_of=as_of, where=list(where))
        if by_label:
            out = out.rename({f"label.{by_label}": "group"})
        return _sorted(out)


class SqlBackend:
    """The DuckDB views and queries of ``ocp_analytics/sql`` over the same dataset."""

    name = "sql"

    def acceptance(self, dataset: Path, rules: Sequence[str], as_of: str) -> pl.DataFrame:
        con = oa.connect(dataset, rules=list(rules), as_of=as_of)
        try:
            return _sorted(con.sql("SELECT * FROM acceptance").pl())
        finally:
            con.close()

    def rates(
        self,
        dataset: Path,
        rules: Sequence[str],
        as_of: str,
        by_label: str | None = None,
        where: Sequence[str] = (),
    ) -> pl.DataFrame:
        if where:
            pytest.skip("the SQL views take no run filter; a WHERE over runs is the SQL way")
        if by_label is None:
            out = oa.run_query(dataset, "SELECT * FROM rates", rules=list(rules), as_of=as_of)
            return _sorted(out)
        out = oa.run_query(
            dataset,
            sql_files() / "queries" / "rates_by_label.sql",
            rules=list(rules),
            as_of=as_of,
            variables={"ocp_label": by_label},
        )
        return _sorted(out.rename({f"label.{by_label}": "group"}))


class SparkBackend:
    """``ocp_analytics.spark``: the package's functions as Spark tasks."""

    name = "spark"

    def __init__(self, session: Any) -> None:
        self.session = session

    def acceptance(self, dataset: Path, rules: Sequence[str], as_of: str) -> pl.DataFrame:
        from ocp_analytics import spark as osp

        frame = osp.acceptance(self.session, dataset, list(rules), as_of=as_of)
        return _sorted(osp.to_polars(frame))

    def rates(
        self,
        dataset: Path,
        rules: Sequence[str],
        as_of: str,
        by_label: str | None = None,
        where: Sequence[str] = (),
    ) -> pl.DataFrame:
        from ocp_analytics import spark as osp

        by = [f"label.{by_label}"] if by_label else []
        out = osp.rates(self.session, dataset, list(rules), by=by, as_of=as_of, where=list(where))
        if by_label:
            out = out.rename({f"label.{by_label}": "group"})
        return _sorted(out)
