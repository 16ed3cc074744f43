"""Wrong on purpose: ``next_frame_size`` hands back any size, refusing none."""

from __future__ import annotations

from minikafka.net._framing import SIZE_PREFIX
from minikafka.net._framing import FrameDecoder as _Decoder


class FrameDecoder(_Decoder):
    def next_frame_size(self) -> int | None:
        if self.buffered < SIZE_PREFIX.size:
            return None
        (size,) = SIZE_PREFIX.unpack_from(self._buffer, self._start)
        return int(size)  # the Processor would reserve a 2 GB "frame" for it
