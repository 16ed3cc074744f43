"""Seeded mutations of the corpus's valid requests: the bytes an attacker or a broken client sends.

Each case is a pure function of ``(seed, index)``: ``case(seed, index)`` draws from
``random.Random(f"{seed}:{index}")`` alone, so any case replays on its own
(``--fuzz-replay SEED:INDEX``) whatever ran before it. The mutators are the classic
ones of byte-level fuzzers (AFL's bit flips, "interesting values", truncation,
extension, splicing) plus the ones aimed at Kafka's wire format: length fields that lie
(``-1`` where the schema forbids null, lengths past the end of the frame, INT32_MAX),
compact (varint) lengths of flexible versions, and request-header mutations (an API
version out of range, an unknown API key, extreme correlation ids, client ids with
lying lengths). Structured "valid but nasty" requests are in ``_nasty``; framing cases
(size prefixes that lie, a TLS ClientHello, an HTTP request) in ``_framing``.
"""

from __future__ import annotations

import random
import struct

import attrs

from minikafka.net import encode_entity
from tests.fuzz._corpus import SUPPORTED, Seed, corpus, seeds_by_api

INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
# AFL's interesting values per width, plus Kafka's favourites (-1 is null for strings,
# bytes and arrays; 0x7fff is the largest string length).
INTERESTING: dict[int, tuple[int, ...]] = {
    1: (0, 1, 0x7F, 0x80, 0xFF, 0x10, 0x40),
    2: (0, 1, 0xFFFF, 0x7FFF, 0x8000, 0xFFFE, 0x0100, 0x00FF),
    4: (0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0x00010000, 0x0000FFFF),
    8: (0, 1, 2**64 - 1, 2**63 - 1, 2**63, 2**32),
}
# Request header: api_key int16, api_version int16, correlation_id int32, then the client
# id (a nullable int16-prefixed string) in header v1 and v2.
FIXED_HEADER = struct.Struct(">hhi")


@attrs.frozen
class Case:
    """One fuzz case: the exact bytes to send and where they came from."""

    family: str
    """Which generator made it: ``mutation``, ``nasty`` or ``framing``."""
    seed: int
    index: int
    kind: str
    origin: str
    """The corpus request it mutates (e.g. ``ProduceRequestv8#0``), or the framing case."""
    detail: str
    data: bytes
    """Everything to send, size prefixes included."""
    framed: bool = True
    """``data`` is whole, honest frames: a probe request after it is read on its own."""
    eof: bool = False
    """Half-close the connection after ``data`` (the client goes away)."""

    @property
    def ref(self) -> str:
        return f"{self.family}:{self.seed}:{self.index}"

    def describe(self) -> str:
        if self.family == "none":
            return "no one case: found at the end of the run (stop, verify, restart)"
        shown = self.data[:512].hex()
        more = f"... ({len(self.data)} bytes)" if len(self.data) > 512 else ""
        return (
            f"case {self.ref} [{self.kind}] from {self.origin}: {self.detail}\n"
            f"  replay: pytest tests/fuzz --fuzz-replay {self.ref}\n"
            f"  bytes: {shown}{more}"
        )


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def pick_seed(rng: random.Random) -> Seed:
    """An API uniformly, then one of its versions and variants: every API gets its share."""
    by_api = seeds_by_api()
    api_key = rng.choice(sorted(by_api))
    return rng.choice(by_api[api_key])


def correlation_id(rng: random.Random) -> int:
    return rng.randrange(1, INT32_MAX)


def _body(seed: Seed) -> bytes:
    return encode_entity(seed.body)


# --- byte-level mutators over the body (the header stays valid) -----------------------


