"""The labs' SparkSession and trace DataFrames (ARCHITECTURE.md, "Traces and labs").

One factory so every lab, test and book cell gets the same session: local mode on two
cores unless ``SPARK_MASTER`` names a cluster, quiet logs, no web UI, and UTC, so the
seconds since the epoch in a trace's ``ts`` read the same on every machine.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from minikafka.trace import TraceEvent, spark_schema

from ._parquet import is_parquet_trace, read_parquet_events

SPARK_MASTER_ENV = "SPARK_MASTER"
DEFAULT_MASTER = "local[2]"

# Spark prints its banner and INFO lines through log4j before setLogLevel can run, so the
# driver JVM gets this configuration from its first line on: errors only, on stderr.
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log4j_file() -> Path:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "minikafka-labs-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        path.write_text(_LOG4J)
    return path


def spark_log() -> Path:
    """Where the Spark JVM's own output goes (its start-up lines, its errors)."""
    return Path(os.environ.get("TMPDIR", "/tmp")) / "minikafka-labs-spark.log"


@contextmanager
def _jvm_output_to_log() -> Iterator[None]:
    """The JVM that PySpark launches inherits this process's stderr, and in client mode it
    prints before any log configuration reaches it (the JDK's "Using incubator modules"
    warning, Spark's "Setting default log level"): in a notebook those lines would land in
    the cell's output. So while the JVM starts, stderr points at :func:`spark_log`, which
    the JVM keeps; Python's own stderr is restored at once, and a Spark error still comes
    back to Python as an exception."""
    sys.stderr.flush()
    saved = os.dup(2)
    with spark_log().open("ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def spark_session(app_name: str = "minikafka-lab") -> SparkSession:
    """The labs' SparkSession: ``local[2]``, or ``$SPARK_MASTER`` when it is set.

    Asking twice returns the running session (Spark keeps one per process). The JVM's
    own output goes to :func:`spark_log`, not to the caller's stderr.
    """
    master = os.environ.get(SPARK_MASTER_ENV) or DEFAULT_MASTER
    java_options = (
        f"-Dlog4j2.configurationFile=file:{_log4j_file()} -Duser.timezone=UTC"
    )
    starting = SparkContext._active_spark_context is None
    with _jvm_output_to_log() if starting else nullcontext():
        session = _build(master, app_name, java_options)
    session.sparkContext.setLogLevel("ERROR")
    return session


def _build(master: str, app_name: str, java_options: str) -> SparkSession:
    return (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", java_options)
        # Lab traces are megabytes: a few shuffle partitions beat Spark's default 200.
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


def trace_schema(event_type: type[TraceEvent]) -> StructType:
    """The Spark schema of one trace event type, from :func:`minikafka.trace.spark_schema`."""
    return StructType.fromJson(spark_schema(event_type))


def read_events(
    spark: SparkSession, directory: Path, event_type: type[TraceEvent]
) -> DataFrame:
    """Every ``event_type`` event of a trace directory as a DataFrame.

    The columns are the envelope (``ts`` in seconds since the epoch, ``node``,
    ``component``, ``event``), the event's fields, and ``time``: ``ts`` as a Spark
    timestamp (UTC) for windows and charts. ``directory`` is a trace as written (JSON
    Lines) or as :func:`~minikafka.labs.to_parquet` converted it.
    """
    schema = trace_schema(event_type)
    if is_parquet_trace(Path(directory)):
        typed = read_parquet_events(
            spark, Path(directory), event_type.COMPONENT, event_type.EVENT
        )
        columns = typed.select(*(F.col(field.name) for field in schema.fields))
        return columns.withColumn("time", F.timestamp_seconds("ts"))
    files = sorted(str(path) for path in Path(directory).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{directory}: no trace files (*.jsonl)")
    frame = spark.read.schema(schema).json(files)
    wanted: Column = (F.col("component") == event_type.COMPONENT) & (
        F.col("event") == event_type.EVENT
    )
    return frame.where(wanted).withColumn("time", F.timestamp_seconds("ts"))
