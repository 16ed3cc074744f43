"""A cluster whose every listener is SASL_SSL, in both controller modes: the clients',
the brokers' own (inter-broker) and, in KRaft, the controller's. Clients log in with
SCRAM-SHA-512; the brokers log in to each other and to the controller as ``User:broker``
(their JAAS line's ``username``/``password``), and the authorizer is on with only
``User:broker`` (and the test's admin) in ``super.users``, so a replica fetch or a
registration that reached a node as anyone else would be refused.

Guarantees checked:

- **acknowledged means durable over TLS and SASL**: an idempotent acks=all
  confluent-kafka producer writes while the partition's leader is SIGKILLed; every
  record it saw acknowledged is read back, once each, in order, after the leader has
  rejoined the ISR (which it can only do by fetching, as ``User:broker``, over SASL_SSL);
- **Raft between controllers over SASL_SSL**: in a quorum of three controllers, the
  active one SIGKILLed, another is elected (its Vote and Fetch traffic logs in as
  ``User:broker``) and a topic created after it is replicated;
- **the nodes' own channels re-authenticate in place (KIP-368)**: with
  ``connections.max.reauth.ms=2000``, replica fetches and heartbeats to the controller
  stay on one connection each through several sessions;
- **a wrong inter-broker password is reported, not a silent hang**: a broker whose own
  login is wrong logs why (``failed authentication due to``) at ERROR; in KRaft it cannot
  register, and starting the cluster fails naming the node with that reason.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker._secure_cluster import client_settings, secure_overrides
from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from minikafka.trace import read_trace
from tests.cluster._cluster import FAST, MODES, WAIT, MakeCluster, wait_for

pytestmark = [pytest.mark.timeout(400), pytest.mark.external]

Settings = dict[str, str | int | float | bool]
PROTOCOL = "SASL_SSL"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN = ("admin", "admin-secret")
TOPIC = "secure-numbers"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("pki"), clients=())


def overrides(pki: ThrowawayPki, mode: str) -> dict[str, str]:
    kraft = mode == "kraft"
    listeners = (PROTOCOL, "CONTROLLER") if kraft else (PROTOCOL,)
    return {
        **secure_overrides(
            PROTOCOL,
            pki,
            listeners=listeners,
            kraft=kraft,
            users={ADMIN[0]: ADMIN[1]},
        ),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": f"User:broker;User:{ADMIN[0]}",
    }


def client(cluster: ProcessCluster, pki: ThrowawayPki) -> Settings:
    """librdkafka's settings: SASL_SSL, SCRAM-SHA-512 as the admin, the CA trusted."""
    _, rdkafka = client_settings(PROTOCOL, pki, ADMIN)
    return {"bootstrap.servers": cluster.bootstrap, "log_level": 0, **rdkafka}


def partition_state(settings: Settings) -> tuple[int, tuple[int, ...]]:
    """(leader, ISR) of the topic's partition 0 as the brokers' Metadata says now."""
    metadata = AdminClient(settings).list_topics(TOPIC, timeout=10)
    found = metadata.topics.get(TOPIC)
    if found is None or found.error is not None or 0 not in found.partitions:
        return -1, ()
    p = found.partitions[0]
    return p.leader, tuple(p.isrs)


