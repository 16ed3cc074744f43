"""Brokers joining and leaving mid-run: ``broker-add`` and ``broker-remove``, as an
operator grows or shrinks a Kafka cluster.

- ``broker-add``: a broker with a new id (the nemesis's) is laid out (its properties
  and, in KRaft mode, its directory formatted with the cluster's id, as
  ``kafka-storage.sh format`` would; :meth:`ProcessCluster.add_node`), on a free port,
  in a network namespace of its own when the run has them, started, and waited for
  until it has registered (its ready line: with the controller in KRaft mode, its
  ``/brokers/ids`` znode in ZooKeeper mode). Then a replica of every partition of the
  topic is moved onto it by ``minikafka reassign-partitions --execute`` (partition P's
  replica at position P mod RF, so a preferred leader moves too), started, not waited
  for (Kafka's tool returns once the move has begun). Heal: the first
  assignment reassigned back, the reassignment waited for, and the broker shut down
  (SIGTERM: a controlled shutdown); its id is not used again. A move back that does not
  complete is sent again, and if it still does not, the broker is left running (its
  replicas are not all elsewhere).
- ``broker-remove``: the broker drained first, every partition's replica on it
  reassigned to a broker not holding one (``kafka-reassign-partitions.sh`` semantics:
  the new replica catches up, joins the ISR, and only then is the old one removed),
  the reassignment waited for, then the broker shut down. Heal: started again on its
  data, waited for until registered, and the first assignment reassigned back
  (started, not waited for).

Only a drain before a shutdown is waited for: until every partition shows exactly the
target replicas, all in sync, for :data:`DRAIN_WAIT` at most; one not done by then (a
target replica down by another fault) is said in the record, and a removed broker is
stopped anyway, as an operator whose patience ran out would (it comes back at the
heal); an added one is not, as it would not come back.

A broker told to stop (SIGTERM) gets :data:`STOP_WAIT` to end; one still running then
is killed (SIGKILL), as a service manager does once its stop timeout has passed, and
the record says so. It is never left ending on its own: a ``broker-remove`` whose
stop failed would have had no heal to start the broker again, and the end's
``heal_all`` may find it still ending (chaos seed 303: node 2 ended 61 s after its
SIGTERM, under a paused ZooKeeper, and was never started again).

An added broker retired at its heal is then unregistered in KRaft mode, as an operator
retires a broker for good: UnregisterBroker (KIP-631), sent by ``minikafka cluster
unregister`` (Kafka's ``kafka-cluster.sh unregister``), the tool's answer recorded. A
removed broker, which comes back at its heal, keeps its registration meanwhile, fenced
once its heartbeats stop, as Kafka's does; placement never picks a fenced broker. In
ZooKeeper mode a broker's ephemeral ``/brokers/ids`` znode goes with its session.
"""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ClusterError, ProcessCluster, free_ports

from . import operations
from .netcluster import place_node
from .netns import Network

DRAIN_WAIT = 30.0
"""Seconds a drain gets to complete before its broker is stopped anyway (the
cluster's lane waits meanwhile, :mod:`chaos.carry`: the steps queued behind it there
are late, the others, ZooKeeper's heals among them, are not)."""
READY_WAIT = 60.0
"""Seconds a started broker gets to register."""
STOP_WAIT = 90.0
"""Seconds a broker told to stop gets to end before it is killed. Its own shutdown is
bounded by more than a minute: ``controlled.shutdown.timeout.ms`` (30 s) for the
controlled shutdown, as long again for the requests in flight, then the ZooKeeper
session's close; Kafka 2.8's is not bounded at all
(``controlled.shutdown.max.retries`` attempts of up to ``request.timeout.ms`` each,
``controlled.shutdown.retry.backoff.ms`` apart, then an unclean shutdown). 90 s is
systemd's default stop timeout, after which it kills the service."""
RETIRE_TRIES = 2
"""How often an added broker's heal sends its move back before giving up on shutting
it down (the reassignment is the same each time: sending it again is harmless)."""


def onto(assignment: dict[int, list[int]], node: int) -> dict[int, list[int]]:
    """Every partition with one replica moved onto ``node``: partition P's at position
    P mod its replica count."""
    moved = {}
    for p, replicas in assignment.items():
        new = list(replicas)
        if node not in new:
            new[p % len(new)] = node
        moved[p] = new
    return moved


def away(
    assignment: dict[int, list[int]], node: int, brokers: list[int]
) -> dict[int, list[int]]:
    """Every partition's replica on ``node`` moved to a broker of ``brokers`` not
    holding one (the one holding the fewest replicas so far, the lowest id first);
    ValueError if a partition has none to go to."""
    load = {b: 0 for b in brokers if b != node}
    for replicas in assignment.values():
        for b in replicas:
            if b in load:
                load[b] += 1
    moved = {}
    for p, replicas in sorted(assignment.items()):
        if node not in replicas:
            moved[p] = list(replicas)
            continue
        spare = sorted((n, b) for b, n in load.items() if b not in replicas)
        if not spare:
            raise ValueError(f"partition {p} has no broker to move to from {node}")
        target = spare[0][1]
        load[target] += 1
        moved[p] = [target if b == node else b for b in replicas]
    return moved


