"""schemas.py: the one home of column types."""

from __future__ import annotations

import polars as pl
import pytest

from ocp_analytics import schemas as S


@pytest.mark.parametrize("table", [*S.TABLES, *S.OUTPUTS])
def test_polars_schema_is_what_arrow_converts_to(table: str) -> None:
    empty = pl.from_arrow({**S.TABLES, **S.OUTPUTS}[table].empty_table())
    assert isinstance(empty, pl.DataFrame)
    assert S.polars_schema(table) == empty.schema
