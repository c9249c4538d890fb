"""The Spark session: pyspark and Java present, the settings the tasks rely on, the master."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ocp_analytics.exceptions import MissingExtraError, OcpAnalyticsError, hint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INSTALL = "pip install 'ocp-analytics[spark]'"
JAVA_MIN = 17

# What the measurements in docs/spark.md rest on; --spark-conf overrides any of them.
SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.compression.codec": "zstd",
    "spark.driver.memory": "4g",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
}


def require_pyspark() -> None:
    """Raise :class:`~ocp_analytics.exceptions.MissingExtraError` when pyspark is absent.

    Examples
    --------
    >>> from ocp_analytics import spark as osp
    >>> osp.require_pyspark()  # with the extra installed: nothing to say
    """
    try:
        import pandas  # noqa: F401 (pyspark's Arrow functions need it)
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(f"the Spark engine needs pyspark and pandas: {INSTALL}") from exc


def java_major(text: str) -> int | None:
    """The Java major version in ``java -version`` output, None when absent.

    Examples
    --------
    >>> java_major('openjdk version "17.0.15" 2025-04-15')
    17
    >>> java_major('java version "1.8.0_381"')
    8
    >>> java_major("no java here") is None
    True
    """
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def check_java() -> None:
    """Raise a clear error unless Java 17 or newer runs (``JAVA_HOME``, else ``PATH``).

    Examples
    --------
    >>> from ocp_analytics import spark as osp
    >>> osp.check_java()  # Java 17+ found: nothing to say
    """
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    fix = f"install Java {JAVA_MIN}+ (e.g. apt-get install openjdk-17-jre-headless) "
    fix += "and put it on PATH or set JAVA_HOME."
    if java is None or not Path(java).exists():
        raise OcpAnalyticsError(hint("the Spark engine needs Java, and none was found.", fix))
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    major = java_major(out.stderr + out.stdout)
    if major is None or major < JAVA_MIN:
        found = "an unreadable version" if major is None else f"Java {major}"
        raise OcpAnalyticsError(
            hint(f"the Spark engine needs Java {JAVA_MIN}+; {java} is {found}.", fix)
        )


def session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "ocp-analytics",
) -> SparkSession:
    """A SparkSession with the settings this module relies on.

    Workers run this interpreter (``PYSPARK_PYTHON`` defaults to
    ``sys.executable``), and the session time zone is UTC. A session already
    running in this process is returned with ``conf`` applied (Spark's
    ``getOrCreate``).

    Parameters
    ----------
    master
        ``local[*]``, ``local[2]``, ``spark://host:7077``, ``yarn``, …; None
        keeps the master ``spark-submit`` gave, else ``local[*]``.
    conf
        More settings (they override :data:`SETTINGS`).
    app_name
        The application name.

    Returns
    -------
    SparkSession

    Examples
    --------
    >>> from ocp_analytics import spark as osp
    >>> spark = osp.session("local[1]")
    >>> spark.conf.get("spark.sql.session.timeZone")
    'UTC'
    """
    require_pyspark()
    launched = "PYSPARK_GATEWAY_PORT" in os.environ  # under spark-submit: the JVM runs
    if not launched:
        check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None or not launched:
        builder = builder.master(master or "local[*]")
    for key, value in {**SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def running(
    master: str | None = None, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """:func:`session` for the length of a ``with`` block, stopped after it when it made it.

    A session that was already running (a notebook's, a test's) is used and left running.

    Examples
    --------
    >>> from ocp_analytics import spark as osp
    >>> with osp.running("local[1]") as spark:
    ...     spark.range(3).count()
    3
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    spark = session(master, conf)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        if before is None:
            spark.stop()


def parse_conf(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (for ``--spark-conf``).

    Examples
    --------
    >>> parse_conf(["spark.executor.memory=8g", "a.b=x=y"])
    {'spark.executor.memory': '8g', 'a.b': 'x=y'}
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OcpAnalyticsError(hint(f"cannot read --spark-conf {item!r}.", "write KEY=VALUE."))
        out[key.strip()] = value
    return out