def wait_assigned(
    servers: str, topic: str, target: dict[int, list[int]], timeout: float
) -> bool:
    """Whether every partition of ``topic`` shows exactly ``target``'s replicas, all
    in sync, within ``timeout`` seconds (a reassignment completed)."""
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = client.list_topics(topic, timeout=5).topics[topic].partitions
            if all(
                p in found
                and set(found[p].replicas) == set(r)
                and set(found[p].isrs) == set(r)
                for p, r in target.items()
            ):
                return True
        except Exception:  # no broker answered: ask again
            pass
        time.sleep(0.5)  # polling the cluster's state, inside the deadline
    return False


def _moved(
    servers: str, topic: str, target: dict[int, list[int]], *, wait: bool
) -> tuple[str, bool]:
    """``target`` reassigned, and with ``wait`` waited for: what the tool said (and
    whether it completed), and whether anything may have moved (the tool refuses,
    mid-fault, an assignment naming a broker not registered then: Kafka's answer,
    recorded; when the controller refused only some partitions, the others moved,
    and the heal must move them back: chaos seed 141)."""
    try:
        said = operations.reassign(servers, topic, target)
    except operations.RefusedError as refused:
        return f"refused: {refused}", refused.per_partition
    if not wait:
        return said, True
    if wait_assigned(servers, topic, target, DRAIN_WAIT):
        return f"{said}; completed", True
    return f"{said}; not completed within {DRAIN_WAIT:.0f}s", True


def _gone(cluster: ProcessCluster, node: int) -> str:
    if cluster.zookeeper_mode:
        return f"broker {node} shut down (its /brokers/ids znode gone with its session)"
    return f"broker {node} shut down (registered still, fenced)"


def shut_down(cluster: ProcessCluster, node: int) -> str:
    """Broker ``node`` stopped (SIGTERM: a controlled shutdown), killed if it has not
    ended after :data:`STOP_WAIT`; what was done. Once this returns, the broker is not
    running."""
    try:
        cluster.stop(node, timeout=STOP_WAIT)
    except ClusterError:  # still running: its shutdown waits on something gone
        if cluster.pid(node) is not None:
            cluster.kill(node)
        return (
            f"broker {node} still running {STOP_WAIT:.0f}s after SIGTERM, killed "
            f"(SIGKILL); {_gone(cluster, node)}"
        )
    return _gone(cluster, node)


def add_broker(
    cluster: ProcessCluster,
    node: int,
    network: Network | None,
    servers: str,
    topic: str,
    home: dict[int, list[int]],
) -> tuple[str, dict[int, list[int]]]:
    """Broker ``node`` laid out, started, registered, and replicas of ``home`` (the
    topic's assignment before any membership change) moved onto it; what was done,
    and what the heal moves back to ("": nothing moved)."""
    cluster.broker_ports[node] = free_ports(1)[0]
    cluster.add_node(node)
    if network is not None:
        place_node(cluster, network, node)
    cluster.start(node, timeout=READY_WAIT)
    first = home
    said, moved = _moved(servers, topic, onto(first, node), wait=False)
    registered = f"broker {node} registered on port {cluster.port(node)}"
    return f"{registered}; {said}", first if moved else {}


def retire_broker(
    cluster: ProcessCluster,
    node: int,
    servers: str,
    topic: str,
    first: dict[int, list[int]],
) -> str:
    """The added broker ``node`` drained back to ``first`` and shut down; or, if the
    move back did not complete after :data:`RETIRE_TRIES` tries (the controller
    moving, a replica down), left running: an operator does not shut down a broker
    that still holds replicas, which would leave their partitions short of a replica
    for good."""
    said = "nothing to move back"
    if first:
        for _ in range(RETIRE_TRIES):
            said = _moved(servers, topic, first, wait=True)[0]
            if said.endswith("; completed"):
                break
        else:
            return f"{said}; broker {node} left running, its replicas not moved back"
    gone = shut_down(cluster, node)
    if cluster.zookeeper_mode:
        return f"{said}; {gone}"
    return f"{said}; {gone}; {operations.unregister(servers, node)}"


def remove_broker(
    cluster: ProcessCluster,
    node: int,
    servers: str,
    topic: str,
    home: dict[int, list[int]],
    avoid: frozenset[int] = frozenset(),
) -> tuple[str, dict[int, list[int]]]:
    """Broker ``node`` drained of its replicas in ``home`` (the topic's assignment
    before any membership change; onto running brokers, those of ``avoid``, held by
    other faults, only if no other will do) and shut down; what was done, and what the
    heal moves back to."""
    first = home
    running = [b for b in sorted(cluster.broker_ports) if cluster.pid(b) is not None]
    brokers = [b for b in running if b not in avoid or b == node]
    if len(brokers) - 1 < len(next(iter(first.values()), [])):  # RF others needed
        brokers = running
    said, moved = _moved(servers, topic, away(first, node, brokers), wait=True)
    return f"{said}; {shut_down(cluster, node)}", first if moved else {}


def return_broker(
    cluster: ProcessCluster,
    node: int,
    servers: str,
    topic: str,
    first: dict[int, list[int]],
) -> str:
    """The removed broker ``node`` started again, registered, and ``first``
    reassigned back."""
    if cluster.pid(node) is None:
        cluster.start(node, timeout=READY_WAIT)
    said = "nothing to move back"
    if first:
        said = _moved(servers, topic, first, wait=False)[0]
    return f"broker {node} registered again; {said}"
