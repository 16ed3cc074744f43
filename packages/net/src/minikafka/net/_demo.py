"""The demo handler behind ``python -m minikafka.net``: a one-broker, no-topic cluster.

It answers the two requests every client sends first, ApiVersions and Metadata, which
is enough for ``kcat -L`` and kafka-python's ``KafkaAdminClient`` to connect and list
an empty cluster. The real broker's KafkaApis (``minikafka.broker``) has the same
shape with many more handlers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from ._api_versions import NO_THROTTLE, handle_api_versions
from ._codec import API_VERSIONS_KEY, METADATA_KEY, build, nested, response_schema
from ._request import Request, RequestMetrics


@attrs.define(eq=False)
class DemoApis:
    """A RequestHandler serving ApiVersions 0-4 and Metadata 0-12."""

    node_id: int
    host: str
    port: int
    cluster_id: str = "minikafka-demo"

    SUPPORTED: ClassVar[Mapping[int, tuple[int, int]]] = {
        API_VERSIONS_KEY: (0, 4),
        METADATA_KEY: (0, 12),
    }

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.SUPPORTED

    async def handle(self, request: Request) -> None:
        if request.api_key == API_VERSIONS_KEY:
            handle_api_versions(request, self.SUPPORTED)
        elif request.api_key == METADATA_KEY:
            self.handle_metadata(request)
        else:  # the Processor lets through only what api_versions() lists
            raise AssertionError(f"unexpected {request.api_name}")

    def handle_metadata(self, request: Request) -> None:
        cls = response_schema(METADATA_KEY, request.api_version)
        assert cls is not None
        assert request.body is not None
        broker = build(
            nested(cls, "brokers"),
            node_id=BrokerId(self.node_id),
            host=self.host,
            port=i32(self.port),
            rack=None,
        )
        # No topic exists: each one asked for by name is unknown. (v0 asks for "all
        # topics" with an empty list, v1+ with null; either way the answer is none.)
        topic_cls = nested(cls, "topics")
        topics = tuple(
            build(
                topic_cls,
                error_code=ErrorCode.unknown_topic_or_partition,
                name=topic.name,
                topic_id=getattr(topic, "topic_id", None),
                is_internal=False,
                partitions=(),
            )
            for topic in (getattr(request.body, "topics", None) or ())
        )
        request.respond(
            build(
                cls,
                throttle_time=NO_THROTTLE,
                brokers=(broker,),
                cluster_id=self.cluster_id,
                controller_id=BrokerId(self.node_id),
                topics=topics,
                error_code=ErrorCode.none,
            )
        )


def format_request_line(request: Request, metrics: RequestMetrics) -> str:
    """One line per request, as the demo prints it: what, who, and where the time went."""
    client = request.header.client_id or "-"
    return (
        f"{request.api_name:<12} v{request.api_version:<2} corr={request.header.correlation_id:<5} "
        f"client={client:<20} {request.size:>6}B -> {request.response_size:>6}B  "
        f"queue {metrics.request_queue_ms:6.3f}  local {metrics.local_ms:6.3f}  "
        f"remote {metrics.remote_ms:6.3f}  respq {metrics.response_queue_ms:6.3f}  "
        f"send {metrics.response_send_ms:6.3f}  total {metrics.total_ms:6.3f} ms"
    )
