"""Helpers for tests that drive the QuorumController as a core (seed 004 §2.1).

``ControllerHarness`` stands in for the Raft quorum and the shell around the controller:
it keeps the records the controller appends in an in-memory log, commits them when the
test says so (``commit``), collects the replies by request id, and moves time only when
told to (``advance``). Nothing is committed behind the test's back, which is what makes
the pipelining observable: a request's reply appears only once its records commit.

``metadata_voter`` opens the metadata quorum's one voter as a core, the ``minikafka.raft``
node that ``RaftNodeShell`` runs, for a test (or a book cell) to drive call by call:
``flush_leader`` does what the shell's flusher does, ``replay_replies`` what its state
machine does with the node's replies, and ``fetch_metadata`` and ``fetch_snapshot``
carry a broker's fetches to it as the network would.

``controller_state`` and ``image_state`` reduce a controller and an image to the same
plain value, so a test can check that every way of replaying the log (the active
controller's own replay, a standby's ``replay_committed``, a broker's ``MetadataDelta``)
arrives at the same cluster.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common.timeline import LATEST_EPOCH
from minikafka.raft import (
    Committed,
    Envelope,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    FileRaftLog,
    FileStateStore,
    LoadSnapshot,
    Message,
    RaftConfig,
    RaftNode,
    RaftReply,
    RaftResult,
    SnapshotId,
)
from minikafka.raft import wire as raft_wire
from minikafka.trace import NullTracer, Tracer

from ._config import ControllerConfig
from ._controller import (
    AppendRecords,
    QuorumController,
    QuorumControllerResult,
    Reply,
)
from ._image import BrokerRegistration, MetadataDelta, MetadataImage
from ._metadata_fetch import MetadataFetchAnswer
from ._metadata_log import (
    METADATA_LOG_CONFIG,
    METADATA_PARTITION_DIR,
    decode_metadata_records,
)
from ._observer import FetchPosition
from ._partition import PartitionRegistration
from ._records import BrokerEndpoint, MetadataRecord, decode_record
from ._requests import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerRequest,
    ControllerResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)

__all__ = [
    "ClusterState",
    "ControllerHarness",
    "controller_state",
    "fetch_metadata",
    "fetch_snapshot",
    "flush_leader",
    "image_from_records",
    "image_state",
    "metadata_voter",
    "replay_replies",
]


@attrs.frozen
class ClusterState:
    """What the metadata log says, as plain values that compare by content."""

    features: Mapping[str, int]
    brokers: Mapping[int, BrokerRegistration]
    # topic name -> (topic id, partition id -> registration)
    topics: Mapping[str, tuple[uuid.UUID, Mapping[int, PartitionRegistration]]]
    configs: Mapping[tuple[int, str], Mapping[str, str]]
    next_producer_id: int


def controller_state(
    controller: QuorumController, epoch: int = LATEST_EPOCH
) -> ClusterState:
    """The controller's replicated state at ``epoch`` (a live snapshot, or the latest)."""
    repl = controller.replication
    partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
    for (topic_id, partition_id), registration in repl.partitions.items(epoch):
        partitions.setdefault(topic_id, {})[partition_id] = registration
    topics = {
        info.name: (topic_id, partitions.get(topic_id, {}))
        for topic_id, info in repl.topics.items(epoch)
    }
    configs: dict[tuple[int, str], dict[str, str]] = {}
    for (rtype, rname, name), value in controller.configs.configs.items(epoch):
        configs.setdefault((rtype, rname), {})[name] = value
    return ClusterState(
        features=dict(controller.features.levels.items(epoch)),
        brokers=dict(controller.cluster.brokers.items(epoch)),
        topics=topics,
        configs=configs,
        next_producer_id=controller.producer_ids.next_producer_id(epoch),
    )


def image_state(image: MetadataImage) -> ClusterState:
    """The same value as ``controller_state``, from a broker's MetadataImage."""
    return ClusterState(
        features=dict(image.features),
        brokers=dict(image.brokers),
        topics={
            t.name: (t.topic_id, dict(t.partitions)) for t in image.topics.values()
        },
        configs={k: dict(v) for k, v in image.configs.items()},
        next_producer_id=image.next_producer_id,
    )


def image_from_records(
    records: Iterable[tuple[int, MetadataRecord]], base: MetadataImage | None = None
) -> MetadataImage:
    """Replay ``(offset, record)`` pairs into a MetadataDelta on ``base`` and publish it."""
    delta = MetadataDelta(base or MetadataImage())
    for offset, record in records:
        delta.replay(record, offset)
    return delta.apply()


