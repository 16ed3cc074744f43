"""``minikafka storage`` (kafka-storage.sh) and the start-up checks on formatted directories.

Guarantees tested: every node of a cluster is formatted with one cluster id before it
starts, and a node never starts on directories formatted for another node or on none at
all (except minikafka's single node, which formats itself); formatting never overwrites a
directory that is already formatted unless told to leave it alone; a ZooKeeper-mode broker
writes version 0 and refuses directories of another cluster, broker id or mode.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from typer.testing import CliRunner

from minikafka.broker import BrokerServer, KafkaConfig, read_properties
from minikafka.broker._cli import app
from minikafka.broker._controller_channel import RemoteController
from minikafka.broker._meta_properties import (
    StorageError,
    check_and_write_zk_meta,
    format_storage,
    parse_cluster_id,
    read_meta,
)
from minikafka.net import Node

CLUSTER_ID = "kqIiZwiNTAefqAx6mrUyyA"


def broker_only(tmp_path: Path) -> Path:
    """A broker-only node's server.properties, two log dirs and its own metadata dir."""
    path = tmp_path / "broker-2.properties"
    path.write_text(
        "process.roles=broker\n"
        "node.id=2\n"
        "controller.quorum.voters=1@127.0.0.1:9093\n"
        "controller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\n"
        f"metadata.log.dir={tmp_path / 'meta'}\n",
        encoding="utf-8",
    )
    return path


def storage(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["storage", *args])
    return result.exit_code, result.output


def test_random_uuid_prints_a_kafka_uuid() -> None:
    code, output = storage("random-uuid")
    assert code == 0
    printed = output.strip()
    assert len(printed) == 22
    assert len(base64.urlsafe_b64decode(printed + "==")) == 16
    assert storage("random-uuid")[1].strip() != printed  # random, not a constant


def test_format_writes_meta_properties_into_every_directory(tmp_path: Path) -> None:
    code, output = storage("format", "-t", CLUSTER_ID, "-c", str(broker_only(tmp_path)))
    assert code == 0, output
    assert output.splitlines() == [
        f"Formatting data directory {tmp_path / 'a'} with metadata.version 3.0-IV1.",
        f"Formatting data directory {tmp_path / 'b'} with metadata.version 3.0-IV1.",
        f"Formatting metadata directory {tmp_path / 'meta'} with metadata.version 3.0-IV1.",
    ]
    for name in ("a", "b", "meta"):
        meta = read_properties(tmp_path / name / "meta.properties")
        assert meta == {"version": "1", "cluster.id": CLUSTER_ID, "node.id": "2"}


def test_format_refuses_a_formatted_directory_unless_told_to_ignore_it(
    tmp_path: Path,
) -> None:
    config = str(broker_only(tmp_path))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.properties").write_text(
        "version=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=2\n", encoding="utf-8"
    )
    code, output = storage("format", "-t", CLUSTER_ID, "-c", config)
    assert code == 1
    assert f"Log directory {tmp_path / 'b'} is already formatted" in output
    assert not (tmp_path / "a" / "meta.properties").exists()  # nothing written at all
    code, output = storage(
        "format", "-t", CLUSTER_ID, "-c", config, "--ignore-formatted"
    )
    assert code == 0
    assert "directory " + str(tmp_path / "b") not in output  # left as it was
    assert read_properties(tmp_path / "b" / "meta.properties")["cluster.id"].startswith(
        "AAAA"
    )
    assert (
        read_properties(tmp_path / "a" / "meta.properties")["cluster.id"] == CLUSTER_ID
    )
    code, output = storage("format", "-t", CLUSTER_ID, "-c", config, "-g")
    assert (code, output.strip()) == (
        0,
        "All of the log directories are already formatted.",
    )


@pytest.mark.parametrize(
    "bad", ["nope", "", "kqIiZwiNTAefqAx6mrUyy", "kqIiZwiNTAefqAx6mrUyy!"]
)
def test_format_refuses_a_cluster_id_that_is_not_a_uuid(
    tmp_path: Path, bad: str
) -> None:
    code, output = storage("format", "-t", bad, "-c", str(broker_only(tmp_path)))
    assert code == 1
    assert "does not appear to be a valid UUID" in output
    assert not (tmp_path / "a").exists()
    with pytest.raises(StorageError):
        parse_cluster_id(bad)


def test_format_refuses_a_bad_config_naming_the_key(tmp_path: Path) -> None:
    config = str(broker_only(tmp_path))
    code, output = storage(
        "format", "-t", CLUSTER_ID, "-c", config, "--override", "node.id=1"
    )
    assert code == 2
    assert "controller.quorum.voters" in output  # a broker-only node may not be a voter
    assert not (tmp_path / "a").exists()


