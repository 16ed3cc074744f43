"""Framing cases: size prefixes that lie and bytes that are not Kafka at all.

Kafka reads a 4-byte big-endian size, then that many bytes (``NetworkReceive``); a
negative size or one above ``socket.request.max.bytes`` ends the connection before
anything is allocated. The cases: sizes 0, negative, huge and just over the limit; a
frame cut short and the client gone (EOF); a TLS ClientHello and an HTTP GET on the
plaintext listener (their first four bytes read as sizes of hundreds of MB); a valid
request followed by junk (it must be answered, then the connection closed); and random
sizes with random tails. Each case is fixed by its index, the random ones seeded.
"""

from __future__ import annotations

import random
import struct

from tests.fuzz._corpus import corpus
from tests.fuzz._mutate import INT32_MAX, INT32_MIN, Case, frame

SOCKET_REQUEST_MAX_BYTES = 104_857_600  # Kafka's default socket.request.max.bytes

# A TLS 1.2 ClientHello's record header and the start of its handshake (RFC 5246 6.2.1,
# 7.4.1.2): what a client configured for SSL sends to a PLAINTEXT port.
CLIENT_HELLO = bytes.fromhex(
    "16030100c4010000c00303" + "00" * 32 + "000004c02fc030010000930000000f000d0000"
)
HTTP_GET = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _valid(index: int) -> bytes:
    seeds = corpus()
    return frame(seeds[index % len(seeds)].payload(1000 + index))


FIXED: tuple[tuple[str, bytes, bool], ...] = (
    # (what, bytes, half-close after)
    ("size 0", struct.pack(">i", 0), False),
    ("size -1", struct.pack(">i", -1), False),
    ("size INT32_MIN", struct.pack(">i", INT32_MIN), False),
    ("size INT32_MAX", struct.pack(">i", INT32_MAX), False),
    (
        "size just over socket.request.max.bytes",
        struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1),
        False,
    ),
    ("size 1000, 10 bytes, EOF", struct.pack(">i", 1000) + b"\x00" * 10, True),
    ("half a size prefix, EOF", b"\x00\x00", True),
    ("size 4, header cut short", struct.pack(">i", 4) + b"\x00\x12\x00\x00", False),
    (
        "size 7, header cut short",
        struct.pack(">i", 7) + b"\x00\x12\x00\x00\x00\x00\x01",
        False,
    ),
    ("TLS ClientHello", CLIENT_HELLO, False),
    ("HTTP GET", HTTP_GET, False),
    ("valid request, then size -1", _valid(0) + struct.pack(">i", -1), False),
    ("valid request, then a torn frame, EOF", _valid(1) + _valid(2)[:9], True),
    ("a valid request cut short, EOF", _valid(3)[:-3], True),
)


def framing_case(seed_value: int, index: int) -> Case:
    """The fixed cases first, then seeded random sizes with random tails."""
    if index < len(FIXED):
        what, data, eof = FIXED[index]
        return Case(
            "framing", seed_value, index, "framing", "fixed", what, data, False, eof
        )
    rng = random.Random(f"framing:{seed_value}:{index}")
    size = rng.choice(
        (
            rng.randrange(-(2**31), 0),
            rng.randrange(1 << 27, 2**31),
            rng.randrange(0, 64),
        )
    )
    tail = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
    data = struct.pack(">i", size) + tail
    complete = 0 <= size <= len(tail)
    # A size the tail satisfies makes a (garbage) frame; what follows is framing junk.
    return Case(
        "framing",
        seed_value,
        index,
        "framing",
        "random",
        f"size {size}, {len(tail)} bytes",
        data,
        False,
        not complete or rng.random() < 0.5,
    )
