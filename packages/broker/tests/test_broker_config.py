"""KafkaConfig: Kafka's keys and defaults, server.properties, and start-up refusals.

A key no layer knows, or a value a layer cannot use, stops start-up with a ConfigError
naming the key (ARCHITECTURE.md, "Configuration and commands"); ``meta.properties`` ties the log
directories to one
node. The ``minikafka broker`` command is run once as a subprocess to check that a bad
key ends the process with a message naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.broker import BrokerServer, KafkaConfig, parse_override, read_properties
from minikafka.broker._authorizer_config import AUTHORIZER_CONFIG
from minikafka.broker._config import BROKER_CONFIG, known_keys
from minikafka.broker.testing import running_broker, single_node_config
from minikafka.common import ConfigError, ConfigKey
from minikafka.controller import CONTROLLER_CONFIG, REPLICATION_TOPIC_CONFIG
from minikafka.coordination import GROUP_CONFIG, TXN_CONFIG
from minikafka.log import LOG_CONFIG, LOG_MANAGER_CONFIG
from minikafka.net import NET_CONFIG, Listener
from minikafka.raft import QUORUM_CONFIG

MINIMAL = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "log.dirs": "/tmp/minikafka-test-data",
}
HOUR_MS = 3600 * 1000
MAX_LONG = 2**63 - 1


def config(**overrides: str) -> KafkaConfig:
    """MINIMAL plus ``overrides``, with ``_`` in the keyword names standing for ``.``."""
    return KafkaConfig.from_properties(
        {**MINIMAL, **{k.replace("_", "."): v for k, v in overrides.items()}}
    )


def refused(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        KafkaConfig.from_properties({**MINIMAL, **props})
    return caught.value


# --- defaults ---------------------------------------------------------------------------


def test_listeners_and_log_dirs_alone_make_a_single_node_config() -> None:
    c = KafkaConfig.from_properties(MINIMAL)
    assert c.net.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert c.broker.log_dirs == (Path("/tmp/minikafka-test-data"),)
    assert c.node_id == 1
    assert c.broker.process_roles == ("broker", "controller")
    assert c.broker.controller_quorum_voters == ()
    assert c.roles.single_node
    assert c.roles.inter_broker_listener_name == "PLAINTEXT"
    # Kafka's rules: the metadata log lives in the first log dir, advertised = listeners.
    assert c.metadata_log_dir == Path("/tmp/minikafka-test-data")
    assert c.advertised_listeners == c.net.listeners
    assert c.properties == MINIMAL


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # the broker's own keys
        ("broker.auto_create_topics_enable", True),
        ("broker.min_insync_replicas", 1),
        ("broker.broker_heartbeat_interval_ms", 2000),
        ("broker.replica_high_watermark_checkpoint_interval_ms", 5000),
        ("broker.controlled_shutdown_timeout_ms", 30_000),
        # the network layer
        ("net.num_network_threads", 3),
        ("net.num_io_threads", 8),
        ("net.queued_max_requests", 500),
        ("net.socket_request_max_bytes", 100 * 1024 * 1024),
        ("net.connections_max_idle_ms", 600_000),
        # the log (log.* broker keys; Kafka's defaults)
        ("log.segment_bytes", 1024**3),
        ("log.segment_ms", 168 * HOUR_MS),  # log.roll.hours=168
        ("log.segment_index_bytes", 10 * 1024 * 1024),
        ("log.index_interval_bytes", 4096),
        ("log.retention_ms", 168 * HOUR_MS),  # log.retention.hours=168
        ("log.retention_bytes", -1),
        ("log.flush_messages", MAX_LONG),
        ("log.flush_ms", MAX_LONG),
        ("log.cleanup_policy", frozenset({"delete"})),
        ("log.delete_retention_ms", 24 * HOUR_MS),
        ("log.min_compaction_lag_ms", 0),
        ("log.min_cleanable_dirty_ratio", 0.5),
        ("log.max_message_bytes", 1024 * 1024 + 12),
        ("log.message_timestamp_type", "CreateTime"),
        ("log.file_delete_delay_ms", 60_000),
        # the log manager's background tasks
        ("schedule.retention_check_interval_ms", 300_000),
        ("schedule.recovery_point_checkpoint_interval_ms", 60_000),
        ("schedule.start_offset_checkpoint_interval_ms", 60_000),
        ("schedule.cleaner_backoff_ms", 15_000),
        ("schedule.cleaner_enable", True),
        # the controller
        ("controller.broker_session_timeout_ms", 9000),
        ("controller.num_partitions", 1),
        ("controller.default_replication_factor", 1),
        ("controller.unclean_leader_election_enable", False),
        (
            "controller.metadata_log_max_record_bytes_between_snapshots",
            20 * 1024 * 1024,
        ),
    ],
)
def test_documented_defaults(path: str, expected: object) -> None:
    section, field = path.split(".")
    assert (
        getattr(getattr(KafkaConfig.from_properties(MINIMAL), section), field)
        == expected
    )


@pytest.mark.parametrize(
    ("key", "value", "path", "expected"),
    [
        ("node.id", "7", "broker.node_id", 7),
        ("num.io.threads", "2", "net.num_io_threads", 2),
        ("log.segment.bytes", "1048576", "log.segment_bytes", 1048576),
        (
            "log.cleanup.policy",
            "compact,delete",
            "log.cleanup_policy",
            {"compact", "delete"},
        ),
        (
            "log.message.timestamp.type",
            "LogAppendTime",
            "log.message_timestamp_type",
            None,
        ),
        ("log.cleaner.enable", "false", "schedule.cleaner_enable", False),
        ("num.partitions", "3", "controller.num_partitions", 3),
        (
            "auto.create.topics.enable",
            "false",
            "broker.auto_create_topics_enable",
            False,
        ),
        ("min.insync.replicas", "2", "broker.min_insync_replicas", 2),
        ("broker.rack", " us-east-1a ", "broker.broker_rack", "us-east-1a"),
    ],
)
def test_a_key_reaches_its_layer(
    key: str, value: str, path: str, expected: object
) -> None:
    section, field = path.split(".")
    got = getattr(
        getattr(KafkaConfig.from_properties({**MINIMAL, key: value}), section), field
    )
    assert got == (value if expected is None else expected)


def test_a_blank_rack_is_refused_naming_the_key() -> None:
    assert refused({"broker.rack": "  "}).key == "broker.rack"
    assert KafkaConfig.from_properties(MINIMAL).broker.broker_rack is None


def test_log_dir_and_metadata_log_dir_and_advertised_listeners() -> None:
    c = config(log_dirs="/a, /b", metadata_log_dir="/m")
    assert c.broker.log_dirs == (Path("/a"), Path("/b"))
    assert c.metadata_log_dir == Path("/m")
    # log.dir is Kafka's single-directory spelling; log.dirs wins when both are given.
    assert KafkaConfig.from_properties(
        {"listeners": MINIMAL["listeners"], "log.dir": "/one"}
    ).broker.log_dirs == (Path("/one"),)
    assert config(log_dir="/one").broker.log_dirs == (Path("/tmp/minikafka-test-data"),)
    advertised = config(advertised_listeners="PLAINTEXT://kafka.example:19092")
    assert advertised.advertised_listeners == (
        Listener("PLAINTEXT", "kafka.example", 19092),
    )
    assert advertised.net.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)


def test_a_single_voter_quorum_naming_this_node_is_accepted() -> None:
    c = config(node_id="3", controller_quorum_voters="3@localhost:9093")
    assert c.node_id == 3
    assert config(controller_quorum_voters="1@[::1]:9093").node_id == 1


def test_keys_of_kafkas_sample_server_properties_with_their_only_value_here() -> None:
    c = KafkaConfig.from_properties(
        {
            **MINIMAL,
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:9092",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "num.recovery.threads.per.data.dir": "1",
            "socket.send.buffer.bytes": "102400",
            "socket.receive.buffer.bytes": "-1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }
    )
    assert c.node_id == 1
    assert c.roles.single_node


# --- retention units --------------------------------------------------------------------


def test_retention_in_hours_minutes_and_ms() -> None:
    assert config(log_retention_hours="2").log.retention_ms == 2 * HOUR_MS
    assert config(log_retention_minutes="3").log.retention_ms == 3 * 60_000
    assert config(log_retention_ms="1234").log.retention_ms == 1234
    assert config(log_roll_hours="5").log.segment_ms == 5 * HOUR_MS
    assert config(log_retention_ms="-1").log.retention_ms == -1


def test_retention_ms_wins_over_minutes_which_wins_over_hours() -> None:
    both = config(
        log_retention_ms="1000", log_retention_minutes="2", log_retention_hours="3"
    )
    assert both.log.retention_ms == 1000
    assert (
        config(log_retention_minutes="2", log_retention_hours="3").log.retention_ms
        == 120_000
    )
    assert config(log_roll_ms="500", log_roll_hours="3").log.segment_ms == 500


@pytest.mark.parametrize("key", ["log.retention.hours", "log.retention.minutes"])
def test_negative_retention_in_hours_or_minutes_means_forever(key: str) -> None:
    assert KafkaConfig.from_properties({**MINIMAL, key: "-1"}).log.retention_ms == -1


def test_a_bad_roll_hours_is_named_as_given() -> None:
    assert refused({"log.roll.hours": "0"}).key == "log.roll.hours"


def test_a_bad_hours_value_is_refused_even_when_ms_wins() -> None:
    error = refused({"log.retention.ms": "1000", "log.retention.hours": "abc"})
    assert error.key == "log.retention.hours"


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["bogus.key", "log.retention.days", "zookeeper.sasl.client"]
)
def test_an_unknown_key_is_refused_by_name(key: str) -> None:
    error = refused({key: "1"})
    assert error.key == key
    assert key in str(error)


def test_zookeeper_connect_makes_a_zookeeper_mode_broker_named_by_broker_id() -> None:
    config = KafkaConfig.from_properties(
        {"zookeeper.connect": "127.0.0.1:2181,127.0.0.1:2182/kafka", "broker.id": "3"}
    )
    assert config.zookeeper_mode
    assert config.node_id == 3
    assert config.broker.zookeeper_connect == "127.0.0.1:2181,127.0.0.1:2182/kafka"
    assert config.roles.roles == ("broker",)
    assert not KafkaConfig.from_properties({}).zookeeper_mode


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"zookeeper.connect": "localhost"}, "zookeeper.connect"),
        ({"zookeeper.connect": "h:1", "process.roles": "broker"}, "process.roles"),
        (
            {"zookeeper.connect": "h:1", "controller.quorum.voters": "1@h:2"},
            "controller.quorum.voters",
        ),
        (
            {"zookeeper.connect": "h:1", "zookeeper.session.timeout.ms": "0"},
            "zookeeper.session.timeout.ms",
        ),
    ],
)
def test_a_bad_zookeeper_mode_setting_is_refused_by_name(
    props: dict[str, str], key: str
) -> None:
    assert refused(props).key == key


def test_the_first_unknown_key_is_named_when_there_are_several() -> None:
    assert refused({"zz.unknown": "1", "aa.unknown": "2"}).key == "aa.unknown"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("node.id", "one"),
        ("node.id", "-1"),
        ("node.id", "1.5"),
        ("num.network.threads", "0"),
        ("num.io.threads", "many"),
        ("queued.max.requests", "-3"),
        ("socket.request.max.bytes", "1.5"),
        ("connections.max.idle.ms", "0"),
        ("listeners", "127.0.0.1:9092"),
        ("listeners", "PLAINTEXT://127.0.0.1"),
        ("listeners", "PLAINTEXT://127.0.0.1:70000"),
        ("listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2"),
        ("listeners", ""),
        ("advertised.listeners", "kafka.example:9092"),
        ("log.dirs", " , "),
        ("auto.create.topics.enable", "yes"),
        ("min.insync.replicas", "0"),
        ("broker.heartbeat.interval.ms", "0"),
        ("replica.high.watermark.checkpoint.interval.ms", "x"),
        ("controlled.shutdown.timeout.ms", "-1"),
        ("log.segment.bytes", "10"),
        ("log.segment.bytes", "4294967296"),
        ("log.retention.ms", "-2"),
        ("log.retention.bytes", "ten"),
        ("log.retention.hours", "99999999999"),
        ("log.retention.minutes", "soon"),
        ("log.cleanup.policy", "forever"),
        ("log.cleaner.min.cleanable.ratio", "2"),
        ("log.message.timestamp.type", "BrokerTime"),
        ("message.max.bytes", "-5"),
        ("log.retention.check.interval.ms", "0"),
        ("log.cleaner.enable", "maybe"),
        ("num.partitions", "0"),
        ("default.replication.factor", "x"),
        ("unclean.leader.election.enable", "1"),
        ("broker.session.timeout.ms", "-5"),
        ("listener.security.protocol.map", "PLAINTEXT:KERBEROS"),
        ("num.recovery.threads.per.data.dir", "0"),
        ("socket.send.buffer.bytes", "big"),
        ("offsets.topic.replication.factor", "3x"),
        ("process.roles", ""),
        ("process.roles", "broker,zookeeper"),
        ("process.roles", "broker,broker"),
        ("controller.quorum.voters", "2@localhost:9093"),
        ("controller.quorum.voters", "localhost:9093"),
        ("controller.quorum.voters", "1@localhost:9093,1@localhost:9094"),
        ("controller.quorum.voters", "1@localhost:0"),
        ("inter.broker.listener.name", "INTERNAL"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(key: str, value: str) -> None:
    error = refused({key: value})
    assert error.key == key
    assert str(error).startswith(f"{key}: ")


def test_voters_must_name_this_node_id() -> None:
    error = refused({"node.id": "2", "controller.quorum.voters": "1@localhost:9093"})
    assert error.key == "controller.quorum.voters"
    assert "2" in str(error)


def test_an_empty_metadata_log_dir_is_refused() -> None:
    assert refused({"metadata.log.dir": ""}).key == "metadata.log.dir"


# --- server.properties and overrides ------------------------------------------------------


def test_server_properties_parsing(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# Kafka's sample layout\n"
        "! a bang comment too\n"
        "\n"
        "   node.id=1\n"
        "listeners = PLAINTEXT://127.0.0.1:9092\n"
        "log.dirs:/tmp/kraft-logs\n"
        "num.partitions : 3\n"
        "log.retention.hours 24\n"
        "log.cleanup.policy=compact,delete\n"
        "advertised.listeners=PLAINTEXT://host:1=2\n",
        encoding="utf-8",
    )
    props = read_properties(path)
    assert props == {
        "node.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": "/tmp/kraft-logs",
        "num.partitions": "3",
        "log.retention.hours": "24",
        "log.cleanup.policy": "compact,delete",
        "advertised.listeners": "PLAINTEXT://host:1=2",
    }


def test_a_line_without_a_value_separator_is_refused_with_its_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server.properties"
    path.write_text("# comment\nnode.id=1\njust-a-key\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_properties(path)
    assert caught.value.key == "just-a-key"
    assert f"{path}:3" in str(caught.value)


def test_load_applies_overrides_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "listeners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=/tmp/a\nnum.partitions=3\n",
        encoding="utf-8",
    )
    c = KafkaConfig.load(path, {"num.partitions": "5", "log.dirs": "/tmp/b"})
    assert c.controller.num_partitions == 5
    assert c.broker.log_dirs == (Path("/tmp/b"),)
    assert c.properties["num.partitions"] == "5"
    assert KafkaConfig.load(None, MINIMAL).properties == MINIMAL


def test_a_bad_key_in_the_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "listeners=PLAINTEXT://127.0.0.1:9092\nnum.io.threads=0\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        KafkaConfig.load(path, {})
    assert caught.value.key == "num.io.threads"


def test_overrides_are_key_equals_value() -> None:
    assert parse_override("num.partitions=3") == ("num.partitions", "3")
    assert parse_override(" listeners = PLAINTEXT://h:1 ") == (
        "listeners",
        "PLAINTEXT://h:1",
    )
    assert parse_override("advertised.listeners=A://h:1=x") == (
        "advertised.listeners",
        "A://h:1=x",
    )
    for bad in ("num.partitions", "=3", ""):
        with pytest.raises(ConfigError):
            parse_override(bad)


def test_the_broker_command_stops_at_an_unknown_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikafka.broker",
            "broker",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--override",
            f"log.dirs={tmp_path / 'data'}",
            "--override",
            "bogus.key=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "bogus.key" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was written


# --- meta.properties ----------------------------------------------------------------------


def test_a_log_dir_of_another_node_is_refused_naming_node_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text(
        "version=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=2\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        BrokerServer.open(single_node_config(data))
    assert caught.value.key == "node.id"
    assert "2" in str(caught.value)


def test_log_dirs_of_two_clusters_are_refused(tmp_path: Path) -> None:
    for name, cluster in (
        ("a", "AAAAAAAAAAAAAAAAAAAAAA"),
        ("b", "BBBBBBBBBBBBBBBBBBBBBB"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.properties").write_text(
            f"version=1\ncluster.id={cluster}\nnode.id=1\n", encoding="utf-8"
        )
    dirs = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    with pytest.raises(ConfigError) as caught:
        BrokerServer.open(single_node_config(tmp_path, {"log.dirs": dirs}))
    assert caught.value.key == "log.dirs"


async def test_an_empty_dir_is_formatted_and_a_new_dir_joins_its_cluster(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    async with running_broker(single_node_config(first)) as server:
        cluster_id = server.cluster_id
    meta = read_properties(first / "meta.properties")
    assert meta == {"version": "1", "cluster.id": cluster_id, "node.id": "1"}
    # 16 bytes in URL-safe base64 without padding, as Kafka
    assert len(cluster_id) == 22
    both = single_node_config(first, {"log.dirs": f"{first},{second}"})
    async with running_broker(both) as server:
        assert server.cluster_id == cluster_id
    assert read_properties(second / "meta.properties")["cluster.id"] == cluster_id


def test_each_key_is_declared_once_and_known_keys_are_the_declarations() -> None:
    """KafkaConfig is assembled from the packages' ConfigDefs: every server.properties name
    belongs to exactly one declared ConfigKey (a topic config's broker-level synonym is its
    own key's), and the known keys are exactly those names."""
    owner: dict[str, set[int]] = {}
    keys: dict[int, ConfigKey] = {}
    server_names = (
        (BROKER_CONFIG, True),
        (NET_CONFIG, True),
        (LOG_MANAGER_CONFIG, True),
        (CONTROLLER_CONFIG, True),
        (GROUP_CONFIG, True),
        (TXN_CONFIG, True),
        (QUORUM_CONFIG, True),
        (AUTHORIZER_CONFIG, True),
        (LOG_CONFIG, False),  # a topic sets the names, the broker the synonyms
        (REPLICATION_TOPIC_CONFIG, False),
    )
    for config_def, own_names in server_names:
        for key in config_def:
            keys[id(key)] = key
            names = ((key.name,) if own_names else ()) + key.synonym_names()
            for name in names:
                owner.setdefault(name, set()).add(id(key))
    assert {name: ids for name, ids in owner.items() if len(ids) > 1} == {}
    assert set(owner) == known_keys()


# --- KRaft roles (Kafka's KafkaConfig.validateValues) ---------------------------------------

BROKER_ONLY = {
    "process.roles": "broker",
    "node.id": "2",
    "controller.quorum.voters": "1@localhost:9093",
    "controller.listener.names": "CONTROLLER",
}
CONTROLLER_ONLY = {
    "process.roles": "controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
}


def test_a_broker_only_node_and_a_controller_only_node_are_kafka_configs() -> None:
    broker = config(**{k.replace(".", "_"): v for k, v in BROKER_ONLY.items()})
    assert broker.roles.is_broker
    assert not broker.roles.is_controller
    assert not broker.roles.single_node
    assert [str(v) for v in broker.roles.voters] == ["1@localhost:9093"]
    controller = KafkaConfig.from_properties({**MINIMAL, **CONTROLLER_ONLY})
    assert controller.roles.is_controller
    assert not controller.roles.is_broker
    assert controller.roles.inter_broker_listener_name is None
    assert controller.advertised_listeners == ()


def test_several_voters_parse_with_ipv6_hosts() -> None:
    c = config(controller_quorum_voters="1@[::1]:9093,2@host-b:9094,3@10.0.0.3:9095")
    assert [str(v) for v in c.roles.voters] == [
        "1@[::1]:9093",
        "2@host-b:9094",
        "3@10.0.0.3:9095",
    ]
    assert not c.roles.single_node  # combined, but with other voters: a cluster


@pytest.mark.parametrize(
    ("props", "key", "says"),
    [
        # A broker-only node: controllers are elsewhere, and it must know how to reach them.
        (
            {**BROKER_ONLY, "controller.quorum.voters": ""},
            "controller.quorum.voters",
            "must name",
        ),
        (
            {**BROKER_ONLY, "node.id": "1"},
            "controller.quorum.voters",
            "only controllers vote",
        ),
        (
            {**BROKER_ONLY, "controller.listener.names": ""},
            "controller.listener.names",
            "must",
        ),
        (
            {
                **BROKER_ONLY,
                "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            },
            "controller.listener.names",
            "does not listen as a controller",
        ),
        # A controller-only node: a voter, reachable on its controller listener, nothing else.
        (
            {**CONTROLLER_ONLY, "node.id": "2"},
            "controller.quorum.voters",
            "not one of the voters",
        ),
        (
            {**CONTROLLER_ONLY, "listeners": "PLAINTEXT://127.0.0.1:9092"},
            "controller.listener.names",
            "could not be reached",
        ),
        (
            {**CONTROLLER_ONLY, "listeners": "CONTROLLER://:9093,PLAINTEXT://:9092"},
            "listeners",
            "serves no clients",
        ),
        # A broker advertises no controller listener, and talks to brokers on one it has.
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
                "controller.listener.names": "CONTROLLER",
                "advertised.listeners": "CONTROLLER://127.0.0.1:9093",
            },
            "advertised.listeners",
            "controller listener",
        ),
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "CONTROLLER",
            },
            "inter.broker.listener.name",
            "not one of the advertised listeners",
        ),
    ],
)
def test_kafkas_role_rules_refuse_naming_the_key(
    props: dict[str, str], key: str, says: str
) -> None:
    error = refused(props)
    assert error.key == key
    assert says in str(error)


def test_a_combined_node_advertises_its_listeners_but_the_controllers() -> None:
    # Kafka's sample kraft/server.properties, without advertised.listeners.
    c = config(
        listeners="PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        controller_listener_names="CONTROLLER",
        controller_quorum_voters="1@127.0.0.1:9093",
    )
    assert c.advertised_listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert c.roles.single_node
