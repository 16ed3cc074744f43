"""What DescribeQuorum answers (KIP-595, KIP-836's lag fields, KIP-853's directory ids
and voter endpoints), and the two views Kafka 4's ``kafka-metadata-quorum.sh describe``
prints of it: ``--status`` and ``--replication``.

Only the leader knows every replica's progress, so only the leader answers. Times are the
node's ``now`` in milliseconds: the wall clock in a shell, virtual time in the simulator.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping

import attrs


@attrs.frozen
class ReplicaInfo:
    replica_id: int
    log_end_offset: int
    last_fetch: float | None  # seconds, the node's clock; None: never fetched
    last_caught_up: float | None
    directory_id: uuid.UUID | None = None
    """KIP-853: the replica's metadata log directory; None (the zero id on the wire) for
    a static voter, an observer that named none, or a v1 answer."""


@attrs.frozen
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    endpoints: Mapping[int, tuple[str, ...]] = attrs.field(factory=dict, hash=False)
    """KIP-853 (a v2 answer): each voter's endpoints as ``NAME://host:port``."""

    @property
    def _leader(self) -> ReplicaInfo:
        return next(v for v in self.voters if v.replica_id == self.leader_id)

    def lag(self, replica: ReplicaInfo) -> int:
        return max(0, self._leader.log_end_offset - replica.log_end_offset)

    @property
    def max_follower_lag(self) -> int:
        return max((self.lag(v) for v in self.voters), default=0)

    def max_follower_lag_time_ms(self, now: float) -> int:
        """How long the furthest-behind voter has gone without catching up."""
        behind = [
            now - (v.last_caught_up if v.last_caught_up is not None else 0.0)
            for v in self.voters
            if v.replica_id != self.leader_id
        ]
        return round(max(behind, default=0.0) * 1000)


def _ms(seconds: float | None) -> str:
    return "-1" if seconds is None else str(round(seconds * 1000))


def format_status(info: QuorumInfo, now: float, cluster_id: str = "") -> str:
    """``describe --status``, field for field."""
    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", str(info.leader_id)),
        ("LeaderEpoch", str(info.leader_epoch)),
        ("HighWatermark", str(info.high_watermark)),
        ("MaxFollowerLag", str(info.max_follower_lag)),
        ("MaxFollowerLagTimeMs", str(info.max_follower_lag_time_ms(now))),
        ("CurrentVoters", _replica_list(info, info.voters)),
        ("CurrentObservers", _replica_list(info, info.observers)),
    ]
    return "\n".join(f"{name + ':':<24}{value}" for name, value in rows)


def _replica_list(info: QuorumInfo, replicas: tuple[ReplicaInfo, ...]) -> str:
    """Kafka 4's list of nodes: ``[{"id": 1, "endpoints": ["CONTROLLER://h:9093"]}]``,
    a directory id only when there is one, endpoints only when known."""
    nodes = []
    for replica in replicas:
        node = f'{{"id": {replica.replica_id}'
        if replica.directory_id is not None:
            node += f', "directoryId": "{kafka_uuid(replica.directory_id)}"'
        endpoints = info.endpoints.get(replica.replica_id, ())
        if endpoints:
            node += ', "endpoints": [' + ", ".join(map(json.dumps, endpoints)) + "]"
        nodes.append(node + "}")
    return "[" + ", ".join(nodes) + "]"


def kafka_uuid(value: uuid.UUID | None) -> str:
    """A uuid as Kafka prints one: URL-safe base64 of its 16 bytes, unpadded (the zero
    id is ``AAAAAAAAAAAAAAAAAAAAAA``)."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def endpoint(listener: str, host: str, port: int) -> str:
    """``NAME://host:port`` (an IPv6 host in brackets), as Kafka prints a voter's."""
    shown = f"[{host}]" if ":" in host else host
    return f"{listener}://{shown}:{port}"


def format_replication(info: QuorumInfo) -> str:
    """``describe --replication``: one line a replica, the leader first."""
    header = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
    ]
    rows = [[*header, "Status"]]
    ordered = sorted(info.voters, key=lambda v: v.replica_id != info.leader_id)
    for replica, status in [
        *(
            (v, "Leader" if v.replica_id == info.leader_id else "Follower")
            for v in ordered
        ),
        *((o, "Observer") for o in info.observers),
    ]:
        rows.append(
            [
                str(replica.replica_id),
                kafka_uuid(replica.directory_id),
                str(replica.log_end_offset),
                str(info.lag(replica)),
                _ms(replica.last_fetch),
                _ms(replica.last_caught_up),
                status,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) + 1)]
    return "\n".join(
        "  ".join(
            cell.ljust(width) for cell, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in rows
    )
