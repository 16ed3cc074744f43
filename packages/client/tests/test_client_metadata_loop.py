"""The metadata loop's choice of broker (``MetadataRefresher``): each request to the
next known broker, as Kafka's ``NetworkClient.leastLoadedNode`` starts each choice
from a random offset, so that one broker behind the cluster cannot be the only one
heard."""

from __future__ import annotations

import threading
import time
from typing import cast

import trio
from kio.schema.metadata.v12.request import MetadataRequest

from minikafka.client._metadata import ClientMetadata
from minikafka.client._metadata_loop import MetadataRefresher
from minikafka.net import NetworkClient, Node

from .test_client_metadata import T0, answer_v12

ANSWERED = 6


class Brokers:
    """Answers Metadata as brokers 3, 4 and 5 would after broker 5 lost the
    controllers: 5 (also the bootstrap server, -1) still names itself the leader of
    ``t-0`` in epoch 0, the others name broker 4 in epoch 1. Records who was asked,
    and answers no more than :data:`ANSWERED` requests."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.answered = trio.Event()

    async def send(self, node: Node, body: object) -> object:
        assert isinstance(body, MetadataRequest)
        self.asked.append(node.node_id)
        if len(self.asked) > ANSWERED:
            self.answered.set()
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        if node.node_id in (-1, 5):
            return answer_v12((3, 4, 5), 5, 0)
        return answer_v12((3, 4, 5), 4, 1)


async def test_each_metadata_request_goes_to_the_next_broker_and_a_stale_one_is_outvoted() -> (
    None
):
    # Guarantee: the loop does not keep asking the broker that answered last: it asks
    # every known broker in turn, so a broker cut off from the controllers (which
    # answers every time, with its old image) is not the only one heard, and the
    # newer leader it hears from the others stays (chaos/README.md, seed 122).
    brokers = Brokers()
    metadata = ClientMetadata((Node(-1, "h", 9005),), max_age_ms=0)
    metadata.want("t")
    refresher = MetadataRefresher(
        cast(NetworkClient, brokers),
        metadata,
        threading.Lock(),
        time.monotonic,
        retry_backoff_ms=1,
        on_update=lambda: None,
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(refresher.run)
            await brokers.answered.wait()
            nursery.cancel_scope.cancel()
    # The bootstrap server first (no broker known yet), then every broker in turn.
    assert brokers.asked == [-1, 4, 5, 3, 4, 5, 3]
    # The last answer came from broker 5, behind the cluster: broker 4 still leads.
    assert (metadata.leader_of(T0), metadata.leader_epoch_of(T0)) == (4, 1)
