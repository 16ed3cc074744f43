"""DescribeQuorum from the leader, and the two views kafka-metadata-quorum.sh prints."""

from __future__ import annotations

from minikafka.raft._describe import format_replication, format_status
from minikafka.raft.testing import Wire


def test_the_leader_describes_every_voter_and_observer_and_their_lag() -> None:
    wire = Wire(3, observers=1)
    wire.run_until(3.0)
    leader = wire.leader()
    follower = next(n for n in wire.voters if n != leader.node_id)
    assert wire.nodes[follower].describe_quorum(3.0) is None  # only the leader knows
    wire.cut = {follower}
    for i in range(5):
        output = leader.append([b"%d" % i], 3.0)
        wire.take(leader.node_id, output)
    wire.run_until(3.5, start=3.0)
    info = leader.describe_quorum(3.5)
    assert info is not None
    assert [v.replica_id for v in info.voters] == [1, 2, 3]
    assert [o.replica_id for o in info.observers] == [4]
    behind = next(v for v in info.voters if v.replica_id == follower)
    assert info.lag(behind) == 5
    assert info.max_follower_lag == 5
    assert info.high_watermark == leader.high_watermark == leader.log.end_offset
    status = dict(line.split(":", 1) for line in format_status(info, 3.5).splitlines())
    assert status["LeaderId"].strip() == str(leader.node_id)
    assert status["HighWatermark"].strip() == str(leader.high_watermark)
    assert status["MaxFollowerLag"].strip() == "5"
    # Kafka 4's lists of nodes; a node's own description has no endpoints to name.
    assert status["CurrentVoters"].strip() == '[{"id": 1}, {"id": 2}, {"id": 3}]'
    assert status["CurrentObservers"].strip() == '[{"id": 4}]'
    # The cut follower last caught up before the appends: it has been behind since.
    assert int(status["MaxFollowerLagTimeMs"]) >= 500
    lines = format_replication(info).splitlines()
    assert lines[0].split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    assert lines[1].split()[0] == str(leader.node_id)
    assert lines[1].split()[-1] == "Leader"
    assert [line.split()[-1] for line in lines[2:]] == [
        "Follower",
        "Follower",
        "Observer",
    ]
    row = next(line.split() for line in lines if line.split()[0] == str(follower))
    assert row[1] == "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's zero uuid: a static voter
    assert row[3] == "5"
