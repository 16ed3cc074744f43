"""``meta.properties``: which cluster and which node a log directory belongs to.

Kafka refuses to start a KRaft node on directories that ``kafka-storage.sh format`` did
not prepare, and refuses directories that belong to another cluster or node, so a
mistyped ``log.dirs`` cannot mix two clusters' data. minikafka formats an empty
directory itself on first start (``make run`` needs no extra step) and keeps the checks.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

from minikafka.common import ConfigError

META_PROPERTIES = "meta.properties"


def new_cluster_id() -> str:
    """A random 16-byte id in URL-safe base64 without padding, as Kafka writes it."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_meta(path: Path) -> dict[str, str]:
    props = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def ensure_formatted(dirs: list[Path], node_id: int) -> str:
    """The cluster id of ``dirs``, writing ``meta.properties`` where it is missing."""
    found: dict[Path, dict[str, str]] = {}
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        if (d / META_PROPERTIES).exists():
            found[d] = read_meta(d / META_PROPERTIES)
    cluster_ids = {props.get("cluster.id") for props in found.values()}
    if len(cluster_ids) > 1:
        raise ConfigError("log.dirs", f"the directories belong to different clusters: {found}")
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
            _write(d / META_PROPERTIES, cluster_id, node_id)
    return cluster_id


def _write(path: Path, cluster_id: str, node_id: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n", encoding="utf-8")
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    tmp.replace(path)
