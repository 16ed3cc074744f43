"""ApiVersions: exact ranges, the v0 answer to unknown versions, software-name checks."""

from __future__ import annotations

from typing import Any, cast

import pytest
import trio
from kio.schema.api_versions.v0.response import (
    ApiVersionsResponse as ApiVersionsResponseV0,
)
from kio.schema.api_versions.v3.request import (
    ApiVersionsRequest as ApiVersionsRequestV3,
)
from kio.schema.errors import ErrorCode

from minikafka.net import DemoApis, Features, api_versions_response, request_schema
from minikafka.net.testing import RawConnection, request_frame, serving


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_every_advertised_api_versions_version_is_answered(version: int) -> None:
    demo = DemoApis(1, "127.0.0.1", 0)
    schema = request_schema(18, version)
    assert schema is not None
    body = (
        schema(client_software_name="tests", client_software_version="1.0")  # type: ignore[call-arg]
        if version >= 3
        else schema()
    )
    async with serving(demo) as server:
        conn = await RawConnection.open(server)
        await conn.send(request_frame(body, 9))
        with trio.fail_after(10):
            response = await conn.receive_response(18, version)
        assert response is not None
        correlation_id, answer = response[0], cast(Any, response[1])
        assert correlation_id == 9
        assert answer.error_code == ErrorCode.none
        ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert ranges == {18: (0, 4), 3: (0, 12)}
        await conn.aclose()


async def test_an_unknown_api_versions_version_is_answered_in_v0() -> None:
    """KIP-511: a newer client gets UNSUPPORTED_VERSION in v0, with ApiVersions' own
    range only (as Kafka answers): enough to retry ApiVersions at a version both speak,
    which then lists every API."""
    frame = request_frame(
        ApiVersionsRequestV3(
            client_software_name="future", client_software_version="9"
        ),
        4,
    )
    relabelled = frame[:6] + (7).to_bytes(2, "big") + frame[8:]  # ApiVersions v7
    async with serving(DemoApis(1, "127.0.0.1", 0)) as server:
        conn = await RawConnection.open(server)
        await conn.send(relabelled)
        with trio.fail_after(10):
            response = await conn.receive_response(18, 0)  # header v0, body v0
        assert response is not None
        correlation_id, answer = response
        assert correlation_id == 4
        assert isinstance(answer, ApiVersionsResponseV0)
        assert answer.error_code == ErrorCode.unsupported_version
        ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert ranges == {18: (0, 4)}
        await conn.aclose()


@pytest.mark.parametrize(
    ("name", "version"), [("-bad", "1"), ("ok", "1.0."), ("", "1")]
)
async def test_bad_client_software_is_an_invalid_request(
    name: str, version: str
) -> None:
    body = ApiVersionsRequestV3(
        client_software_name=name, client_software_version=version
    )
    async with serving(DemoApis(1, "127.0.0.1", 0)) as server:
        conn = await RawConnection.open(server)
        await conn.send(request_frame(body, 1))
        with trio.fail_after(10):
            response = await conn.receive_response(18, 3)
        assert response is not None
        assert cast(Any, response[1]).error_code == ErrorCode.invalid_request
        await conn.aclose()


def test_features_go_from_v3_and_a_feature_from_level_0_only_from_v4() -> None:
    """KIP-584: v3+ answers carry the features a node supports and the levels the
    cluster finalized, with the metadata offset they were read at; v3 leaves out a
    supported feature whose lowest level is 0 (its schema note: v0-v3 cannot say it),
    v4 lists it; v0-v2 have no features at all."""
    features = Features(
        supported=(("metadata.version", 1, 1), ("kraft.version", 0, 0)),
        finalized=(("metadata.version", 1),),
        epoch=42,
    )
    table = {18: (0, 4)}
    answers = {
        v: cast(Any, api_versions_response(table, v, features=features))
        for v in (2, 3, 4)
    }
    assert not hasattr(answers[2], "supported_features")
    supported = {
        v: [
            (f.name, f.min_version, f.max_version)
            for f in answers[v].supported_features
        ]
        for v in (3, 4)
    }
    assert supported == {
        3: [("metadata.version", 1, 1)],
        4: [("metadata.version", 1, 1), ("kraft.version", 0, 0)],
    }
    for v in (3, 4):
        finalized = answers[v].finalized_features
        assert [
            (f.name, f.min_version_level, f.max_version_level) for f in finalized
        ] == [("metadata.version", 1, 1)]
        assert answers[v].finalized_features_epoch == 42
    # A node that gives none answers none, its epoch -1 ("none read").
    bare = cast(Any, api_versions_response(table, 4))
    assert (bare.supported_features, bare.finalized_features) == ((), ())
    assert bare.finalized_features_epoch == -1
