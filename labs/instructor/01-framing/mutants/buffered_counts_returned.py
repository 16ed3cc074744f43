"""Wrong on purpose: ``buffered`` counts the bytes of returned frames still held."""

from __future__ import annotations

from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    @property
    def buffered(self) -> int:
        return len(self._buffer)
