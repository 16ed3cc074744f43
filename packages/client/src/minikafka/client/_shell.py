"""The producer's trio shell: carries out what the cores decide.

Three tasks, as Kafka's producer has one Sender thread doing all three:

- the **sender loop** asks the Sender what to send (:meth:`Sender.on_timer`), hands
  each request (the result's messages) to its leader's task, passes delivery reports
  (its replies) on, and sleeps until the Sender's next deadline (linger or backoff says
  a batch may be ready), or until something wakes it (a new batch, an answer, new
  metadata, a flush);
- the **metadata loop** (``MetadataRefresher``) sends a Metadata request whenever the
  metadata asks for one;
- the **producer-id task** gets a producer id (InitProducerId) whenever the idempotent
  Sender needs one, from the least loaded broker (:class:`~._least_loaded.LeastLoaded`,
  chosen again for each attempt);
- a transactional producer's **transaction task** makes the requests its
  :class:`~._transactions.TransactionManager` asks for, one at a time, each to the node
  it names (the transaction coordinator, the group's, or for FindCoordinator the least
  loaded broker), and sleeps until the manager's next deadline or a wake-up.

Requests to one broker are queued on the connection in the order the Sender made them
(``NetworkClient.enqueue``): by the sender loop itself while the connection is ready and
nothing waits before them, else by one task per broker (which connects first); each
answer is waited for in a task of its own: several requests are in flight, and none can
overtake another, which is what per-partition order needs.

The cores are shared with the application's thread (:class:`~._producer.Producer` appends
from there), so every call into them is made holding :attr:`ProducerShell.lock`, never
across an ``await``. The reports a call returns go to the application as soon as the
lock is let go, in the order the calls were made. The clock is :data:`PRODUCER_CLOCK`,
the same in both threads: ``time.monotonic`` moved to the epoch once, so the Sender's
``now`` is also the timestamp of the trace events it emits
(``minikafka.trace.EpochClock``).
"""

from __future__ import annotations

import datetime
import logging
import math
import threading
import time
from collections.abc import Callable

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v6.response import FindCoordinatorResponse
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.init_producer_id.v1.response import InitProducerIdResponse
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import TopicName, TransactionalId
from kio.static.primitive import Records, i16, i32Timedelta

from minikafka.common import Acks, TopicPartition
from minikafka.common.shell import Wakeup
from minikafka.log import CompressionType
from minikafka.net import ClientError, NetworkClient, Node, PendingRequest
from minikafka.trace import EpochClock

from ._accumulator import RecordAccumulator
from ._least_loaded import LeastLoaded
from ._message import KafkaError
from ._metadata import ClientMetadata
from ._metadata_loop import MetadataRefresher
from ._sender import Delivery, PartitionResponse, ProducePlan, Sender, SenderResult
from ._transactions import TxnResult
from ._txn_plans import (
    FindCoordinatorPlan,
    InitProducerIdPlan,
    TxnAnswer,
    TxnCompleted,
    TxnPlan,
)
from ._txn_wire import txn_answer, txn_request_body

_logger = logging.getLogger(__name__)


