"""Request and response headers, and which header version each API version uses.

Every request frame starts with a header that says what follows (Kafka's
``RequestHeader.json``): ``api_key``, ``api_version``, ``correlation_id`` and, from
header v1 on, a ``client_id``; header v2 adds tagged fields for "flexible" API
versions (KIP-482). Responses carry only the ``correlation_id`` (v0) plus tagged
fields (v1). The header version is not on the wire: both sides derive it from the API
key and version, so the broker reads the first four bytes, looks the pair up, and only
then knows how to read the rest.

Two rules are special, both about ApiVersions, the first request a client sends:

- a broker must answer an ApiVersions request of a version it does not know (the
  client is newer than the broker), so the header version for an unknown ApiVersions
  version is still derived: v2 from version 3 on (KIP-511);
- the ApiVersions *response* header is always v0, even for flexible versions, because
  the client must be able to read it before it knows which versions the broker speaks.

Header v0 (no client id) survives only for ControlledShutdown v0; kio does not model
it, so it is read here by hand.

Every request header is read by hand, in fact: the fixed part and the
client id's length with precompiled ``struct`` formats, the id with one slice, and
header v2's tagged fields, which must be none (no tag is defined for the request
header, and kio's reader refuses any), from their count. That is about half of what
building a kio header object cost, on every request; a test holds it to kio's reader,
accepted values and refused bytes alike.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import TypeVar

import attrs
import kio.schema.request_header.v1 as request_header_v1
import kio.schema.request_header.v2 as request_header_v2
import kio.schema.response_header.v0 as response_header_v0
import kio.schema.response_header.v1 as response_header_v1
from kio.schema.index import api_key_map
from kio.serial import entity_reader
from kio.static.primitive import i16, i32
from kio.static.protocol import Entity

from ._api_keys import ApiKey
from ._codec import encode_entity, request_schema, response_schema

H = TypeVar("H", bound=Entity)

_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id: same in v0-v2
_CLIENT_ID_LENGTH = struct.Struct(">h")  # v1+, after the fixed part; -1 is a null id
_RESPONSE_V0 = struct.Struct(">i")  # correlation_id
_RESPONSE_V1 = struct.Struct(">iB")  # correlation_id, an empty tagged-field section


class InvalidRequest(Exception):
    """A request the broker cannot read; its connection is closed (ARCHITECTURE.md, "Wire
    protocol")."""


class UnknownApiKey(InvalidRequest):
    pass


class UnsupportedApiVersion(InvalidRequest):
    pass


@attrs.frozen
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    version: int
    """The header version (0, 1 or 2) this header was read with."""


@cache
def request_header_version(api_key: int, api_version: int) -> int | None:
    """The request header version for this API version, ``None`` if unknown."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    schema = request_schema(api_key, api_version)
    if schema is not None:
        return 2 if schema.__header_schema__ is request_header_v2.RequestHeader else 1
    if api_key == ApiKey.API_VERSIONS and api_version >= 0:
        # KIP-511: a newer client's ApiVersions still gets an answer.
        return 2 if api_version >= 3 else 1
    return None


@cache
def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0  # always v0, see the module docstring
    schema = response_schema(api_key, api_version)
    if (
        schema is not None
        and schema.__header_schema__ is response_header_v1.ResponseHeader
    ):
        return 1
    return 0


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)``: the part common to every header."""
    if len(frame) < _FIXED.size:
        raise InvalidRequest(f"truncated request header ({len(frame)} bytes)")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame)
    return api_key, api_version, correlation_id


def parse_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Read the header at the start of ``frame``; returns it and where the body
    starts."""
    if len(frame) < _FIXED.size:
        raise InvalidRequest(f"truncated request header ({len(frame)} bytes)")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame)
    version = request_header_version(api_key, api_version)
    if version is None:
        if api_key not in api_key_map and api_key != ApiKey.CONTROLLED_SHUTDOWN:
            raise UnknownApiKey(f"unknown api key {api_key}")
        raise UnsupportedApiVersion(f"api key {api_key} has no version {api_version}")
    if version == 0:
        return RequestHeader(api_key, api_version, correlation_id, None, 0), _FIXED.size
    client_id, offset = _read_client_id(frame)
    if version == 2:
        if offset < len(frame) and frame[offset] == 0:
            offset += 1  # no tagged fields: the usual case, one zero byte
        else:
            offset = _skip_tagged_fields(frame, offset)
    return RequestHeader(
        api_key, api_version, correlation_id, client_id, version
    ), offset


def _read_client_id(frame: bytes) -> tuple[str | None, int]:
    """The nullable int16-length string after the fixed part (a plain string even in
    header v2: the client id was never made compact), and where it ends."""
    start = _FIXED.size + _CLIENT_ID_LENGTH.size
    if len(frame) < start:
        raise InvalidRequest("malformed request header: no client id length")
    (length,) = _CLIENT_ID_LENGTH.unpack_from(frame, _FIXED.size)
    if length == -1:
        return None, start
    if length < 0:
        raise InvalidRequest(f"malformed request header: client id length {length}")
    end = start + length
    if end > len(frame):
        raise InvalidRequest(
            f"malformed request header: client id of {length} bytes in {len(frame)}"
        )
    try:
        return str(frame[start:end], "utf-8"), end
    except UnicodeDecodeError as e:
        raise InvalidRequest(
            f"malformed request header: client id is not UTF-8: {e}"
        ) from e


def _skip_tagged_fields(frame: bytes, offset: int) -> int:
    """Header v2's tagged-field count (an unsigned varint) at ``offset``, which must be 0;
    returns where the body starts."""
    count = 0
    shift = 0
    while True:
        if offset >= len(frame):
            raise InvalidRequest("malformed request header: truncated tagged fields")
        byte = frame[offset]
        offset += 1
        count |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRequest(
                "malformed request header: tagged-field count too long"
            )
    if count:
        raise InvalidRequest(
            f"malformed request header: {count} tagged fields (the header defines none)"
        )
    return offset


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The client side: the header bytes for a request."""
    version = request_header_version(api_key, api_version)
    if version is None:
        raise UnsupportedApiVersion(f"api key {api_key} has no version {api_version}")
    if version == 0:
        return _FIXED.pack(api_key, api_version, correlation_id)
    schema = (
        request_header_v2.RequestHeader
        if version == 2
        else request_header_v1.RequestHeader
    )
    header = schema(
        request_api_key=i16(api_key),
        request_api_version=i16(api_version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    return encode_entity(header)


def encode_response_header(correlation_id: int, version: int) -> bytes:
    if version == 0:
        return _RESPONSE_V0.pack(correlation_id)
    # v1 is the correlation id followed by an empty tagged-field section (one 0 byte).
    return _RESPONSE_V1.pack(correlation_id, 0)


def parse_response_header(frame: bytes, version: int) -> tuple[int, int]:
    """The client side: ``(correlation_id, body offset)``."""
    schema: type[
        response_header_v0.ResponseHeader | response_header_v1.ResponseHeader
    ] = (
        response_header_v1.ResponseHeader
        if version == 1
        else response_header_v0.ResponseHeader
    )
    header, size = _read_header(schema, frame, "response")
    correlation_id = int(header.correlation_id)
    return correlation_id, size


def _read_header(schema: type[H], frame: bytes, side: str) -> tuple[H, int]:
    """kio reads a flexible header; whatever it raises makes a malformed ``side`` header."""
    try:
        return entity_reader(schema)(frame, 0)
    except Exception as e:
        raise InvalidRequest(f"malformed {side} header: {type(e).__name__}: {e}") from e
