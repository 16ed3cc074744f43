"""Traces as Parquet: converted once, read by event type without scanning the rest.

A trace directory is JSON Lines: every event of every type, mixed, one line each. Spark
reads that fine for a lab's minute of traffic, but a cluster run of tens of millions of
events makes every query parse every line. :func:`to_parquet` converts a trace once
into a dataset laid out as ``component=<c>/event=<e>/node=<n>/part-*.parquet``: each
event type in its own directory with its own typed columns (the schemas of
:func:`minikafka.trace.spark_schema`), partitioned by the node that wrote it. The labs'
:func:`~minikafka.labs.read_events` reads either form: a query for one event type then
reads that type's files only, and a filter on ``node`` prunes whole directories.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from minikafka.trace import event_types

MARKER = "_MINIKAFKA_TRACE"
"""The file that says a directory is a converted trace (and from where)."""

_ENVELOPE = StructType(
    [
        StructField("component", StringType()),
        StructField("event", StringType()),
        StructField("node", IntegerType()),
    ]
)


def is_parquet_trace(directory: Path) -> bool:
    return (Path(directory) / MARKER).exists()


def to_parquet(
    spark: SparkSession, trace_dir: Path, out: Path
) -> list[tuple[str, str]]:
    """Convert the JSON Lines trace in ``trace_dir`` into a Parquet dataset at ``out``.

    Returns the (component, event) types written, sorted. An event type no loaded
    package registers cannot be typed and is left out (the broker's package registers
    them all: ``import minikafka.broker`` first). ``out`` is replaced."""
    from ._spark import read_events  # the JSON reader; _spark reads Parquet through us

    files = sorted(str(p) for p in Path(trace_dir).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{trace_dir}: no trace files (*.jsonl)")
    present = {
        (row.component, row.event)
        for row in spark.read.schema(_ENVELOPE)
        .json(files)
        .select("component", "event")
        .distinct()
        .collect()
    }
    known = event_types()
    written = sorted(kind for kind in present if kind in known)
    out = Path(out)
    for component, event in written:
        frame = read_events(spark, Path(trace_dir), known[component, event])
        (
            frame.drop("component", "event", "time")
            .write.mode("overwrite")
            .partitionBy("node")
            .parquet(str(out / f"component={component}" / f"event={event}"))
        )
    (out / MARKER).write_text(f"converted from {Path(trace_dir).resolve()}\n")
    return written


def read_parquet_events(
    spark: SparkSession, directory: Path, component: str, event: str
) -> DataFrame:
    """One event type of a converted trace, with the envelope columns back."""
    path = Path(directory) / f"component={component}" / f"event={event}"
    if not path.exists():
        raise FileNotFoundError(f"{directory}: no {component}.{event} events")
    return (
        spark.read.parquet(str(path))
        .withColumn("component", F.lit(component))
        .withColumn("event", F.lit(event))
    )
