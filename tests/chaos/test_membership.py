"""Brokers added and removed mid-run (``broker-add``, ``broker-remove``), staged by hand
with the harness's own injector on a process cluster of four brokers (KRaft with one
controller, and ZooKeeper mode), an idempotent ``acks=all`` producer writing throughout.

- a broker added gets an id never used, registers (it is in the Metadata response's
  brokers), and a replica of every partition moves onto it; its heal moves them back,
  waits for that, and shuts it down (in KRaft mode unregistered then, retired for
  good), and it is not started again at the end;
- a broker removed is drained first (no partition keeps a replica on it, every
  partition whole on the others), then shut down; its heal starts it again and gives
  it its replicas back;
- every value acknowledged through both is read back, none twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from chaos import operations
from chaos.faults import Injector
from chaos.membership import onto, wait_assigned
from chaos.nemesis import Fault
from chaos.operations import replicas
from chaos.runner import TOPIC, RunOptions, _cluster, _create_topic, _whole, crashes
from chaos.workload import read_back
from minikafka.broker.testing import ProcessCluster
from minikafka.zk._server import ZOOKEEPER_JAR

pytestmark = [pytest.mark.serial, pytest.mark.timeout(600)]

PARTITIONS = 4


class Writes:
    """An idempotent ``acks=all`` producer and the values it had acknowledged, from
    ``first`` on (each test its own, on the module's one topic)."""

    def __init__(self, servers: str, first: int) -> None:
        self.acked: list[int] = []
        self.first = self.sent = first

        def report(error: object, message: object) -> None:
            if error is None:
                self.acked.append(int(message.value()))  # type: ignore[attr-defined]

        self.producer = Producer(
            {
                "bootstrap.servers": servers,
                "enable.idempotence": True,
                "log_level": 0,
                "on_delivery": report,
            }
        )

    def send(self, count: int) -> None:
        for value in range(self.sent, self.sent + count):
            self.producer.produce(TOPIC, str(value).encode())
            self.producer.poll(0)
        self.sent += count

    def flushed(self) -> list[int]:
        assert self.producer.flush(120) == 0
        assert len(self.acked) == self.sent - self.first
        return self.acked

    def read_back(self, servers: str) -> list[int]:
        """This producer's values in the topic."""
        return [v for v in _read(servers, PARTITIONS) if self.first <= v < self.sent]


def _registered(servers: str) -> set[int]:
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    return set(client.list_topics(timeout=10).brokers)


def _read(servers: str, partitions: int) -> list[int]:
    """Every value in the topic: each partition read to its high watermark."""
    final = read_back(servers, TOPIC, partitions, time.monotonic() + 120)
    return [value for records in final.values() for _, value in records]


def _assigned_in_order(
    servers: str, target: dict[int, list[int]], timeout: float = 30.0
) -> dict[int, list[int]]:
    """The topic's assignment once it is ``target``'s, order included, or the last one
    read at the deadline: a broker whose metadata is a moment behind the controller's
    may still list the reassignment's adding replicas after another showed it done."""
    deadline = time.monotonic() + timeout
    while True:
        found = replicas(servers, TOPIC)
        if found == target or time.monotonic() >= deadline:
            return found
        time.sleep(0.5)  # polling the brokers' metadata, inside the deadline


@pytest.fixture(scope="module", params=["kraft", "zk"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    """Four brokers (room to drain one: RF 3), the topic created and whole."""
    mode = str(request.param)
    if mode == "zk" and not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    root = tmp_path_factory.mktemp(f"membership-{mode}")
    opts = RunOptions(0, 0.0, mode=mode, faults=("broker-add", "broker-remove"))
    cluster = _cluster(root, opts)
    assert len(cluster.broker_ports) == 4
    try:
        cluster.up(timeout=120.0)
        _create_topic(cluster.bootstrap, PARTITIONS)
        assert _whole(cluster.bootstrap, PARTITIONS, time.monotonic() + 60)
        yield cluster
    finally:
        cluster.kill_all()


def test_a_broker_added_registers_takes_replicas_and_gives_them_back(
    cluster: ProcessCluster,
) -> None:
    servers = cluster.bootstrap
    injector = Injector(cluster, cluster.zookeeper_mode, None, servers, TOPIC)
    first = replicas(servers, TOPIC)
    assert first, "the topic's assignment, listed by a broker that knows it"
    new = max(cluster.node_ids) + 1
    writes = Writes(servers, 0)
    writes.send(200)

    fault = Fault(0.0, 1.0, "broker-add", (new,))
    injector.start(fault, time.time())
    (record,) = injector.done
    assert record.error == "", record
    assert f"broker {new} registered" in record.detail
    assert new in _registered(servers)
    assert wait_assigned(servers, TOPIC, onto(first, new), 60)  # started, completes
    during = replicas(servers, TOPIC)
    assert all(new in r for r in during.values()), during
    writes.send(200)

    injector.heal(fault, time.time())
    assert record.error == "", record
    assert "completed" in record.detail.split("; heal: ")[1]
    if cluster.zookeeper_mode:
        assert "znode gone with its session" in record.detail
    else:
        # retired for good: unregistered, so a second UnregisterBroker finds no
        # registration (Kafka's BROKER_ID_NOT_REGISTERED)
        assert f"Broker {new} is no longer registered." in record.detail, record
        again = operations.unregister(servers, new)
        assert again.endswith("exited 1: Error: BROKER_ID_NOT_REGISTERED"), again
    assert _assigned_in_order(servers, first) == first
    assert cluster.pid(new) is None
    injector.heal_all()
    assert cluster.pid(new) is None  # added and gone: not started at the end
    assert _whole(servers, PARTITIONS, time.monotonic() + 60)
    writes.send(200)
    acked = writes.flushed()
    read = writes.read_back(servers)
    assert len(read) == len(set(read))
    assert set(acked) <= set(read)
    assert crashes(cluster, injector) == []


def test_a_broker_removed_is_drained_before_it_stops_and_given_back_its_replicas(
    cluster: ProcessCluster,
) -> None:
    servers = cluster.bootstrap
    injector = Injector(cluster, cluster.zookeeper_mode, None, servers, TOPIC)
    first = replicas(servers, TOPIC)
    gone = min(cluster.broker_ports)
    assert any(gone in r for r in first.values())
    writes = Writes(servers, 100_000)
    writes.send(200)

    fault = Fault(0.0, 1.0, "broker-remove", (gone,))
    injector.start(fault, time.time())
    (record,) = injector.done
    assert record.error == "", record
    assert "; completed" in record.detail
    assert cluster.pid(gone) is None
    during = replicas(servers, TOPIC)
    assert all(gone not in r and len(r) == 3 for r in during.values()), during
    writes.send(200)

    injector.heal(fault, time.time())
    assert record.error == "", record
    assert f"broker {gone} registered again" in record.detail
    assert wait_assigned(servers, TOPIC, first, 60)  # started, completes
    assert _assigned_in_order(servers, first) == first
    assert _whole(servers, PARTITIONS, time.monotonic() + 60)
    writes.send(200)
    acked = writes.flushed()
    read = writes.read_back(servers)
    assert len(read) == len(set(read))
    assert set(acked) <= set(read)
    assert crashes(cluster, injector) == []
