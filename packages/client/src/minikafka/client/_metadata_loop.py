"""The task that keeps a client's metadata fresh, shared by the producer and consumer
shells: a Metadata request (v12, whose answers carry topic ids) for the topics the
client uses whenever the metadata asks for one (a new topic, a moved leader,
``metadata.max.age.ms``), ``retry.backoff.ms`` apart while a topic still lacks
partitions or leaders.

Each request goes to the next known broker, whether the one before answered or not.
Kafka's ``NetworkClient.leastLoadedNode`` picks among the brokers from a random offset
each time; a client that kept asking the broker that answered last could keep hearing
one cut off from the controller, which still names itself the leader of partitions
the cluster has moved (chaos/README.md, seed 122). Asking them in turn, the client
hears the newer leader epochs too, and :meth:`ClientMetadata.update` keeps them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import attrs
import trio
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.types import TopicName

from minikafka.common.shell import Wakeup
from minikafka.net import AuthenticationFailed, ClientError, NetworkClient

from ._metadata import ClientMetadata

_logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class MetadataRefresher:
    client: NetworkClient
    metadata: ClientMetadata
    lock: threading.Lock
    clock: Callable[[], float]
    retry_backoff_ms: int
    on_update: Callable[[], None]
    allow_auto_create: bool = True
    _wake: Wakeup = attrs.field(factory=Wakeup)
    _attempt: int = 0

    def wake(self) -> None:
        """Look again now (trio thread): a topic was added or a refresh requested."""
        self._wake.set()

    async def run(self) -> None:
        backoff = self.retry_backoff_ms / 1000
        while True:
            with self.lock:
                every = self.metadata.all_topics
                due = (
                    bool(self.metadata.wanted) or every
                ) and self.metadata.update_due(self.clock())
                topics = sorted(self.metadata.wanted)
                node = self.metadata.any_node(self._attempt)
            if due:
                request = MetadataRequest(
                    topics=None  # every topic
                    if every
                    else tuple(
                        MetadataRequestTopic(topic_id=None, name=TopicName(t))
                        for t in topics
                    ),
                    allow_auto_topic_creation=self.allow_auto_create,
                    include_topic_authorized_operations=False,
                )
                self._attempt += 1  # the next request to the next broker, as it goes
                try:
                    response = await self.client.send(node, request)
                except AuthenticationFailed as exc:
                    _logger.warning(
                        "Authentication with node %s failed: %s", node.node_id, exc
                    )
                    with self.lock:
                        self.metadata.authentication_error = (
                            int(exc.error_code),
                            str(exc),
                        )
                    self.on_update()
                    await trio.sleep(backoff)
                    continue
                except ClientError as exc:
                    _logger.info("Metadata from node %s failed: %s", node.node_id, exc)
                    await trio.sleep(backoff)
                    continue
                if isinstance(response, MetadataResponse):
                    with self.lock:
                        self.metadata.authentication_error = None
                        taken = self.metadata.update(response, self.clock(), every)
                    if taken:
                        self.on_update()
                    else:  # it knows no live broker: another one is asked next
                        _logger.info(
                            "Metadata from node %s names no broker", node.node_id
                        )
                with self.lock:
                    again = self.metadata.update_due(self.clock())
                if again:  # a topic still without partitions or leaders: not in a spin
                    await trio.sleep(backoff)
                    continue
            max_age = self.metadata.max_age_ms / 1000
            await self._wake.sleep_until(self.clock() + max_age, self.clock)
