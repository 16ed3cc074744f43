"""Exactly-once delivery (KIP-98, KIP-447) on three ``minikafka broker`` processes, in
both controller modes, under faults: a consume-transform-produce application
(``_eos_copier``, confluent-kafka's transactional producer and read_committed consumer)
copies numbered records from one topic to another while it is SIGKILLed and restarted,
while the transaction coordinator's broker is SIGKILLed, and while the output
partition's leader is SIGKILLed.

What the test proves, in each mode:

- the output read with read_committed holds each input record exactly once, although
  transactions were cut off mid-way, aborted by the coordinator, and taken over by a
  new instance of the application;
- records of the aborted transactions are in the output log (read_uncommitted sees at
  least every committed one) but never visible to read_committed;
- the group's committed offsets end at the input's end: offsets and output were
  committed together;
- the instance killed first is fenced by the next: a new instance's first transaction
  finds the old one's aborted, not half-committed.

An instance that hangs (librdkafka can wait forever for a group coordinator whose
broker was killed) is replaced as an operator's liveness check would: one more kill.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.broker.testing import ProcessCluster
from minikafka.coordination import TRANSACTION_STATE_TOPIC, partition_for
from tests.cluster._cluster import (
    MODES,
    WAIT,
    create_on,
    shared_cluster,
    state,
    wait_for,
)

RECORDS = 3000
STALL = 30.0
"""Seconds without a line from the copier after which it is hung: longer than its
transaction timeout (20 s), after which the coordinator aborts what it left open."""
TXN_SETTINGS = {
    # Both internal topics on every broker, two copies needed for a write: a killed
    # coordinator's transactions and offsets survive on the others.
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.replication.factor": "3",
}


@pytest.fixture(scope="module", params=MODES)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    with shared_cluster(
        tmp_path_factory.mktemp(f"txn-{request.param}"),
        mode=request.param,
        overrides=TXN_SETTINGS,
    ) as made:
        yield made


class Copier:
    """The application: one instance (a process) at a time, killed and started when
    asked, and replaced when it ends fenced (exit 3), as its operator would."""

    def __init__(self, cluster: ProcessCluster, args: list[str], log: Path) -> None:
        self.cluster, self.args, self.log = cluster, args, log
        self.process: subprocess.Popen[str] | None = None
        self.instances = 0
        self.start()

    def start(self) -> None:
        self.instances += 1
        out = self._log(self.instances).open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.cluster._eos_copier", *self.args],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _log(self, instance: int) -> Path:
        return self.log.parent / f"{self.log.name}.{instance}"

    def output(self) -> str:
        """What every instance printed, the current one last."""
        return "".join(
            f"--- instance {i}\n{self._log(i).read_text()}"
            for i in range(1, self.instances + 1)
        )

    def commits(self) -> int:
        return self.output().count("committed ")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WAIT)

    def _ended(self) -> int | None:
        """The current instance's exit code once it has ended and is not replaced: a
        fenced instance (a transaction the coordinator aborted on its timeout while a
        broker was down fences its producer) gets a successor here."""
        assert self.process is not None
        code = self.process.poll()
        if code == 3:
            self.start()
            return None
        return code

    def _failed(self, what: str) -> AssertionError:
        return AssertionError(f"{what}; the copier said:\n{self.output()[-4000:]}")

    def wait_commits(self, more: int, what: str) -> None:
        """Until ``more`` transactions more than now have committed.

        An instance silent for :data:`STALL` seconds is hung, not slow, and is
        replaced once per wait, as an operator's liveness check would: librdkafka's
        ``send_offsets_to_transaction`` can wait forever, past its timeout, for a group
        coordinator whose broker was killed (librdkafka issues 5456 and 5511; Kafka's
        brokers see the same). The replacement is one more kill of the application,
        which exactly-once must survive too."""
        target = self.commits() + more
        deadline = time.monotonic() + WAIT
        replaced = False
        said, heard = self.output(), time.monotonic()
        while self.commits() < target:
            code = self._ended()
            if code is not None:
                raise self._failed(f"the copier exited {code} before {what}")
            if (now := self.output()) != said:
                said, heard = now, time.monotonic()
            elif time.monotonic() - heard > STALL and not replaced:
                self.kill()
                self.start()
                replaced, heard = True, time.monotonic()
                deadline = heard + WAIT
            if time.monotonic() > deadline:
                raise self._failed(f"not within {WAIT:.0f}s: {what}")
            time.sleep(0.1)  # polling the copier's output, inside the deadline

    def wait_done(self) -> None:
        """Until the copy is finished."""
        deadline = time.monotonic() + 4 * WAIT
        while (code := self._ended()) != 0:
            if code is not None:
                raise self._failed(f"the copier exited {code}")
            if time.monotonic() > deadline:
                raise self._failed("the copier is not done")
            time.sleep(0.1)  # polling the copier, inside the deadline


def test_each_record_is_copied_exactly_once_through_kills(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    brokers = sorted(cluster.broker_ports)
    source, sink = "eos-in", "eos-out"
    create_on(cluster, source, brokers)
    create_on(cluster, sink, [brokers[1], brokers[2], brokers[0]])
    plain = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0}
    )
    for i in range(RECORDS):
        plain.produce(source, b"%d" % i, partition=0)
    assert plain.flush(WAIT) == 0

    txn_id = "eos-copier"
    copier = Copier(
        cluster,
        [cluster.bootstrap, source, sink, "eos-group", txn_id],
        tmp_path / "copier",
    )
    try:
        # The application dies mid-way; its next instance fences it and goes on.
        copier.wait_commits(3, "the copier's first commits")
        copier.kill()
        copier.start()
        copier.wait_commits(3, "the second instance's commits")

        # The transaction coordinator's broker dies.
        coordinator = state(
            cluster,
            TRANSACTION_STATE_TOPIC,
            partition_for(
                txn_id, int(TXN_SETTINGS["transaction.state.log.num.partitions"])
            ),
        ).leader
        cluster.kill(coordinator)
        copier.wait_commits(3, "commits without it")
        cluster.start(coordinator)
        wait_for(lambda: len(state(cluster, sink).isr) == 3, "the sink in sync")

        # The output partition's leader dies.
        leader = state(cluster, sink).leader
        cluster.kill(leader)
        copier.wait_commits(3, "commits on a new leader")
        cluster.start(leader)
        copier.wait_done()
    finally:
        if copier.process is not None and copier.process.poll() is None:
            copier.kill()

    committed = read(cluster, sink, "read_committed")
    assert sorted(committed) == sorted(b"copy-%d" % i for i in range(RECORDS))
    everything = read(cluster, sink, "read_uncommitted")
    assert set(everything) == set(committed)
    assert len(everything) >= len(committed)


def read(cluster: ProcessCluster, topic: str, isolation: str) -> list[bytes]:
    """Every value of partition 0 up to its end, with ``isolation``."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"check-{topic}-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT
        while True:
            assert time.monotonic() < deadline, f"read {len(values)} values"
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return values
                continue
            values.append(message.value() or b"")
    finally:
        consumer.close()