def bit_flips(rng: random.Random, body: bytearray) -> str:
    count = rng.choice((1, 1, 2, 4, 8))
    for _ in range(count):
        bit = rng.randrange(len(body) * 8)
        body[bit // 8] ^= 1 << (bit % 8)
    return f"{count} bit flips"


def interesting_value(rng: random.Random, body: bytearray) -> str:
    width = rng.choice((1, 2, 4, 8))
    if len(body) < width:
        width = 1
    at = rng.randrange(len(body) - width + 1)
    value = rng.choice(INTERESTING[width])
    body[at : at + width] = value.to_bytes(width, "big")
    return f"int{width * 8} {value:#x} at {at}"


def length_lie(rng: random.Random, body: bytearray) -> str:
    """A length or count field that lies: big-endian int16/int32 or a compact varint.

    Length fields are found the way a human reads a hex dump: a small number followed by
    that many bytes that still fit in the frame. Not every hit is a length (some are
    counts, some just small values), which is fine: those are interesting too.
    """
    candidates: list[tuple[int, int, int]] = []  # (position, width, current value)
    for width in (2, 4):
        for at in range(len(body) - width + 1):
            value = int.from_bytes(body[at : at + width], "big", signed=True)
            if 0 < value <= len(body) - at - width:
                candidates.append((at, width, value))
    for at, byte in enumerate(body):
        if 1 < byte < 0x80 and byte - 1 <= len(body) - at - 1:
            candidates.append((at, 0, byte))  # a compact length is N+1 (0 is null)
    if not candidates:
        return interesting_value(rng, body)
    at, width, value = rng.choice(candidates)
    if width == 0:
        lie = rng.choice(
            (
                b"\x00",
                b"\x01",
                b"\xff\xff\xff\xff\x0f",
                b"\x80\x80\x80\x80\x08",
                bytes([min(value + 1, 0x7F)]),
            )
        )
        body[at : at + 1] = lie
        return f"compact length {value - 1} -> {lie.hex()} at {at}"
    low, high = (-(2**15), 2**15 - 1) if width == 2 else (INT32_MIN, INT32_MAX)
    remaining = len(body) - at - width
    lie_value = rng.choice((-1, -2, 0, value - 1, value + 1, remaining + 1, high, low))
    lie_value = max(low, min(high, lie_value))
    body[at : at + width] = lie_value.to_bytes(width, "big", signed=True)
    return f"int{width * 8} length {value} -> {lie_value} at {at}"


def truncate(rng: random.Random, body: bytearray) -> str:
    keep = rng.randrange(len(body))
    del body[keep:]
    return f"truncated to {keep} bytes"


def extend(rng: random.Random, body: bytearray) -> str:
    extra = rng.choice((1, 2, 4, 16, 64, 1000))
    tail = (
        bytes(rng.randrange(256) for _ in range(extra))
        if rng.random() < 0.5
        else b"\x00" * extra
    )
    body.extend(tail)
    return f"extended by {extra} bytes"


def delete_range(rng: random.Random, body: bytearray) -> str:
    at = rng.randrange(len(body))
    size = rng.randrange(1, min(16, len(body) - at) + 1)
    del body[at : at + size]
    return f"deleted {size} bytes at {at}"


def duplicate_range(rng: random.Random, body: bytearray) -> str:
    at = rng.randrange(len(body))
    size = rng.randrange(1, min(32, len(body) - at) + 1)
    body[at:at] = body[at : at + size]
    return f"duplicated {size} bytes at {at}"


BODY_MUTATORS = (
    bit_flips,
    interesting_value,
    interesting_value,
    length_lie,
    length_lie,
    length_lie,
    truncate,
    extend,
    delete_range,
    duplicate_range,
)


# --- whole-request mutations ----------------------------------------------------------


def mutate_body(rng: random.Random, seed: Seed, correlation: int) -> tuple[str, bytes]:
    header = _header_with(seed, correlation)
    body = bytearray(_body(seed))
    steps = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not body:  # ListGroups v0-v2 has no fields; an earlier step may have cut all
            body.extend(b"\x00")
        steps.append(rng.choice(BODY_MUTATORS)(rng, body))
    return "; ".join(steps), header + bytes(body)


def _header_with(seed: Seed, correlation: int, client_id: str | None = "fuzz") -> bytes:
    full = seed.payload(correlation, client_id)
    return full[: len(full) - len(_body(seed))]


def mutate_header(
    rng: random.Random, seed: Seed, correlation: int
) -> tuple[str, bytes]:
    body = _body(seed)
    header = bytearray(_header_with(seed, correlation))
    api_key, version, _ = FIXED_HEADER.unpack_from(header)
    low, high = SUPPORTED[api_key]
    what = rng.randrange(5)
    if what == 0:
        new = rng.choice((high + 1, low - 1, -1, 2**15 - 1, -(2**15), high + 100))
        struct.pack_into(">h", header, 2, new)
        return f"api version {version} -> {new}", bytes(header) + body
    if what == 1:
        unknown = [k for k in range(-2, 80) if k not in SUPPORTED] + [
            1000,
            2**15 - 1,
            -(2**15),
        ]
        new = rng.choice(unknown)
        struct.pack_into(">h", header, 0, new)
        return f"api key {api_key} -> {new}", bytes(header) + body
    if what == 2:
        new = rng.choice((0, -1, INT32_MAX, INT32_MIN))
        struct.pack_into(">i", header, 4, new)
        return f"correlation id {new}", bytes(header) + body
    if what == 3:
        # Client ids of odd but legal lengths and contents (KIP-511 validates the
        # software name in ApiVersions v3, not the client id).
        client_id = rng.choice(
            (None, "", "x" * 32767, "é" * 100, "\x00\n", "fuzz " * 50)
        )
        return (
            f"client id of length {-1 if client_id is None else len(client_id)}",
            _header_with(seed, correlation, client_id) + body,
        )
    # A client id length that lies: past the frame, negative, or exactly one too long.
    lie = rng.choice((-2, -32768, 32767, 5, len(body) + 1))
    struct.pack_into(">h", header, 8, lie)
    return f"client id length 4 -> {lie}", bytes(header) + body


def splice(rng: random.Random, seed: Seed, correlation: int) -> tuple[str, bytes]:
    """The head of one request and the tail of another (AFL's splicing stage)."""
    other = rng.choice(corpus())
    mine = _header_with(seed, correlation) + _body(seed)
    theirs = other.payload(correlation)
    cut_mine = rng.randrange(8, len(mine) + 1)
    cut_theirs = rng.randrange(len(theirs))
    return (
        f"first {cut_mine} bytes + {other.name} from byte {cut_theirs}",
        mine[:cut_mine] + theirs[cut_theirs:],
    )


MUTATIONS = (
    ("body", mutate_body, 7),
    ("header", mutate_header, 2),
    ("splice", splice, 1),
)


def mutation_case(seed_value: int, index: int) -> Case:
    """Case ``index`` of the byte-level mutation run of ``seed_value``."""
    rng = random.Random(f"mutation:{seed_value}:{index}")
    seed = pick_seed(rng)
    kinds = [k for k, _, w in MUTATIONS for _ in range(w)]
    kind = rng.choice(kinds)
    mutate = next(m for k, m, _ in MUTATIONS if k == kind)
    detail, payload = mutate(rng, seed, correlation_id(rng))
    return Case("mutation", seed_value, index, kind, seed.name, detail, frame(payload))
