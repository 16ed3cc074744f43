"""The injector's steps beyond processes and links: ZooKeeper's server killed or
paused and brought back, a full disk filled and freed, a broker added or removed and
then retired or returned, a reassignment or a preferred leader election mid-fault.

:class:`OtherSteps` is a base of :class:`chaos.faults.Injector`, on the injector's own
state (set up by its ``__init__``, which says what each holds). The admin, membership
and ZooKeeper steps wait on the cluster, and the runner carries them out on lanes of
their own beside the others (:mod:`chaos.carry`): the membership steps and ZooKeeper's
heal keep out of each other's way here (:meth:`OtherSteps._moving_broker`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from minikafka.broker.testing import ProcessCluster

from . import membership, operations
from .disk import Disks, halted_line
from .injected import (
    MEMBERSHIP_KINDS,
    ZOOKEEPER_REFUSED,
    Injected,
    NotCarriedOut,
    refused_without_zookeeper,
)
from .nemesis import ZOOKEEPER_KINDS, Fault
from .netns import Network


class OtherSteps:
    """The ZooKeeper, disk, membership and admin steps of :class:`chaos.faults.Injector`
    (its base class): started by :meth:`_start_other`, healed by :meth:`_heal_other`."""

    # The injector's state these steps share with it (Injector.__init__ sets each).
    cluster: ProcessCluster
    zookeeper: bool
    network: Network | None
    servers: str
    topic: str
    replication_factor: int
    disks: Disks | None
    halted: set[int]
    stopped_without_zookeeper: set[int]
    retired: set[int]
    _lock: threading.Lock
    _active: dict[int, Injected]
    _zookeeper_paused: int | None
    _assignment: dict[int, list[int]]
    _moves: dict[int, dict[int, list[int]]]
    _moving: set[int]
    _left: set[int]
    _home_assignment: dict[int, list[int]]

    def _records(self) -> list[Injected]:
        """The active faults' records now."""
        with self._lock:
            return list(self._active.values())

    @contextlib.contextmanager
    def _moving_broker(self, fault: Fault, heal: bool) -> Iterator[None]:
        """A membership step's broker kept from ZooKeeper's heal while it works on it
        (two threads starting one broker would run it twice, or start a broker being
        removed). The heal of a removal whose broker gave up its start-up for want of
        ZooKeeper starts it again itself if a ZooKeeper heal left it meanwhile."""
        if fault.kind not in MEMBERSHIP_KINDS:
            yield
            return
        (node,) = fault.targets
        with self._lock:
            self._moving.add(node)
        try:
            yield
        finally:
            with self._lock:
                self._moving.discard(node)
                left = node in self._left
                self._left.discard(node)
            if (
                left
                and heal
                and node not in self.retired
                and self.cluster.pid(node) is None
                and refused_without_zookeeper(self.cluster, node)
            ):
                self.cluster.start(node, wait=False)

    def _start_other(self, fault: Fault) -> str:
        """A ZooKeeper fault, a full disk, a membership change or an admin operation
        started; what it did."""
        if fault.kind == "disk-full":
            assert self.disks is not None
            return "; ".join(self.disks.fill(node) for node in fault.targets)
        if fault.kind in MEMBERSHIP_KINDS:
            (node,) = fault.targets
            if fault.kind == "broker-add":
                # Never started again by heal_all, even if joining failed half-way.
                self.retired.add(node)
                try:
                    said, first = membership.add_broker(
                        self.cluster,
                        node,
                        self.network,
                        self.servers,
                        self.topic,
                        self._home(),
                    )
                except BaseException:
                    # Not waited for: the server comes back at the ZooKeeper fault's
                    # heal, a later step of the schedule that this one would hold up.
                    # An operator whose new broker cannot join gives the add up; a
                    # supervisor starting it again would leave a broker holding no
                    # replica that no heal retires.
                    if self._refused_start(node):
                        raise NotCarriedOut(
                            f"broker {node} gave up its start-up: {ZOOKEEPER_REFUSED} "
                            "zookeeper.connect (ZooKeeper's server down); not added, "
                            "its id not used again"
                        ) from None
                    if node in self.cluster.broker_ports:
                        self.cluster.stop(node)
                    raise
            else:
                held = frozenset(
                    n for r in self._records() if r.started is not None for n in r.nodes
                )
                said, first = membership.remove_broker(
                    self.cluster, node, self.servers, self.topic, self._home(), held
                )
            self._moves[id(fault)] = first
            return said
        if fault.kind in ZOOKEEPER_KINDS:
            if fault.kind == "pause-zookeeper":
                self._zookeeper_paused = self.cluster.zookeeper.pid()
            return operations.zookeeper_down(self.cluster, fault.kind)
        if fault.kind == "elect-leaders":
            return operations.elect_preferred(self.servers, self.topic)
        first = operations.replicas(self.servers, self.topic)
        if not first or not all(first.values()):
            # A Metadata answer mid-fault may name the topic without its partitions or
            # replicas: nothing to rotate, and Kafka's tool would refuse the file.
            self._assignment = {}
            return f"not started: the metadata named no replicas to move ({first})"
        moving = {p: r for p, r in first.items() if len(r) != self.replication_factor}
        if moving:
            # A reassignment under way (a membership step's, or a heal refused): its
            # partitions list the old replicas and the new together, and rotating
            # those would ask for more replicas than the topic has (chaos seed 405).
            self._assignment = {}
            raise NotCarriedOut(f"a reassignment is under way: {moving}")
        try:
            done = operations.reassign(
                self.servers, self.topic, operations.rotated(first)
            )
        except operations.RefusedError as refused:
            # Refused for some partitions only: the others rotated, and go back.
            self._assignment = first if refused.per_partition else {}
            return f"refused: {refused}"
        self._assignment = first
        return done

    def _home(self) -> dict[int, list[int]]:
        """The topic's assignment before the first membership change: what each one
        starts from and moves back to (not the Metadata response's replicas then,
        which during a reassignment still in progress hold the old and the new)."""
        if not self._home_assignment:
            self._home_assignment = operations.replicas(self.servers, self.topic)
        return self._home_assignment

    def _heal_other(self, fault: Fault) -> str:
        if fault.kind == "disk-full":
            assert self.disks is not None
            said = []
            for node in fault.targets:
                if self.cluster.pid(node) is None and halted_line(self.cluster, node):
                    self.halted.add(node)
                said.append(self.disks.free(node))
            return "; ".join(said)
        if fault.kind in MEMBERSHIP_KINDS:
            (node,) = fault.targets
            first = self._moves.pop(id(fault), {})
            if fault.kind == "broker-add":
                return membership.retire_broker(
                    self.cluster, node, self.servers, self.topic, first
                )
            try:
                return membership.return_broker(
                    self.cluster, node, self.servers, self.topic, first
                )
            except Exception:
                if not self._refused_start(node):
                    raise
                # Left to the ZooKeeper fault's heal, which starts it again (or, if
                # that heal came meanwhile, to _moving_broker); its replicas stay
                # where the drain moved them.
                return (
                    f"broker {node} gave up its start-up: {ZOOKEEPER_REFUSED} "
                    "zookeeper.connect (ZooKeeper's server down); started again once "
                    "the server answers; nothing moved back"
                )
        if fault.kind in ZOOKEEPER_KINDS:
            pid, self._zookeeper_paused = self._zookeeper_paused, None
            operations.zookeeper_up(self.cluster, fault.kind, pid)
            started = self._start_refused_without_zookeeper()
            again = f"; broker(s) {started} started again" if started else ""
            return "ZooKeeper's server running again" + again
        if fault.kind == "elect-leaders":
            return operations.elect_preferred(self.servers, self.topic)
        if not self._assignment:
            return "nothing was moved"
        first, self._assignment = self._assignment, {}
        return operations.reassign(self.servers, self.topic, first)

    def _refused_start(self, node: int) -> bool:
        """Whether ``node`` (a ZooKeeper-mode broker just started: added, or a removed
        one returned) gave up its start-up because no ZooKeeper server answered, as
        Kafka's does; if so it is not a crash (:data:`stopped_without_zookeeper`)."""
        if not self.zookeeper or node not in self.cluster.broker_ports:
            return False
        if self.cluster.pid(node) is not None:
            return False
        if not refused_without_zookeeper(self.cluster, node):
            return False
        self.stopped_without_zookeeper.add(node)
        return True

    def _start_refused_without_zookeeper(self) -> list[int]:
        """The brokers that stopped at start-up while ZooKeeper's server was down,
        started again now that it answers (what an operator's supervisor does).

        A ZooKeeper-mode broker started (a kill healed) while the server is killed or
        paused gives up after ``zookeeper.connection.timeout.ms`` and exits, as Kafka's
        broker does (``ZooKeeperClientTimeoutException`` fails its start-up): Kafka's
        behaviour, not a crash. A broker another active fault keeps down stays down; one
        a membership step is working on is left to it (:meth:`_moving_broker`): under
        the lock, so that step's own start of it comes before or after, not beside."""
        started = []
        with self._lock:
            kept_down = {
                node
                for record in self._active.values()
                if record.started is not None
                for node in record.nodes
            }
            self._left |= self._moving
            for node in self.cluster.node_ids:
                if node in kept_down | self._moving or node in self.retired:
                    continue
                if self.cluster.pid(node) is None and refused_without_zookeeper(
                    self.cluster, node
                ):
                    self.stopped_without_zookeeper.add(node)
                    self.cluster.start(node, wait=False)
                    started.append(node)
        return started
