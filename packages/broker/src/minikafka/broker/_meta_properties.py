"""``meta.properties`` and ``minikafka storage``: which cluster and node a directory is for.

Kafka refuses to start a KRaft node on directories that ``kafka-storage.sh format`` did
not prepare, and refuses directories that belong to another cluster or node, so a
mistyped ``log.dirs`` cannot mix two clusters' data. Every node of a cluster is
formatted with the same cluster id, made once by ``random-uuid``:
``minikafka storage format -t CLUSTER_ID -c server.properties`` is kafka-storage.sh's
``format``, writing ``meta.properties`` into each of ``log.dirs`` and
``metadata.log.dir``.

minikafka's single node (combined roles, the only voter) formats an empty directory
itself on first start, so ``make run`` needs no extra step; any other node refuses an
unformatted directory and names the command to run.

A ZooKeeper-mode broker needs no formatting: its ``meta.properties`` is version 0
(``broker.id`` and ``cluster.id``, the latter ZooKeeper's ``/cluster/id``), written at
start-up once the cluster id is known (:func:`check_and_write_zk_meta`, Kafka 2.8's
``KafkaServer.startup``). What it guards against is the same: a directory of another
cluster (a ``zookeeper.connect`` pointing at the wrong ensemble), of another broker (a
``broker.id`` changed under old data), or of a KRaft node.
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

from minikafka.common import ConfigError

META_PROPERTIES = "meta.properties"
FORMAT_COMMAND = "minikafka storage format -t <cluster id> -c <server.properties>"
METADATA_VERSION_NAME = "3.0-IV1"
"""Kafka's name of metadata.version 1, the feature level a fresh minikafka cluster starts
at (the controller's bootstrap FeatureLevelRecord)."""


class StorageError(Exception):
    """A log directory is not formatted, or formatted for another cluster or node."""


def new_cluster_id() -> str:
    """A random 16-byte id in URL-safe base64 without padding, as Kafka writes it."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def parse_cluster_id(value: str) -> str:
    """``value`` if it is a Kafka Uuid string (22 characters of URL-safe base64)."""
    try:
        raw = base64.urlsafe_b64decode(value + "==")
    except (binascii.Error, ValueError):
        raw = b""
    if len(value) != 22 or len(raw) != 16:
        raise StorageError(
            f"Cluster ID string {value} does not appear to be a valid UUID"
        )
    return value


def read_meta(path: Path) -> dict[str, str]:
    props = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def format_storage(
    dirs: Sequence[Path],
    metadata_dir: Path,
    cluster_id: str,
    node_id: int,
    *,
    ignore_formatted: bool = False,
) -> list[str]:
    """Write ``meta.properties`` into every directory not yet formatted; the lines
    kafka-storage.sh prints. Nothing is written if one is formatted already, unless
    ``ignore_formatted`` (then the formatted ones are left as they are)."""
    parse_cluster_id(cluster_id)
    everything = [*dirs] + ([] if metadata_dir in dirs else [metadata_dir])
    formatted = [d for d in everything if (d / META_PROPERTIES).exists()]
    if formatted and not ignore_formatted:
        raise StorageError(
            f"Log directory {formatted[0]} is already formatted. Use "
            "--ignore-formatted "
            "to ignore this directory and format the others."
        )
    todo = [d for d in everything if d not in formatted]
    if not todo:
        return ["All of the log directories are already formatted."]
    lines = []
    for d in todo:
        d.mkdir(parents=True, exist_ok=True)
        _write(d / META_PROPERTIES, cluster_id, node_id)
        kind = "metadata" if d == metadata_dir else "data"
        lines.append(
            f"Formatting {kind} directory {d} with metadata.version "
            f"{METADATA_VERSION_NAME}."
        )
    return lines


def ensure_formatted(dirs: list[Path], node_id: int, *, create: bool) -> str:
    """The cluster id of ``dirs``; where ``meta.properties`` is missing, write it if
    ``create`` (the single node's first start), else raise :class:`StorageError`."""
    found: dict[Path, dict[str, str]] = {}
    for d in dirs:
        if (d / META_PROPERTIES).exists():
            found[d] = read_meta(d / META_PROPERTIES)
        elif not create:
            raise StorageError(
                f"no {META_PROPERTIES} in {d}: format the node's directories first with "
                f"`{FORMAT_COMMAND}` (the same cluster id on every node; "
                "`minikafka storage random-uuid` makes one)"
            )
    cluster_ids = {props.get("cluster.id") for props in found.values()}
    if len(cluster_ids) > 1:
        raise ConfigError(
            "log.dirs", f"the directories belong to different clusters: {found}"
        )
    for d, props in found.items():
        if props.get("node.id") != str(node_id):
            raise ConfigError(
                "node.id",
                f"{d / META_PROPERTIES} belongs to node {props.get('node.id')}, not {node_id}",
            )
    cluster_id = cluster_ids.pop() if cluster_ids else None
    if cluster_id is None:
        cluster_id = new_cluster_id()
    for d in dirs:
        if d not in found:
            d.mkdir(parents=True, exist_ok=True)
            _write(d / META_PROPERTIES, cluster_id, node_id)
    return cluster_id


def check_and_write_zk_meta(
    dirs: Sequence[Path], broker_id: int, cluster_id: str
) -> None:
    """A ZooKeeper-mode broker's check of its ``log.dirs`` against ZooKeeper's cluster
    id and its ``broker.id``, then ``meta.properties`` version 0 written where missing.
    Raises :class:`StorageError` with Kafka's message for each inconsistency."""
    found = {
        d: read_meta(d / META_PROPERTIES)
        for d in dirs
        if (d / META_PROPERTIES).exists()
    }
    for d, props in found.items():
        version = props.get("version", "0")  # a missing version is the implicit 0
        if version != "0":
            raise StorageError(
                f"Found unexpected version in loaded `meta.properties` of {d}: version "
                f"{version}. Zk-based brokers only support version 0 (which is "
                "implicit "
                "when the `version` field is missing)."
            )
        stored = props.get("cluster.id")
        if stored is not None and stored != cluster_id:
            raise StorageError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored} "
                "in "
                f"meta.properties of {d}. The broker is trying to join the wrong "
                "cluster. "
                "Configured zookeeper.connect may be wrong."
            )
        if props.get("broker.id") != str(broker_id):
            raise StorageError(
                f"Configured broker.id {broker_id} doesn't match stored broker.id "
                f"{props.get('broker.id')} in meta.properties of {d}. If you moved "
                "your "
                "data, make sure your configured broker.id matches. If you intend to "
                "create "
                "a new broker, you should remove all data in your data directories "
                "(log.dirs)."
            )
    for d in dirs:
        if d not in found:
            d.mkdir(parents=True, exist_ok=True)
            _write_lines(
                d / META_PROPERTIES,
                f"version=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n",
            )


def _write(path: Path, cluster_id: str, node_id: int) -> None:
    _write_lines(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")


def _write_lines(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    tmp.replace(path)
    # The rename reaches the disk with its directory's entry (Kafka fsyncs the dir too).
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
