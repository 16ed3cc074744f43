"""Topic deletion in ZooKeeper mode (seed 001; Kafka 2.8's ``TopicDeletionManager``).

A deletion is asked for by listing the topic under ``/admin/delete_topics``. The
controller then tells every broker the topic is going (UpdateMetadata with leader -2),
takes its partitions Offline and NonExistent, stops every replica and asks its broker to
delete it (StopReplica with delete: ReplicaDeletionStarted), and waits for the answers.
A replica whose broker is down cannot be deleted: it is ReplicaDeletionIneligible and the
topic waits until the broker is back. When every replica is ReplicaDeletionSuccessful the
replicas become NonExistentReplica and the topic's znodes are removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.zk import (
    Delete,
    delete_topic_path,
    topic_config_path,
    topic_path,
)

from .._states import (
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from ._machines import ZkControllerResult, ZkStateMachines

_P = PartitionState
_R = ReplicaState


@attrs.define(eq=False)
class TopicDeletion(ZkStateMachines):
    def on_topic_deletion(
        self, topics: Iterable[str], now: float
    ) -> ZkControllerResult:
        """``/admin/delete_topics`` lists ``topics``: delete them (Kafka's
        ``TopicDeletionManager``). A name that is no topic is just unlisted."""
        self._begin("TopicDeletion", now)
        for name in sorted(set(topics)):
            self.context.pending_deletion.discard(name)
            if name not in self.context.topics:
                self._writes.append(Delete(delete_topic_path(name)))
            else:
                self.context.deleting.add(name)
        self._resume_deletions()
        return self._end()

    def on_stop_replica_response(
        self,
        broker_id: int,
        errors: Mapping[TopicPartition, ErrorCode],
        now: float,
    ) -> ZkControllerResult:
        """A broker answered StopReplica: replicas being deleted are now deleted, or their
        deletion failed and will be retried."""
        self._begin("TopicDeletionStopReplicaResponseReceived", now)
        done: list[PartitionAndReplica] = []
        failed: list[PartitionAndReplica] = []
        for tp, error in errors.items():
            replica = (tp[0], tp[1], broker_id)
            if self.rsm.state(replica) is _R.REPLICA_DELETION_STARTED:
                (done if error == ErrorCode.none else failed).append(replica)
        self._replicas_to(done, _R.REPLICA_DELETION_SUCCESSFUL)
        self._fail_deletion(failed)
        self._resume_deletions()
        return self._end()

    # --- topic deletion (TopicDeletionManager) -----------------------------------------------

    def _resume_deletions(self) -> None:
        """Move every topic being deleted as far as it can go now."""
        for topic in sorted(self.context.deleting):
            replicas = self._replicas_of(topic)
            states = {self.rsm.state(r) for r in replicas}
            if states <= {_R.REPLICA_DELETION_SUCCESSFUL}:
                self._complete_deletion(topic, replicas)
            elif _R.REPLICA_DELETION_STARTED in states:
                continue  # waiting for the brokers' StopReplica answers
            elif any(not self.context.is_live(r[2]) for r in replicas):
                # A replica's broker is down: the topic waits for it (ineligible).
                self._fail_deletion(
                    [r for r in replicas if not self.context.is_live(r[2])]
                )
            else:
                self._start_deletion(topic, replicas)

    def _start_deletion(self, topic: str, replicas: list[PartitionAndReplica]) -> None:
        """The first time, the partitions go (Offline, then NonExistent) and every
        broker hears that the topic is being deleted (leader -2); then each replica not
        yet deleted is stopped and its broker asked to delete it."""
        partitions = list(self.context.partitions(topic))
        if topic not in self._deletion_started:
            self._deletion_started.add(topic)
            self._partitions_to(
                [tp for tp in partitions if self.psm.state(tp) is not _P.OFFLINE],
                _P.OFFLINE,
            )
            self._partitions_to(partitions, _P.NON_EXISTENT)
        self._batch.add_update_metadata(
            self.context.live_or_shutting_down(), partitions
        )
        pending = [
            r
            for r in replicas
            if self.rsm.state(r) is not _R.REPLICA_DELETION_SUCCESSFUL
        ]
        self._replicas_to(
            [r for r in pending if self.rsm.state(r) is not _R.OFFLINE_REPLICA],
            _R.OFFLINE_REPLICA,
        )
        self._replicas_to(pending, _R.REPLICA_DELETION_STARTED)

    def _fail_deletion(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Replicas that cannot be deleted now (their broker is down, or it answered with
        an error) become ineligible until the broker is back."""
        live_states = (_R.NEW_REPLICA, _R.ONLINE_REPLICA)
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) in live_states],
            _R.OFFLINE_REPLICA,
        )
        failing = (_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED)
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) in failing],
            _R.REPLICA_DELETION_INELIGIBLE,
        )

    def _complete_deletion(
        self, topic: str, replicas: list[PartitionAndReplica]
    ) -> None:
        """Every replica is deleted: forget them and remove the topic's znodes."""
        self._replicas_to(replicas, _R.NON_EXISTENT_REPLICA)
        self._writes.append(Delete(topic_path(topic), recursive=True))
        self._writes.append(Delete(topic_config_path(topic), must_exist=False))
        self._writes.append(Delete(delete_topic_path(topic)))
        for tp in self.context.partitions(topic):
            self.context.leadership.pop(tp, None)
            self.psm.initialize(tp, _P.NON_EXISTENT)
        del self.context.topics[topic]
        self.context.configs.pop(topic, None)
        self.context.deleting.discard(topic)
        self._deletion_started.discard(topic)
