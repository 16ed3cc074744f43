"""Wrong on purpose: the bytes of frames already returned are never dropped."""

from __future__ import annotations

from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    def _compact(self) -> None:
        return None  # the buffer only grows: a long-lived connection leaks