class NumberedProducer:
    """confluent-kafka writing 0, 1, 2, ... until stopped; what was acknowledged."""

    def __init__(self, settings: Settings) -> None:
        self.acked: list[int] = []
        self.errors: list[object] = []
        self.stop = threading.Event()
        self.producer = Producer(
            {
                **settings,
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(error)
            return
        value = message.value()
        assert value is not None
        self.acked.append(int(value))

    def _run(self) -> None:
        number = 0
        while not self.stop.is_set():
            self.producer.produce(
                TOPIC, str(number).encode(), partition=0, on_delivery=self._report
            )
            number += 1
            self.producer.poll(0.001)
        self.producer.flush(WAIT * 2)


def read_all(settings: Settings, count: int) -> list[int]:
    consumer = Consumer(
        {**settings, "group.id": "secure-reader", "enable.auto.commit": False}
    )
    values: list[int] = []
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + WAIT
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    values.append(int(message.value() or b"-1"))
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("mode", MODES)
def test_acknowledged_records_survive_a_leader_kill_over_sasl_ssl(
    make_cluster: MakeCluster, pki: ThrowawayPki, mode: str
) -> None:
    cluster = make_cluster(
        mode=mode, security_protocol=PROTOCOL, **overrides(pki, mode)
    )
    settings = client(cluster, pki)
    admin = AdminClient(settings)  # held until the answer: a collected one cancels it
    admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[
        TOPIC
    ].result(timeout=WAIT)
    wait_for(lambda: len(partition_state(settings)[1]) == 3, "three replicas in sync")
    producer = NumberedProducer(settings)
    producer.thread.start()
    try:
        wait_for(lambda: len(producer.acked) >= 500, "records acknowledged")
        leader = partition_state(settings)[0]
        cluster.kill(leader)
        wait_for(
            lambda: partition_state(settings)[0] not in (leader, -1), "a new leader"
        )
        before = len(producer.acked)
        wait_for(lambda: len(producer.acked) >= before + 500, "writes go on")
        cluster.start(leader)
        wait_for(
            lambda: leader in partition_state(settings)[1],
            f"{leader} back in the ISR, fetching as User:broker",
        )
    finally:
        producer.stop.set()
        producer.thread.join(WAIT * 2)
    assert not producer.errors, producer.errors
    values = read_all(settings, len(producer.acked))
    assert len(values) == len(set(values)), "duplicates"
    assert values == sorted(values), "out of order"
    assert not set(producer.acked) - set(values), "acknowledged records lost"


def test_a_sasl_ssl_controller_quorum_elects_after_its_leader_is_killed(
    make_cluster: MakeCluster, pki: ThrowawayPki
) -> None:
    cluster = make_cluster(
        controllers=3, security_protocol=PROTOCOL, **overrides(pki, "kraft")
    )

    def active() -> list[int]:
        """The controllers whose log says they are active, newest epoch last."""
        found: list[tuple[int, int]] = []
        for node in cluster.controller_ids:
            for line in cluster.log_file(node).read_text().splitlines():
                if " is active in epoch " in line:
                    found.append((int(line.rsplit(" ", 1)[1]), node))
        return [node for _, node in sorted(found)]

    wait_for(lambda: bool(active()), "an active controller")
    first = active()[-1]
    cluster.kill(first)
    wait_for(lambda: active()[-1] != first, f"a controller elected after {first}")
    settings = client(cluster, pki)
    admin = AdminClient(settings)

    # A broker that has not heard of the new controller yet forwards the request to
    # the old one, then to the next voter, until the new one answers (KIP-590): the
    # client hears no NOT_CONTROLLER, which librdkafka would leave to the application.
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=WAIT)
    wait_for(lambda: len(partition_state(settings)[1]) == 3, "three replicas in sync")


def _break_login(cluster: ProcessCluster, node: int) -> None:
    """Give ``node`` a wrong password for its own login (the users it accepts stay)."""
    path = cluster.properties_file(node)
    text = path.read_text()
    assert 'password="broker-secret"' in text
    path.write_text(text.replace('password="broker-secret"', 'password="wrong"'))


def test_a_wrong_inter_broker_password_stops_registration_naming_why(
    tmp_path: Path, pki: ThrowawayPki
) -> None:
    """KRaft: the broker cannot log in to the controller, so it never registers; after
    ``initial.broker.registration.timeout.ms`` it gives up and exits, as Kafka's does;
    the cluster's start-up fails naming the node, and its log says why."""
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        tmp_path,
        3,
        controller_port=ports[0],
        broker_ports=ports[1:],
        # 10 s, not Kafka's 60 s: long enough for the other brokers to register on a
        # loaded machine, and the start-up ends when the bad one gives up.
        overrides={
            **FAST,
            **overrides(pki, "kraft"),
            "initial.broker.registration.timeout.ms": "10000",
        },
        security_protocol=PROTOCOL,
    )
    bad = max(cluster.broker_ports)
    _break_login(cluster, bad)
    try:
        with pytest.raises(Exception, match=f"node {bad} exited while") as failed:
            cluster.up(timeout=30)
        assert "failed authentication due to" in str(failed.value)
        assert "unable to register with the controller quorum" in str(failed.value)
        # An exit this test expects, not a crash: its pid file goes, as after a stop.
        cluster.wait_exit(bad, WAIT)
        log = cluster.log_file(bad).read_text()
        assert "ERROR" in log, log[-2000:]
        assert "Authentication failed" in log, log[-2000:]
    finally:
        cluster.kill_all()


