"""Lab 5's reference for node.py: minikafka's own ``RaftNode`` rules
(packages/raft/src/minikafka/raft/_node.py, in the Raft in KRaft chapter)."""

from minikafka.raft._node import RaftNode

vote_decision = RaftNode._vote_decision
log_is_up_to_date = RaftNode._log_is_up_to_date
may_commit = RaftNode._may_commit
