"""Wrong on purpose: a negative size is refused as too large, not as invalid."""

from __future__ import annotations

from typing import NoReturn

from minikafka.net._framing import FrameDecoder as _Decoder
from minikafka.net._framing import FrameTooLarge


class FrameDecoder(_Decoder):
    def _refuse(self, size: int) -> NoReturn:
        if size < 0:
            raise FrameTooLarge(size, self.max_frame_bytes)
        super()._refuse(size)
