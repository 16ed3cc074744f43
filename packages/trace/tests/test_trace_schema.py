"""Spark schemas: StructType JSON built from the registered field types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import TraceEvent, all_spark_schemas, register_event, spark_schema


@register_event
@attrs.frozen
class RequestDone(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "schema_request"
    api_key: int
    client_id: str | None
    total_ms: float
    throttled: bool
    partitions: tuple[int, ...]
    sizes: Mapping[str, float]
    tags: tuple[str, ...] | None = None


def _field(name: str, data_type: object, nullable: bool) -> dict[str, object]:
    return {"name": name, "type": data_type, "nullable": nullable, "metadata": {}}


GOLDEN: dict[str, object] = {
    "type": "struct",
    "fields": [
        _field("ts", "double", False),
        _field("node", "long", False),
        _field("component", "string", False),
        _field("event", "string", False),
        _field("api_key", "long", False),
        _field("client_id", "string", True),
        _field("total_ms", "double", False),
        _field("throttled", "boolean", False),
        _field("partitions", {"type": "array", "elementType": "long", "containsNull": False},
               False),
        _field("sizes", {"type": "map", "keyType": "string", "valueType": "double",
                         "valueContainsNull": False}, False),
        _field("tags", {"type": "array", "elementType": "string", "containsNull": False}, True),
    ],
}  # fmt: skip


def test_spark_schema_golden() -> None:
    assert spark_schema(RequestDone) == GOLDEN


def test_spark_schema_returns_fresh_data() -> None:
    schema = spark_schema(RequestDone)
    fields = schema["fields"]
    assert isinstance(fields, list)
    fields[0]["metadata"]["comment"] = "mine"
    assert spark_schema(RequestDone) == GOLDEN


def test_all_spark_schemas_is_keyed_by_component_and_event() -> None:
    schemas = all_spark_schemas()
    assert schemas["test.schema_request"] == GOLDEN
    assert list(schemas) == sorted(schemas)


def test_spark_schema_needs_a_registered_event() -> None:
    @attrs.frozen
    class Loose(TraceEvent):
        COMPONENT: ClassVar[str] = "test"
        EVENT: ClassVar[str] = "schema_loose"

    with pytest.raises(TypeError, match="not a registered trace event"):
        spark_schema(Loose)
