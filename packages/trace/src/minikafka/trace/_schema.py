"""Spark schemas for trace events, as the plain data of Spark's StructType JSON form.

The labs (ARCHITECTURE.md, "Traces and labs") read trace files with PySpark. Building the schema
here as dicts keeps pyspark out of the broker's dependencies; a lab turns one into a real schema
with ``pyspark.sql.types.StructType.fromJson(spark_schema(RequestCompleted))``.
"""

from __future__ import annotations

from ._event import FieldType, TraceEvent, event_types, spec_for_class

_SPARK_SCALARS: dict[type, str] = {
    int: "long",  # Kafka's offsets, ids and byte counts are 64-bit; Spark's "integer" is 32.
    float: "double",
    str: "string",
    bool: "boolean",
}


def _field(
    name: str, data_type: str | dict[str, object], nullable: bool
) -> dict[str, object]:
    return {"name": name, "type": data_type, "nullable": nullable, "metadata": {}}


ENVELOPE_SCHEMA: tuple[dict[str, object], ...] = (
    _field("ts", "double", False),
    _field("node", "long", False),
    _field("component", "string", False),
    _field("event", "string", False),
)


def spark_type(kind: FieldType) -> str | dict[str, object]:
    """The Spark data type JSON of one field shape (nullability lives on the field)."""
    scalar = _SPARK_SCALARS[kind.scalar]
    if kind.kind == "array":
        return {"type": "array", "elementType": scalar, "containsNull": False}
    if kind.kind == "map":
        return {
            "type": "map",
            "keyType": "string",
            "valueType": scalar,
            "valueContainsNull": False,
        }
    return scalar


def spark_schema(event_type: type[TraceEvent]) -> dict[str, object]:
    """The StructType JSON of one registered event: envelope columns, then its fields.

    Every call returns fresh dicts, so a caller may add metadata without side effects.
    """
    spec = spec_for_class(event_type)
    fields = [dict(field, metadata={}) for field in ENVELOPE_SCHEMA]
    fields.extend(
        _field(name, spark_type(kind), kind.nullable)
        for name, kind in zip(spec.names, spec.types, strict=True)
    )
    return {"type": "struct", "fields": fields}


def all_spark_schemas() -> dict[str, dict[str, object]]:
    """The schema of every registered event, keyed ``"component.event"``, sorted by key."""
    schemas = {
        f"{component}.{event}": spark_schema(cls)
        for (component, event), cls in event_types().items()
    }
    # By the joined key, not by (component, event): "test-x.a" sorts before "test.b".
    return dict(sorted(schemas.items()))
