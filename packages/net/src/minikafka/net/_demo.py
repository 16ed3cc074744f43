"""The demo handler behind ``python -m minikafka.net``: a one-broker, no-topic cluster.

It answers the two requests every client sends first, ApiVersions and Metadata, which
is enough for ``kcat -L`` and kafka-python's ``KafkaAdminClient`` to connect and list
an empty cluster. The real broker's KafkaApis (``minikafka.broker``) has the same
shape with many more handlers.

Both answers are cached as encoded bytes: ApiVersions per version (in
``_api_versions``), Metadata per (version, topics asked), since nothing in this
cluster ever changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, TypeAlias

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

if TYPE_CHECKING:
    from kio.schema.metadata.v0 import request as metadata_v0
    from kio.schema.metadata.v1 import request as metadata_v1
    from kio.schema.metadata.v2 import request as metadata_v2
    from kio.schema.metadata.v3 import request as metadata_v3
    from kio.schema.metadata.v4 import request as metadata_v4
    from kio.schema.metadata.v5 import request as metadata_v5
    from kio.schema.metadata.v6 import request as metadata_v6
    from kio.schema.metadata.v7 import request as metadata_v7
    from kio.schema.metadata.v8 import request as metadata_v8
    from kio.schema.metadata.v9 import request as metadata_v9
    from kio.schema.metadata.v10 import request as metadata_v10
    from kio.schema.metadata.v11 import request as metadata_v11
    from kio.schema.metadata.v12 import request as metadata_v12

from ._api_keys import ApiKey
from ._api_spec import ApiSpec, ApiTable
from ._api_versions import NO_THROTTLE, handle_api_versions
from ._body_classes import body_classes
from ._codec import build, encode_entity, nested, response_schema
from ._request import Request, RequestMetrics

# The Metadata versions served, one kio class each (from v10 a topic carries its id),
# as a type for the handler and as the classes the body is checked against (imported
# only when a request of that version arrives: _body_classes.py).
MetadataRequest: TypeAlias = (
    "metadata_v0.MetadataRequest"
    " | metadata_v1.MetadataRequest"
    " | metadata_v2.MetadataRequest"
    " | metadata_v3.MetadataRequest"
    " | metadata_v4.MetadataRequest"
    " | metadata_v5.MetadataRequest"
    " | metadata_v6.MetadataRequest"
    " | metadata_v7.MetadataRequest"
    " | metadata_v8.MetadataRequest"
    " | metadata_v9.MetadataRequest"
    " | metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
)
_METADATA: tuple[type[MetadataRequest], ...] = body_classes(MetadataRequest)
_WithTopicIds: TypeAlias = (
    "metadata_v10.MetadataRequest"
    " | metadata_v11.MetadataRequest"
    " | metadata_v12.MetadataRequest"
)
_METADATA_WITH_TOPIC_IDS: tuple[type[_WithTopicIds], ...] = body_classes(_WithTopicIds)
_MAX_METADATA_BODIES = 256


@attrs.define(eq=False)
class DemoApis:
    """A RequestHandler serving ApiVersions 0-4 and Metadata 0-12."""

    node_id: int
    host: str
    port: int
    cluster_id: str = "minikafka-demo"
    # (version, topics asked, who this broker is) -> the encoded Metadata body. The
    # broker's identity is in the key so that changing a field cannot serve a stale
    # answer; the bound keeps clients asking for ever new names from growing it.
    _metadata_bodies: dict[tuple[object, ...], bytes] = attrs.field(
        init=False, factory=dict
    )

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.SUPPORTED

    async def handle(self, request: Request) -> None:
        # The Processor lets through only what api_versions() lists.
        await self.TABLE.dispatch(self, request)

    async def _api_versions(self, request: Request) -> None:
        handle_api_versions(request, self.SUPPORTED)

    async def _metadata(self, request: Request) -> None:
        body = request.body_as(_METADATA)
        # No topic exists: each one asked for by name is unknown. (v0 asks for "all
        # topics" with an empty list, v1+ with null; either way the answer is none.)
        asked: tuple[tuple[object, object], ...] = (
            tuple((t.name, t.topic_id) for t in body.topics or ())
            if isinstance(body, _METADATA_WITH_TOPIC_IDS)
            else tuple((t.name, None) for t in body.topics or ())
        )
        key = (
            request.api_version,
            asked,
            self.node_id,
            self.host,
            self.port,
            self.cluster_id,
        )
        encoded = self._metadata_bodies.get(key)
        if encoded is None:
            encoded = encode_entity(self._metadata_response(request.api_version, asked))
            if len(self._metadata_bodies) >= _MAX_METADATA_BODIES:
                self._metadata_bodies.clear()
            self._metadata_bodies[key] = encoded
        request.respond_parts((encoded,))

    def _metadata_response(
        self, version: int, asked: tuple[tuple[object, object], ...]
    ) -> ResponsePayload:
        cls = response_schema(ApiKey.METADATA, version)
        assert cls is not None
        broker = build(
            nested(cls, "brokers"),
            node_id=BrokerId(self.node_id),
            host=self.host,
            port=i32(self.port),
            rack=None,
        )
        topic_cls = nested(cls, "topics")
        topics = tuple(
            build(
                topic_cls,
                error_code=ErrorCode.unknown_topic_or_partition,
                name=name,
                topic_id=topic_id,
                is_internal=False,
                partitions=(),
            )
            for name, topic_id in asked
        )
        return build(
            cls,
            throttle_time=NO_THROTTLE,
            brokers=(broker,),
            cluster_id=self.cluster_id,
            controller_id=BrokerId(self.node_id),
            topics=topics,
            error_code=ErrorCode.none,
        )

    # The demo's whole protocol surface: ApiVersions, dispatch and the Processor's
    # version check are all read from these rows.
    TABLE: ClassVar[ApiTable[DemoApis]] = ApiTable(
        ApiSpec(ApiKey.API_VERSIONS, 0, 4, _api_versions),
        ApiSpec(ApiKey.METADATA, 0, 12, _metadata),
    )
    SUPPORTED: ClassVar[Mapping[int, tuple[int, int]]] = TABLE.versions()


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