@attrs.define(eq=False)
class ControllerHarness:
    """A QuorumController with a fake quorum, a manual clock and a reply inbox.

    ``send`` hands a request to the controller and returns its request id; records it
    appends go to ``log`` as ``(offset, record)`` pairs; ``commit`` tells the controller
    the quorum committed them, which releases the replies waiting for them into
    ``replies``. ``request`` does all three for tests that do not care about pipelining.
    """

    controller: QuorumController
    now: float = 0.0
    log: list[tuple[int, MetadataRecord]] = attrs.field(init=False, factory=list)
    replies: dict[int, Reply] = attrs.field(init=False, factory=dict)
    broker_epochs: dict[int, int] = attrs.field(init=False, factory=dict)
    incarnations: dict[int, uuid.UUID] = attrs.field(init=False, factory=dict)
    _batch_ends: list[int] = attrs.field(init=False, factory=list)
    _next_request_id: int = attrs.field(init=False, default=1)

    @classmethod
    def start(
        cls,
        config: ControllerConfig | None = None,
        *,
        seed: int = 0,
        epoch: int = 1,
        now: float = 0.0,
        tracer: Tracer | None = None,
    ) -> ControllerHarness:
        """A new cluster whose controller is active in ``epoch``, its bootstrap committed;
        the controller emits to ``tracer`` (default: nowhere)."""
        controller = QuorumController(
            config or ControllerConfig(),
            random.Random(seed),
            NullTracer() if tracer is None else tracer,
        )
        harness = cls(controller, now)
        harness.become_leader(epoch)
        harness.commit()
        return harness

    # --- the fake quorum ----------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        """The offset of the last record appended (committed or not); -1 if none."""
        return self.log[-1][0] if self.log else -1

    @property
    def committed_offset(self) -> int:
        return self.controller.last_committed_offset

    def _absorb(self, result: QuorumControllerResult) -> QuorumControllerResult:
        """Carry ``result`` out as the shell would: its appends, then its replies."""
        for append in result.records:
            if append.base_offset != self.last_offset + 1:
                raise AssertionError(
                    f"append at {append.base_offset}, but the log ends at {self.last_offset}"
                )
            self.log += [
                (append.base_offset + i, r) for i, r in enumerate(append.records)
            ]
            self._batch_ends.append(append.last_offset)
        for reply in result.replies:
            if reply.request_id in self.replies:
                raise AssertionError(f"request {reply.request_id} answered twice")
            self.replies[reply.request_id] = reply
        return result

    def commit(self, offset: int | None = None) -> list[Reply]:
        """Commit up to ``offset`` (everything appended by default); returns the replies
        it released. As a Raft quorum does, it commits whole batches: the last batch that
        ends at or before ``offset``."""
        target = self.last_offset if offset is None else offset
        ends = [end for end in self._batch_ends if end <= target]
        if not ends:
            return []
        released = self._absorb(self.controller.handle_commit(ends[-1]))
        self._batch_ends = [end for end in self._batch_ends if end > ends[-1]]
        return list(released.replies)

    def become_leader(self, epoch: int) -> QuorumControllerResult:
        return self._absorb(self.controller.become_leader(epoch, self.now))

    def resign(self) -> list[Reply]:
        """Lose leadership: uncommitted records leave the log, as a new leader truncates
        them; returns the failed replies."""
        failed = self._absorb(self.controller.resign())
        self.log = [(o, r) for o, r in self.log if o <= self.committed_offset]
        self._batch_ends = []
        return list(failed.replies)

    # --- requests -----------------------------------------------------------------------

    def send(self, request: ControllerRequest) -> int:
        """Hand ``request`` to the controller now; returns its request id."""
        request_id = self._next_request_id
        self._next_request_id += 1
        self._absorb(self.controller.handle(request_id, request, self.now))
        return request_id

    def reply(self, request_id: int) -> Reply | None:
        return self.replies.get(request_id)

    def response(self, request_id: int) -> ControllerResponse:
        """The response to ``request_id``; fails if there is none (yet)."""
        reply = self.replies.get(request_id)
        if reply is None:
            raise AssertionError(f"request {request_id} has no reply yet")
        if reply.response is None:
            raise AssertionError(
                f"request {request_id} failed with {reply.error_code!r}"
            )
        return reply.response

    def request(self, request: ControllerRequest) -> ControllerResponse:
        """Send ``request``, commit everything, and return its response."""
        request_id = self.send(request)
        self.commit()
        return self.response(request_id)

    def appended_since(self, offset: int) -> list[MetadataRecord]:
        """The records appended after ``offset``."""
        return [r for o, r in self.log if o > offset]

    # --- time ---------------------------------------------------------------------------

    def refuse(
        self, append: AppendRecords, error_code: ErrorCode
    ) -> QuorumControllerResult:
        """The quorum refuses ``append`` and everything after it (a full disk): the fake
        log forgets those records and the controller reverts to just before them."""
        self.log = [entry for entry in self.log if entry[0] < append.base_offset]
        self._batch_ends = [end for end in self._batch_ends if end < append.base_offset]
        return self._absorb(
            self.controller.append_failed(append.base_offset, error_code)
        )

    def advance(self, seconds: float) -> QuorumControllerResult:
        """Move the clock and let the controller's timer fire."""
        self.now += seconds
        return self._absorb(self.controller.on_timer(self.now))

    # --- brokers and topics -------------------------------------------------------------

    def register(
        self,
        broker_id: int,
        rack: str | None = None,
        incarnation: uuid.UUID | None = None,
    ) -> BrokerRegistrationResponse:
        incarnation = incarnation or uuid.UUID(int=broker_id, version=4)
        endpoint = BrokerEndpoint("PLAINTEXT", "localhost", 9000 + broker_id)
        response = self.request(
            BrokerRegistrationRequest(broker_id, incarnation, (endpoint,), rack)
        )
        assert isinstance(response, BrokerRegistrationResponse)
        if response.error_code == ErrorCode.none:
            self.broker_epochs[broker_id] = response.broker_epoch
            self.incarnations[broker_id] = incarnation
        return response

    def heartbeat(
        self, broker_id: int, *, want_fence: bool = False, want_shutdown: bool = False
    ) -> BrokerHeartbeatResponse:
        """A heartbeat from a broker that has replayed everything committed."""
        beat = BrokerHeartbeatRequest(
            broker_id,
            self.broker_epochs[broker_id],
            self.committed_offset,
            want_fence,
            want_shutdown,
        )
        response = self.request(beat)
        assert isinstance(response, BrokerHeartbeatResponse)
        return response

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int | None = None
    ) -> AllocateProducerIdsResponse:
        """A block of producer ids for ``broker_id``, asked with its current epoch by
        default; committed."""
        epoch = (
            self.broker_epochs.get(broker_id, -1)
            if broker_epoch is None
            else broker_epoch
        )
        response = self.request(AllocateProducerIdsRequest(broker_id, epoch))
        assert isinstance(response, AllocateProducerIdsResponse)
        return response

    def add_brokers(
        self, broker_ids: Iterable[int], racks: Sequence[str | None] | None = None
    ) -> dict[int, int]:
        """Register each broker and heartbeat it until unfenced; returns their epochs."""
        ids = list(broker_ids)
        rack_of = list(racks) if racks is not None else [None] * len(ids)
        for broker_id, rack in zip(ids, rack_of, strict=True):
            registered = self.register(broker_id, rack)
            if registered.error_code != ErrorCode.none:
                raise AssertionError(f"broker {broker_id}: {registered.error_code!r}")
            beat = self.heartbeat(broker_id)
            if beat.is_fenced:
                raise AssertionError(f"broker {broker_id} is still fenced")
        return {b: self.broker_epochs[b] for b in ids}

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignments: tuple[tuple[int, ...], ...] = (),
        configs: tuple[tuple[str, str], ...] = (),
    ) -> CreatableTopicResult:
        """Create one topic and commit it; fails unless the controller created it."""
        topic = CreatableTopic(
            name, partitions, replication_factor, assignments, configs
        )
        response = self.request(CreateTopicsRequest((topic,)))
        assert isinstance(response, CreateTopicsResponse)
        (result,) = response.topics
        if result.error_code != ErrorCode.none:
            raise AssertionError(
                f"topic {name}: {result.error_code!r} {result.error_message}"
            )
        return result

    # --- reading the state --------------------------------------------------------------

    def topic_id(self, name: str) -> uuid.UUID:
        info = self.controller.replication.topic_named(name)
        if info is None:
            raise KeyError(name)
        return info.topic_id

    def partition(self, name: str, partition_id: int) -> PartitionRegistration:
        """The partition as the controller sees it now (committed or not)."""
        return self.controller.replication.partitions[
            (self.topic_id(name), partition_id)
        ]

    def committed_records(self) -> list[tuple[int, MetadataRecord]]:
        return [(o, r) for o, r in self.log if o <= self.committed_offset]

    def image(self) -> MetadataImage:
        """A broker's view: the committed log replayed through a MetadataDelta."""
        return image_from_records(self.committed_records())

    def state(self, epoch: int = LATEST_EPOCH) -> ClusterState:
        return controller_state(self.controller, epoch)