def test_a_wrong_inter_broker_password_in_zookeeper_mode_is_logged(
    make_cluster: MakeCluster, pki: ThrowawayPki
) -> None:
    """ZooKeeper mode: the broker registers in ZooKeeper, but its replica fetchers
    cannot log in to the leaders: it says so at ERROR and stays out of the ISR."""
    cluster = make_cluster(
        mode="zookeeper",
        security_protocol=PROTOCOL,
        **overrides(pki, "zookeeper"),
        **{"replica.lag.time.max.ms": "5000"},
    )
    bad = max(cluster.broker_ports)
    # Stopped, not killed: its ZooKeeper session closes with it, so started again it
    # registers at once, not after the killed session's znode expires (6 s).
    cluster.stop(bad)
    _break_login(cluster, bad)
    cluster.start(bad)
    settings = client(cluster, pki)
    assignment = {0: [b for b in sorted(cluster.broker_ports) if b != bad] + [bad]}
    admin = AdminClient(settings)
    admin.create_topics(
        [NewTopic(TOPIC, 1, replica_assignment=list(assignment.values()))]
    )[TOPIC].result(timeout=WAIT)
    wait_for(
        lambda: "failed authentication due to" in cluster.log_file(bad).read_text(),
        "the broker's log names the refused login",
    )
    wait_for(lambda: bad not in partition_state(settings)[1], f"{bad} out of the ISR")
    assert partition_state(settings)[0] != bad


def test_brokers_reauthenticate_their_own_channels_without_reconnecting(
    make_cluster: MakeCluster, pki: ThrowawayPki
) -> None:
    """KIP-368 between nodes: with ``connections.max.reauth.ms=2000`` on every SASL_SSL
    listener, the replica fetchers' connections to the leaders and the brokers' channels
    to the controller renew their sessions on the same connections through four and a
    half lifetimes, read from the nodes' traces: each fetcher's Fetches and each
    broker's heartbeats travel on one connection, which answered SaslHandshake at least
    three more times, and no node closes a connection for an expired session."""
    cluster = make_cluster(
        security_protocol=PROTOCOL,
        **overrides(pki, "kraft"),
        **{"connections.max.reauth.ms": "2000"},
    )
    settings = client(cluster, pki)
    admin = AdminClient(settings)
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=WAIT)
    wait_for(lambda: len(partition_state(settings)[1]) == 3, "three replicas in sync")
    start = time.time()
    producer = NumberedProducer(settings)
    producer.thread.start()
    try:
        wait_for(
            lambda: time.time() >= start + 9.0 and len(producer.acked) >= 100,
            "four and a half session lifetimes of writes",
        )
    finally:
        producer.stop.set()
        producer.thread.join(WAIT * 2)
    end = time.time()
    assert not producer.errors, producer.errors
    assert len(partition_state(settings)[1]) == 3
    cluster.down()  # the traces are complete once the nodes have stopped
    requests = [
        r
        for r in read_trace(cluster.root / "traces")
        if r["event"] == "request" and start <= float(str(r["ts"])) <= end
    ]
    renewals = Counter(
        (r["node"], r["connection_id"]) for r in requests if r["api_key"] == 17
    )
    channels: dict[tuple[object, object], set[object]] = {}
    for r in requests:
        if r["api_key"] in (1, 63) and r["client_id"] != "rdkafka":
            channels.setdefault((r["node"], r["client_id"]), set()).add(
                r["connection_id"]
            )
    names = {str(client_id) for _, client_id in channels}
    assert any(n.startswith("ReplicaFetcherThread") for n in names), names
    assert any(n.endswith("-to-controller") for n in names), names
    for (node, client_id), connections in channels.items():
        assert len(connections) == 1, f"{client_id} to node {node} reconnected"
        (connection,) = connections
        assert renewals[node, connection] >= 3, f"{client_id} to node {node}"
    for node in cluster.node_ids:
        assert "session expired" not in cluster.log_file(node).read_text()
