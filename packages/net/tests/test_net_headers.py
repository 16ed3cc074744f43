"""Request/response headers and the version rules, including ApiVersions' special cases."""

from __future__ import annotations

import random
import struct

import kio.schema.request_header.v1 as request_header_v1
import kio.schema.request_header.v2 as request_header_v2
import pytest
from kio.schema.api_versions.v2.request import ApiVersionsRequest as ApiVersionsV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.metadata.v9.request import MetadataRequest as MetadataV9
from kio.serial import entity_reader

from minikafka.net import (
    InvalidRequest,
    decode_request_body,
    encode_entity,
    encode_request_header,
    parse_request_header,
    request_header_version,
    response_header_version,
)
from minikafka.net._headers import (
    UnknownApiKey,
    UnsupportedApiVersion,
    encode_response_header,
)


@pytest.mark.parametrize(
    ("api_key", "version", "header"),
    [
        (18, 0, 1),  # ApiVersions v0-2: header v1
        (18, 2, 1),
        (18, 3, 2),  # flexible from v3: header v2
        (18, 4, 2),
        (18, 99, 2),  # unknown ApiVersions version: still derived (KIP-511)
        (3, 8, 1),  # Metadata v8 not flexible
        (3, 9, 2),  # Metadata v9 flexible
        (0, 8, 1),  # Produce v8
        (0, 9, 2),
        (7, 0, 0),  # ControlledShutdown v0: the only header v0
        (3, 99, None),
    ],
)
def test_request_header_version(api_key: int, version: int, header: int | None) -> None:
    assert request_header_version(api_key, version) == header


def test_api_versions_response_header_is_always_v0() -> None:
    assert response_header_version(18, 3) == 0
    assert response_header_version(18, 4) == 0
    assert response_header_version(3, 9) == 1
    assert response_header_version(3, 8) == 0


METADATA_V9 = MetadataV9(
    topics=None,
    allow_auto_topic_creation=True,
    include_cluster_authorized_operations=False,
    include_topic_authorized_operations=False,
)


@pytest.mark.parametrize("body", [ApiVersionsV2(), METADATA_V9])
def test_request_header_round_trip(body: ApiVersionsV2 | MetadataV9) -> None:
    raw = encode_request_header(
        int(body.__api_key__), int(body.__version__), 42, "client-1"
    )
    header, offset = parse_request_header(raw + b"body")
    assert (header.api_key, header.api_version, header.correlation_id) == (
        body.__api_key__,
        body.__version__,
        42,
    )
    assert header.client_id == "client-1"
    assert offset == len(raw)


def test_unknown_api_versions_version_reads_header_v2() -> None:
    raw = encode_request_header(18, 3, 7, "newer-client")
    # Re-label the request as ApiVersions v9, a version nobody knows yet.
    relabelled = raw[:2] + (9).to_bytes(2, "big") + raw[4:]
    header, _ = parse_request_header(relabelled)
    assert (header.api_version, header.version, header.client_id) == (
        9,
        2,
        "newer-client",
    )


def test_controlled_shutdown_v0_header_has_no_client_id() -> None:
    header, offset = parse_request_header(b"\x00\x07\x00\x00\x00\x00\x00\x05rest")
    assert (header.api_key, header.correlation_id, header.client_id, offset) == (
        7,
        5,
        None,
        8,
    )


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"\x00\x12\x00", InvalidRequest),  # shorter than the fixed part
        (
            b"\x00\x12\x00\x02\x00\x00\x00\x01\x00\x09ab",
            InvalidRequest,
        ),  # client id runs off
        (b"\x7f\x00\x00\x00\x00\x00\x00\x01\x00\x00", UnknownApiKey),
        (b"\x00\x03\x00\x63\x00\x00\x00\x01\x00\x00", UnsupportedApiVersion),
    ],
)
def test_bad_headers_raise(raw: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_request_header(raw)


def test_response_header_encodings() -> None:
    assert encode_response_header(5, 0) == b"\x00\x00\x00\x05"
    # empty tagged fields
    assert encode_response_header(5, 1) == b"\x00\x00\x00\x05\x00"


def test_v3_api_versions_body_follows_header() -> None:
    body = ApiVersionsV3(client_software_name="x", client_software_version="1")
    raw = encode_request_header(18, 3, 1, None) + encode_entity(body)
    header, offset = parse_request_header(raw)
    assert header.client_id is None
    assert decode_request_body(18, 3, raw, offset) == body


Read = tuple[
    int, int, int, str | None
]  # correlation id, body offset, version, client id


def kio_request_header(frame: bytes) -> Read | None:
    """The reference: kio's generated reader for the header version the key and version
    call for (what parse_request_header used before it read headers by hand); None for
    bytes it refuses."""
    version = request_header_version(*struct.unpack_from(">hh", frame))
    assert version in (1, 2)
    schema: type[request_header_v1.RequestHeader | request_header_v2.RequestHeader] = (
        request_header_v2.RequestHeader
        if version == 2
        else request_header_v1.RequestHeader
    )
    try:
        header, size = entity_reader(schema)(frame, 0)
    except Exception:
        return None
    return int(header.correlation_id), size, version, header.client_id


def ours(frame: bytes) -> Read | None:
    try:
        header, size = parse_request_header(frame)
    except InvalidRequest:
        return None
    return header.correlation_id, size, header.version, header.client_id


@pytest.mark.parametrize("api", [(18, 2), (18, 3), (3, 8), (3, 9), (0, 8), (0, 9)])
@pytest.mark.parametrize("client_id", [None, "", "client-1", "ünïcode ✓", "x" * 300])
def test_header_reader_agrees_with_kio(
    api: tuple[int, int], client_id: str | None
) -> None:
    raw = encode_request_header(*api, 123456, client_id) + b"\x01\x02body"
    assert ours(raw) == kio_request_header(raw) is not None
    # Every truncation is refused by both.
    for end in range(8, len(raw) - 6):
        assert ours(raw[:end]) == kio_request_header(raw[:end])


@pytest.mark.parametrize("seed", range(30))
def test_header_reader_agrees_with_kio_on_damaged_bytes(seed: int) -> None:
    """Random bytes after the fixed part: lengths, bad UTF-8, tagged fields (which kio
    refuses in a request header, as the hand reader does), non-minimal varints."""
    rng = random.Random(seed)
    api = rng.choice([(18, 3), (3, 9), (3, 8), (0, 8)])
    interesting = [
        b"\xff\xff",
        b"\xff\xfe",
        b"\x80\x00",
        b"\x00",
        b"\x01",
        b"\xc3\x28",
        b"\x80",
    ]
    for _ in range(300):
        tail = b"".join(
            rng.choice(interesting)
            if rng.random() < 0.5
            else bytes([rng.randrange(256)])
            for _ in range(rng.randint(0, 8))
        )
        raw = struct.pack(">hhi", *api, 7) + tail
        assert ours(raw) == kio_request_header(raw), raw
