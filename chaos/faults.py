"""Carrying out the nemesis's faults on a process cluster, with real mechanisms.

The cluster is :class:`minikafka.broker.testing.ProcessCluster` (what ``make cluster``
runs and the cluster tests kill, pause and restart): a process per node, in KRaft mode
(controllers 0..C-1, brokers after them) or ZooKeeper mode (brokers 0..N-1 electing
their controller through ZooKeeper's ``/controller``).

The kinds injected today (:data:`INJECTED`):

- ``kill``: SIGKILL the node (:meth:`ProcessCluster.kill`); heal: start it again on
  its own data;
- ``pause``: SIGSTOP (a stall: its sessions and heartbeats lapse while it holds every
  socket open); heal: SIGCONT;
- ``kill-active-controller``: the quorum's leader as ``metadata-quorum describe
  --status`` names it (KRaft), or the broker the Metadata response names as controller
  (ZooKeeper mode), SIGKILLed when the fault starts; heal: started again.

- ``partition-<shape>`` (``halves``, ``isolate``, ``bridge``, ``ring``, ``one-way``),
  when the nodes run in network namespaces of their own (:mod:`chaos.netcluster`): the
  shape's links cut by :class:`chaos.netns.Network` (a blackhole rule per dropped
  direction, packets lost in silence, not refused); heal: the rules removed. Without
  namespaces, on the link proxies (:mod:`chaos.proxies`): each cut link's bytes held
  in its proxy; heal: let through.

- ``slow`` (nodes in namespaces): the node's egress slowed by ``tc netem`` where the
  kernel has it, else shaped by ``tc tbf`` (:func:`chaos.netns.slow`; the record's
  ``detail`` says which); heal: the qdisc removed. On the link proxies: a delay on
  everything the node sends to the other nodes; heal: lifted;
- ``kill-zookeeper``, ``pause-zookeeper`` (ZooKeeper mode): ZooKeeper's server
  SIGKILLed (heal: started again on its data directory, waiting until it answers
  ``ruok``) or SIGSTOPped (heal: SIGCONT);
- ``elect-leaders`` (mid-fault): a preferred leader election over the topic's
  partitions through the admin API (``ElectLeaders``; what each partition answered is
  the record's ``detail``); heal: another, the cluster being whole again or not;
- ``reassign`` (mid-fault): every partition of the topic reassigned to its replicas
  rotated by one (its preferred leader moves), by ``minikafka reassign-partitions
  --execute``, Kafka's tool; heal: the first order reassigned back. Skipped while
  another reassignment is under way (a partition listing more replicas than the
  topic's replication factor: the old and the new together);
- ``disk-full`` (as root): the broker's tmpfs filled to the brim (:mod:`chaos.disk`);
  heal: the filler deleted, the broker started again if it halted;
- ``broker-add``, ``broker-remove``: a broker joins (a new id, registered, replicas
  moved onto it) or is drained and shut down (:mod:`chaos.membership`); heal: the
  added one drained and shut down, the removed one started and given its replicas back.
  In ZooKeeper mode a broker added while ZooKeeper's server is down gives up its
  start-up, as Kafka's does: the add is recorded as skipped with that reason; a
  removed one returned so is started again once the server answers.

A node is started again without waiting for it to say it is ready (a broker is ready
once registered, and the controller it needs may be healed at the same instant).

Every kind of the nemesis is injected (:data:`NOT_INJECTED` is empty); the runner
carries partitions and slow links out on the link proxies where namespaces cannot be
made (and says so), and refuses ``disk-full`` where a tmpfs cannot be mounted rather
than pretend.

The kind tables and the record of each fault are in :mod:`chaos.injected`, the steps
beyond processes and links (ZooKeeper's server, a full disk, a membership change, an
admin operation) in :mod:`chaos.other_steps`; every name is importable from here too.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ProcessCluster

from . import netns, operations
from .disk import Disks
from .injected import (
    ADMIN_KINDS,
    DISK_KINDS,
    INJECTED,
    MEMBERSHIP_KINDS,
    NETWORK_KINDS,
    NOT_INJECTED,
    PROCESS_KINDS,
    ZOOKEEPER_REFUSED,
    Injected,
    NotCarriedOut,
    refused_without_zookeeper,
)
from .nemesis import ACTIVE_CONTROLLER, PARTITION_KINDS, ZOOKEEPER_KINDS, Fault
from .netns import Network
from .other_steps import OtherSteps
from .proxies import LinkProxies

__all__ = [
    "ADMIN_KINDS",
    "DISK_KINDS",
    "INJECTED",
    "MEMBERSHIP_KINDS",
    "NETWORK_KINDS",
    "NOT_INJECTED",
    "PROCESS_KINDS",
    "ZOOKEEPER_REFUSED",
    "Injected",
    "Injector",
    "NotCarriedOut",
    "active_controller",
    "refused_without_zookeeper",
    "said",
]


def active_controller(
    cluster: ProcessCluster, zookeeper: bool, network: Network | None = None
) -> int | None:
    """The node that is the active controller now, or None if none is known (the
    nodes reached on their namespaces' addresses with a ``network``)."""
    if zookeeper:
        where = cluster.bootstrap
        if network is not None:
            where = ",".join(
                f"{network.address(b)}:{p}" for b, p in cluster.broker_ports.items()
            )
        client = AdminClient({"bootstrap.servers": where, "log_level": 0})
        try:
            found = int(client.list_topics(timeout=10).controller_id)
        except Exception:  # no broker answered: none known now
            return None
        return found if found >= 0 else None
    voters = ",".join(
        f"{cluster.host if network is None else network.address(c)}:"
        f"{cluster.listen_port(c)}"
        for c in cluster.controller_ids
    )
    command = [sys.executable, "-m", "minikafka.broker", "metadata-quorum"]
    command += ["--bootstrap-controller", voters, "describe", "--status"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None
    for line in done.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "LeaderId" and int(value.strip()) >= 0:
            return int(value.strip())
    return None


def said(exc: BaseException) -> str:
    """What a failed step's exception says: its text, or its type's name when it has
    none (a future's ``TimeoutError``, which left chaos seed 142's two unanswered
    ElectLeaders recorded as ``start: `` and nothing more)."""
    return str(exc) or type(exc).__name__


class Injector(OtherSteps):
    """Starts and heals :class:`Fault`\\ s on ``cluster``; :meth:`heal_all` leaves every
    node running and none stopped, whatever happened.

    Three threads may call it at once (the runner carries the admin and membership
    steps out on a lane of their own, ZooKeeper's on another: :mod:`chaos.carry`), each
    on faults of its own: a fault's start and heal come one after the other,
    :meth:`heal_all` once no step is under way. A ZooKeeper heal does not start a
    broker a membership step is working on (:meth:`_moving_broker`). Each record's
    ``started`` and ``healed`` are when its step was carried out, on time or not."""

    def __init__(
        self,
        cluster: ProcessCluster,
        zookeeper: bool,
        network: Network | None = None,
        servers: str = "",
        topic: str = "chaos",
        disks: Disks | None = None,
        proxies: LinkProxies | None = None,
        replication_factor: int = 3,
    ) -> None:
        self.cluster, self.zookeeper, self.network = cluster, zookeeper, network
        self.replication_factor = replication_factor
        """The topic's replicas per partition: what a ``reassign`` keeps."""
        self.proxies = proxies
        """The link proxies that carry the link faults out where no ``network``."""
        self.servers = servers or cluster.bootstrap
        """The clients' bootstrap servers, for the admin operations."""
        self.topic = topic
        self.done: list[Injected] = []
        self._active: dict[int, Injected] = {}  # id(fault) -> its record
        # The runner carries long steps out on a thread of their own (chaos.carry):
        # the records' list and map are changed under this lock, and read as copies.
        self._lock = threading.Lock()
        self._paused: set[int] = set()
        self._zookeeper_paused: int | None = None
        self._assignment: dict[int, list[int]] = {}
        self._slowed: set[int] = set()
        self.disks = disks
        self.halted: set[int] = set()
        """Brokers that halted on a full disk (their line in the log), as Kafka's do."""
        self.stopped_without_zookeeper: set[int] = set()
        """ZooKeeper-mode brokers that stopped at start-up because no ZooKeeper server
        answered (:data:`ZOOKEEPER_REFUSED`), as Kafka's do."""
        self.retired: set[int] = set()
        """Brokers added and shut down again: not started at the end."""
        self._moves: dict[int, dict[int, list[int]]] = {}  # id(fault) -> assignment
        # Brokers a membership step is working on, which a ZooKeeper heal (on a lane
        # of its own beside theirs: chaos.carry) does not start; and of those, the
        # ones such a heal left to their step's heal to start again.
        self._moving: set[int] = set()
        self._left: set[int] = set()
        self._home_assignment: dict[int, list[int]] = {}

    def note_zookeeper_refusals(self) -> None:
        """Note every broker that is down because its start-up gave up for want of
        ZooKeeper (:func:`refused_without_zookeeper`), before anything starts it again
        and its log goes on: a fault's heal may (a ``broker-remove`` heal did, chaos
        seed 125), not only ZooKeeper's."""
        if not self.zookeeper:
            return
        for node in self.cluster.node_ids:
            if (
                node not in self.stopped_without_zookeeper
                and self.cluster.pid(node) is None
                and refused_without_zookeeper(self.cluster, node)
            ):
                self.stopped_without_zookeeper.add(node)

    def start(self, fault: Fault, now: float) -> None:
        self.note_zookeeper_refusals()
        if fault.kind not in INJECTED:
            raise ValueError(f"{fault.kind} cannot be injected yet")
        if (
            fault.kind in NETWORK_KINDS
            and self.network is None
            and self.proxies is None
        ):
            raise ValueError(f"{fault.kind} needs namespaces or the link proxies")
        if fault.kind in ZOOKEEPER_KINDS and not self.zookeeper:
            raise ValueError(f"{fault.kind} needs ZooKeeper mode")
        if fault.kind in DISK_KINDS and (
            self.disks is None or not set(fault.targets) <= set(self.disks.mounted)
        ):
            raise ValueError(f"{fault.kind} needs the node's log dir on a tmpfs")
        record = Injected(fault)
        with self._lock:
            self.done.append(record)
            self._active[id(fault)] = record
        try:
            if fault.kind in PARTITION_KINDS:
                self._links().cut(fault.links)
                record.started = now
                return
            if fault.kind not in (*PROCESS_KINDS, "slow"):
                record.nodes = fault.targets
                if fault.kind in ("disk-full", "broker-remove"):
                    held = [
                        f"node {node} already down ({kind})"
                        for node in fault.targets
                        if (kind := self._down_by(node, record)) is not None
                    ]
                    if held:  # by the active controller's kill, which no one foresaw
                        record.skipped = ", ".join(held)
                        return
                try:
                    with self._moving_broker(fault, heal=False):
                        record.detail = self._start_other(fault)
                except NotCarriedOut as why:
                    record.skipped = str(why)
                    return
                record.started = now
                return
            nodes = fault.targets
            if fault.kind == "kill-active-controller":
                found = active_controller(self.cluster, self.zookeeper, self.network)
                if found is None:
                    gone = [
                        f"node {node} ({kind})"
                        for node in self.cluster.controller_ids
                        if (kind := self._down_by(node, record)) is not None
                    ]
                    if gone and not self.zookeeper:
                        record.skipped = f"no active controller: {', '.join(gone)} down"
                        return
                    raise RuntimeError("no active controller known")
                nodes = (found,)
            assert ACTIVE_CONTROLLER not in nodes
            record.nodes = nodes
            for node in nodes:
                down = self._down_by(node, record)
                if down is not None:
                    # The schedule cannot know which node the active controller will
                    # be: a fault on a node that one took down is skipped, and said so.
                    record.skipped = f"node {node} already down ({down})"
                    return
                if self.cluster.pid(node) is None:
                    raise RuntimeError(f"node {node} is not running")
                if fault.kind == "slow":
                    params = dict(fault.params)
                    if self.network is not None:
                        record.detail = operations.slow(self.network, node, params)
                    else:
                        assert self.proxies is not None
                        record.detail = self.proxies.slow(node, params)
                    self._slowed.add(node)
                    record.started = now
                    return
                if fault.kind == "pause":
                    self.cluster.signal(node, signal.SIGSTOP)
                    self._paused.add(node)
                else:
                    self.cluster.kill(node)
            record.started = now
        except Exception as exc:  # the run goes on: the record says what failed
            record.error = f"start: {said(exc)}"

    def skip(self, fault: Fault, why: str) -> None:
        """``fault`` recorded as skipped, neither started nor healed (:mod:`chaos.carry`
        skips a start that could come only after its drawn heal)."""
        with self._lock:
            self.done.append(Injected(fault, skipped=why))

    def _down_by(self, node: int, record: Injected) -> str | None:
        """The kind of another active fault that took ``node`` down, if one did."""
        for other in self._records():
            if (
                other is not record
                and other.started is not None
                and node in other.nodes
            ):
                return other.fault.kind
        return None

    def heal(self, fault: Fault, now: float) -> None:
        self.note_zookeeper_refusals()
        with self._lock:
            record = self._active.pop(id(fault), None)
        if record is None or record.started is None:
            return
        try:
            if fault.kind in PARTITION_KINDS:
                self._links().heal(fault.links)
            elif fault.kind == "slow":
                for node in record.nodes:
                    if self.network is not None:
                        netns.unslow(self.network, node)
                    elif self.proxies is not None:
                        self.proxies.unslow(node)
                    self._slowed.discard(node)
            elif fault.kind not in PROCESS_KINDS:
                with self._moving_broker(fault, heal=True):
                    record.detail += "; heal: " + self._heal_other(fault)
            else:
                for node in record.nodes:
                    self._revive(node)
            record.healed = now
        except Exception as exc:
            record.error = f"heal: {said(exc)}"

    def _links(self) -> Network | LinkProxies:
        """What cuts and heals links: the namespaces' rules, or the proxies."""
        links = self.network or self.proxies
        assert links is not None
        return links

    def _revive(self, node: int) -> None:
        if node in self._paused:
            self.cluster.signal(node, signal.SIGCONT)
            self._paused.discard(node)
        elif self.cluster.pid(node) is None:
            # Not waiting for its ready line: a broker is ready only once it has
            # registered with the active controller, which a fault healed at the same
            # instant may be about to start. Whether every node came back is what the
            # runner's wait for a whole cluster, and the crash check, say.
            self.cluster.start(node, wait=False)

    def heal_all(self) -> None:
        """Every fault still active healed, every paused node continued, every node
        not running started."""
        self.note_zookeeper_refusals()
        for record in self._records():
            self.heal(record.fault, time.time())
        if self.network is not None or self.proxies is not None:
            self._links().heal()
        for node in list(self._paused):
            self._revive(node)
        if self.zookeeper:
            pid, self._zookeeper_paused = self._zookeeper_paused, None
            operations.zookeeper_up(self.cluster, "pause-zookeeper", pid)
            operations.zookeeper_up(self.cluster, "kill-zookeeper", None)
            self._start_refused_without_zookeeper()
        for node in self.cluster.node_ids:
            if node not in self.retired and self.cluster.pid(node) is None:
                self.cluster.start(node, wait=False)
