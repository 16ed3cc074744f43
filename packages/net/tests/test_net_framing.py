"""Framing: any split of a byte stream yields the same frames (the sticky-packet problem)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.net import FrameDecoder, FrameTooLarge, InvalidFrameSize, encode_frame

frames_strategy = st.lists(st.binary(max_size=300), max_size=20)


@st.composite
def stream_and_cuts(draw: st.DrawFn) -> tuple[list[bytes], bytes, list[int]]:
    frames = draw(frames_strategy)
    stream = b"".join(encode_frame(f) for f in frames)
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=40)))
    return frames, stream, cuts


@given(stream_and_cuts())
def test_any_split_yields_the_same_frames(
    case: tuple[list[bytes], bytes, list[int]],
) -> None:
    frames, stream, cuts = case
    decoder = FrameDecoder()
    out: list[bytes] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        decoder.feed(stream[start:cut])
        out.extend(decoder.frames())
        start = cut
    assert out == frames
    assert decoder.buffered == 0


def test_partial_frame_waits_for_more() -> None:
    decoder = FrameDecoder()
    decoder.feed(encode_frame(b"hello")[:6])
    assert decoder.next_frame() is None
    assert decoder.buffered == 6
    decoder.feed(b"llo")
    assert decoder.next_frame() == b"hello"


def test_oversized_frame_is_rejected_from_its_prefix_alone() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    decoder.feed((1025).to_bytes(4, "big"))  # no body needed to know it is too big
    with pytest.raises(FrameTooLarge) as err:
        decoder.next_frame()
    assert err.value.size == 1025
    assert "socket.request.max.bytes" in str(err.value)


def test_negative_size_is_rejected() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"\xff\xff\xff\xfe")
    with pytest.raises(InvalidFrameSize):
        decoder.next_frame()


def test_many_small_frames_compact_the_buffer() -> None:
    decoder = FrameDecoder()
    payload = b"x" * 100
    for _ in range(2000):
        decoder.feed(encode_frame(payload))
    assert len(decoder.frames()) == 2000
    assert decoder.buffered == 0