# --- the metadata quorum's one voter, as a core --------------------------------------

_correlation_ids = itertools.count()


class _LeaderFlushedByHand(FileRaftLog):
    """The Raft log as the server's leader has it (``LeaderFlushedLog``): the node only
    asks for a flush, and :func:`flush_leader` does it, when the test says."""

    def flush(self) -> None:
        pass


def metadata_voter(
    metadata_dir: Path,
    node_id: int,
    now: float,
    *,
    deferred_flush: bool = False,
    config: RaftConfig | None = None,
    tracer: Tracer | None = None,
) -> tuple[RaftNode, FileRaftLog]:
    """The only voter of a metadata quorum on ``metadata_dir``, as ``RaftNodeShell``
    opens it (``__cluster_metadata-0`` and its ``quorum-state``), and its log. Creating
    the node is an election it wins at once, in the epoch after the last one stored.

    Every append is fsynced at once and commits with it; with ``deferred_flush`` the
    leader's flush is only asked for, as in the server, and :func:`flush_leader` does it.
    """
    path = Path(metadata_dir) / METADATA_PARTITION_DIR
    log_class = _LeaderFlushedByHand if deferred_flush else FileRaftLog
    log = log_class(path, METADATA_LOG_CONFIG)
    store = FileStateStore(path, [node_id])
    node = RaftNode(node_id, [node_id], log, store, now, config=config, tracer=tracer)
    return node, log


