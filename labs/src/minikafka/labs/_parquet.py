"""Traces as Parquet: converted once, read by event type without scanning the rest.

A trace directory is JSON Lines: every event of every type, mixed, one line each. Spark
reads that fine for a lab's minute of traffic, but a cluster run of tens of millions of
events makes every query parse every line. :func:`to_parquet` converts a trace once
into a dataset laid out as ``component=<c>/event=<e>/node=<n>/part-*.parquet``: each
event type in its own directory with its own typed columns (the schemas of
:func:`minikafka.trace.spark_schema`), partitioned by the node that wrote it. The labs'
:func:`~minikafka.labs.read_events` reads either form: a query for one event type then
reads that type's files only, and a filter on ``node`` prunes whole directories.

The conversion runs in two stages, so that each line is parsed as JSON once:

1. **Sort the lines by type.** The trace is read once as text, and each line's
   ``component`` and ``event`` are taken from its first bytes with a regular expression
   (a tracer writes the envelope first: ``{"ts":…,"node":…,"component":"…","event":"…"``;
   a line written otherwise falls back to a JSON parse of those two keys). The lines,
   unparsed, go to a staging area in the output directory, ``_staging-*/lines/
   component=<c>/event=<e>/``, as LZ4-compressed text.
2. **Parse each type's lines with its schema.** Per event type present, Spark's JSON
   reader reads that type's staged lines only, with the type's schema, and writes them
   partitioned by ``node``. The staging area is removed at the end.

Why: a JSON read of the whole trace per event type parses every line once per type.
``bench/trace_parquet.py`` (10 million events of 13 types, 3.9 GB) measured that design,
one pass for the types present and then one per type, at 370.2 s: 15.95x its ceiling,
Spark copying the raw lines into Parquet, and 329 CPU-seconds. These two stages took
94.0 s, 7.2x the ceiling (13.0 s), and 169 CPU-seconds, most of them the typed parse and
the typed Parquet write that any conversion has to do (``bench/README.md``).

Lines that are not JSON (a process killed mid-write leaves its last line torn) are
dropped as :func:`~minikafka.labs.read_events` drops them from the JSON Lines: a line
sorted under a type by its first bytes but not parseable is a row of nulls to the JSON
reader, and the reader's filter on ``component`` and ``event`` removes it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from minikafka.trace import TraceEvent, event_types, spark_schema

MARKER = "_MINIKAFKA_TRACE"
"""The file that says a directory is a converted trace (and from where)."""

STAGING_PREFIX = "_staging-"
"""The staging area's name in the output directory while it converts (Spark skips
``_``-prefixed paths when it discovers partitions, so a leftover one reads as nothing)."""

# The envelope as JsonLinesTracer writes it, first in every line: ts, node, component,
# event. Groups 1 and 2 are the component and the event, unescaped strings only.
_ENVELOPE_PREFIX = (
    r'^\{"ts":[^,]*,"node":[^,]*,"component":"([^"\\]*)","event":"([^"\\]*)"[,}]'
)

# For a line the prefix does not match: the same two keys, as the JSON reader sees them.
_ENVELOPE = StructType(
    [StructField("component", StringType()), StructField("event", StringType())]
)

_STAGING_COMPRESSION = "lz4"


def is_parquet_trace(directory: Path) -> bool:
    return (Path(directory) / MARKER).exists()


def to_parquet(
    spark: SparkSession, trace_dir: Path, out: Path
) -> list[tuple[str, str]]:
    """Convert the JSON Lines trace in ``trace_dir`` into a Parquet dataset at ``out``.

    Returns the (component, event) types written, sorted. An event type no loaded
    package registers cannot be typed and is left out (``import minikafka.broker`` and
    ``minikafka.client`` first: between them they register every minikafka event). An
    earlier conversion at ``out`` is replaced; any other non-empty ``out`` is refused
    (FileExistsError), not overwritten."""
    files = sorted(str(p) for p in Path(trace_dir).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{trace_dir}: no trace files (*.jsonl)")
    out = Path(out)
    if is_parquet_trace(out):
        shutil.rmtree(out)  # a type the new trace lacks must not survive from the old
    elif out.is_dir() and any(out.iterdir()):
        raise FileExistsError(
            f"{out}: not empty and not a converted trace; not replaced"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    try:
        lines = staging / "lines"
        _stage_lines_by_type(spark, files, lines)
        written = []
        for (component, event), event_type in sorted(event_types().items()):
            staged = lines / f"component={component}" / f"event={event}"
            target = out / f"component={component}" / f"event={event}"
            if staged.is_dir() and _convert_type(spark, staged, event_type, target):
                written.append((component, event))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    (out / MARKER).write_text(f"converted from {Path(trace_dir).resolve()}\n")
    return written


def _stage_lines_by_type(
    spark: SparkSession, files: Sequence[str], lines: Path
) -> None:
    """Stage 1: every line of ``files``, unparsed, under ``component=/event=`` in
    ``lines``. A line whose type cannot be read (not JSON, torn) is left out."""
    prefix_component = F.regexp_extract("value", _ENVELOPE_PREFIX, 1)
    prefix_event = F.regexp_extract("value", _ENVELOPE_PREFIX, 2)
    prefixed = prefix_component != F.lit("")
    parsed = F.from_json("value", _ENVELOPE)
    component = F.when(prefixed, prefix_component).otherwise(parsed["component"])
    event = F.when(prefixed, prefix_event).otherwise(parsed["event"])
    (
        spark.read.text(list(files))
        .select("value", component.alias("component"), event.alias("event"))
        .where(F.col("component").isNotNull() & F.col("event").isNotNull())
        .write.partitionBy("component", "event")
        .option("compression", _STAGING_COMPRESSION)
        .text(str(lines))
    )


def _convert_type(
    spark: SparkSession, staged: Path, event_type: type[TraceEvent], target: Path
) -> bool:
    """Stage 2: one type's staged lines parsed with its schema into ``target``, by node;
    False (and no ``target``) when none of them is an event of that type."""
    schema = StructType.fromJson(spark_schema(event_type))
    component, event = event_type.COMPONENT, event_type.EVENT
    (
        spark.read.schema(schema)
        .json(str(staged))
        .where((F.col("component") == component) & (F.col("event") == event))
        .drop("component", "event")
        .write.mode("overwrite")
        .partitionBy("node")
        .parquet(str(target))
    )
    if any(target.glob("node=*/*.parquet")):
        return True
    shutil.rmtree(target, ignore_errors=True)
    return False


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
