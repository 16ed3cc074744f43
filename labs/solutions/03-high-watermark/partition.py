"""Lab 3's reference for ``high_watermark``: minikafka's own (the Replication chapter)."""

from minikafka.replication._partition import Partition

maybe_increment_leader_hw = Partition.maybe_increment_leader_hw
