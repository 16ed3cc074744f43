"""``AdminClient``: topics, configs, groups and their offsets, partitions and the cluster,
shaped like confluent-kafka's.

Each call returns at once with a ``concurrent.futures.Future`` per topic, resource or
group (``fs = admin.create_topics([...]); fs["orders"].result()``), as confluent-kafka's
AdminClient does; a partition's future is keyed by ``minikafka.common.TopicPartition``
(topic and partition, as Kafka's), and a call that answers as a whole
(``describe_cluster``, ``elect_leaders``) returns one future. The work is
:class:`AsyncAdminClient`'s (which says where each request goes), run on trio by a
worker thread; a per-key error becomes that future's KafkaException, and a failure of
the whole call every future's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.raft import QuorumInfo

from ._admin_port import AnyPartition, HasTopicPartition, key
from ._admin_txns import TransactionDescription, TransactionListing
from ._admin_types import (
    AlterConfigOp,
    ClusterDescription,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    DeletedRecords,
    ElectionType,
    ListOffsetsResultInfo,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    OffsetSpec,
    PartitionReassignment,
)
from ._async_admin import AsyncAdminClient, admin_config, admin_security
from ._message import TRANSPORT, KafkaError, KafkaException

T = TypeVar("T")
Work = Callable[[AsyncAdminClient], Awaitable[Mapping[T, Any]]]


class AdminClient:
    """``AdminClient({"bootstrap.servers": "127.0.0.1:9092"})``."""

    def __init__(self, config: Mapping[str, object]) -> None:
        admin_config(config)  # a bad key or value is refused here, naming the key
        admin_security(config)
        self._config = dict(config)
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="minikafka-admin"
        )

    def _run(self, keys: Iterable[T], work: Work[T]) -> dict[T, Future[Any]]:
        """A future per key, completed by ``work`` (run on trio in the worker thread)."""
        futures: dict[T, Future[Any]] = {key: Future() for key in keys}

        def job() -> None:
            async def main() -> Mapping[T, Any]:
                async with AsyncAdminClient.open(self._config) as admin:
                    return await work(admin)

            try:
                results = trio.run(main)
            except Exception as exc:
                failure = _lone(exc)
                if isinstance(failure, KafkaException):
                    results = dict.fromkeys(futures, failure.args[0])
                elif isinstance(failure, OSError):
                    error = KafkaError(TRANSPORT, str(failure))
                    results = dict.fromkeys(futures, error)
                else:
                    for future in futures.values():
                        future.set_exception(failure)
                    return
            for k, future in futures.items():
                outcome = results.get(
                    k, KafkaError(ErrorCode.unknown_server_error, "no answer")
                )
                if isinstance(outcome, KafkaError):
                    future.set_exception(KafkaException(outcome))
                else:
                    future.set_result(outcome)

        self._pool.submit(job)
        return futures

    # --- topics -------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        topics = list(new_topics)
        return self._run(
            [t.topic for t in topics],
            lambda admin: admin.create_topics(topics, validate_only=validate_only),
        )

    def delete_topics(self, topics: Iterable[str]) -> dict[str, Future[None]]:
        names = list(topics)
        return self._run(names, lambda admin: admin.delete_topics(names))

    def create_partitions(
        self, new_partitions: Iterable[NewPartitions], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        wanted = list(new_partitions)
        return self._run(
            [p.topic for p in wanted],
            lambda admin: admin.create_partitions(wanted, validate_only=validate_only),
        )

    def list_topics(
        self, topic: str | None = None, timeout: float = -1
    ) -> ClusterMetadata:
        """The cluster's brokers and topics (or one topic), as confluent-kafka's."""

        async def work(admin: AsyncAdminClient) -> dict[str, ClusterMetadata]:
            return {"": await admin.list_topics(topic)}

        wait = None if timeout is None or timeout < 0 else timeout
        result: ClusterMetadata = self._run([""], work)[""].result(wait)
        return result

    # --- partitions and the cluster ------------------------------------------------

    def list_offsets(
        self,
        topic_partition_offsets: Mapping[AnyPartition, OffsetSpec],
        *,
        isolation_level: int = 0,
    ) -> dict[TopicPartitionKey, Future[ListOffsetsResultInfo]]:
        """A future per partition: its offset for the spec, from its leader."""
        wanted = {key(tp): spec for tp, spec in topic_partition_offsets.items()}
        return self._run(
            wanted,
            lambda admin: admin.list_offsets(wanted, isolation_level=isolation_level),
        )

    def delete_records(
        self,
        before_offsets: Mapping[AnyPartition, int],
        *,
        operation_timeout: float = 60.0,
    ) -> dict[TopicPartitionKey, Future[DeletedRecords]]:
        """A future per partition: its low watermark once its records below the offset
        (-1: the high watermark) are deleted on its replicas."""
        wanted = {key(tp): offset for tp, offset in before_offsets.items()}
        return self._run(
            wanted,
            lambda admin: admin.delete_records(
                wanted, operation_timeout=operation_timeout
            ),
        )

    def describe_cluster(self) -> Future[ClusterDescription]:
        return self._one(lambda admin: admin.describe_cluster())

    def describe_log_dirs(
        self, broker_ids: Iterable[int]
    ) -> dict[int, Future[dict[str, LogDirDescription]]]:
        """A future per broker: its log dirs by path."""
        brokers = list(dict.fromkeys(broker_ids))
        return self._run(brokers, lambda admin: admin.describe_log_dirs(brokers))

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Iterable[HasTopicPartition] | None = None,
    ) -> Future[dict[TopicPartitionKey, KafkaError | None]]:
        """One future, as confluent-kafka's: each partition's error or None."""
        asked = None if partitions is None else [key(tp) for tp in partitions]
        return self._one(lambda admin: admin.elect_leaders(election_type, asked))

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[AnyPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartitionKey, Future[None]]:
        """A future per partition: None once its move (or cancellation) is accepted;
        ``allow_replication_factor_change=False``: refused if it changes the number of
        replicas (KIP-860)."""
        wanted = {key(tp): target for tp, target in reassignments.items()}
        return self._run(
            wanted,
            lambda admin: admin.alter_partition_reassignments(
                wanted, allow_replication_factor_change=allow_replication_factor_change
            ),
        )

    def list_partition_reassignments(
        self, partitions: Iterable[HasTopicPartition] | None = None
    ) -> Future[dict[TopicPartitionKey, PartitionReassignment]]:
        asked = None if partitions is None else [key(tp) for tp in partitions]
        return self._one(lambda admin: admin.list_partition_reassignments(asked))

    def describe_metadata_quorum(self) -> Future[QuorumInfo]:
        return self._one(lambda admin: admin.describe_metadata_quorum())

    def unregister_broker(self, broker_id: int) -> Future[None]:
        """Remove a KRaft broker's registration (KIP-631): Kafka's
        ``Admin.unregisterBroker``."""
        return self._one(lambda admin: admin.unregister_broker(broker_id))

    # --- configs ------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource], *, include_synonyms: bool = False
    ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        wanted = list(resources)
        return self._run(
            wanted,
            lambda admin: admin.describe_configs(
                wanted, include_synonyms=include_synonyms
            ),
        )

    def incremental_alter_configs(
        self,
        configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, Future[None]]:
        """A future per resource: None once changed (or, ``validate_only``, found valid),
        else its KafkaException (INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION...)."""
        changes = {resource: list(ops) for resource, ops in configs.items()}
        return self._run(
            changes,
            lambda admin: admin.incremental_alter_configs(
                changes, validate_only=validate_only
            ),
        )

    def alter_configs(
        self,
        configs: Mapping[ConfigResource, Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, Future[None]]:
        """The legacy AlterConfigs: each resource's overrides become exactly ``configs``."""
        wanted = {resource: dict(entries) for resource, entries in configs.items()}
        return self._run(
            wanted,
            lambda admin: admin.alter_configs(wanted, validate_only=validate_only),
        )

    # --- groups -------------------------------------------------------------------

    def _one(self, work: Callable[[AsyncAdminClient], Awaitable[T]]) -> Future[T]:
        """One future for a call that answers as a whole."""

        async def whole(admin: AsyncAdminClient) -> dict[str, T]:
            return {"": await work(admin)}

        future: Future[T] = self._run([""], whole)[""]
        return future

    def list_consumer_groups(
        self, *, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> Future[list[str]]:
        """Every consumer group on every broker (ListGroups is answered per
        coordinator), only those in ``states`` and of ``types`` when given."""
        wanted_states, wanted_types = tuple(states), tuple(types)
        return self._one(
            lambda admin: admin.list_consumer_groups(
                states=wanted_states, types=wanted_types
            )
        )

    def list_consumer_group_listings(
        self, *, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> Future[list[ConsumerGroupListing]]:
        """As :meth:`list_consumer_groups`, each group with its state and type."""
        wanted_states, wanted_types = tuple(states), tuple(types)
        return self._one(
            lambda admin: admin.list_consumer_group_listings(
                states=wanted_states, types=wanted_types
            )
        )

    def list_consumer_group_offsets(
        self,
        group_ids: Iterable[str],
        partitions: Iterable[HasTopicPartition] | None = None,
    ) -> dict[str, Future[dict[TopicPartitionKey, OffsetAndMetadata]]]:
        """A future per group: its committed offsets (of ``partitions``, or all)."""
        groups = list(dict.fromkeys(group_ids))
        asked = None if partitions is None else [key(tp) for tp in partitions]
        return self._run(
            groups, lambda admin: admin.list_consumer_group_offsets(groups, asked)
        )

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[AnyPartition, OffsetAndMetadata | int],
    ) -> dict[TopicPartitionKey, Future[None]]:
        """A future per partition: None once committed; UNKNOWN_MEMBER_ID while the
        group has members."""
        wanted = {key(tp): o for tp, o in offsets.items()}
        return self._run(
            wanted, lambda admin: admin.alter_consumer_group_offsets(group_id, wanted)
        )

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[HasTopicPartition]
    ) -> dict[TopicPartitionKey, Future[None]]:
        """A future per partition: None once the group's offset of it is deleted."""
        wanted = list(dict.fromkeys(key(tp) for tp in partitions))
        return self._run(
            wanted,
            lambda admin: admin.delete_consumer_group_offsets(group_id, wanted),
        )

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, Future[ConsumerGroupDescription]]:
        groups = list(group_ids)
        return self._run(groups, lambda admin: admin.describe_consumer_groups(groups))

    def delete_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, Future[None]]:
        groups = list(group_ids)
        return self._run(groups, lambda admin: admin.delete_consumer_groups(groups))

    # --- transactions (KIP-664) ---------------------------------------------------

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
        transactional_id_pattern: str | None = None,
    ) -> Future[dict[int, list[TransactionListing]]]:
        """Every broker's transactions by broker id, filtered by ``states``,
        ``producer_ids``, (>= 0) ``duration_ms`` open and a pattern of the whole
        id when given."""
        wanted_states, pids = tuple(states), tuple(producer_ids)
        return self._one(
            lambda admin: admin.list_transactions(
                states=wanted_states,
                producer_ids=pids,
                duration_ms=duration_ms,
                transactional_id_pattern=transactional_id_pattern,
            )
        )

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, Future[TransactionDescription]]:
        """A future per transactional id: its state from its coordinator."""
        ids = list(dict.fromkeys(transactional_ids))
        return self._run(ids, lambda admin: admin.describe_transactions(ids))


def _lone(exc: Exception) -> Exception:
    """The one exception inside trio's nursery groups, if there is only one: the client's
    connections run in a nursery, which wraps whatever leaves it."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
