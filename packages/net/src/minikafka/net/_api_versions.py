"""ApiVersions: how a client learns which versions of each API the broker speaks.

The rules (KIP-35, KIP-511), each enforced below:

- the response lists, for every API the broker serves, the lowest and highest version
  it handles: exactly what it handles, nothing more, because clients act on it
  (librdkafka, for one, starts sending telemetry as soon as it sees API key 71);
- a request of an ApiVersions version the broker does not know is still answered, in
  the v0 format every client can read, with ``UNSUPPORTED_VERSION`` (35) and the range
  of ApiVersions alone, as Kafka answers: the client retries ApiVersions at a version
  both speak, and that answer lists every API;
- from v3 the client names its software; a name or version outside
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` gets ``INVALID_REQUEST`` (42).

Every client sends ApiVersions on every new connection, and its answer depends only on
the served table, the version and the error: the encoded body is kept per (version,
error, table) and sent as bytes (building and encoding it through kio cost
about 14 µs a request). Kafka 2.x kept a prebuilt default response for the same
reason (``ApiVersionsResponse.DEFAULT_API_VERSIONS_RESPONSE``).
"""

from __future__ import annotations

import datetime
import functools
import re
import typing
from collections.abc import Mapping

from kio.schema.api_versions.v0.response import (
    ApiVersionsResponse as ApiVersionsResponseV0,
)
from kio.schema.api_versions.v1.response import (
    ApiVersionsResponse as ApiVersionsResponseV1,
)
from kio.schema.api_versions.v2.response import (
    ApiVersionsResponse as ApiVersionsResponseV2,
)
from kio.schema.api_versions.v3.request import (
    ApiVersionsRequest as ApiVersionsRequestV3,
)
from kio.schema.api_versions.v3.response import (
    ApiVersionsResponse as ApiVersionsResponseV3,
)
from kio.schema.api_versions.v4.request import (
    ApiVersionsRequest as ApiVersionsRequestV4,
)
from kio.schema.api_versions.v4.response import (
    ApiVersionsResponse as ApiVersionsResponseV4,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta
from kio.static.protocol import ResponsePayload

from ._api_keys import ApiKey
from ._codec import build, encode_entity, nested, response_schema
from ._request import Request

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))

ApiVersionsResponse = (
    ApiVersionsResponseV0
    | ApiVersionsResponseV1
    | ApiVersionsResponseV2
    | ApiVersionsResponseV3
    | ApiVersionsResponseV4
)
API_VERSIONS_RESPONSES: tuple[type[ApiVersionsResponse], ...] = typing.get_args(
    ApiVersionsResponse
)


def api_versions_response(
    supported: Mapping[int, tuple[int, int]],
    version: int,
    error: ErrorCode = ErrorCode.none,
) -> ResponsePayload:
    """The ApiVersions response body of ``version`` listing ``supported``."""
    cls = response_schema(ApiKey.API_VERSIONS, version)
    if cls is None:
        raise ValueError(f"no ApiVersions response schema for v{version}")
    entry = nested(cls, "api_keys")
    api_keys = tuple(
        build(entry, api_key=i16(key), min_version=i16(low), max_version=i16(high))
        for key, (low, high) in sorted(supported.items())
    )
    return build(cls, error_code=error, api_keys=api_keys, throttle_time=NO_THROTTLE)


def api_versions_body(
    supported: Mapping[int, tuple[int, int]],
    version: int,
    error: ErrorCode = ErrorCode.none,
) -> bytes:
    """:func:`api_versions_response` encoded, from the cache when it has been before."""
    return _encoded(version, error, tuple(supported.items()))


# A server has one table, so this holds a handful of entries; the bound only stops a
# caller that builds tables on the fly (tests) from growing it without end. Its key is
# everything the body depends on, so servers in one process share it safely.
@functools.lru_cache(maxsize=64)
def _encoded(
    version: int, error: ErrorCode, table: tuple[tuple[int, tuple[int, int]], ...]
) -> bytes:
    return encode_entity(api_versions_response(dict(table), version, error))


def handle_api_versions(
    request: Request, supported: Mapping[int, tuple[int, int]]
) -> None:
    """Answer an ApiVersions request according to the rules above."""
    if request.body is None:
        # A version we cannot read: answer in v0 so the client can read it, with
        # ApiVersions' own range only (Kafka's ApiVersionsRequest.getErrorResponse).
        own: dict[int, tuple[int, int]] = {
            ApiKey.API_VERSIONS: supported[ApiKey.API_VERSIONS]
        }
        request.respond_parts(
            (api_versions_body(own, 0, ErrorCode.unsupported_version),)
        )
        return
    version = request.api_version
    body = request.body
    # KIP-511, from v3
    if isinstance(body, ApiVersionsRequestV3 | ApiVersionsRequestV4):
        name, software_version = body.client_software_name, body.client_software_version
        if not (_SOFTWARE.match(name) and _SOFTWARE.match(software_version)):
            request.respond_parts(
                (api_versions_body({}, version, ErrorCode.invalid_request),)
            )
            return
    request.respond_parts((api_versions_body(supported, version),))