def flush_leader(node: RaftNode, log: FileRaftLog, now: float) -> RaftResult:
    """What ``RaftNodeShell``'s flusher does (there in a worker thread): fsync what was
    appended, then tell the node, which commits it."""
    end = log.end_offset
    log.fsync_up_to(end)
    log.mark_flushed(end)
    return node.on_log_flushed(now)


def replay_replies(image: MetadataImage, replies: Iterable[RaftReply]) -> MetadataImage:
    """What a state machine does with a Raft node's replies: start again from a snapshot
    it hands over, replay the entries it reports committed (control entries are not
    among them)."""
    for reply in replies:
        match reply:
            case LoadSnapshot(snapshot):
                delta = MetadataDelta(MetadataImage())
                for _, record in decode_metadata_records(snapshot.payload):
                    delta.replay(record)
                delta.offset = snapshot.id.end_offset - 1
                image = delta.apply()
            case Committed(entries):
                image = image_from_records(
                    ((e.offset, decode_record(e.data)) for e in entries), image
                )
    return image


def _ask(node: RaftNode, source: int, request: Message, now: float) -> Message:
    """``request`` from ``source`` to ``node``, and its answer; one the node holds (a
    fetch with nothing new, a long poll) once its wait has run out."""
    envelope = Envelope(source, node.node_id, next(_correlation_ids), request)
    result = node.receive(envelope, now)
    if not result.messages:
        result = node.on_timer(now + node.config.fetch_max_wait)
    for answer in result.messages:
        if answer.correlation_id == envelope.correlation_id:
            return answer.message
    raise AssertionError(f"{request} was not answered")


def fetch_metadata(
    node: RaftNode, position: FetchPosition, now: float, observer_id: int = 100
) -> MetadataFetchAnswer:
    """A broker's Fetch at ``position``, answered by the leader's Raft node through
    Kafka's wire format, with no network: the request encoded and decoded as it crosses
    to the controller listener, the answer encoded by the listener's codec and read by
    :meth:`MetadataFetchAnswer.decode`."""
    request = FetchRequest(
        observer_id, node.epoch, position.fetch_offset, position.last_fetched_epoch
    )
    wire = raft_wire.encode_fetch_request(request, cluster_id="", max_wait=0.5)
    answer = _ask(node, observer_id, raft_wire.decode_fetch_request(wire), now)
    assert isinstance(answer, FetchResponse), answer
    response = raft_wire.encode_fetch_response(answer, node.log.start_offset)
    (data,) = [p for topic in response.responses for p in topic.partitions]
    return MetadataFetchAnswer.decode(data)


def fetch_snapshot(
    node: RaftNode, snapshot_id: SnapshotId, now: float, observer_id: int = 100
) -> bytes | None:
    """The whole snapshot ``snapshot_id`` from the leader's Raft node, in FetchSnapshot's
    chunks (``snapshot_chunk_bytes`` of its config); None if the node answers
    SNAPSHOT_NOT_FOUND (or any other error)."""
    data = bytearray()
    while True:
        request = FetchSnapshotRequest(observer_id, node.epoch, snapshot_id, len(data))
        answer = _ask(node, observer_id, request, now)
        assert isinstance(answer, FetchSnapshotResponse), answer
        if answer.error is not Errors.NONE:
            return None
        data += answer.unaligned_records
        if len(data) >= answer.size:
            return bytes(data)
