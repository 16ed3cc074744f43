"""The ZooKeeper-mode controller hears of a topic's config change (its ``/config/changes``
notification) and uses the new ``unclean.leader.election.enable`` at the next election.

Guarantees checked:

- a partition left without a leader because no in-sync replica is live, and unclean
  election was off, is elected at once from an out-of-sync replica when the topic's
  change turns it on (Kafka's ``TopicUncleanLeaderElectionEnable``);
- turned off again, the next election with no live in-sync replica leaves the partition
  offline;
- a change for a topic the controller does not know (deleted, or not yet seen) is
  ignored and keeps nothing;
- where a topic does not set it, the dynamic broker configs decide (KIP-226): the
  controller's own broker's, else the cluster-wide default (``""``), else the static
  setting; the cluster-wide default read at the election counts at once, and turned
  on by its notification it elects every partition left offline, except a topic's
  that sets it off; another broker's own config counts for nothing.
"""

from __future__ import annotations

import random
import uuid

from minikafka.controller import ControllerConfig, PartitionState
from minikafka.controller.zk import LeaderAndIsr, ZkController
from minikafka.zk import ZkCluster

from .test_zk_controller import EPOCH, NOW, assignment, brokers, leadership, requests

UNCLEAN = "unclean.leader.election.enable"


def started(
    broker_configs: dict[str, dict[str, str]] | None = None,
) -> ZkController:
    """Controller 0 of brokers 1, 2, 3, with these dynamic broker configs written."""
    config = ControllerConfig(default_replication_factor=2)
    controller, _ = ZkController.become_active(
        0,
        EPOCH,
        ZkCluster(
            brokers(1, 2, 3), {}, {}, frozenset(), broker_configs=broker_configs or {}
        ),
        NOW,
        config=config,
        rng=random.Random(5),
    )
    return controller


def leaderless(
    controller: ZkController, configs: dict[str, dict[str, str]] | None = None
) -> None:
    """t-0 and u-0 on (1, 2): 2 dies and leaves the ISR, then 1, the last in sync,
    dies, and 2 comes back out of sync: no in-sync replica is live."""
    topics = {
        "t": assignment({0: [1, 2]}),
        "u": assignment({0: [1, 2]}, uuid.UUID(int=7)),
    }
    controller.on_topic_change(topics, NOW, configs=configs)
    controller.on_broker_change(brokers(1, 3), NOW)
    controller.on_broker_change(brokers(3), NOW)
    controller.on_broker_change(brokers(2, 3), NOW)


def test_turning_unclean_election_on_elects_a_partition_left_offline_at_once() -> None:
    controller = started()
    leaderless(controller)
    state, _ = leadership(controller, "t", 0)
    assert state.leader == -1
    assert controller.psm.state(("t", 0)) is PartitionState.OFFLINE

    result = controller.on_topic_config_change("t", {UNCLEAN: "true"}, NOW)
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2,))
    assert controller.psm.state(("t", 0)) is PartitionState.ONLINE
    # The new leader is told, and the write is in the result.
    assert 2 in requests(result, LeaderAndIsr)
    assert result.records


def test_turning_it_off_again_leaves_the_next_leaderless_partition_offline() -> None:
    controller = started()
    controller.on_topic_config_change("t", {UNCLEAN: "true"}, NOW)  # not known yet
    assert "t" not in controller.context.configs
    controller.on_topic_change(
        {"t": assignment({0: [1, 2]})}, NOW, configs={"t": {UNCLEAN: "true"}}
    )
    result = controller.on_topic_config_change("t", {}, NOW)
    assert not result.records  # nothing to elect: the partition has its leader
    controller.on_broker_change(brokers(1, 3), NOW)
    controller.on_broker_change(brokers(3), NOW)
    controller.on_broker_change(brokers(2, 3), NOW)
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (-1, (1,))


# --- the dynamic broker configs (KIP-226) ------------------------------------------------------


def test_a_cluster_wide_default_read_at_the_election_counts_at_once() -> None:
    controller = started({"": {UNCLEAN: "true"}})
    leaderless(controller)
    state, _ = leadership(controller, "t", 0)
    assert (state.leader, state.isr) == (2, (2,))


def test_the_cluster_wide_default_turned_on_elects_what_was_left_offline() -> None:
    controller = started()
    leaderless(controller, configs={"u": {UNCLEAN: "false"}})
    assert leadership(controller, "t", 0)[0].leader == -1

    result = controller.on_broker_config_change("", {UNCLEAN: "true"}, NOW)
    assert (leadership(controller, "t", 0)[0].leader, result.records != ()) == (2, True)
    assert 2 in requests(result, LeaderAndIsr)
    # u sets it off itself: the default does not reach it.
    assert leadership(controller, "u", 0)[0].leader == -1
    assert controller.psm.state(("u", 0)) is PartitionState.OFFLINE
    # Already on: another change of the layer elects nothing.
    again = controller.on_broker_config_change("", {UNCLEAN: "true", "x": "1"}, NOW)
    assert not again.records


def test_the_controllers_own_broker_config_beats_the_cluster_wide_one() -> None:
    controller = started()
    controller.on_broker_config_change("", {UNCLEAN: "true"}, NOW)
    controller.on_broker_config_change("0", {UNCLEAN: "false"}, NOW)  # its own
    controller.on_broker_config_change("3", {UNCLEAN: "true"}, NOW)  # another's
    leaderless(controller)
    assert leadership(controller, "t", 0)[0].leader == -1  # its own "false" decides

    # Its own deleted: the cluster-wide "true" is the default now, and elects.
    result = controller.on_broker_config_change("0", {}, NOW)
    assert leadership(controller, "t", 0)[0].leader == 2
    assert result.records
