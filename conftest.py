"""Doctest support: the Spark door's examples share one local session.

Kept at the root, not in the package, so the wheel does not ship it.

An example that calls the door (``osp.…``) needs pyspark, pandas and Java
17+; without them it is skipped, as tests/test_spark.py is. The examples'
``osp.session("local[1]")`` returns the session already running, so the JVM
starts once; the fixture stops that session at the end of the test run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def _spark_for_examples() -> Iterator[None]:
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    from pyspark.sql import SparkSession

    from ocp_analytics.exceptions import OcpAnalyticsError
    from ocp_analytics.spark import check_java

    try:
        check_java()
    except OcpAnalyticsError as exc:  # no Java 17+ on this machine
        pytest.skip(str(exc))
    before = SparkSession.getActiveSession()
    yield
    made = SparkSession.getActiveSession()
    if before is None and made is not None:
        made.stop()


@pytest.fixture(autouse=True)
def _spark_when_an_example_needs_it(request: pytest.FixtureRequest) -> None:
    test = getattr(request.node, "dtest", None)  # a doctest item: its parsed examples
    if test is not None and any("osp." in example.source for example in test.examples):
        request.getfixturevalue("_spark_for_examples")
