"""ControllerZkClient: what the ZooKeeper-mode controller reads from ZooKeeper and writes
to it (seed 001; the calls Kafka 2.8's ``KafkaController`` makes on its ``KafkaZkClient``).

:class:`~._controller_shell.ZkControllerShell` decides *when*: it takes one event at a
time, hands it to the core and carries out what the core returns. This class is *how*
each of those steps reaches ZooKeeper, under ZooKeeper's rules, which are the same
whichever event asked; the shell keeps only the order of things:

- **standing for controller** (:meth:`ControllerZkClient.stand`): create ``/controller``,
  first giving up one this broker left behind, and, once it is won, read the whole
  cluster with every watch set (Kafka's ``registerControllerAndIncrementControllerEpoch``
  and the reads of ``onControllerFailover``); :meth:`~ControllerZkClient.release` gives
  ``/controller`` up, so that every broker stands again;
- **reading what changed**: a watch says only *that* a znode changed, and fires once, so
  each read sets its watch again and reads only what the event is about (a cluster of
  10,000 partitions is not read again for one new topic: Kafka reads only the new
  topics' assignments); after a lost connection, whatever changed meanwhile fired no
  watch here, so :meth:`~ControllerZkClient.read_all` reads everything again;
- **the fenced writes** (:meth:`~ControllerZkClient.write`): each transaction starts with
  a check that ``/controller_epoch`` still has the version this broker wrote when it
  won, so a controller another has replaced writes nothing (Kafka's
  ``expectedControllerEpochZkVersion`` on each write).

Every step survives a lost connection: one that fails on it waits for the connection to
come back and runs again, within the session it began in
(:func:`~minikafka.zk.retry_until_connected`, Kafka's ``retryRequestsUntilConnected``,
which every request of Kafka's controller goes through). What ends the wait, the session
expiring, reaches the shell as kazoo's ``SessionExpiredError``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import attrs

from minikafka.controller.zk import (
    LATEST_PRODUCER_ID_BLOCK,
    decode_producer_id_block,
)
from minikafka.zk import (
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    TOPICS,
    BadVersionError,
    Check,
    Elected,
    LiveBroker,
    Lost,
    NodeExistsError,
    NoNodeError,
    Op,
    TopicAssignment,
    ZkClient,
    ZkCluster,
    read_broker_config,
    read_brokers,
    read_cluster,
    read_topic_configs,
    read_topics,
    retry_until_connected,
    try_to_elect,
)

from ._controller_events import ControllerMovedError

T = TypeVar("T")

MAX_OPS = 1000
"""The most ZooKeeper writes in one transaction (each about 200 bytes: well under the 1 MB
ZooKeeper accepts in one request)."""


@attrs.frozen
class Takeover:
    """What a broker that won ``/controller`` starts from."""

    epoch: int
    cluster: ZkCluster
    """The whole cluster, read with every watch a controller needs set."""
    producer_id_block: tuple[int, int] | None
    """The latest producer id block and its znode's version; None before the first."""


