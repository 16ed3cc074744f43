"""The partition leaders' questions to transaction coordinators (KIP-890 part 1,
Kafka's ``AddPartitionsToTxnManager``), against a scripted coordinator on a real socket:

- one request in flight per coordinator; the questions that arrive meanwhile go out
  together in the next request, each answered for itself;
- a newer question of the same transactional id replaces the waiting one (same epoch:
  NETWORK_EXCEPTION, which the producer retries; a newer epoch: INVALID_PRODUCER_EPOCH),
  and one of an older epoch is fenced at once;
- the coordinator's answers as the producer is told them: TRANSACTION_ABORTABLE is
  INVALID_TXN_STATE for a request too old to know it, PRODUCER_FENCED is
  INVALID_PRODUCER_EPOCH; a transactional id whose coordinator has no leader is
  COORDINATOR_NOT_AVAILABLE without asking, and a coordinator that cannot be reached
  NETWORK_EXCEPTION.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker._metadata_cache import MetadataCache
from minikafka.broker._txn_verify import AddPartitionsToTxnManager
from minikafka.common import FatalFaultError, TopicPartition
from minikafka.controller import (
    BrokerEndpoint,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minikafka.coordination import TRANSACTION_STATE_TOPIC
from minikafka.net import ApiKey, Request, build, handle_api_versions, nested
from minikafka.net.testing import serving, wait_until

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
DEADLINE = 10.0


@attrs.define(eq=False)
class ScriptedCoordinator:
    """Answers AddPartitionsToTxn: partition 0 is in every transaction, 1 in none; the
    id ``fenced`` is PRODUCER_FENCED. Holds each request until ``release`` is set."""

    requests: list[list[tuple[str, int, bool]]] = attrs.field(factory=list)
    release: trio.Event = attrs.field(factory=trio.Event)

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return {ApiKey.API_VERSIONS: (0, 4), ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5)}

    async def handle(self, request: Request) -> None:
        if request.api_key != ApiKey.ADD_PARTITIONS_TO_TXN:
            handle_api_versions(request, self.api_versions())
            return
        body: Any = request.body
        self.requests.append(
            [
                (t.transactional_id, int(t.producer_epoch), bool(t.verify_only))
                for t in body.transactions
            ]
        )
        await self.release.wait()
        cls = request.response_class()
        result_cls = nested(cls, "results_by_transaction")
        topic_cls = nested(result_cls, "topic_results")
        partition_cls = nested(topic_cls, "results_by_partition")

        def error(txn_id: str, partition: int) -> ErrorCode:
            if txn_id == "fenced":
                return ErrorCode.producer_fenced
            return ErrorCode.none if partition == 0 else ErrorCode.transaction_abortable

        request.respond(
            build(
                cls,
                throttle_time=datetime.timedelta(0),
                error_code=ErrorCode.none,
                results_by_transaction=tuple(
                    build(
                        result_cls,
                        transactional_id=t.transactional_id,
                        topic_results=tuple(
                            build(
                                topic_cls,
                                name=topic.name,
                                results_by_partition=tuple(
                                    build(
                                        partition_cls,
                                        partition_index=p,
                                        partition_error_code=error(
                                            t.transactional_id, int(p)
                                        ),
                                    )
                                    for p in topic.partitions
                                ),
                            )
                            for topic in t.topics
                        ),
                    )
                    for t in body.transactions
                ),
            )
        )


def cache_with_coordinator(port: int) -> MetadataCache:
    """Broker 2 on ``port`` leads ``__transaction_state``-0; partition 1 has no leader."""
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", port)
    broker = BrokerRegistration(2, 1, uuid.UUID(int=2), (endpoint,), None, False)
    topic_id = uuid.UUID(int=7)
    partitions = {
        0: PartitionRegistration((2,), (2,), leader=2, leader_epoch=0),
        1: PartitionRegistration((2,), (2,), leader=-1, leader_epoch=0),
    }
    image = MetadataImage(
        brokers={2: broker},
        topics={topic_id: TopicImage(TRANSACTION_STATE_TOPIC, topic_id, partitions)},
        topic_ids={TRANSACTION_STATE_TOPIC: topic_id},
    )
    return MetadataCache(1, image)


def collector(
    answers: dict[str, dict[TopicPartition, ErrorCode]], key: str
) -> Callable[[dict[TopicPartition, ErrorCode]], None]:
    def collect(unverified: dict[TopicPartition, ErrorCode]) -> None:
        assert key not in answers, f"{key} answered twice"
        answers[key] = unverified

    return collect


async def test_questions_are_batched_per_coordinator_and_answered_each() -> None:
    coordinator = ScriptedCoordinator()
    answers: dict[str, dict[TopicPartition, ErrorCode]] = {}
    async with serving(coordinator) as server, trio.open_nursery() as nursery:
        port = server.bound_address()[1]
        manager = AddPartitionsToTxnManager(
            1,
            cache_with_coordinator(port),
            "PLAINTEXT",
            lambda txn_id: 1 if txn_id == "leaderless" else 0,
        )
        await nursery.start(manager.run)
        manager.verify("a", 1, 0, [T0, T1], False, collector(answers, "a"))
        await wait_until(lambda: len(coordinator.requests) == 1, DEADLINE)
        # While the first request is in flight:
        manager.verify("b", 2, 0, [T0, T1], True, collector(answers, "b"))
        manager.verify("c", 3, 0, [T0], False, collector(answers, "c-first"))
        manager.verify("c", 3, 0, [T0], False, collector(answers, "c"))
        manager.verify("d", 4, 1, [T0], False, collector(answers, "d"))
        manager.verify("d", 4, 0, [T0], False, collector(answers, "d-zombie"))
        manager.verify("fenced", 5, 0, [T0], False, collector(answers, "fenced"))
        manager.verify("leaderless", 6, 0, [T0], False, collector(answers, "none"))
        assert answers == {
            "c-first": {T0: ErrorCode.network_exception},
            "d-zombie": {T0: ErrorCode.invalid_producer_epoch},
            "none": {T0: ErrorCode.coordinator_not_available},
        }
        coordinator.release.set()
        await wait_until(lambda: len(answers) == 8, DEADLINE)
        nursery.cancel_scope.cancel()
    assert coordinator.requests == [
        [("a", 0, True)],
        [("b", 0, True), ("c", 0, True), ("d", 1, True), ("fenced", 0, True)],
    ]
    assert answers["a"] == {T1: ErrorCode.invalid_txn_state}  # Produce before v11
    assert answers["b"] == {T1: ErrorCode.transaction_abortable}
    assert answers["c"] == answers["d"] == {}
    assert answers["fenced"] == {T0: ErrorCode.invalid_producer_epoch}


async def test_a_coordinator_that_cannot_be_reached_is_a_network_exception() -> None:
    async with trio.open_nursery() as nursery:
        with trio.socket.socket() as placeholder:  # a port nobody listens on
            await placeholder.bind(("127.0.0.1", 0))
            port = placeholder.getsockname()[1]
        manager = AddPartitionsToTxnManager(
            1,
            cache_with_coordinator(port),
            "PLAINTEXT",
            lambda _: 0,
            request_timeout_s=5.0,
        )
        await nursery.start(manager.run)
        answers: dict[str, dict[TopicPartition, ErrorCode]] = {}
        manager.verify("a", 1, 0, [T0], True, collector(answers, "a"))
        await wait_until(lambda: "a" in answers, DEADLINE)
        nursery.cancel_scope.cancel()
    assert answers["a"] == {T0: ErrorCode.network_exception}


async def test_a_callback_that_raises_loses_no_other_answer_nor_the_sender() -> None:
    # Guarantee: the questions' callbacks are the produce path's (an append, a
    # response); one that raises is logged, as Kafka's request handler logs a failed
    # callback: the other questions of the same request are still answered, and the
    # sender (run beside the coordinators) keeps running for the next ones.
    coordinator = ScriptedCoordinator()
    coordinator.release.set()
    answers: dict[str, dict[TopicPartition, ErrorCode]] = {}

    def boom(unverified: dict[TopicPartition, ErrorCode]) -> None:
        answers["boom"] = unverified
        raise RuntimeError("a produce callback failed")

    async with serving(coordinator) as server, trio.open_nursery() as nursery:
        manager = AddPartitionsToTxnManager(
            1,
            cache_with_coordinator(server.bound_address()[1]),
            "PLAINTEXT",
            lambda _: 0,
        )
        await nursery.start(manager.run)
        manager.verify("a", 1, 0, [T0], True, boom)
        manager.verify("b", 2, 0, [T0], True, collector(answers, "b"))
        await wait_until(lambda: "b" in answers, DEADLINE)
        manager.verify("c", 3, 0, [T1], True, collector(answers, "c"))
        await wait_until(lambda: "c" in answers, DEADLINE)
        nursery.cancel_scope.cancel()
    assert answers == {"boom": {}, "b": {}, "c": {T1: ErrorCode.transaction_abortable}}


async def test_a_fatal_fault_in_a_callback_still_ends_the_sender() -> None:
    # Guarantee: the sender keeps going after a failed callback, but not after a
    # FatalFaultError (the process must not go on): that one leaves run().
    coordinator = ScriptedCoordinator()
    coordinator.release.set()

    def fatal(unverified: dict[TopicPartition, ErrorCode]) -> None:
        raise FatalFaultError("the log cannot vouch for its state")

    raised: list[BaseException] = []
    async with serving(coordinator) as server:
        manager = AddPartitionsToTxnManager(
            1,
            cache_with_coordinator(server.bound_address()[1]),
            "PLAINTEXT",
            lambda _: 0,
        )
        with trio.fail_after(DEADLINE):
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(manager.run)
                    manager.verify("a", 1, 0, [T0], True, fatal)
            except* FatalFaultError as group:
                raised.extend(group.exceptions)
    assert len(raised) == 1
