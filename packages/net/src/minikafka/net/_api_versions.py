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
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` gets ``INVALID_REQUEST`` (42);
- from v3 the answer also carries the node's :class:`Features` (KIP-584): the range of
  levels of each feature it supports (v3 leaves out those whose lowest is 0, as Kafka
  does) and the levels the cluster has finalized, with the metadata offset they were
  read at as their epoch.

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

import attrs
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
from kio.static.primitive import i16, i32Timedelta, i64
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


@attrs.frozen
class Features:
    """What ApiVersions v3+ tells of features (KIP-584): ``supported``, each feature's
    lowest and highest level this node can run; ``finalized``, the level the cluster runs
    each at (a level of 0 is not listed: the feature is off); ``epoch``, the metadata
    offset ``finalized`` was read at (-1: none read)."""

    supported: tuple[tuple[str, int, int], ...] = ()
    finalized: tuple[tuple[str, int], ...] = ()
    epoch: int = -1


NO_FEATURES = Features()


def api_versions_response(
    supported: Mapping[int, tuple[int, int]],
    version: int,
    error: ErrorCode = ErrorCode.none,
    features: Features = NO_FEATURES,
) -> ResponsePayload:
    """The ApiVersions response body of ``version`` listing ``supported`` (and from v3,
    ``features``)."""
    cls = response_schema(ApiKey.API_VERSIONS, version)
    if cls is None:
        raise ValueError(f"no ApiVersions response schema for v{version}")
    entry = nested(cls, "api_keys")
    api_keys = tuple(
        build(entry, api_key=i16(key), min_version=i16(low), max_version=i16(high))
        for key, (low, high) in sorted(supported.items())
    )
    tagged: dict[str, object] = {}
    if version >= 3:
        supported_key = nested(cls, "supported_features")
        finalized_key = nested(cls, "finalized_features")
        tagged = {
            "supported_features": tuple(
                build(supported_key, name=n, min_version=i16(lo), max_version=i16(hi))
                for n, lo, hi in features.supported
                if version >= 4 or lo > 0  # v3 cannot say "from level 0"
            ),
            "finalized_features_epoch": i64(features.epoch),
            "finalized_features": tuple(
                build(
                    finalized_key,
                    name=n,
                    max_version_level=i16(level),
                    min_version_level=i16(level),
                )
                for n, level in features.finalized
            ),
        }
    return build(
        cls, error_code=error, api_keys=api_keys, throttle_time=NO_THROTTLE, **tagged
    )


def api_versions_body(
    supported: Mapping[int, tuple[int, int]],
    version: int,
    error: ErrorCode = ErrorCode.none,
    features: Features = NO_FEATURES,
) -> bytes:
    """:func:`api_versions_response` encoded, from the cache when it has been before."""
    return _encoded(version, error, tuple(supported.items()), features)


# A server has one table, so this holds a handful of entries per metadata offset; the
# bound only stops a caller that builds tables on the fly (tests) from growing it
# without end. Its key is everything the body depends on, so servers in one process
# share it.
@functools.lru_cache(maxsize=64)
def _encoded(
    version: int,
    error: ErrorCode,
    table: tuple[tuple[int, tuple[int, int]], ...],
    features: Features,
) -> bytes:
    return encode_entity(api_versions_response(dict(table), version, error, features))


def handle_api_versions(
    request: Request,
    supported: Mapping[int, tuple[int, int]],
    features: Features = NO_FEATURES,
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
    request.respond_parts((api_versions_body(supported, version, features=features),))
