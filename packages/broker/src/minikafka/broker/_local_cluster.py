"""A cluster in one process, in virtual time: seed 000's replication and failover end to end.

Every part is one of this project's cores, and what the network would carry between them
is a method call: the QuorumController (behind ``ControllerHarness``'s fake quorum, which
commits when told), and per broker a ReplicaManager on its own log directory, a metadata
image it replays the committed records into, and a ReplicaFetcher per leader it follows.
One :meth:`LocalCluster.step` is what the shells do concurrently on a real cluster:

1. the controller's clock moves (a broker silent for ``broker.session.timeout.ms`` is
   fenced, and the partitions it led get a new leader from their ISR);
2. every live broker heartbeats, and replays what was committed into its image, becoming
   leader or follower of what the image says (a new leader epoch restarts its fetcher,
   truncation first);
3. every live follower fetches once from each live leader (OffsetsForLeaderEpoch when
   truncating, then Fetch), which also moves the leaders' high watermarks and answers
   their waiting ``acks=all`` produces;
4. every leader checks its ISR (``replica.lag.time.max.ms``) and sends its AlterPartition
   proposals to the controller: the shrinks, and the expansions its followers' fetches
   made in step 3 (the messages of its ReplicaManager's results, kept until then, as the
   broker's shell batches them).

:meth:`kill` stops a broker cold (no heartbeat, no fetch, nobody can fetch from it; its
logs stay on disk); :meth:`restart` opens its log directory again, as a new incarnation,
after a clean shutdown or as after SIGKILL (``clean=False``: the logs are recovered).
The tests that prove what replication promises under such failures run on this, seeded,
and so does the book's chapter on replication across brokers.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.controller import (
    AlterPartitionItem,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    ControllerConfig,
    ElectLeadersRequest,
    ElectLeadersResponse,
    MetadataDelta,
    MetadataImage,
    ReassignablePartition,
)
from minikafka.controller.testing import ControllerHarness
from minikafka.log import LogConfig, LogManager, build_batch, make_records
from minikafka.replication import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    FetchedPartition,
    FetchFailure,
    FetchParams,
    FetchResponse,
    IsrChangeAnswer,
    IsrChangeProposal,
    ProducePartitionResult,
    ProduceResponse,
    ReplicaFetcher,
    ReplicaManager,
    ReplicaManagerResult,
    TopicSettings,
)

from ._metadata_publisher import partition_states


@attrs.define(eq=False)
class LocalBroker:
    broker_id: int
    dir: Path
    manager: ReplicaManager
    image: MetadataImage = attrs.field(factory=MetadataImage)
    fetchers: dict[int, ReplicaFetcher] = attrs.field(factory=dict)
    alive: bool = True
    unsent: dict[TopicPartition, IsrChangeProposal] = attrs.field(
        factory=dict, repr=False
    )
    """The ISR proposals its manager made since its last AlterPartition, the latest per
    partition."""


@attrs.define(eq=False)
class LocalCluster:
    harness: ControllerHarness
    brokers: dict[int, LocalBroker]
    settings: TopicSettings
    replica_lag_time_max_s: float = 30.0
    acknowledged: dict[int, dict[TopicPartition, ProducePartitionResult]] = attrs.field(
        factory=dict
    )
    """Produce request id -> its answer, once the leader answered it."""
    deleted: dict[int, dict[TopicPartition, DeleteRecordsPartitionResult]] = (
        attrs.field(factory=dict)
    )
    """DeleteRecords request id -> its answer, once the leader answered it."""
    _next_request_id: int = 1

    @classmethod
    def start(
        cls,
        root: Path,
        broker_ids: Sequence[int] = (1, 2, 3),
        *,
        seed: int = 0,
        min_insync_replicas: int = 1,
        broker_session_timeout_ms: int = 9000,
        replica_lag_time_max_ms: int = 30_000,
        log_config: LogConfig | None = None,
    ) -> LocalCluster:
        """``log_config``: every partition's (small segments make rolls, and the
        producer snapshots they write, happen within a test)."""
        config = ControllerConfig(broker_session_timeout_ms=broker_session_timeout_ms)
        harness = ControllerHarness.start(config, seed=seed)
        harness.add_brokers(broker_ids)
        settings = TopicSettings(log_config or LogConfig(), min_insync_replicas)
        brokers = {
            b: _open_broker(root / f"broker-{b}", b, settings) for b in broker_ids
        }
        cluster = cls(harness, brokers, settings, replica_lag_time_max_ms / 1000)
        cluster._publish()
        return cluster

    @property
    def now(self) -> float:
        return self.harness.now

    # --- what clients and operators do ------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.harness.create_topic(name, partitions, replication_factor, configs=configs)
        self._publish()

    def leader_of(self, tp: TopicPartition) -> int:
        """The leader the committed metadata names (-1: none)."""
        topic = self.harness.image().topic(tp.topic)
        assert topic is not None, tp
        return topic.partitions[tp.partition].leader

    def produce(
        self, tp: TopicPartition, values: Sequence[bytes], acks: Acks = Acks.ALL
    ) -> int | None:
        """Send one batch to the partition's leader; the request id, or None if there is
        no live leader to take it (a client would retry after a metadata refresh)."""
        records = make_records([(None, v) for v in values], timestamp_ms=0)
        return self.produce_batch(tp, build_batch(records), acks)

    def produce_batch(
        self, tp: TopicPartition, batch: bytes, acks: Acks = Acks.ALL
    ) -> int | None:
        """Send ``batch`` as it is on the wire (an idempotent producer's, sent again
        to retry it) to the partition's leader: the request id, or None as
        :meth:`produce`."""
        broker = self.brokers.get(self.leader_of(tp))
        if broker is None or not broker.alive:
            return None
        request_id = self._next_request_id
        self._next_request_id += 1
        # A copy: the leader writes the offsets into the buffer it is given.
        self._collect(
            broker,
            broker.manager.append_records(
                30_000, acks, {tp: bytearray(batch)}, request_id, self.now
            ),
        )
        return request_id

    def delete_records(
        self, tp: TopicPartition, offset: int, timeout_ms: int = 30_000
    ) -> int | None:
        """DeleteRecords (KIP-107) to the partition's leader: its log start moves to
        ``offset`` (-1: the high watermark); the request id, answered in
        :attr:`deleted` once the low watermark reaches the offset, or None if there is
        no live leader."""
        broker = self.brokers.get(self.leader_of(tp))
        if broker is None or not broker.alive:
            return None
        request_id = self._next_request_id
        self._next_request_id += 1
        self._collect(
            broker,
            broker.manager.delete_records(
                timeout_ms, {tp: offset}, request_id, self.now
            ),
        )
        return request_id

    def reassign(self, tp: TopicPartition, replicas: tuple[int, ...]) -> ErrorCode:
        """AlterPartitionReassignments (KIP-236): move the partition to ``replicas``; the
        controller adds the new ones, waits for them in the ISR, then drops the old."""
        request = AlterPartitionReassignmentsRequest(
            (ReassignablePartition(tp.topic, tp.partition, replicas),)
        )
        response = self.harness.request(request)
        assert isinstance(response, AlterPartitionReassignmentsResponse)
        self._publish()
        return response.partitions[0].error_code

    def elect_preferred(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, ErrorCode]:
        """ElectLeaders (preferred) for ``partitions``, or all: each back to its first
        replica if that replica is in sync; the answer per partition."""
        asked = tuple((tp.topic, tp.partition) for tp in partitions) or None
        response = self.harness.request(ElectLeadersRequest(asked))
        assert isinstance(response, ElectLeadersResponse)
        self._publish()
        return {
            TopicPartition(r.topic, r.partition): r.error_code
            for r in response.partitions
        }

    def kill(self, broker_id: int) -> None:
        """The broker stops dead: no more heartbeats, fetches or answers."""
        self.brokers[broker_id].alive = False

    def shutdown(self, broker_id: int) -> None:
        """Controlled shutdown: the broker asks the controller (a heartbeat with
        ``wantShutDown``) to move its leaderships away, sees that committed, then stops."""
        self.harness.heartbeat(broker_id, want_shutdown=True)
        self.harness.commit()
        self._publish()
        self.kill(broker_id)

    def restart(self, broker_id: int, *, clean: bool = True) -> None:
        """Open the broker's log directory again, as a new incarnation that registers,
        replays the whole metadata and follows or leads what it says.

        ``clean=False``: the broker was SIGKILLed. What it wrote is in the files (the
        page cache keeps it), but no flush, checkpoint, producer snapshot or
        clean-shutdown marker was written since: the start recovers the logs.
        """
        old = self.brokers[broker_id]
        if clean:
            old.manager.log_manager.shutdown()
        else:
            for log in old.manager.log_manager.logs.values():
                log.close_handlers()
        self.brokers[broker_id] = _open_broker(old.dir, broker_id, self.settings)
        # A new incarnation id each start (seeded: the run is deterministic).
        self._next_request_id += 1
        self.harness.register(
            broker_id, incarnation=uuid.UUID(int=self._next_request_id)
        )
        self.harness.heartbeat(broker_id)
        self._publish()

    # --- time ---------------------------------------------------------------------------------

    def step(self, seconds: float = 0.5) -> None:
        self.harness.advance(seconds)
        self.harness.commit()
        for broker in self._alive():
            self.harness.heartbeat(broker.broker_id)
        self._publish()
        for broker in self._alive():
            self._collect(broker, broker.manager.on_timer(self.now))
        for broker in self._alive():
            for fetcher in broker.fetchers.values():
                self._pump(fetcher)
        for broker in self._alive():
            self._alter_partitions(broker)
        self._publish()

    def run(self, seconds: float, step: float = 0.5) -> None:
        for _ in range(round(seconds / step)):
            self.step(step)

    # --- inside -------------------------------------------------------------------------------

    def _alive(self) -> list[LocalBroker]:
        return [b for b in self.brokers.values() if b.alive]

    def _collect(self, broker: LocalBroker, result: ReplicaManagerResult) -> None:
        """Keep the produce and DeleteRecords answers, and the proposals for step 4's
        AlterPartition."""
        for response in result.replies:
            if isinstance(response, ProduceResponse):
                self.acknowledged[response.request_id] = response.results
            elif isinstance(response, DeleteRecordsResponse):
                self.deleted[response.request_id] = response.results
        for proposal in result.messages:
            broker.unsent[proposal.topic_partition] = proposal

    def _publish(self) -> None:
        """Each live broker replays what is newly committed and obeys it."""
        committed = self.harness.committed_records()
        for broker in self._alive():
            fresh = [(o, r) for o, r in committed if o > broker.image.offset]
            if not fresh:
                continue
            delta = MetadataDelta(broker.image)
            for offset, record in fresh:
                delta.replay(record, offset)
            broker.image = delta.apply()
            changes = delta.local_changes(broker.broker_id)
            manager = broker.manager
            self._collect(
                broker,
                manager.stop_replicas(changes.deleted | changes.stopped, self.now),
            )
            self._collect(
                broker,
                manager.become_leader_or_follower(
                    partition_states(changes.leaders),
                    partition_states(changes.followers),
                    self.now,
                ),
            )
            moved = (
                set(changes.leaders)
                | set(changes.followers)
                | changes.stopped
                | changes.deleted
            )
            for fetcher in broker.fetchers.values():
                fetcher.remove_partitions(moved)
            for tp, local in changes.followers.items():
                leader = local.partition.leader
                if leader < 0:
                    continue  # no leader to follow until one is elected
                if leader not in broker.fetchers:
                    broker.fetchers[leader] = ReplicaFetcher(
                        broker.broker_id, leader, manager.partitions
                    )
                broker.fetchers[leader].add_partitions([tp])

    def _pump(self, fetcher: ReplicaFetcher) -> None:
        leader = self.brokers.get(fetcher.source_broker)
        if leader is None or not leader.alive:
            return  # the connection fails: nothing fetched this round
        requests = fetcher.epoch_requests(self.now).messages
        answers = leader.manager.last_offsets_for_leader_epochs(requests)
        _raise_first(fetcher.on_epoch_answers(answers, self.now).failures)
        fetches = list(fetcher.fetch_request(self.now).messages)
        if not fetches:
            return
        params = FetchParams(
            fetcher.broker_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 30
        )
        request_id = self._next_request_id
        self._next_request_id += 1
        fetched: list[FetchedPartition] = []
        result = leader.manager.fetch_messages(params, fetches, request_id, self.now)
        for response in result.replies:
            if (
                isinstance(response, FetchResponse)
                and response.request_id == request_id
            ):
                fetched += [FetchedPartition.of(f, r) for f, r in response.results]
        others = tuple(r for r in result.replies if r.request_id != request_id)
        self._collect(leader, attrs.evolve(result, replies=others))
        _raise_first(fetcher.on_fetch_answers(fetched, self.now).failures)

    def _alter_partitions(self, broker: LocalBroker) -> None:
        manager = broker.manager
        self._collect(
            broker, manager.maybe_shrink_isr(self.now, self.replica_lag_time_max_s)
        )
        unsent, broker.unsent = list(broker.unsent.values()), {}
        proposals = [p for p in unsent if _still_proposed(manager, p)]
        if not proposals:
            return
        items = tuple(
            AlterPartitionItem(
                p.topic_id,
                p.topic_partition.partition,
                p.leader_epoch,
                p.new_isr,
                p.partition_epoch,
            )
            for p in proposals
        )
        epoch = self.harness.broker_epochs[broker.broker_id]
        response = self.harness.request(
            AlterPartitionRequest(broker.broker_id, epoch, items)
        )
        assert isinstance(response, AlterPartitionResponse)
        results = {(r.topic_id, r.partition): r for r in response.partitions}
        answers = []
        for p in proposals:
            r = results.get((p.topic_id, p.topic_partition.partition))
            if r is None or response.error_code is not ErrorCode.none:
                answers.append(IsrChangeAnswer(p.topic_partition, response.error_code))
            else:
                answers.append(
                    IsrChangeAnswer(
                        p.topic_partition,
                        r.error_code,
                        r.isr,
                        r.leader_epoch,
                        r.partition_epoch,
                    )
                )
        self._collect(broker, manager.on_isr_change_answers(answers, self.now))


def _still_proposed(manager: ReplicaManager, proposal: IsrChangeProposal) -> bool:
    """Whether the partition still waits for an answer to ``proposal``: a new leader
    epoch, the metadata's own ISR or the partition's deletion makes it moot."""
    partition = manager.get_partition(proposal.topic_partition)
    pending = None if partition is None else partition.pending_isr_change
    return pending is not None and pending.proposal == proposal


def _open_broker(dir: Path, broker_id: int, settings: TopicSettings) -> LocalBroker:
    logs = LogManager.startup([dir])
    manager = ReplicaManager(broker_id, logs, lambda topic: settings)
    return LocalBroker(broker_id, dir, manager)


def _raise_first(failures: tuple[FetchFailure, ...]) -> None:
    """In a simulation a failed partition is a bug to see, not a fault to ride out: the
    real fetcher's isolation would hide it behind a backoff."""
    if failures:
        raise failures[0].error
