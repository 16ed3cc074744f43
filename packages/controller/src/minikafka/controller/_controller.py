"""QuorumController: the KRaft controller as a core (seed 004 §2.1).

All of the controller's decisions run one at a time, in the order they were queued, on a
single event queue: no locks, and every manager sees the state its predecessor left. This
class is the part that runs on that queue. It does no I/O and keeps no clock: a shell
(``QuorumControllerShell``) feeds it requests, commits and the time, and carries out the
``CoreResult`` every call returns (ARCHITECTURE.md, "Cores and shells"): its records are
the appends to make, its replies the answers to give.

It is the *pipelined* controller of seed 004. For a write:

1. the right manager decides, producing records and a response;
2. the records are replayed into the managers at once, and a snapshot of the timeline
   structures is taken at the last record's offset, so the next request already sees
   them and the controller need not wait for the quorum between requests;
3. the records go to the quorum (``AppendRecords``, in the result's records);
4. the response is held until the quorum reports that offset committed (a ``Reply``, in
   the result of ``handle_commit``).

Two rules keep that honest. Reads that answer clients (ListPartitionReassignments,
DescribeConfigs) read at the last committed offset, never at uncommitted state. And when
this node stops being the active controller, ``resign`` reverts every timeline structure
to the last committed offset and fails the held responses with NOT_CONTROLLER: the
records they waited for may never commit.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Iterable, Sequence
from typing import Never, TypeAlias, TypeVar

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.timeline import SnapshotRegistry
from minikafka.trace import NullTracer, Tracer

from ._acl_control import AclControlManager, CreateAclsRequest, DeleteAclsRequest
from ._cluster_control import ClusterControlManager
from ._config import ControllerConfig
from ._config_control import ConfigurationControlManager, FeatureControlManager
from ._events import BrokerRegistrationChanged, RecordsApplied
from ._producer_id_control import ProducerIdControlManager
from ._records import ConfigResourceType, FeatureLevelRecord, MetadataRecord
from ._replication_control import ReplicationControlManager
from ._requests import (
    AllocateProducerIdsRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerRequest,
    ControllerResponse,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from ._scram_control import AlterUserScramCredentialsRequest, ScramControlManager

METADATA_VERSION = "metadata.version"
# The metadata.version a fresh cluster starts at. Our records are a subset of Kafka's,
# so the number only says "this log was bootstrapped"; it gates nothing yet.
BOOTSTRAP_METADATA_VERSION = 1
KRAFT_VERSION = "kraft.version"
SUPPORTED_FEATURES: tuple[tuple[str, int, int], ...] = (
    (METADATA_VERSION, BOOTSTRAP_METADATA_VERSION, BOOTSTRAP_METADATA_VERSION),
    # Level 0 only: the voters are static (controller.quorum.voters); level 1 is
    # KIP-853's quorum whose voters change by records.
    (KRAFT_VERSION, 0, 0),
)
"""Each feature's lowest and highest level a node runs (KIP-584; ApiVersions v3+)."""


@attrs.frozen
class AppendRecords:
    """Append these records to the metadata log, at ``base_offset``, in ``epoch``."""

    epoch: int
    base_offset: int
    records: tuple[MetadataRecord, ...]

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1


@attrs.frozen
class Reply:
    """Answer request ``request_id``: ``response``, or ``error_code`` when there is none."""

    request_id: int
    response: ControllerResponse | None
    error_code: ErrorCode = ErrorCode.none


QuorumControllerResult: TypeAlias = CoreResult[AppendRecords, Reply, Never]
"""What every call that drives a :class:`QuorumController` returns: the appends to make,
in order, and the replies to give. A write's reply is never in the result that appends
its records: the controller holds it until ``handle_commit`` says everything written
before it committed, so the replies of a result are given at once."""

_Decision: TypeAlias = CoreResult[MetadataRecord, ControllerResponse, Never]
"""A manager's decision on one request: its records and its one response."""

_R = TypeVar("_R", bound=ControllerResponse)


def _decision(result: CoreResult[MetadataRecord, _R, Never]) -> _Decision:
    """A manager's result for one kind of request, as a decision on any request (a
    ``CoreResult``'s parameters are invariant; its tuples are not)."""
    return CoreResult(result.records, result.replies)


