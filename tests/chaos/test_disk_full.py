"""A full disk on one broker (``disk-full``), staged by hand with the harness's own
injector on a KRaft process cluster (one controller, three brokers; as root, for the
tmpfs).

Broker 2's directory (its log dir, and its metadata log, which defaults to the first log
dir) is a 64 MB tmpfs, filled to the brim by the fault. The guarantees:

- no write is acknowledged that the broker did not persist: every value an idempotent
  ``acks=all`` producer had acknowledged, before, during and after the fault, is read
  back once;
- a metadata change the full broker must write to its metadata log (a topic created)
  halts it, as Kafka halts a broker whose metadata log dir has failed: status 1, one
  line naming the dir, no traceback (before, the fetch loop wrote a traceback and went
  on with a metadata log it could not write);
- freed, the broker is started again on its data and recovers: the cluster is whole,
  the run's crash check excuses only that halt, and every partition directory on the
  tmpfs verifies clean (``python -m minikafka.log verify``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from chaos.disk import Disks, unavailable
from chaos.faults import Injector
from chaos.nemesis import Fault
from chaos.runner import TOPIC, RunOptions, _cluster, _create_topic, _whole, crashes
from chaos.workload import read_back
from tests.cluster._cluster import wait_for

pytestmark = [pytest.mark.serial, pytest.mark.timeout(600)]

FULL = 2
"""The broker whose disk fills (brokers are 1-3 beside controller 0)."""


def _producer(servers: str, acked: list[int]) -> Producer:
    """An idempotent ``acks=all`` producer adding each acknowledged value to
    ``acked``."""

    def report(error: object, message: object) -> None:
        if error is None:
            acked.append(int(message.value()))  # type: ignore[attr-defined]

    return Producer(
        {
            "bootstrap.servers": servers,
            "enable.idempotence": True,
            "log_level": 0,
            "on_delivery": report,
        }
    )


def _send(producer: Producer, values: range) -> None:
    for value in values:
        producer.produce(TOPIC, str(value).encode())
        producer.poll(0)


def _read(servers: str, partitions: int) -> list[int]:
    """Every value in the topic: each partition read to its high watermark."""
    final = read_back(servers, TOPIC, partitions, time.monotonic() + 120)
    return [value for records in final.values() for _, value in records]


def test_a_full_disk_halts_its_broker_cleanly_and_nothing_acknowledged_is_lost(
    tmp_path: Path,
) -> None:
    why = unavailable()
    if why is not None:
        pytest.skip(f"a tmpfs cannot be mounted here: {why}")
    cluster = _cluster(tmp_path, RunOptions(0, 0.0))
    disks = Disks.mount(cluster, [FULL])
    injector = Injector(cluster, False, None, cluster.bootstrap, TOPIC, disks)
    servers = cluster.bootstrap
    try:
        cluster.up(timeout=120.0)
        _create_topic(servers, 3)
        assert _whole(servers, 3, time.monotonic() + 60)
        acked: list[int] = []
        producer = _producer(servers, acked)
        _send(producer, range(200))
        assert producer.flush(60) == 0

        fault = Fault(0.0, 1.0, "disk-full", (FULL,))
        injector.start(fault, time.time())
        (record,) = injector.done
        assert record.error == "", record
        assert record.started is not None
        assert " 0 B free" in record.detail
        _send(producer, range(200, 300))  # answered once the disk has room again
        # 200 partitions: more metadata records than the last page of the metadata
        # log's segment holds.
        admin = AdminClient({"bootstrap.servers": servers, "log_level": 0})
        # Its answer may never come: the broker asked may be the one that halts.
        admin.create_topics([NewTopic("more", 200, 3)])
        wait_for(lambda: cluster.pid(FULL) is None, "the full broker halted", 60)
        log = cluster.log_file(FULL).read_text()
        assert "the metadata log dir" in log
        assert "has failed" in log
        assert str(cluster.node_dir(FULL)) in log
        assert "Traceback" not in log

        injector.heal(fault, time.time())
        assert record.error == "", record
        assert "the broker had halted" in record.detail
        assert injector.halted == {FULL}
        wait_for(lambda: cluster.pid(FULL) is not None, "started again", 10)
        assert _whole(servers, 3, time.monotonic() + 120)
        _send(producer, range(300, 400))
        assert producer.flush(120) == 0
        assert len(acked) == 400
        read = _read(servers, 3)
        assert sorted(read) == sorted(set(read))  # nothing twice
        assert set(acked) <= set(read)  # nothing acknowledged lost
        assert crashes(cluster, injector) == []
        cluster.down()
    finally:
        cluster.kill_all()
        disks.close()
    # What the tmpfs held was copied back when it was unmounted.
    for partition in sorted(cluster.node_dir(FULL).glob(f"{TOPIC}-*")):
        done = subprocess.run(
            [sys.executable, "-m", "minikafka.log", "verify", str(partition)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert list(cluster.node_dir(FULL).glob(f"{TOPIC}-*"))