def produce_request(
    plan: ProducePlan,
    acks: Acks,
    timeout_ms: int,
    compression: CompressionType,
    transactional_id: str | None = None,
) -> ProduceRequest:
    """Produce v8: one topic entry per topic, one partition entry per batch (each batch's
    bytes built here, the first time it is sent, and kept for its retries)."""
    by_topic: dict[str, list[PartitionProduceData]] = {}
    for batch in plan.batches:
        tp = batch.topic_partition
        records = Records(batch.build(compression))
        by_topic.setdefault(tp.topic, []).append(
            PartitionProduceData(index=tp.partition, records=records)  # type: ignore[arg-type]
        )
    return ProduceRequest(
        transactional_id=None
        if transactional_id is None
        else TransactionalId(transactional_id),
        acks=i16(int(acks)),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topic_data=tuple(
            TopicProduceData(name=TopicName(topic), partition_data=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


def response_results(
    response: ProduceResponse,
) -> dict[TopicPartition, PartitionResponse]:
    return {
        TopicPartition(str(topic.name), int(p.index)): PartitionResponse(
            int(p.error_code),
            int(p.base_offset),
            -1
            if p.log_append_time is None
            else int(p.log_append_time.timestamp() * 1000),
            p.error_message,
        )
        for topic in response.responses
        for p in topic.partition_responses
    }


PRODUCER_CLOCK = EpochClock(time.monotonic)
"""The one clock of a process's producers: what their cores are given as ``now``."""


@attrs.define(eq=False)
class ProducerShell:
    sender: Sender
    client: NetworkClient
    on_deliveries: Callable[[list[Delivery]], None]
    on_metadata: Callable[[], None] = lambda: None
    # a transactional producer's API calls completed (the transaction task's replies)
    on_transaction: Callable[[list[TxnCompleted]], None] = lambda done: None
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    clock: Callable[[], float] = attrs.field(factory=lambda: PRODUCER_CLOCK)
    _wake_sender: Wakeup = attrs.field(factory=Wakeup)
    _wake_producer_id: Wakeup = attrs.field(factory=Wakeup)
    _wake_transactions: Wakeup = attrs.field(factory=Wakeup)
    _queues: dict[int, trio.MemorySendChannel[ProducePlan]] = attrs.field(factory=dict)
    # Requests handed to each broker's task and not yet queued on its connection.
    _waiting: dict[int, int] = attrs.field(factory=dict)
    _nursery: trio.Nursery | None = None
    _refresher: MetadataRefresher | None = None
    # Where InitProducerId and FindCoordinator go: any broker, the least loaded.
    _any_broker: LeastLoaded = attrs.field(factory=LeastLoaded)

    @property
    def accumulator(self) -> RecordAccumulator:
        return self.sender.accumulator

    @property
    def metadata(self) -> ClientMetadata:
        return self.sender.metadata

    def wake(self) -> None:
        """Something changed (an append, a flush, an answer): the sender looks again,
        and each other task only when the change may be its business. Trio thread.

        Waking a task that finds nothing to do costs a turn of the event loop and a new
        timeout, twice a record (its append and its answer), and trio runs the tasks
        woken together in a random order: the sender could wait behind all of them."""
        self._wake_sender.set()
        # Read without the lock: a flag the app thread only sets before it asks for
        # this wake-up (``want``), or one this thread sets itself (the producer id).
        if self.sender.needs_producer_id():
            self._wake_producer_id.set()
        if self.sender.transactions is not None:
            self._wake_transactions.set()
        if self._refresher is not None and self.metadata.update_due(self.clock()):
            self._refresher.wake()

    def _on_metadata(self) -> None:
        self.on_metadata()
        self._wake_sender.set()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._refresher = MetadataRefresher(
                self.client,
                self.metadata,
                self.lock,
                self.clock,
                self.sender.config.retry_backoff_ms,
                self._on_metadata,
            )
            nursery.start_soon(self._refresher.run)
            nursery.start_soon(self._producer_id_loop)
            nursery.start_soon(self._sender_loop)
            if self.sender.transactions is not None:
                nursery.start_soon(self._transaction_loop)
            task_status.started()

    # --- the sender loop ----------------------------------------------------------

    async def _sender_loop(self) -> None:
        while True:
            with self.lock:
                now = self.clock()
                result = self.sender.on_timer(now)
                deadline = self.sender.next_deadline()
            self._report(result)
            for plan in result.messages:
                await self._send(plan)
            if result.messages:
                continue  # more may be ready at once (other leaders, room in flight)
            # At least every second, whatever the deadline says.
            wake_by = now + 1.0 if deadline is None else min(deadline, now + 1.0)
            await self._wake_sender.sleep_until(wake_by, self.clock)

    def _report(self, result: SenderResult) -> None:
        """Hand the result's delivery reports on (outside the lock: the application's
        side takes it to queue them)."""
        if result.replies:
            self.on_deliveries(list(result.replies))

    async def _send(self, plan: ProducePlan) -> None:
        """Queue a request on its broker's connection, from the sender loop itself when
        that connection is ready and the broker's task has no request waiting: queuing
        on a ready connection does not block, and handing the request to the broker's
        task would cost a round of trio's scheduler on the way of every record sent
        with ``linger.ms=0``. Otherwise (connecting, or earlier requests still waiting)
        the broker's task queues it after those, holding up no other broker's."""
        node_id = plan.node
        queue = self._queue_for(node_id)
        with self.lock:
            node = self.metadata.node(node_id)
        if (
            not self._waiting[node_id]
            and node is not None
            and self.client.load(node) is not None
        ):
            assert self._nursery is not None
            await self._enqueue(node_id, plan, self._nursery)
            return
        self._waiting[node_id] += 1
        queue.send_nowait(plan)

    def _queue_for(self, node_id: int) -> trio.MemorySendChannel[ProducePlan]:
        queue = self._queues.get(node_id)
        if queue is None:
            queue, receive = trio.open_memory_channel[ProducePlan](math.inf)
            self._queues[node_id] = queue
            self._waiting[node_id] = 0
            assert self._nursery is not None
            self._nursery.start_soon(self._node_task, node_id, receive)
        return queue

    async def _node_task(
        self, node_id: int, plans: trio.MemoryReceiveChannel[ProducePlan]
    ) -> None:
        """Queue each request for ``node_id`` in order (connecting first if need be);
        wait for answers concurrently."""
        async with trio.open_nursery() as answers:
            async for plan in plans:
                await self._enqueue(node_id, plan, answers)
                self._waiting[node_id] -= 1

    async def _enqueue(
        self, node_id: int, plan: ProducePlan, answers: trio.Nursery
    ) -> None:
        """Build the Produce request, queue it on the connection, and wait for its
        answer in a task of ``answers``."""
        with self.lock:
            node = self.metadata.node(node_id)
            config = self.sender.config
        if node is None:
            self._failed(plan, f"node {node_id} is no longer in the metadata")
            return
        acks = config.acks
        request = produce_request(
            plan,
            acks,
            config.request_timeout_ms,
            config.compression_type,
            config.transactional_id,
        )
        try:
            pending = await self.client.enqueue(
                node, request, expect_response=acks is not Acks.NONE
            )
        except ClientError as exc:
            self._failed(plan, str(exc))
            return
        answers.start_soon(self._answer, plan, pending)

    async def _answer(self, plan: ProducePlan, pending: PendingRequest) -> None:
        try:
            response = await pending.response()
        except ClientError as exc:
            self._failed(plan, str(exc))
            return
        if response is None:  # acks=0: written, never answered
            results = {
                b.topic_partition: PartitionResponse(ErrorCode.none)
                for b in plan.batches
            }
        elif isinstance(response, ProduceResponse):
            results = response_results(response)
        else:
            self._failed(plan, f"unexpected {type(response).__name__}")
            return
        with self.lock:
            result = self.sender.on_response(plan, results, self.clock())
        self._report(result)
        self.wake()

    def _failed(self, plan: ProducePlan, message: str) -> None:
        with self.lock:
            result = self.sender.on_request_failed(plan, message, self.clock())
        self._report(result)
        self.wake()

    # --- metadata and the producer id ---------------------------------------------

    def _least_loaded_node(self) -> Node:
        """The broker to send a request any broker can answer (holding the lock)."""
        return self._any_broker.choose(
            self.metadata.known_nodes(), self.client.load, self.clock()
        )

    async def _producer_id_loop(self) -> None:
        """An idempotent producer's InitProducerId, as Kafka's Sender sends one for a
        transaction manager's request naming no coordinator: to the least loaded
        broker, chosen again for each attempt, so that a broker that does not answer
        (cut off, paused, not serving yet) holds the producer for one request timeout
        at most, not one each time it needs an id."""
        backoff = self.sender.config.retry_backoff_ms / 1000
        while True:
            with self.lock:
                needed = self.sender.needs_producer_id()
                node = self._least_loaded_node() if needed else None
            if node is None:
                await self._wake_producer_id.sleep_until(None, self.clock)
                continue
            request = InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout=i32Timedelta.parse(datetime.timedelta(minutes=1)),
            )
            try:
                response = await self.client.send(node, request)
            except ClientError as exc:
                _logger.info(
                    "InitProducerId from node %s failed: %s", node.node_id, exc
                )
                response = None
            if (
                isinstance(response, InitProducerIdResponse)
                and response.error_code == 0
            ):
                with self.lock:
                    self.sender.set_producer_id(
                        int(response.producer_id), int(response.producer_epoch)
                    )
                _logger.info(  # Kafka's TransactionManager says so at INFO too
                    "ProducerId set to %d with epoch %d (from node %s)",
                    response.producer_id,
                    response.producer_epoch,
                    node.node_id,
                )
                self._wake_sender.set()
                continue
            await trio.sleep(backoff)

    # --- transactions ---------------------------------------------------------------

    async def _transaction_loop(self) -> None:
        transactions = self.sender.transactions
        assert transactions is not None
        while True:
            with self.lock:
                now = self.clock()
                result = transactions.on_timer(now, self.sender.has_pending_batches())
                deadline = transactions.next_deadline()
            self._transaction_done(result)
            if not result.messages:
                wake_by = now + 1.0 if deadline is None else min(deadline, now + 1.0)
                await self._wake_transactions.sleep_until(wake_by, self.clock)
                continue
            [plan] = result.messages
            await self._transaction_request(plan)

    async def _transaction_request(self, plan: TxnPlan) -> None:
        """Make one of the transaction manager's requests and hand it the answer."""
        transactions = self.sender.transactions
        assert transactions is not None
        with self.lock:
            node = (
                self._least_loaded_node()
                if isinstance(plan, FindCoordinatorPlan)
                else self.metadata.node(plan.node)
            )
        response = None
        if node is not None:
            try:
                response = await self.client.send(node, txn_request_body(plan))
            except ClientError as exc:
                _logger.info("%s failed: %s", type(plan).__name__, exc)
        with self.lock:
            now = self.clock()
            if response is None:
                result = transactions.on_request_failed(plan, now)
            else:
                answer = txn_answer(response)
                if answer.error:
                    _logger.debug(
                        "%s answered %s", type(plan).__name__, KafkaError(answer.error)
                    )
                self._learn_coordinator(response)
                result = transactions.on_response(plan, answer, now)
                if isinstance(plan, InitProducerIdPlan) and not answer.error:
                    self._new_producer_id(answer)
        self._transaction_done(result)
        self.wake()

    def _learn_coordinator(self, response: object) -> None:
        """A coordinator FindCoordinator named: its address, for the requests to it."""
        if isinstance(response, FindCoordinatorResponse):
            for c in response.coordinators:
                if c.error_code == ErrorCode.none:
                    self.metadata.nodes.setdefault(
                        int(c.node_id), Node(int(c.node_id), c.host, int(c.port))
                    )

    def _new_producer_id(self, answer: TxnAnswer) -> None:
        """InitProducerId answered for the transactional id: the Sender numbers every
        partition from zero under the new id and epoch."""
        self.sender.set_producer_id(answer.producer_id, answer.producer_epoch)

    def _transaction_done(self, result: TxnResult) -> None:
        if result.replies:
            self.on_transaction(list(result.replies))
