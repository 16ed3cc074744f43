"""Lab 5's reference for leader.py: minikafka's own (packages/raft/src/minikafka/raft/
_leader.py, in the Raft in KRaft chapter)."""

from minikafka.raft._leader import LeaderState
from minikafka.raft._leader import check_fetch_position as check_fetch_position

majority_end_offset = LeaderState.majority_end_offset
