"""Wrong on purpose: a TLS or HTTP client's bytes are just a frame too large."""

from __future__ import annotations

from typing import NoReturn

from minikafka.net._framing import FrameDecoder as _Decoder
from minikafka.net._framing import FrameTooLarge, InvalidFrameSize


class FrameDecoder(_Decoder):
    def _refuse(self, size: int) -> NoReturn:
        if size < 0:
            raise InvalidFrameSize(f"negative frame size {size}")
        raise FrameTooLarge(size, self.max_frame_bytes)
