"""Apache Spark as a second executor of the package's own functions.

Nothing here restates what acceptance means: every Spark task calls the same
functions the one-machine engine calls, on its own share of the work.

- Evaluation (:func:`acceptance`, :func:`write_acceptance`, :func:`rates`,
  :func:`compare`): one task per ``doc_id`` range of the dataset, each
  running :func:`ocp_analytics.engine.evaluate.evaluate_slice` on its own
  slice of the Parquet parts, with no shuffle (``spark/evaluate.py``). Rates
  and comparisons return per-task partials, combined on the driver by the
  package's pure ``combine`` and ``combine_flips`` (``spark/rates.py``).
- Ingest (:func:`ingest`): one task per source file (or a few small ones)
  runs the package's reader, ``decode_texts`` and ``build_tables`` and writes
  the seven tables with the package's writer (``spark/ingest.py``). The
  driver applies the package's run-version rule (``spark/versions.py``),
  moves staged parts into the table folders and writes the commit record
  last (``spark/commit.py``): the batch is visible only then. A failed or
  killed job leaves the dataset as it was; the next ingest removes what it
  left and a rerun converges.

Every public function takes an existing ``SparkSession`` (see :func:`session`
for the settings this module expects, ``spark/session.py``). pyspark is
optional: install it with ``pip install 'ocp-analytics[spark]'``.
"""

from ocp_analytics.spark.acceptance import acceptance, to_polars, write_acceptance
from ocp_analytics.spark.ingest import TASK_BYTES, ingest
from ocp_analytics.spark.rates import compare, rates
from ocp_analytics.spark.session import (
    INSTALL,
    JAVA_MIN,
    SETTINGS,
    check_java,
    java_major,
    parse_conf,
    require_pyspark,
    running,
    session,
)

__all__ = [
    "INSTALL",
    "JAVA_MIN",
    "SETTINGS",
    "TASK_BYTES",
    "acceptance",
    "check_java",
    "compare",
    "ingest",
    "java_major",
    "parse_conf",
    "rates",
    "require_pyspark",
    "running",
    "session",
    "to_polars",
    "write_acceptance",
]
