"""Framing: what the framing lab promises beyond any split yielding the same frames.

A TLS or HTTP client's first bytes are named (``ForeignProtocol``), ``buffered`` counts
only what is not yet returned, ``next_frame_size`` refuses as ``next_frame`` does
without taking anything out, and a long-lived connection's decoder does not keep the
bytes of frames it already returned (measured with tracemalloc).
"""

from __future__ import annotations

import random
import tracemalloc

import pytest

from minikafka.net import (
    ForeignProtocol,
    FrameDecoder,
    FrameTooLarge,
    InvalidFrameSize,
    encode_frame,
)


@pytest.mark.parametrize(
    ("first_bytes", "protocol"),
    [
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "TLS"),  # a ClientHello
        (b"\x16\x03\x03\x00\x50", "TLS"),
        (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", "HTTP"),
        (b"POST /topics HTTP/1.1\r\n", "HTTP"),
    ],
)
def test_tls_and_http_clients_raise_foreign_protocol(
    first_bytes: bytes, protocol: str
) -> None:
    for take in (FrameDecoder.next_frame, FrameDecoder.next_frame_size):
        decoder = FrameDecoder()
        decoder.feed(first_bytes)
        # Still the oversized-frame refusal, for code that catches only that...
        with pytest.raises(FrameTooLarge) as err:
            take(decoder)
        # ...but one that names the protocol, for the operator's log line.
        assert isinstance(err.value, ForeignProtocol), f"{first_bytes!r}: {err.value}"
        assert err.value.protocol == protocol


def test_an_oversized_kafka_prefix_is_not_foreign() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    decoder.feed((5000).to_bytes(4, "big"))
    with pytest.raises(FrameTooLarge) as err:
        decoder.next_frame()
    assert not isinstance(err.value, ForeignProtocol)


def test_buffered_counts_only_bytes_not_yet_returned() -> None:
    first, second = encode_frame(b"a" * 10), encode_frame(b"b" * 20)
    decoder = FrameDecoder()
    decoder.feed(first + second + b"\x00\x00")
    assert decoder.buffered == len(first) + len(second) + 2
    assert decoder.next_frame() == b"a" * 10
    assert decoder.buffered == len(second) + 2
    assert decoder.next_frame() == b"b" * 20
    assert decoder.buffered == 2
    assert decoder.next_frame() is None
    assert decoder.buffered == 2


def test_next_frame_size_reads_the_prefix_and_takes_nothing_out() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    frame = encode_frame(b"z" * 300)
    decoder.feed(frame[:3])
    assert decoder.next_frame_size() is None
    decoder.feed(frame[3:4])
    assert decoder.next_frame_size() == 300  # the body's size, known before the body
    decoder.feed(frame[4:])
    assert decoder.next_frame_size() == 300
    assert decoder.next_frame() == b"z" * 300
    decoder.feed((1025).to_bytes(4, "big"))
    with pytest.raises(FrameTooLarge):
        decoder.next_frame_size()
    negative = FrameDecoder()
    negative.feed(b"\xff\xff\xff\xf0")
    with pytest.raises(InvalidFrameSize):
        negative.next_frame_size()


FRAMES = 100_000
RETAINED_LIMIT = 512 * 1024
"""Well above what a decoder needs (a frame or a read), far below the 10 MB streamed."""


def test_retained_memory_is_bounded_after_100000_frames() -> None:
    """A long-lived connection's decoder forgets the frames it returned.

    100,000 frames of 1 to 200 bytes (about 10 MB) arrive in reads cut anywhere; what
    the decoder holds, measured by tracemalloc after every 10,000 frames, stays under
    512 KiB however many frames went through.
    """
    rng = random.Random(1)
    payloads = [bytes([i % 251]) * rng.randrange(1, 200) for i in range(FRAMES)]
    stream = b"".join(encode_frame(p) for p in payloads)
    reads = []
    at = 0
    while at < len(stream):
        step = rng.randrange(1, 4096)
        reads.append(stream[at : at + step])
        at += step

    tracemalloc.start()
    try:
        decoder = FrameDecoder()
        baseline = tracemalloc.get_traced_memory()[0]
        retained = 0
        returned = 0
        for data in reads:
            decoder.feed(data)
            while (frame := decoder.next_frame()) is not None:
                assert frame == payloads[returned]
                returned += 1
                if returned % 10_000 == 0:
                    in_use = tracemalloc.get_traced_memory()[0] - baseline
                    retained = max(retained, in_use)
    finally:
        tracemalloc.stop()
    assert returned == FRAMES
    assert retained < RETAINED_LIMIT, (
        f"the decoder holds {retained} bytes after {returned} frames: "
        "bytes already returned are kept"
    )
