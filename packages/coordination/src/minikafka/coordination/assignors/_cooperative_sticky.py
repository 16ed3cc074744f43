"""CooperativeStickyAssignor: the sticky target, reached in two rebalances (KIP-429).

Seed 000, "重平衡协议" / "Cooperative 协作式协议": members keep consuming what they own
while the group rebalances, so a partition may only change hands once its owner has let
go of it. The first rebalance computes the sticky target but leaves out every partition
whose previous owner is another member ("提议中删除了那些需要执行迁移到其他 Consumer 的
TopicPartition"). Each owner compares what it owns with what it got, revokes the
difference and rejoins; in that follow-up rebalance nobody owns those partitions any
more, and they go where the target put them. Members compute the diff themselves, so
every assignment this assignor hands out is safe to apply at once.

The assignor keeps no state between the two rebalances (the leader may even change), so
the follow-up recomputes the target from what members then own. When all members
subscribe to the same topics it lands exactly on the first round's target (the sticky
core's fill is built for that); with unequal subscriptions it may place the withheld
partitions elsewhere, and once in a while that costs one more rebalance, as in Kafka.

Kafka's ``CooperativeStickyAssignor``: ownership comes from the subscription's owned
partitions; the generation from the subscription (v2+) or, for older protocol versions,
from the four bytes of user data the assignor adds (``CooperativeStickyAssignor`` user
data v0: int32 generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from minikafka.common import TopicPartition

from ._assignor import NO_GENERATION, Assignment, RebalanceProtocol, Subscription
from ._sticky import MemberData, sticky_assignment

_GENERATION_BYTES = 4


def encode_cooperative_user_data(generation: int) -> bytes:
    """The assignor's subscription user data: the member's generation as an int32."""
    return generation.to_bytes(_GENERATION_BYTES, "big", signed=True)


def cooperative_member_data(subscription: Subscription) -> MemberData:
    """Owned partitions with the generation from the subscription, else from user data."""
    generation: int | None = None
    if subscription.generation_id >= 0:
        generation = subscription.generation_id
    elif (
        subscription.user_data is not None
        and len(subscription.user_data) >= _GENERATION_BYTES
    ):
        encoded = int.from_bytes(
            subscription.user_data[:_GENERATION_BYTES], "big", signed=True
        )
        generation = encoded if encoded >= 0 else None
    return MemberData(subscription.owned_partitions, generation, subscription.rack_id)


def cooperative_violations(
    subscriptions: Mapping[str, Subscription], assignments: Mapping[str, Assignment]
) -> tuple[TopicPartition, ...]:
    """Partitions added to a member while another member still owns them, sorted.

    The leader's check of a cooperative assignment (Kafka's ``ConsumerCoordinator``
    refuses one that adds a partition to a member and revokes it from another in the
    same rebalance): under KIP-429 a member starts fetching what it is newly assigned at
    once, while the other still fetches it until it sees its own assignment.
    """
    owners = _owners(subscriptions)
    violations = {
        tp
        for member, assignment in assignments.items()
        for tp in assignment.partitions
        if _added_while_owned(tp, member, owners)
    }
    return tuple(sorted(violations))


def _owners(
    subscriptions: Mapping[str, Subscription],
) -> dict[TopicPartition, set[str]]:
    owners: dict[TopicPartition, set[str]] = {}
    for member, subscription in subscriptions.items():
        for tp in subscription.owned_partitions:
            owners.setdefault(tp, set()).add(member)
    return owners


def _added_while_owned(
    tp: TopicPartition, member: str, owners: Mapping[TopicPartition, set[str]]
) -> bool:
    claimants = owners.get(tp, set())
    # A member that already lists the partition keeps consuming it either way: leaving
    # it in place creates no second consumer (a stale co-owner revokes it on seeing its
    # own assignment), and taking it away would stop the rightful owner for nothing.
    return member not in claimants and bool(claimants)


def revoked_partitions(
    owned: Iterable[TopicPartition], assignment: Assignment
) -> tuple[TopicPartition, ...]:
    """What a cooperative member gives up on receiving ``assignment``, sorted.

    Not empty means the member must rejoin: the partitions it revokes were withheld from
    their new owners, who get them in the follow-up rebalance.
    """
    return tuple(sorted(set(owned) - set(assignment.partitions)))


@attrs.frozen
class CooperativeStickyAssignor:
    """Kafka's ``CooperativeStickyAssignor`` (``cooperative-sticky``, KIP-429)."""

    name = "cooperative-sticky"
    # It also works under EAGER (members then own nothing when they join), which is what
    # lets a group upgrade from an eager assignor with a rolling bounce.
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def target(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """The sticky assignment the two rounds converge to."""
        data = {
            member: cooperative_member_data(sub)
            for member, sub in subscriptions.items()
        }
        return sticky_assignment(cluster, subscriptions, data)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        owners = _owners(subscriptions)
        result: dict[str, Assignment] = {}
        for member, partitions in self.target(cluster, subscriptions).items():
            # A partition moves only once its previous owner has revoked it: withheld
            # now, it is free in the follow-up rebalance the revoking owner triggers.
            result[member] = Assignment(
                tp for tp in partitions if not _added_while_owned(tp, member, owners)
            )
        return result

    @staticmethod
    def subscription_user_data(generation: int = NO_GENERATION) -> bytes:
        """The user data a member sends with its subscription (its generation)."""
        return encode_cooperative_user_data(generation)
