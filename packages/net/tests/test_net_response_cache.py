"""Cached response bodies: the bytes served from a cache are the bytes that
building and encoding the response would give, and a change of what they depend on
(version, error, table, topics asked, the demo broker's identity) gives a new answer.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import (
    MetadataRequestTopic as MetadataRequestTopicV1,
)
from kio.schema.metadata.v9.request import MetadataRequest as MetadataRequestV9
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.request import (
    MetadataRequestTopic as MetadataRequestTopicV12,
)
from kio.schema.types import TopicName
from kio.static.protocol import RequestPayload

import minikafka.net._demo as demo_module
from minikafka.net import DemoApis, RequestHeader, decode_response_body, encode_entity
from minikafka.net._api_versions import (
    _encoded,
    api_versions_body,
    api_versions_response,
)
from minikafka.net._framing import SIZE_PREFIX
from minikafka.net._headers import request_header_version, response_header_version
from minikafka.net._request import Request, Response, ResponseAction

TABLE = {18: (0, 4), 3: (0, 12)}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize(
    "error", [ErrorCode.none, ErrorCode.unsupported_version, ErrorCode.invalid_request]
)
def test_api_versions_body_is_the_encoded_response(
    version: int, error: ErrorCode
) -> None:
    expected = encode_entity(api_versions_response(TABLE, version, error))
    first = api_versions_body(TABLE, version, error)
    assert first == expected
    # equal table: cached
    assert api_versions_body(dict(TABLE), version, error) is first


def test_api_versions_body_follows_the_table() -> None:
    smaller = {18: (0, 4)}
    assert api_versions_body(smaller, 3) == encode_entity(
        api_versions_response(smaller, 3)
    )
    assert api_versions_body(smaller, 3) != api_versions_body(TABLE, 3)


def test_api_versions_cache_stays_right_past_its_bound() -> None:
    bound = _encoded.cache_info().maxsize
    assert bound is not None
    tables = [{18: (0, 4), 3: (0, high)} for high in range(bound + 10)]
    for table in tables + tables[:3]:
        assert api_versions_body(table, 2) == encode_entity(
            api_versions_response(table, 2)
        )
    assert _encoded.cache_info().currsize <= bound


def make_request(body: RequestPayload, sent: list[Response]) -> Request:
    api_key, api_version = int(body.__api_key__), int(body.__version__)
    version = request_header_version(api_key, api_version)
    assert version is not None
    return Request(
        processor_id=0,
        connection_id="c",
        header=RequestHeader(api_key, api_version, 7, "test", version),
        body=body,
        size=0,
        listener="PLAINTEXT",
        start_time=0.0,
        deliver=sent.append,
        clock=lambda: 0.0,
    )


async def ask(demo: DemoApis, body: RequestPayload) -> Any:
    """The demo's decoded answer to ``body``."""
    sent: list[Response] = []
    await demo.handle(make_request(body, sent))
    (response,) = sent
    assert response.action is ResponseAction.SEND
    frame = b"".join(cast(bytes, part) for part in response.parts)[SIZE_PREFIX.size :]
    api_key, api_version = int(body.__api_key__), int(body.__version__)
    # v1: + tagged fields
    header_size = 4 + response_header_version(api_key, api_version)
    return decode_response_body(api_key, api_version, frame, header_size)


async def test_demo_metadata_answers_from_its_cache_and_by_topics_asked() -> None:
    demo = DemoApis(1, "127.0.0.1", 9092)
    asked_a = MetadataRequestV1(topics=(MetadataRequestTopicV1(name=TopicName("a")),))
    asked_b = MetadataRequestV1(topics=(MetadataRequestTopicV1(name=TopicName("b")),))
    every = MetadataRequestV1(topics=None)
    for _ in range(2):  # the second round is answered from the cache
        answer_a = await ask(demo, asked_a)
        assert [(t.name, t.error_code) for t in answer_a.topics] == [
            ("a", ErrorCode.unknown_topic_or_partition)
        ]
        answer_b = await ask(demo, asked_b)
        assert [t.name for t in answer_b.topics] == ["b"]
        assert (await ask(demo, every)).topics == ()
    assert len(demo._metadata_bodies) == 3


async def test_demo_metadata_v12_keys_on_topic_ids() -> None:
    demo = DemoApis(1, "127.0.0.1", 9092)
    first, second = uuid.uuid4(), uuid.uuid4()
    for topic_id in (first, second, first):
        body = MetadataRequestV12(
            topics=(MetadataRequestTopicV12(topic_id=topic_id, name=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        answer = await ask(demo, body)
        assert [t.topic_id for t in answer.topics] == [topic_id]


async def test_demo_metadata_follows_the_brokers_identity() -> None:
    demo = DemoApis(1, "127.0.0.1", 9092)
    body = MetadataRequestV9(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    before = await ask(demo, body)
    assert [(b.host, b.port) for b in before.brokers] == [("127.0.0.1", 9092)]
    demo.host, demo.port = "localhost", 9093
    after = await ask(demo, body)
    assert [(b.host, b.port) for b in after.brokers] == [("localhost", 9093)]


async def test_a_repeated_demo_metadata_request_builds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cache's point: the second identical request encodes no kio object."""
    encoded: list[object] = []

    def counting_encode(entity: Any) -> bytes:
        encoded.append(entity)
        return encode_entity(entity)

    monkeypatch.setattr(demo_module, "encode_entity", counting_encode)
    demo = DemoApis(1, "127.0.0.1", 9092)
    body = MetadataRequestV1(topics=None)
    first = await ask(demo, body)
    second = await ask(demo, body)
    assert first == second
    assert len(encoded) == 1
