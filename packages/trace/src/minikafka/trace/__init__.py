"""minikafka.trace: trace event types, the JSON Lines writer and Spark schemas for the labs.

Declare an event, emit it, read it back::

    @register_event
    @attrs.frozen
    class SegmentRolled(TraceEvent):
        COMPONENT: ClassVar[str] = "log"
        EVENT: ClassVar[str] = "segment_roll"
        topic: str
        partition: int
        base_offset: int

    tracer = JsonLinesTracer.open(Path("traces"), node=1)  # or a NullTracer: off
    log = Log.open(path, tracer=tracer)  # every component is given its node's tracer
    ...
    if self.tracer.enabled:  # inside the component
        self.tracer.emit(SegmentRolled("orders", 0, 1200))
    ...
    tracer.close()
    records = list(read_trace(Path("traces")))

The process's default tracer (:func:`configure_tracing`, :func:`get_tracer`) is only for
whoever assembles a node and was given none: ``minikafka broker``, ``BrokerServer.open``.
"""

from ._clock import EpochClock as EpochClock
from ._event import ENVELOPE_FIELDS as ENVELOPE_FIELDS
from ._event import TraceEvent as TraceEvent
from ._event import decode_event as decode_event
from ._event import event_types as event_types
from ._event import register_event as register_event
from ._files import read_trace as read_trace
from ._files import trace_files as trace_files
from ._global import TRACE_DIR_ENV as TRACE_DIR_ENV
from ._global import configure_from_env as configure_from_env
from ._global import configure_tracing as configure_tracing
from ._global import get_tracer as get_tracer
from ._global import install_tracer as install_tracer
from ._schema import all_spark_schemas as all_spark_schemas
from ._schema import spark_schema as spark_schema
from ._summary import EventSummary as EventSummary
from ._summary import format_summary as format_summary
from ._summary import summarize as summarize
from ._summary import summary_report as summary_report
from ._summary import trace_runs as trace_runs
from ._tracer import NullTracer as NullTracer
from ._tracer import Tracer as Tracer
from ._tracer import TracerClosedError as TracerClosedError
from ._writer import DEFAULT_BUFFER_BYTES as DEFAULT_BUFFER_BYTES
from ._writer import DEFAULT_MAX_FILE_BYTES as DEFAULT_MAX_FILE_BYTES
from ._writer import JsonLinesTracer as JsonLinesTracer
from ._writer import encode_fields_line as encode_fields_line
from ._writer import encode_line as encode_line
from ._writer import reference_line as reference_line

__all__ = [
    "DEFAULT_BUFFER_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "ENVELOPE_FIELDS",
    "TRACE_DIR_ENV",
    "EpochClock",
    "EventSummary",
    "JsonLinesTracer",
    "NullTracer",
    "TraceEvent",
    "Tracer",
    "TracerClosedError",
    "all_spark_schemas",
    "configure_from_env",
    "configure_tracing",
    "decode_event",
    "encode_fields_line",
    "encode_line",
    "event_types",
    "format_summary",
    "get_tracer",
    "install_tracer",
    "read_trace",
    "reference_line",
    "register_event",
    "spark_schema",
    "summarize",
    "summary_report",
    "trace_files",
    "trace_runs",
]
