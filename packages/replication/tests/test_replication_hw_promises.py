"""The high watermark counts a replica whose joining the ISR is in flight (KIP-497's
maximal ISR): the controller may accept the addition at any moment, and a leader
elected from the new ISR must hold every record below the HW."""

from __future__ import annotations

from pathlib import Path

from minikafka.common import Acks
from minikafka.log.testing import value_batch
from minikafka.replication.testing import open_partition, partition_state


def test_a_replica_joining_the_isr_holds_the_hw_while_its_addition_is_in_flight(
    tmp_path: Path,
) -> None:
    partition = open_partition(tmp_path)
    assert partition.make_leader(partition_state((1, 2, 3), isr=(1, 2)), now=0.0)
    partition.append_records_to_leader(
        value_batch(5), required_acks=Acks.LEADER, now=0.0
    )
    # Replica 3 fetches from 0: it has caught up to the HW (0), so the leader proposes
    # adding it; the proposal is in flight, the committed ISR is still {1, 2}.
    partition.update_follower_fetch_state(3, 0, now=1.0)
    assert partition.isr == frozenset({1, 2})
    assert partition.maximal_isr == frozenset({1, 2, 3})
    # Replica 2 has everything, but 3 may be in the ISR before the HW is read again.
    assert not partition.update_follower_fetch_state(2, 5, now=1.0)
    assert partition.log.high_watermark == 0
    assert partition.update_follower_fetch_state(3, 4, now=1.0)
    assert partition.log.high_watermark == 4