@attrs.define(eq=False)
class QuorumController:
    config: ControllerConfig = attrs.field(factory=ControllerConfig)
    rng: random.Random = attrs.field(factory=random.Random)
    # The node's tracer, from whoever builds the controller; the managers that
    # emit share it.
    tracer: Tracer = attrs.field(factory=NullTracer)
    bootstrap_records: tuple[MetadataRecord, ...] = ()
    """What a new cluster's log starts with after its metadata.version: the bootstrap
    checkpoint ``storage format`` wrote (its ``--add-scram`` users)."""
    registry: SnapshotRegistry = attrs.field(init=False, factory=SnapshotRegistry)
    cluster: ClusterControlManager = attrs.field(init=False)
    configs: ConfigurationControlManager = attrs.field(init=False)
    features: FeatureControlManager = attrs.field(init=False)
    replication: ReplicationControlManager = attrs.field(init=False)
    producer_ids: ProducerIdControlManager = attrs.field(init=False)
    scram: ScramControlManager = attrs.field(init=False)
    acls: AclControlManager = attrs.field(init=False)
    # None: not the active one
    epoch: int | None = attrs.field(init=False, default=None)
    last_committed_offset: int = attrs.field(init=False, default=-1)
    _next_offset: int = attrs.field(init=False, default=0)
    _rebalance_at: float | None = attrs.field(init=False, default=None)
    """When the next leader-imbalance check is due (None: auto rebalance is off)."""
    # Responses waiting for their records to commit: (offset, request id, response).
    _pending: collections.deque[tuple[int, int, ControllerResponse]] = attrs.field(
        init=False, factory=collections.deque
    )

    def __attrs_post_init__(self) -> None:
        self.cluster = ClusterControlManager(
            self.registry, self.config.broker_session_timeout_ms / 1000
        )
        self.configs = ConfigurationControlManager(self.registry)
        self.features = FeatureControlManager(self.registry)
        self.replication = ReplicationControlManager(
            self.registry,
            self.config,
            self.cluster,
            self.configs,
            self.rng,
            self.tracer,
        )
        self.producer_ids = ProducerIdControlManager(self.registry, self.cluster)
        self.scram = ScramControlManager(self.registry)
        self.acls = AclControlManager(self.registry, self.rng)

    @property
    def active(self) -> bool:
        return self.epoch is not None

    # --- replay: the same path for our own records and for committed ones ------------

    def _replay(self, record: MetadataRecord) -> None:
        self.cluster.replay(record)
        self.replication.replay(record)
        self.configs.replay(record)
        self.features.replay(record)
        self.producer_ids.replay(record)
        self.scram.replay(record)
        self.acls.replay(record)

    def replay_committed(
        self, records: Iterable[MetadataRecord], last_offset: int, now: float
    ) -> None:
        """Records the quorum committed, replayed by a controller that is not active (at
        start-up, or a standby following the leader)."""
        if self.active:
            raise RuntimeError(
                "the active controller replays its own records as it writes them"
            )
        types: collections.Counter[str] | None = (
            collections.Counter() if self.tracer.enabled else None
        )
        for record in records:
            self._replay(record)
            if types is not None:
                types[type(record).__name__] += 1
        self.last_committed_offset = last_offset
        self._next_offset = last_offset + 1
        if types:
            self.tracer.emit(
                RecordsApplied(last_offset, -1, types.total(), dict(types)), now
            )

    def load_snapshot(
        self, records: Iterable[MetadataRecord], offset: int, now: float
    ) -> None:
        """Start again from a snapshot of the image taken at ``offset``."""
        self.registry.reset()
        self.replay_committed(records, offset, now)

    # --- leadership ------------------------------------------------------------------------

    def become_leader(self, epoch: int, now: float) -> QuorumControllerResult:
        """Become the active controller in ``epoch``, on top of everything committed."""
        self.epoch = epoch
        self._next_offset = self.last_committed_offset + 1
        self.registry.get_or_create_snapshot(self.last_committed_offset)
        self.cluster.reset_sessions(now)
        config = self.config
        self._rebalance_at = (
            now + config.leader_imbalance_check_interval_seconds
            if config.auto_leader_rebalance_enable
            else None
        )
        if self.features.levels.get(METADATA_VERSION) is None:
            # A new cluster: its first record says which metadata version it speaks.
            return self._write(
                (
                    FeatureLevelRecord(METADATA_VERSION, BOOTSTRAP_METADATA_VERSION),
                    *self.bootstrap_records,
                ),
                now=now,
            )
        return CoreResult()

    def resign(self) -> QuorumControllerResult:
        """Stop being active: forget uncommitted state, fail the responses waiting for
        it."""
        # nothing uncommitted, and no snapshot at the committed offset
        if not self.active:
            return CoreResult()
        self.registry.revert_to_snapshot(self.last_committed_offset)
        self.epoch = None
        self._next_offset = self.last_committed_offset + 1
        failed = tuple(
            Reply(request_id, None, ErrorCode.not_controller)
            for _, request_id, _ in self._pending
        )
        self._pending.clear()
        return CoreResult(replies=failed)

    def append_failed(
        self, base_offset: int, error_code: ErrorCode
    ) -> QuorumControllerResult:
        """The quorum refused the records from ``base_offset`` on, and left none of them.

        Everything decided from there (the failed write and any written after it, in the
        same event or later) is reverted, so the controller's state is again exactly what
        the log holds; the responses resting on those records fail with ``error_code``.
        Earlier writes still commit. The quorum refuses an append only in an epoch it has
        left (its resignation follows, reverting to the last committed offset); until
        then, reverting to just before the refused records is enough.
        """
        if not self.active or base_offset > self._next_offset:
            return CoreResult()
        # A write's snapshot sits at its last offset, and one stays at the committed offset:
        # either way there is one at base_offset - 1.
        self.registry.revert_to_snapshot(base_offset - 1)
        self.cluster.resync_sessions()  # a reverted fence makes a broker unfenced again
        self._next_offset = base_offset
        failed: list[Reply] = []
        kept: collections.deque[tuple[int, int, ControllerResponse]] = (
            collections.deque()
        )
        for offset, request_id, response in self._pending:
            if offset >= base_offset:
                failed.append(Reply(request_id, None, error_code))
            else:
                kept.append((offset, request_id, response))
        self._pending = kept
        return CoreResult(replies=tuple(failed))

    def handle_commit(self, offset: int) -> QuorumControllerResult:
        """The quorum committed everything up to ``offset``: release the responses."""
        if offset <= self.last_committed_offset:
            return CoreResult()
        if self.active and not self.registry.has_snapshot(offset):
            # Raft commits whole batches; a commit inside one would leave no snapshot to
            # read at or revert to.
            raise ValueError(
                f"commit at {offset}, which ends no batch this controller wrote"
            )
        self.last_committed_offset = offset
        # History before the committed offset can never be reverted to; drop it, but
        # keep the snapshot *at* the committed offset, the one resign() reverts to.
        self.registry.delete_snapshots_up_to(offset)
        replies: list[Reply] = []
        while self._pending and self._pending[0][0] <= offset:
            _, request_id, response = self._pending.popleft()
            replies.append(Reply(request_id, response))
        return CoreResult(replies=tuple(replies))

    # --- the event queue's work -----------------------------------------------------------

    def handle(
        self, request_id: int, request: ControllerRequest, now: float
    ) -> QuorumControllerResult:
        if not self.active:
            return CoreResult(
                replies=(Reply(request_id, None, ErrorCode.not_controller),)
            )
        match request:
            case ListPartitionReassignmentsRequest():
                epoch = self.last_committed_offset
                listed = self.replication.list_partition_reassignments(epoch)
                return CoreResult(replies=(Reply(request_id, listed),))
            case DescribeConfigsRequest():
                epoch = self.last_committed_offset
                if request.resource_type == ConfigResourceType.TOPIC and (
                    self.replication.topic_named(request.resource_name, epoch) is None
                ):
                    unknown = DescribeConfigsResponse(
                        ErrorCode.unknown_topic_or_partition
                    )
                    return CoreResult(replies=(Reply(request_id, unknown),))
                described = self.configs.describe(request, epoch)
                return CoreResult(replies=(Reply(request_id, described),))
        try:
            decided = self._decide(request, now)
        finally:
            self._trace_elections(now)  # a refused request's too, as it decided them
        (response,) = decided.replies
        return self._write(decided.records, request_id, response, now=now)

    def _decide(self, request: ControllerRequest, now: float) -> _Decision:
        match request:
            case CreateTopicsRequest():
                return _decision(self.replication.create_topics(request))
            case DeleteTopicsRequest():
                return _decision(self.replication.delete_topics(request))
            case CreatePartitionsRequest():
                return _decision(self.replication.create_partitions(request))
            case AlterPartitionRequest():
                return _decision(self.replication.alter_partition(request))
            case AlterPartitionReassignmentsRequest():
                reassigned = self.replication.alter_partition_reassignments(request)
                return _decision(reassigned)
            case BrokerRegistrationRequest():
                return _decision(self._register(request, now))
            case BrokerHeartbeatRequest():
                return _decision(self._heartbeat(request, now))
            case IncrementalAlterConfigsRequest():
                exists = self._resource_exists(request)
                return _decision(self.configs.incremental_alter(request, exists))
            case AlterConfigsRequest():
                return _decision(
                    self.configs.alter(request, self._resource_exists(request))
                )
            case AllocateProducerIdsRequest():
                return _decision(self.producer_ids.allocate(request))
            case UnregisterBrokerRequest():
                return _decision(self._unregister(request.broker_id, now))
            case ElectLeadersRequest():
                return _decision(self.replication.elect_leaders(request))
            case AlterUserScramCredentialsRequest():
                return _decision(self.scram.alter(request))
            case CreateAclsRequest():
                return _decision(self.acls.create(request))
            case DeleteAclsRequest():
                return _decision(self.acls.delete(request))
            case _:
                raise TypeError(f"not a controller request: {request!r}")

    def _register(
        self, request: BrokerRegistrationRequest, now: float
    ) -> CoreResult[MetadataRecord, BrokerRegistrationResponse, Never]:
        """A new incarnation replaces the old registration and starts fenced, so whatever
        the old one led or kept in sync must move now, as if its session had expired."""
        was_unfenced = self.cluster.is_unfenced(request.broker_id)
        result = self.cluster.register(request, self._next_offset, now)
        if result.records and self.tracer.enabled:
            event = BrokerRegistrationChanged(
                request.broker_id, self._next_offset, True, "registered"
            )
            self.tracer.emit(event, now)
        if not result.records or not was_unfenced:
            return result
        moved = self.replication.handle_broker_fenced(request.broker_id)
        return CoreResult((*result.records, *moved), result.replies)

    def _unregister(
        self, broker_id: int, now: float
    ) -> CoreResult[MetadataRecord, UnregisterBrokerResponse, Never]:
        """UnregisterBroker (KIP-631): the broker leaves the ISRs and leaderships it
        held, as a fenced broker does, and then its registration goes. Kafka unregisters
        an unfenced broker too; only an id it does not know is refused."""
        unregister = self.cluster.unregister(broker_id)
        if unregister is None:
            refused = UnregisterBrokerResponse(ErrorCode.broker_id_not_registered)
            return CoreResult(replies=(refused,))
        if self.tracer.enabled:
            event = BrokerRegistrationChanged(
                broker_id, unregister.broker_epoch, True, "unregistered"
            )
            self.tracer.emit(event, now)
        moved = self.replication.handle_broker_fenced(broker_id, "broker_unregistered")
        return CoreResult(
            (*moved, unregister), (UnregisterBrokerResponse(ErrorCode.none),)
        )

    def _fence(self, broker_id: int, reason: str, now: float) -> list[MetadataRecord]:
        """Fence the broker and move what it led or kept in sync: on session expiry, or
        when a heartbeat asks to be fenced or to shut down (``reason``, for the
        trace)."""
        fence = self.cluster.fence(broker_id)
        if self.tracer.enabled:
            event = BrokerRegistrationChanged(
                broker_id, fence.broker_epoch, True, reason
            )
            self.tracer.emit(event, now)
        # Kafka's reason for the elections: a broker shutting down hands its
        # leaderships over; one that was fenced any other way lost them.
        why = (
            "controlled_shutdown"
            if reason == "controlled_shutdown"
            else "broker_fenced"
        )
        return [fence, *self.replication.handle_broker_fenced(broker_id, why)]

    def _resource_exists(
        self, request: IncrementalAlterConfigsRequest | AlterConfigsRequest
    ) -> bool:
        if request.resource_type == ConfigResourceType.TOPIC:
            return self.replication.topic_named(request.resource_name) is not None
        # "" is the cluster-wide default broker resource.
        name = request.resource_name
        return name == "" or (name.isdigit() and int(name) in self.cluster.brokers)

    def _heartbeat(
        self, request: BrokerHeartbeatRequest, now: float
    ) -> CoreResult[MetadataRecord, BrokerHeartbeatResponse, Never]:
        broker_id = request.broker_id
        error = self.cluster.check_epoch(broker_id, request.broker_epoch)
        if error != ErrorCode.none:
            return CoreResult(replies=(BrokerHeartbeatResponse(error),))
        self.cluster.touch(broker_id, now)
        registration = self.cluster.brokers[broker_id]
        # Caught up: the broker has replayed the log past its own registration, so it
        # knows what it is meant to host before it is allowed to host anything.
        caught_up = request.current_metadata_offset >= registration.epoch
        records: list[MetadataRecord] = []
        fenced = registration.fenced
        if request.want_fence or request.want_shutdown:
            if not fenced:
                reason = (
                    "controlled_shutdown"
                    if request.want_shutdown
                    else "fence_requested"
                )
                records, fenced = self._fence(broker_id, reason, now), True
        elif fenced and caught_up:
            unfence = self.cluster.unfence(broker_id)
            if self.tracer.enabled:
                event = BrokerRegistrationChanged(
                    broker_id, unfence.broker_epoch, False, "caught_up"
                )
                self.tracer.emit(event, now)
            records = [unfence]
            records += self.replication.handle_broker_unfenced(broker_id)
            fenced = False
        response = BrokerHeartbeatResponse(
            ErrorCode.none, caught_up, fenced, request.want_shutdown
        )
        return CoreResult(tuple(records), (response,))

    def _trace_elections(self, now: float) -> None:
        """Emit the elections the call's decisions traced (ReplicationState keeps them
        until the call's ``now`` is at hand)."""
        for event in self.replication.state.take_elections():
            self.tracer.emit(event, now)

    def _write(
        self,
        records: Sequence[MetadataRecord],
        request_id: int | None = None,
        response: ControllerResponse | None = None,
        *,
        now: float,
    ) -> QuorumControllerResult:
        self._trace_elections(now)  # decided before these records are applied
        appended: tuple[AppendRecords, ...] = ()
        if records:
            assert self.epoch is not None
            base_offset = self._next_offset
            for record in records:
                self._replay(record)
            self._next_offset += len(records)
            self.registry.get_or_create_snapshot(self._next_offset - 1)
            if self.tracer.enabled:
                types = collections.Counter(type(record).__name__ for record in records)
                last = self._next_offset - 1
                self.tracer.emit(
                    RecordsApplied(last, self.epoch, len(records), dict(types)), now
                )
            appended = (AppendRecords(self.epoch, base_offset, tuple(records)),)
        if request_id is None or response is None:
            return CoreResult(appended)
        # Even a response with no records of its own may rest on records not yet
        # committed (TOPIC_ALREADY_EXISTS for a creation still in flight): it waits for
        # everything written so far.
        wait_for = self._next_offset - 1
        if wait_for <= self.last_committed_offset:
            return CoreResult(appended, (Reply(request_id, response),))
        self._pending.append((wait_for, request_id, response))
        return CoreResult(appended)

    # --- time -------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """The next session expiry, or the next leader-imbalance check, if active."""
        if not self.active:
            return None
        deadlines = [
            d
            for d in (self.cluster.next_deadline(), self._rebalance_at)
            if d is not None
        ]
        return min(deadlines, default=None)

    def on_timer(self, now: float) -> QuorumControllerResult:
        """Fence every broker whose session expired, moving its leaderships away."""
        result: QuorumControllerResult = CoreResult()
        if not self.active:
            return result
        for broker_id in self.cluster.expired(now):
            # Each broker's records are replayed before the next broker is decided.
            result += self._write(
                self._fence(broker_id, "session_timeout", now), now=now
            )
        if self._rebalance_at is not None and now >= self._rebalance_at:
            # auto.leader.rebalance.enable: Kafka's checkAndTriggerAutoLeaderRebalance.
            self._rebalance_at = (
                now + self.config.leader_imbalance_check_interval_seconds
            )
            percentage = self.config.leader_imbalance_per_broker_percentage
            records = self.replication.rebalance_leaders(percentage)
            if records:
                result += self._write(tuple(records), now=now)
        return result
