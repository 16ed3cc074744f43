"""Lab 1's reference: minikafka's own FrameDecoder (packages/net/src/minikafka/net/
_framing.py, walked through in the Network chapter). Switched in by ``make lab 1
--solutions`` and ``make test`` to check that the lab's wiring grades a correct decoder
as done."""

from minikafka.net._framing import FrameDecoder as FrameDecoder
