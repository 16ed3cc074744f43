"""KafkaApis: one handler per API, and exactly those APIs advertised (seed 000,
KafkaApis).

The network layer's handler tasks call :meth:`KafkaApis.handle` with each request; the
Processor has already refused what :meth:`KafkaApis.api_versions` does not list, so
every request that arrives here has a handler. The table at the end of the class
(``KafkaApis.TABLE``, one :class:`~minikafka.net.ApiSpec` row per API) is the broker's
whole protocol surface: ApiVersions reports it verbatim, dispatch and parking read it,
and each range is covered by the compatibility tests with real clients.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import ClassVar

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.controller import (
    validate_topic_name,
)
from minikafka.coordination import GroupCoordinatorShell, TransactionCoordinatorShell
from minikafka.net import (
    ApiKey,
    ApiSpec,
    ApiTable,
    Features,
    Request,
    answer_without_sasl,
    handle_api_versions,
)
from minikafka.replication import ReplicaManagerShell

from ._acl_apis import (
    ACL_API_VERSIONS,
    handle_create_acls,
    handle_delete_acls,
    handle_describe_acls,
)
from ._admin import (
    auto_create_topics,
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from ._alter_configs import handle_alter_configs, handle_incremental_alter_configs
from ._authorization import BrokerAuthorizer, authorize_metadata, broker_authorizer
from ._body import METADATA, METADATA_V4_PLUS
from ._config import KafkaConfig
from ._consumer_groups import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
)
from ._controller_channel import ControllerChannel
from ._controller_raft_apis import DESCRIBE_QUORUM_VERSIONS, handle_describe_quorum
from ._delete_records import handle_delete_records
from ._describe import (
    DESCRIBE_CLUSTER_VERSIONS,
    DESCRIBE_LOG_DIRS_VERSIONS,
    handle_describe_cluster,
    handle_describe_log_dirs,
)
from ._describe_configs import handle_describe_configs, topic_config_entries
from ._describe_producers import handle_describe_producers
from ._features import image_features
from ._fetch import (
    answer_offsets_for_leader_epoch,
    handle_fetch,
    handle_offset_for_leader_epoch,
)
from ._fetch_sessions import FetchSessionCache
from ._group_authorization import refused_group
from ._group_offsets import handle_offset_commit, handle_offset_fetch
from ._groups import (
    handle_delete_groups,
    handle_describe_groups,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_list_groups,
    handle_sync_group,
    respond_group_error,
)
from ._metadata import handle_list_offsets, metadata_body, requested_topics
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache
from ._offset_delete import handle_offset_delete
from ._offsets_topic import handle_find_coordinator
from ._produce import handle_produce
from ._producer_ids import ProducerIdManager, handle_init_producer_id
from ._reassignments import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from ._request_authz import epoch_refusals, refused
from ._scram_apis import (
    SCRAM_API_VERSIONS,
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from ._transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_end_txn,
    handle_txn_offset_commit,
    handle_write_txn_markers,
)
from ._txn_admin import handle_describe_transactions, handle_list_transactions
from ._txn_verify import AddPartitionsToTxnManager
from ._unregister_broker import UNREGISTER_BROKER_VERSIONS, handle_unregister_broker

_logger = logging.getLogger("minikafka.broker")


@attrs.define(eq=False)
class KafkaApis:
    config: KafkaConfig
    cluster_id: str
    metadata_cache: MetadataCache
    replica_manager: ReplicaManagerShell
    controller: ControllerChannel
    """The QuorumController in this process (combined mode) or a RemoteController."""
    producer_ids: ProducerIdManager
    groups: GroupCoordinatorShell
    transactions: TransactionCoordinatorShell
    verifier: AddPartitionsToTxnManager | None = None
    """Asks transaction coordinators whether a partition is in a producer's
    transaction (KIP-890; None: never, as with the setting off)."""
    fetch_sessions: FetchSessionCache = attrs.field(init=False)
    """The consumers' and followers' fetch sessions (KIP-227)."""
    authorizer: BrokerAuthorizer | None = attrs.field(init=False)
    """``authorizer.class.name``'s StandardAuthorizer, or None: nothing is checked."""
    ready: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set once the broker is unfenced; requests that arrive earlier wait for it."""
    _parked: trio.Nursery | None = attrs.field(init=False, default=None)

    @fetch_sessions.default
    def _fetch_session_cache(self) -> FetchSessionCache:
        slots = self.config.broker.max_incremental_fetch_session_cache_slots
        return FetchSessionCache(slots)

    @authorizer.default
    def _authorizer(self) -> BrokerAuthorizer | None:
        return broker_authorizer(self.config.authorizer, self.metadata_cache)

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.SUPPORTED

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Host the tasks of the requests that wait for other clients (``parks``
        rows)."""
        async with trio.open_nursery() as nursery:
            self._parked = nursery
            task_status.started()
            await trio.sleep_forever()

    async def handle(self, request: Request) -> None:
        if not self.ready.is_set():
            await self.ready.wait()
        if self.authorizer is not None and refused(request, self.authorizer):
            return  # a whole request its principal may not make (._request_authz)
        if self.TABLE[request.api_key].parks and self._parked is not None:
            self._parked.start_soon(self._handle_parked, request)
            return
        await self.TABLE.dispatch(self, request)

    async def _handle_parked(self, request: Request) -> None:
        """Run one parked request in the parked nursery, which nothing may leave: an
        exception here would cancel every other parked request and end the broker."""
        try:
            await self.TABLE.dispatch(self, request)
        except Exception:
            _logger.exception(
                "%s request from %s failed", request.api_name, request.connection_id
            )
            if not request.responded:
                self._answer_failed(request)

    @staticmethod
    def _answer_failed(request: Request) -> None:
        """Kafka's ``KafkaApis.handleError``: the request is answered with its error
        response, UNKNOWN_SERVER_ERROR, and the connection goes on. A request whose own
        body cannot be read back closes its connection instead, as the handler pool
        does for a failed handler: that connection only."""
        try:
            respond_group_error(request, ErrorCode.unknown_server_error)
        except Exception:
            _logger.warning(
                "cannot answer the failed %s request from %s; closing the connection",
                request.api_name,
                request.connection_id,
            )
            if not request.responded:
                request.close_connection()

    def features(self) -> Features:
        """ApiVersions' features (KIP-584), from the metadata image this broker has."""
        return image_features(self.metadata_cache.image)

    async def _api_versions(self, request: Request) -> None:
        handle_api_versions(request, self.SUPPORTED, self.features())

    async def _sasl_outside_exchange(self, request: Request) -> None:
        # A SASL listener's connection answers the exchange itself (minikafka.net's
        # _sasl_channel.py); what reaches here came from another listener, or after it.
        answer_without_sasl(request)

    # --- one method per API, adapting the request to its handler's dependencies
    # --------

    async def _produce(self, request: Request) -> None:
        handle_produce(
            request, self.replica_manager, self.metadata_cache, self.authorizer
        )

    async def _fetch(self, request: Request) -> None:
        handle_fetch(
            request,
            self.replica_manager,
            self.fetch_sessions,
            self.metadata_cache,
            self.authorizer,
        )

    async def _offset_for_leader_epoch(self, request: Request) -> None:
        if self.authorizer is None:
            handle_offset_for_leader_epoch(request, self.replica_manager)
            return
        refused = epoch_refusals(request, self.authorizer, request.body)
        answer_offsets_for_leader_epoch(request, self.replica_manager, refused)

    async def _list_offsets(self, request: Request) -> None:
        handle_list_offsets(
            request, self.replica_manager, self.metadata_cache, self.authorizer
        )

    async def _describe_configs(self, request: Request) -> None:
        handle_describe_configs(
            request, self.metadata_cache, self.config, self.authorizer
        )

    async def _offset_commit(self, request: Request) -> None:
        await handle_offset_commit(
            request, self.groups, self.metadata_cache, self.authorizer
        )

    async def _offset_fetch(self, request: Request) -> None:
        await handle_offset_fetch(request, self.groups, self.authorizer)

    async def _find_coordinator(self, request: Request) -> None:
        await handle_find_coordinator(
            request, self.controller, self.metadata_cache, self.config, self.authorizer
        )

    async def _join_group(self, request: Request) -> None:
        if self.authorizer is not None and refused_group(request, self.authorizer):
            return
        await handle_join_group(request, self.groups)

    async def _heartbeat(self, request: Request) -> None:
        if self.authorizer is not None and refused_group(request, self.authorizer):
            return
        await handle_heartbeat(request, self.groups)

    async def _leave_group(self, request: Request) -> None:
        if self.authorizer is not None and refused_group(request, self.authorizer):
            return
        await handle_leave_group(request, self.groups)

    async def _sync_group(self, request: Request) -> None:
        if self.authorizer is not None and refused_group(request, self.authorizer):
            return
        await handle_sync_group(request, self.groups)

    async def _consumer_group_heartbeat(self, request: Request) -> None:
        await handle_consumer_group_heartbeat(request, self.groups, self.metadata_cache)

    async def _consumer_group_describe(self, request: Request) -> None:
        await handle_consumer_group_describe(
            request, self.groups, self.metadata_cache, self.authorizer
        )

    async def _describe_groups(self, request: Request) -> None:
        await handle_describe_groups(request, self.groups, self.authorizer)

    async def _list_groups(self, request: Request) -> None:
        await handle_list_groups(request, self.groups, self.authorizer)

    async def _delete_groups(self, request: Request) -> None:
        await handle_delete_groups(request, self.groups, self.authorizer)

    async def _describe_producers(self, request: Request) -> None:
        handle_describe_producers(
            request, self.replica_manager, self.metadata_cache, self.authorizer
        )

    async def _offset_delete(self, request: Request) -> None:
        await handle_offset_delete(
            request, self.groups, self.metadata_cache, self.authorizer
        )

    async def _create_topics(self, request: Request) -> None:
        await handle_create_topics(
            request,
            self.controller,
            configs_of=lambda name, overrides: topic_config_entries(
                name, self.metadata_cache, self.config, overrides
            ),
            authorizer=self.authorizer,
        )

    async def _delete_topics(self, request: Request) -> None:
        await handle_delete_topics(
            request, self.controller, self.metadata_cache, authorizer=self.authorizer
        )

    async def _incremental_alter_configs(self, request: Request) -> None:
        await handle_incremental_alter_configs(
            request, self.controller, self.config.node_id, self.authorizer
        )

    async def _alter_configs(self, request: Request) -> None:
        await handle_alter_configs(
            request, self.controller, self.config.node_id, self.authorizer
        )

    async def _delete_records(self, request: Request) -> None:
        handle_delete_records(request, self.replica_manager, self.authorizer)

    async def _create_partitions(self, request: Request) -> None:
        await handle_create_partitions(
            request, self.controller, authorizer=self.authorizer
        )

    async def _alter_partition_reassignments(self, request: Request) -> None:
        await handle_alter_partition_reassignments(request, self.controller)

    async def _list_partition_reassignments(self, request: Request) -> None:
        await handle_list_partition_reassignments(request, self.controller)

    async def _elect_leaders(self, request: Request) -> None:
        await handle_elect_leaders(request, self.controller)

    async def _unregister_broker(self, request: Request) -> None:
        await handle_unregister_broker(request, self.controller)

    async def _describe_quorum(self, request: Request) -> None:
        await handle_describe_quorum(request, self.controller, self.config.roles)

    async def _alter_user_scram_credentials(self, request: Request) -> None:
        await handle_alter_user_scram_credentials(request, self.controller)

    async def _describe_user_scram_credentials(self, request: Request) -> None:
        handle_describe_user_scram_credentials(request, self.metadata_cache)

    async def _create_acls(self, request: Request) -> None:
        enabled = self.config.authorizer.enabled
        await handle_create_acls(request, self.controller, enabled, self.authorizer)

    async def _delete_acls(self, request: Request) -> None:
        enabled = self.config.authorizer.enabled
        await handle_delete_acls(request, self.controller, enabled, self.authorizer)

    async def _describe_acls(self, request: Request) -> None:
        enabled = self.config.authorizer.enabled
        handle_describe_acls(request, self.metadata_cache, enabled, self.authorizer)

    async def _describe_cluster(self, request: Request) -> None:
        handle_describe_cluster(
            request, self.metadata_cache, self.cluster_id, authorizer=self.authorizer
        )

    async def _describe_log_dirs(self, request: Request) -> None:
        handle_describe_log_dirs(request, self.replica_manager)

    async def _init_producer_id(self, request: Request) -> None:
        await handle_init_producer_id(request, self.producer_ids, self.transactions)

    async def _add_partitions_to_txn(self, request: Request) -> None:
        await handle_add_partitions_to_txn(
            request, self.transactions, self.metadata_cache
        )

    async def _end_txn(self, request: Request) -> None:
        await handle_end_txn(request, self.transactions)

    async def _write_txn_markers(self, request: Request) -> None:
        await handle_write_txn_markers(request, self.replica_manager, self.groups)

    async def _add_offsets_to_txn(self, request: Request) -> None:
        await handle_add_offsets_to_txn(
            request,
            self.transactions,
            self.config.group.offsets_topic_num_partitions,
        )

    async def _txn_offset_commit(self, request: Request) -> None:
        partitions = self.config.group.offsets_topic_num_partitions
        await handle_txn_offset_commit(
            request,
            self.groups,
            self.metadata_cache,
            None
            if self.verifier is None
            else (self.replica_manager, self.verifier, partitions),
            self.authorizer,
        )

    async def _describe_transactions(self, request: Request) -> None:
        handle_describe_transactions(request, self.transactions, self.authorizer)

    async def _list_transactions(self, request: Request) -> None:
        handle_list_transactions(request, self.transactions, self.authorizer)

    async def _metadata(self, request: Request) -> None:
        names = requested_topics(request)
        errors: dict[str, ErrorCode] = {}
        # Before v4 there is no allow_auto_topic_creation field and clients expect it
        # on.
        body = request.body_as(METADATA)
        allowed = (
            body.allow_auto_topic_creation
            if isinstance(body, METADATA_V4_PLUS)
            else True
        )
        if self.authorizer is not None:
            auto_create = allowed and self.config.broker.auto_create_topics_enable
            names, errors = authorize_metadata(
                request, self.authorizer, self.metadata_cache, names, auto_create
            )
        # Internal topics are created with their own settings by their owners (the
        # group coordinator creates __consumer_offsets), never as ordinary topics here.
        missing = [
            n
            for n in names or ()
            if self.metadata_cache.topic(n) is None
            and n not in INTERNAL_TOPICS
            and n not in errors
        ]
        # An illegal name is INVALID_TOPIC_EXCEPTION whether or not the request may
        # create topics, as in Kafka (not "unknown": no such topic can ever exist).
        for name in missing:
            try:
                validate_topic_name(name)
            except ApiError as exc:
                if exc.error_code is ErrorCode.invalid_topic_exception:
                    errors[name] = exc.error_code
        missing = [n for n in missing if n not in errors]
        if missing and allowed and self.config.broker.auto_create_topics_enable:
            errors.update(
                await auto_create_topics(
                    self.controller,
                    self.metadata_cache,
                    self.config.controller,
                    missing,
                )
            )
        answer = metadata_body(
            request,
            self.metadata_cache,
            self.cluster_id,
            names,
            errors,
            self.authorizer,
        )
        request.respond_parts((answer,))

    # The broker's whole protocol surface, one row per API: ApiVersions advertises these
    # ranges verbatim and dispatch reads the handler from the same row. ``parks`` marks
    # the requests that wait for other clients (a JoinGroup is held until the whole
    # group has rejoined, a SyncGroup until the leader's assignment is stored, an
    # OffsetCommit until it is replicated): Kafka parks them in purgatories; here each
    # runs in a task of its own, so the num.io.threads handlers are never all held by
    # one rebalance.
    TABLE: ClassVar[ApiTable[KafkaApis]] = ApiTable(
        ApiSpec(ApiKey.PRODUCE, 3, 13, _produce),
        ApiSpec(ApiKey.FETCH, 4, 18, _fetch),
        ApiSpec(ApiKey.LIST_OFFSETS, 1, 10, _list_offsets),
        ApiSpec(ApiKey.METADATA, 1, 13, _metadata),
        ApiSpec(ApiKey.OFFSET_COMMIT, 2, 9, _offset_commit, parks=True),
        ApiSpec(ApiKey.OFFSET_FETCH, 1, 9, _offset_fetch),
        ApiSpec(ApiKey.FIND_COORDINATOR, 0, 6, _find_coordinator),
        ApiSpec(ApiKey.JOIN_GROUP, 0, 9, _join_group, parks=True),
        ApiSpec(ApiKey.HEARTBEAT, 0, 4, _heartbeat),
        ApiSpec(ApiKey.LEAVE_GROUP, 0, 5, _leave_group),
        ApiSpec(ApiKey.SYNC_GROUP, 0, 5, _sync_group, parks=True),
        ApiSpec(ApiKey.DESCRIBE_GROUPS, 0, 6, _describe_groups),
        ApiSpec(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, _consumer_group_heartbeat, parks=True
        ),
        ApiSpec(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, _consumer_group_describe),
        ApiSpec(ApiKey.LIST_GROUPS, 0, 5, _list_groups),
        ApiSpec(ApiKey.API_VERSIONS, 0, 4, _api_versions),
        ApiSpec(ApiKey.SASL_HANDSHAKE, 0, 1, _sasl_outside_exchange),
        ApiSpec(ApiKey.SASL_AUTHENTICATE, 0, 2, _sasl_outside_exchange),
        ApiSpec(ApiKey.CREATE_TOPICS, 2, 7, _create_topics),
        ApiSpec(ApiKey.DELETE_TOPICS, 1, 6, _delete_topics),
        ApiSpec(ApiKey.DELETE_RECORDS, 0, 2, _delete_records),
        ApiSpec(ApiKey.INIT_PRODUCER_ID, 0, 5, _init_producer_id, parks=True),
        ApiSpec(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, _add_partitions_to_txn, parks=True),
        ApiSpec(ApiKey.END_TXN, 0, 4, _end_txn, parks=True),
        ApiSpec(ApiKey.WRITE_TXN_MARKERS, 1, 1, _write_txn_markers, parks=True),
        ApiSpec(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, _add_offsets_to_txn, parks=True),
        ApiSpec(ApiKey.TXN_OFFSET_COMMIT, 0, 4, _txn_offset_commit, parks=True),
        ApiSpec(ApiKey.DESCRIBE_CONFIGS, 1, 4, _describe_configs),
        ApiSpec(ApiKey.ALTER_CONFIGS, 0, 2, _alter_configs),
        ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, _incremental_alter_configs),
        ApiSpec(ApiKey.CREATE_PARTITIONS, 0, 3, _create_partitions),
        ApiSpec(ApiKey.DELETE_GROUPS, 0, 1, _delete_groups),
        ApiSpec(ApiKey.OFFSET_DELETE, 0, 0, _offset_delete),
        ApiSpec(ApiKey.DESCRIBE_PRODUCERS, 0, 0, _describe_producers),
        ApiSpec(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, _describe_transactions),
        ApiSpec(ApiKey.LIST_TRANSACTIONS, 0, 2, _list_transactions),
        ApiSpec(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, _offset_for_leader_epoch),
        ApiSpec(ApiKey.ELECT_LEADERS, 0, 2, _elect_leaders),
        ApiSpec(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, _alter_partition_reassignments
        ),
        ApiSpec(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, _list_partition_reassignments
        ),
        ApiSpec(ApiKey.DESCRIBE_QUORUM, *DESCRIBE_QUORUM_VERSIONS, _describe_quorum),
        ApiSpec(
            ApiKey.UNREGISTER_BROKER, *UNREGISTER_BROKER_VERSIONS, _unregister_broker
        ),
        ApiSpec(ApiKey.DESCRIBE_CLUSTER, *DESCRIBE_CLUSTER_VERSIONS, _describe_cluster),
        ApiSpec(
            ApiKey.DESCRIBE_LOG_DIRS, *DESCRIBE_LOG_DIRS_VERSIONS, _describe_log_dirs
        ),
        ApiSpec(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            *SCRAM_API_VERSIONS,
            _describe_user_scram_credentials,
        ),
        ApiSpec(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            *SCRAM_API_VERSIONS,
            _alter_user_scram_credentials,
        ),
        ApiSpec(ApiKey.DESCRIBE_ACLS, *ACL_API_VERSIONS, _describe_acls),
        ApiSpec(ApiKey.CREATE_ACLS, *ACL_API_VERSIONS, _create_acls),
        ApiSpec(ApiKey.DELETE_ACLS, *ACL_API_VERSIONS, _delete_acls),
    )
    SUPPORTED: ClassVar[Mapping[int, tuple[int, int]]] = TABLE.versions()
    """API key -> (min, max): what ApiVersions lists, derived from the table."""