@attrs.define(eq=False)
class ControllerZkClient:
    broker_id: int
    zk: ZkClient
    epoch_version: int = attrs.field(init=False, default=-1)
    """The version ``/controller_epoch`` had once this broker won: every write checks it."""

    # --- becoming the controller, and stopping -------------------------------------------

    async def _retry(self, request: Callable[[], Awaitable[T]]) -> T:
        """``request`` run again after each lost connection, within the session."""
        return await retry_until_connected(self.zk, request)

    async def stand(self) -> Takeover | None:
        """Try once to win ``/controller``: what the new controller starts from, or None
        if another broker controls. Run again after a lost connection, it finds
        ``/controller`` its own if the first run won it, and gives it up to stand again."""
        return await self._retry(self._stand)

    async def _stand(self) -> Takeover | None:
        outcome = await try_to_elect(self.zk, self.broker_id)
        if isinstance(outcome, Lost) and outcome.controller_id == self.broker_id:
            # /controller is this broker's, left from before it resigned (its session
            # lives on): give it up, so that every broker elects again, this one too.
            await self.release()
            outcome = await try_to_elect(self.zk, self.broker_id)
        if not isinstance(outcome, Elected):
            return None
        self.epoch_version = outcome.epoch_version
        cluster = await read_cluster(self.zk, watch=True)
        await self.zk.exists(CONTROLLER, watch=True)
        block: tuple[int, int] | None = None
        try:
            data, stat = await self.zk.get(LATEST_PRODUCER_ID_BLOCK)
            block = (decode_producer_id_block(data), stat.version)
        except NoNodeError:
            pass
        return Takeover(outcome.epoch, cluster, block)

    async def watch_controller(self) -> bool:
        """Hear when ``/controller`` goes; False if it is gone already."""
        stat = await self._retry(
            functools.partial(self.zk.exists, CONTROLLER, watch=True)
        )
        return stat is not None

    async def release(self) -> None:
        """Delete ``/controller`` if it is still this broker's (this session's)."""
        await self._retry(self._release)

    async def _release(self) -> None:
        try:
            _, stat = await self.zk.get(CONTROLLER)
            if stat.ephemeral_owner == self.zk.session_id:
                await self.zk.delete(CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass  # gone already, or another broker's by now

    # --- reading what changed ---------------------------------------------------------------

    async def read_all(self) -> ZkCluster:
        """Everything again, every watch set again (after a lost connection)."""
        return await self._retry(self._read_all)

    async def _read_all(self) -> ZkCluster:
        await self.zk.exists(CONTROLLER, watch=True)
        return await read_cluster(self.zk, watch=True)

    async def read_brokers(self) -> dict[int, LiveBroker]:
        """``/brokers/ids`` changed: who is registered now."""
        return await self._retry(functools.partial(read_brokers, self.zk))

    async def read_topic_config(self, topic: str) -> dict[str, str]:
        """A change notification named ``topic``: its config now."""
        read = await self._retry(
            functools.partial(read_topic_configs, self.zk, [topic])
        )
        return read[topic]

    async def read_broker_config(self, name: str) -> dict[str, str]:
        """A change notification named a broker's config (``""`` for the default)."""
        return await self._retry(functools.partial(read_broker_config, self.zk, name))

    async def read_topic_change(
        self, known: Mapping[str, TopicAssignment], path: str
    ) -> tuple[dict[str, TopicAssignment], dict[str, dict[str, str]]]:
        """The topic list, or the topic at ``path``, changed: the assignments of the
        topics the controller does not know yet and of the one rewritten (partitions
        added), and their configs."""
        return await self._retry(
            functools.partial(self._read_topic_change, known, path)
        )

    async def _read_topic_change(
        self, known: Mapping[str, TopicAssignment], path: str
    ) -> tuple[dict[str, TopicAssignment], dict[str, dict[str, str]]]:
        names = await self.zk.get_children(TOPICS, watch=True)
        wanted = [n for n in names if n not in known]
        changed = path.removeprefix(TOPICS + "/")
        if path != TOPICS and changed in names and changed not in wanted:
            wanted.append(changed)  # an assignment rewritten: partitions added
        read = await read_topics(self.zk, wanted, watch=True)
        # Each topic's config was written before its assignment (as Kafka's
        # AdminZkClient does), so it is there to read with it.
        return read, await read_topic_configs(self.zk, read)

    async def read_deletions(self) -> list[str]:
        """``/admin/delete_topics`` changed: the topics listed for deletion now."""
        return await self._retry(
            functools.partial(self.zk.get_children, DELETE_TOPICS, watch=True)
        )

    # --- writing ------------------------------------------------------------------------------

    async def write(self, writes: Sequence[Op]) -> None:
        """One event's writes, fenced by the controller epoch; ControllerMovedError if
        another controller has written since this one won. A transaction that fails on
        a lost connection is sent again once connected (:meth:`_retry`)."""
        # At most MAX_OPS writes a transaction: ZooKeeper refuses a request over
        # jute.maxbuffer (1 MB), and a failover of thousands of partitions writes each
        # one's state. Every chunk carries the epoch check; Kafka, too, fences each
        # write and not a whole event at once.
        for start in range(0, len(writes), MAX_OPS):
            chunk = writes[start : start + MAX_OPS]
            fenced = [Check(CONTROLLER_EPOCH, self.epoch_version), *chunk]
            try:
                await self._retry(functools.partial(self.zk.transaction, fenced))
            except (BadVersionError, NodeExistsError, NoNodeError) as exc:
                # The epoch check failed (another controller was elected), or a znode is
                # not as this controller left it (another controller wrote it, or this
                # one did, in an attempt whose answer a lost connection took).
                raise ControllerMovedError(
                    f"a write failed ({type(exc).__name__}): {exc}"
                ) from exc
