"""What DescribeQuorum answers (KIP-595, KIP-836's lag fields), and the two views
``kafka-metadata-quorum.sh describe`` prints of it: ``--status`` and ``--replication``.

Only the leader knows every replica's progress, so only the leader answers. Times are the
node's ``now`` in milliseconds: the wall clock in a shell, virtual time in the simulator.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class ReplicaInfo:
    replica_id: int
    log_end_offset: int
    last_fetch: float | None  # seconds, the node's clock; None: never fetched
    last_caught_up: float | None


@attrs.frozen
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]

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
        ("CurrentVoters", "[" + ",".join(str(v.replica_id) for v in info.voters) + "]"),
        (
            "CurrentObservers",
            "[" + ",".join(str(o.replica_id) for o in info.observers) + "]",
        ),
    ]
    return "\n".join(f"{name + ':':<24}{value}" for name, value in rows)


def format_replication(info: QuorumInfo) -> str:
    """``describe --replication``: one line a replica, the leader first."""
    header = [
        "NodeId",
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
