"""The bounds check accepts every well-formed body and rejects lengths past the frame."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from minikafka.net import encode_entity, request_schema, response_schema
from minikafka.net._bounds import BoundsError, check_bounds, walk_source

# kio has no strategy for record batches; any bytes do, the check only skips them.
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

# The APIs minikafka serves now or will, every version kio models.
APIS = [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 32, 37]
SCHEMAS = [
    schema
    for api_key in APIS
    for version in range(20)
    if (schema := request_schema(api_key, version)) is not None
]


@pytest.mark.parametrize(
    "schema", SCHEMAS, ids=lambda s: f"{s.__name__}v{s.__version__}"
)
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_every_valid_body_passes_and_ends_where_kio_ends(
    schema: type, data: st.DataObject
) -> None:
    body = data.draw(st.from_type(schema))
    raw = encode_entity(body)
    assert check_bounds(schema, raw, 0) == len(raw)
    # Any truncation is caught before kio sees it.
    if raw:
        cut = data.draw(st.integers(0, len(raw) - 1))
        with pytest.raises(BoundsError):
            check_bounds(schema, raw[:cut], 0)


def test_every_schema_kio_models_gets_a_walk_that_compiles() -> None:
    """The walk is Python written from each schema: every request and response schema of
    every API (kio's and minikafka's own) must give one that compiles and checks its
    empty body's first length (no schema is left to fail on a client's first request)."""
    schemas = [
        schema
        for api_key in range(100)
        for version in range(20)
        for lookup in (request_schema, response_schema)
        if (schema := lookup(api_key, version)) is not None
    ]
    assert len(schemas) > 500
    for schema in schemas:
        compile(walk_source(schema), schema.__name__, "exec")
        # An empty body either is one (no fields) or is refused as too short.
        with contextlib.suppress(BoundsError):
            assert check_bounds(schema, b"", 0) == 0
