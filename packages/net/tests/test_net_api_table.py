"""The typed wire: ApiKey is Kafka's list, a server's table derives its versions and
dispatch, and ``build`` refuses a field name that no version of the message has."""

from __future__ import annotations

import pytest
from kio.schema.index import api_key_map

from minikafka.net import (
    ApiKey,
    ApiSpec,
    ApiTable,
    DemoApis,
    Request,
    build,
    nested,
    response_schema,
)


def test_api_key_names_and_numbers_are_kafkas() -> None:
    for number, name in api_key_map.items():
        assert ApiKey(number).name == name.upper()
    assert ApiKey(7).name == "CONTROLLED_SHUTDOWN"  # kept for its header v0


def test_build_takes_fields_of_other_versions_and_refuses_unknown_names() -> None:
    v0 = response_schema(ApiKey.METADATA, 0)
    assert v0 is not None
    # cluster_id arrives in v2 and error_code in v13: v0 ignores them.
    body = build(v0, brokers=(), topics=(), cluster_id="c", error_code=0)
    assert not hasattr(body, "cluster_id")
    with pytest.raises(TypeError, match="'custer_id'"):
        build(v0, brokers=(), topics=(), custer_id="c")
    # Nested entities are checked across versions too: a broker's rack is v1+.
    broker_v0 = nested(v0, "brokers")
    build(broker_v0, node_id=1, host="h", port=9092, rack=None)
    with pytest.raises(TypeError, match=r"MetadataResponseBroker.*'racks'"):
        build(broker_v0, node_id=1, host="h", port=9092, racks=None)


async def _nothing(server: object, request: Request) -> None:
    pass


def test_a_table_derives_versions_and_refuses_a_key_declared_twice() -> None:
    table: ApiTable[object] = ApiTable(
        ApiSpec(ApiKey.METADATA, 0, 12, _nothing),
        ApiSpec(ApiKey.API_VERSIONS, 0, 4, _nothing, parks=False),
    )
    assert table.versions() == {ApiKey.METADATA: (0, 12), ApiKey.API_VERSIONS: (0, 4)}
    assert list(table.versions()) == [3, 18]  # in key order, as ApiVersions lists them
    assert ApiKey.METADATA in table
    assert ApiKey.PRODUCE not in table
    with pytest.raises(ValueError, match="METADATA is declared twice"):
        ApiTable(
            ApiSpec(ApiKey.METADATA, 0, 1, _nothing),
            ApiSpec(ApiKey.METADATA, 2, 3, _nothing),
        )
    with pytest.raises(ValueError, match="bad version range"):
        ApiSpec(ApiKey.METADATA, 3, 1, _nothing)


def test_the_demo_advertises_its_table() -> None:
    demo = DemoApis(1, "localhost", 9092)
    assert demo.api_versions() == {
        ApiKey.METADATA: (0, 12),
        ApiKey.API_VERSIONS: (0, 4),
    }