def test_a_node_other_than_the_single_node_refuses_unformatted_dirs(
    tmp_path: Path,
) -> None:
    config = KafkaConfig.load(broker_only(tmp_path), {})
    with pytest.raises(StorageError) as caught:
        BrokerServer.open(config)
    assert "minikafka storage format" in str(caught.value)  # names the command to run
    assert not (
        tmp_path / "a" / "meta.properties"
    ).exists()  # and formats nothing itself


def test_a_formatted_broker_only_node_opens_as_an_observer_of_its_controller(
    tmp_path: Path,
) -> None:
    config = KafkaConfig.load(broker_only(tmp_path), {})
    format_storage(config.broker.log_dirs, config.metadata_log_dir, CLUSTER_ID, 2)
    server = BrokerServer.open(config)
    try:
        assert server.controller is None  # no QuorumController in this process
        assert server.observer is not None  # its own copy of the metadata log
        assert server.observer.dir.parent == tmp_path / "meta"
        assert isinstance(server.channel, RemoteController)
        assert server.channel.node == Node(1, "127.0.0.1", 9093)
    finally:
        assert server.observer is not None
        server.observer.close()
        server.log_manager.shutdown()


def test_a_broker_naming_several_voters_follows_whichever_leads(tmp_path: Path) -> None:
    overrides = {"controller.quorum.voters": "1@127.0.0.1:9093,3@127.0.0.1:9095"}
    config = KafkaConfig.load(broker_only(tmp_path), overrides)
    format_storage(config.broker.log_dirs, config.metadata_log_dir, CLUSTER_ID, 2)
    server = BrokerServer.open(config)
    try:
        assert isinstance(server.channel, RemoteController)
        locator = server.channel.locator
        assert locator.voters == (
            Node(1, "127.0.0.1", 9093),
            Node(3, "127.0.0.1", 9095),
        )
        assert server.channel.node == Node(1, "127.0.0.1", 9093)  # until one is named
        locator.leader_is(3, 5)  # a voter's Fetch answer names the leader of epoch 5
        assert server.channel.node == Node(3, "127.0.0.1", 9095)
        locator.leader_is(1, 4)  # an older epoch's news changes nothing
        assert server.channel.node == Node(3, "127.0.0.1", 9095)
        locator.failed(Node(3, "127.0.0.1", 9095))  # it stopped answering: try the next
        assert server.channel.node == Node(1, "127.0.0.1", 9093)
    finally:
        assert server.observer is not None
        server.observer.close()
        server.log_manager.shutdown()


# --- ZooKeeper mode: meta.properties version 0 (Kafka 2.8's KafkaServer.startup) -------------


def test_a_zookeeper_mode_broker_writes_version_0_where_missing(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    check_and_write_zk_meta(dirs, 2, CLUSTER_ID)
    for d in dirs:
        assert read_meta(d / "meta.properties") == {
            "version": "0",
            "broker.id": "2",
            "cluster.id": CLUSTER_ID,
        }
    check_and_write_zk_meta(dirs, 2, CLUSTER_ID)  # its own directories: fine, again


@pytest.mark.parametrize(
    ("written", "refused_for"),
    [
        (
            "version=0\nbroker.id=2\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n",
            "wrong cluster",
        ),
        (
            "broker.id=2\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n",
            "wrong cluster",
        ),  # implicit 0
        ("version=0\nbroker.id=3\ncluster.id=kqIiZwiNTAefqAx6mrUyyA\n", "broker.id 3"),
        (f"version=1\ncluster.id={CLUSTER_ID}\nnode.id=2\n", "only support version 0"),
    ],
)
def test_a_zookeeper_mode_broker_refuses_directories_of_another_cluster_broker_or_mode(
    tmp_path: Path, written: str, refused_for: str
) -> None:
    # Guarantee: a mistyped zookeeper.connect or broker.id, or a KRaft node's data,
    # stops start-up before anything is written; the other directory is left alone.
    ours, theirs = tmp_path / "a", tmp_path / "b"
    theirs.mkdir()
    (theirs / "meta.properties").write_text(written, encoding="utf-8")
    with pytest.raises(StorageError, match=refused_for):
        check_and_write_zk_meta([ours, theirs], 2, CLUSTER_ID)
    assert not (ours / "meta.properties").exists()
    assert (theirs / "meta.properties").read_text(encoding="utf-8") == written
