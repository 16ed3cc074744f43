"""The produce handler alone: server CPU per small Produce without the network layer.

``python -m bench.produce_handler [--rounds N] [--requests N]`` calls the broker's
``handle_produce`` in a loop, in this process, with the Produce v8 body of
``profile_request_path``'s small-produce workload (one 100-byte record, acks=1): the
handler, the ReplicaManager's trio shell and core, a real log in a scratch directory, the
answer's encoding and ``Request.respond_parts``, whose delivery is a no-op here (no
Processor, no socket, no trio task switch). Each round times ``--requests`` calls in the
process's CPU time (``time.process_time``, which another process's load disturbs less
than the wall clock); the best round is printed, in µs per request.

Not a benchmark and not in ``make bench``: it is the profiler's ``handler`` hop measured
on its own, to compare two versions of the handler's code (run it once with each on
``PYTHONPATH``, alternating). A loop keeps the code hot in the CPU's caches, which a
server handling other work between requests does not.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

import trio

from minikafka.broker._metadata_cache import MetadataCache
from minikafka.broker._produce import handle_produce
from minikafka.controller import MetadataImage
from minikafka.controller._image import TopicImage
from minikafka.log.testing import ManualClock
from minikafka.net import Request, RequestHeader, Response
from minikafka.replication import ReplicaManagerShell
from minikafka.replication.testing import TP, partition_state, replica_manager_core

from .profile_request_path import produce_request

_PRODUCE_V8 = RequestHeader(0, 8, 1, "bench", 1)


def _drop(response: Response) -> None:
    """The Processor's side of an answer: nothing to send here."""


async def measure(rounds: int, requests: int, log_dir: Path) -> float:
    """The best round's CPU time per ``handle_produce`` call, in µs."""
    topic_id = uuid.uuid4()
    image = MetadataImage(
        offset=0,
        topics={topic_id: TopicImage(TP.topic, topic_id, {})},
        topic_ids={TP.topic: topic_id},
    )
    cache = MetadataCache(1, image)
    # The log's clock is the wall clock's now: the records' timestamps must pass the
    # log's bound on CreateTime (an hour ahead at most).
    core = replica_manager_core(log_dir, clock=ManualClock(int(time.time() * 1000)))
    shell = ReplicaManagerShell(core)
    shell.become_leader_or_follower({TP: (uuid.uuid4(), partition_state())}, {})
    body = produce_request(topic=TP.topic)
    best = float("inf")
    for _ in range(rounds):
        batch = [
            Request(
                0,
                "c",
                _PRODUCE_V8,
                body,
                200,
                "PLAINTEXT",
                0.0,
                _drop,
                trio.current_time,
            )
            for _ in range(requests)
        ]
        start = time.process_time()
        for request in batch:
            handle_produce(request, shell, cache)
        best = min(best, (time.process_time() - start) / requests * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        best = trio.run(measure, args.rounds, args.requests, Path(scratch))
    print(f"handle_produce: {best:.2f} µs of CPU per small Produce (best round)")


if __name__ == "__main__":
    main()
