"""What the injector injects, and what it records of each fault it carries out.

The kind tables (:data:`INJECTED` and its groups: which kinds need namespaces or the
link proxies, ZooKeeper mode, a tmpfs), :class:`Injected` (one fault's record, a line
of ``faults.jsonl``), :class:`NotCarriedOut` (a fault the cluster refused, recorded as
skipped), and the last line a ZooKeeper-mode broker writes when its start-up gives up
for want of ZooKeeper (:data:`ZOOKEEPER_REFUSED`). :mod:`chaos.faults` carries the
faults out, and names all of these too.
"""

from __future__ import annotations

import attrs

from minikafka.broker.testing import ProcessCluster

from .nemesis import KINDS, PARTITION_KINDS, ZOOKEEPER_KINDS, Fault

PROCESS_KINDS: tuple[str, ...] = ("kill", "pause", "kill-active-controller")
"""Injected on any machine."""
NETWORK_KINDS: tuple[str, ...] = (*PARTITION_KINDS, "slow")
"""Injected between network namespaces, or on the link proxies where there are none."""
ADMIN_KINDS: tuple[str, ...] = ("reassign", "elect-leaders")
DISK_KINDS: tuple[str, ...] = ("disk-full",)
"""Injected where a tmpfs can be mounted (:func:`chaos.disk.unavailable`)."""
MEMBERSHIP_KINDS: tuple[str, ...] = ("broker-add", "broker-remove")
INJECTED: tuple[str, ...] = (
    *PROCESS_KINDS,
    *NETWORK_KINDS,
    *ADMIN_KINDS,
    *ZOOKEEPER_KINDS,
    *DISK_KINDS,
    *MEMBERSHIP_KINDS,
)
NOT_INJECTED: tuple[str, ...] = tuple(kind for kind in KINDS if kind not in INJECTED)


class NotCarriedOut(Exception):
    """A fault that could not be carried out for a reason the cluster gave, as Kafka's
    would (a broker added while ZooKeeper's server was down gave up its start-up), or
    that the cluster's state made meaningless (a ``reassign`` drawn while another
    reassignment is under way): recorded as skipped with that reason, not as the
    harness failing."""


@attrs.define
class Injected:
    """What one fault did, for the run's record: its nodes once resolved, when it
    started and healed on the harness's clock, and any error carrying it out."""

    fault: Fault
    nodes: tuple[int, ...] = ()
    started: float | None = None
    healed: float | None = None
    error: str = ""
    skipped: str = ""
    """Why it was not started: its node already down by another fault, the cluster
    refused it as Kafka's would (:class:`NotCarriedOut`), or its start could come only
    after its drawn heal (:mod:`chaos.carry`)."""
    detail: str = ""
    """How it was carried out, where that varies (netem or tbf; what an election or a
    reassignment answered)."""

    def to_json(self) -> dict[str, object]:
        return {
            **self.fault.to_json(),
            "nodes": list(self.nodes),
            "started_at": self.started,
            "healed_at": self.healed,
            "error": self.error,
            "skipped": self.skipped,
            "detail": self.detail,
        }


ZOOKEEPER_REFUSED = "no ZooKeeper answered at"
"""What a ZooKeeper-mode broker's last line says when it stopped at start-up because no
ZooKeeper server answered in time (``minikafka.broker.zk``'s start-up)."""


def refused_without_zookeeper(cluster: ProcessCluster, node: int) -> bool:
    """Whether ``node``'s log ends with its start-up refused for want of ZooKeeper."""
    return any(ZOOKEEPER_REFUSED in line for line in cluster.tail(node, 5).splitlines())
