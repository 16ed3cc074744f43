"""What every simulated run must show, whichever the protocol: the two guarantees a
consumer group exists to give, checked on the ownership record of a run.

1. **No partition is owned by two members at once.** The classic protocol gets it from
   its barrier (an eager member revokes everything before it rejoins; a cooperative one
   revokes first and the partition moves a rebalance later, KIP-429); the consumer
   protocol from the coordinator, which assigns a partition only once its previous owner
   acknowledged its revocation (KIP-848). Checked after every single change, in the
   order they happened.
2. **Every partition is owned again within a bound after the event that changed the
   group.** :func:`settle_bound_ms` states it: the session timeout (a crashed member is
   only noticed when its session expires), plus ``group.initial.rebalance.delay.ms``
   (a classic group that was empty waits that long for more members), plus three rounds
   of a heartbeat interval and the slowest member's poll (a member learns of a change on
   a heartbeat, acts on it at its next poll; a cooperative rebalance or a consumer-group
   revocation followed by an assignment takes two such rounds, and one more covers a
   member that joins while the group is still moving), plus a second of network slack.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from minikafka.common import TopicPartition

from ._simulate_values import (
    EventAction,
    OwnershipChange,
    SimulationConfig,
    SimulationResult,
)

__all__ = ["ownership_violations", "settle_bound_ms", "unowned_stretches"]

_NETWORK_SLACK_MS = 1_000


def settle_bound_ms(config: SimulationConfig) -> int:
    """How long after an event every partition must have an owner again."""
    slowest = config.processing_ms[1]
    if any(e.action is EventAction.SLOW for e in config.events):
        slowest = max(slowest, config.slow_processing_ms)
    delay = config.group_config.group_initial_rebalance_delay_ms
    if config.protocol == "consumer":
        delay = 0  # the consumer protocol has no initial delay
    return (
        config.session_timeout_ms
        + delay
        + 3 * (config.heartbeat_interval_ms + slowest)
        + _NETWORK_SLACK_MS
    )


def unowned_stretches(
    result: SimulationResult,
) -> Iterator[tuple[TopicPartition, int, int | None]]:
    """Every (partition, from ms, until ms) with no owner; until is None when it is still
    unowned at the end of the run."""
    c = result.config
    owners: dict[str, frozenset[TopicPartition]] = {}
    since = dict.fromkeys((TopicPartition(c.topic, p) for p in range(c.partitions)), 0)
    unowned: dict[TopicPartition, int] = dict(since)
    for change in result.ownership:
        owners[change.member] = change.partitions
        owned = frozenset().union(*owners.values())
        for tp in since:
            if tp in owned and tp in unowned:
                yield tp, unowned.pop(tp), change.time_ms
            elif tp not in owned and tp not in unowned:
                unowned[tp] = change.time_ms
    for tp, start in sorted(unowned.items()):
        yield tp, start, None


def _double_owners(changes: Sequence[OwnershipChange]) -> Iterator[str]:
    owners: dict[str, frozenset[TopicPartition]] = {}
    for change in changes:
        owners[change.member] = change.partitions
        for other, partitions in owners.items():
            if other != change.member and (both := partitions & change.partitions):
                names = ",".join(str(tp) for tp in sorted(both))
                yield (
                    f"at {change.time_ms} ms {names} owned by both "
                    f"{other} and {change.member}"
                )


def ownership_violations(result: SimulationResult) -> list[str]:
    """Each breach of the two guarantees, in words (none: the run is sound)."""
    problems = list(_double_owners(result.ownership))
    bound = settle_bound_ms(result.config)
    triggers = sorted(r.trigger_ms for r in result.rebalances)
    end = max((e.time_ms for e in result.timeline), default=0)
    for tp, start, until in unowned_stretches(result):
        event = max((t for t in triggers if t <= start), default=0)
        stop = end if until is None else until
        if until is None and result.rebalances and not result.rebalances[-1].members:
            continue  # everyone left: nobody is there to own anything
        if until is None:
            problems.append(f"{tp} has no owner from {start} ms to the end")
        elif stop - event > bound:
            problems.append(
                f"{tp} had no owner from {start} to {stop} ms, "
                f"{stop - event} ms after the event at {event} ms (bound {bound} ms)"
            )
    return problems
