"""KRaft roles: what one process runs, and which listeners each role needs (KIP-631).

``process.roles`` makes a node a ``broker`` (serves clients, keeps partitions), a
``controller`` (a voter of the metadata quorum), or both (combined mode, minikafka's
single node). ``controller.quorum.voters`` names the voters as ``id@host:port``;
``controller.listener.names`` names the listeners the controllers are reached on; a
broker talks to other brokers on ``inter.broker.listener.name``.

Kafka checks these together at start-up (``KafkaConfig.validateValues`` in KRaft mode);
:func:`check_roles` makes the same checks, each refusal naming the key to fix:

=================== ================================== ====================================
roles               controller.quorum.voters            controller.listener.names
=================== ================================== ====================================
broker              required; must not name node.id     required; none of them in listeners
controller          required; must name node.id         required; listeners are only these
broker,controller   names node.id (empty: this node     if given, at least one in listeners
                    alone, minikafka's single node)
=================== ================================== ====================================

A node with the broker role advertises its listeners minus the controller's (clients
never talk to a controller), and ``inter.broker.listener.name`` must be one of those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs

from minikafka.common import ConfigError
from minikafka.net import Listener

BROKER = "broker"
CONTROLLER = "controller"

PROCESS_ROLES = "process.roles"
QUORUM_VOTERS = "controller.quorum.voters"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
ADVERTISED_LISTENERS = "advertised.listeners"
LISTENERS = "listeners"

DEFAULT_INTER_BROKER_LISTENER = "PLAINTEXT"
"""Kafka's: the listener named after ``security.inter.broker.protocol`` (PLAINTEXT)."""

_VOTER = re.compile(r"(\d+)@(\[[^\]]+\]|[^:@\[\]]+):(\d+)")


@attrs.frozen
class QuorumVoter:
    """One entry of ``controller.quorum.voters``: a controller's id and address."""

    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.node_id}@{host}:{self.port}"


def parse_voters(key: str, value: str) -> tuple[QuorumVoter, ...]:
    """``id@host:port,...`` (an IPv6 host in brackets); empty means no voters given."""
    voters: list[QuorumVoter] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _VOTER.fullmatch(item)
        if match is None:
            raise ConfigError(key, f"{item!r} is not id@host:port")
        port = int(match[3])
        if not 0 < port < 65536:
            raise ConfigError(key, f"{item!r}: port {port} is out of range")
        node_id = int(match[1])
        if any(v.node_id == node_id for v in voters):
            raise ConfigError(key, f"voter {node_id} appears more than once")
        voters.append(QuorumVoter(node_id, match[2].strip("[]"), port))
    return tuple(voters)


def parse_roles(key: str, value: str) -> tuple[str, ...]:
    """``broker``, ``controller`` or both, each at most once."""
    roles = [part.strip().lower() for part in value.split(",") if part.strip()]
    if not roles:
        raise ConfigError(key, "must name broker, controller or both")
    for role in roles:
        if role not in (BROKER, CONTROLLER):
            raise ConfigError(key, f"unknown role {role!r} (broker, controller)")
    if len(set(roles)) != len(roles):
        raise ConfigError(key, f"a role appears more than once in {value!r}")
    return tuple(roles)


@attrs.frozen
class Roles:
    """What this node runs and whom it talks to, checked by :func:`check_roles`."""

    roles: tuple[str, ...]
    node_id: int
    voters: tuple[QuorumVoter, ...]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str | None
    """None on a controller-only node, which talks to no broker."""
    advertised_listeners: tuple[Listener, ...]
    """What a broker tells clients: the advertised listeners, controllers' left out."""

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def is_combined(self) -> bool:
        return self.is_broker and self.is_controller

    @property
    def single_node(self) -> bool:
        """Combined mode and the only voter: minikafka's single node, the one kind of node
        that formats its own directories on first start (``make run`` is one command)."""
        return self.is_combined and all(v.node_id == self.node_id for v in self.voters)

    def __str__(self) -> str:
        return ",".join(self.roles)


def check_roles(
    roles: Sequence[str],
    node_id: int,
    voters: tuple[QuorumVoter, ...],
    controller_listener_names: Sequence[str],
    inter_broker_listener_name: str | None,
    listeners: tuple[Listener, ...],
    advertised: tuple[Listener, ...],
) -> Roles:
    """Kafka's KRaft start-up checks; ``inter_broker_listener_name`` None means not set
    and ``advertised`` () means not set (the listeners then)."""
    names = tuple(n.strip().upper() for n in controller_listener_names if n.strip())
    kept = Roles(tuple(roles), node_id, voters, names, None, ())
    listening = {listener.name for listener in listeners}
    ids = {voter.node_id for voter in voters}
    if not voters and not kept.is_combined:
        raise ConfigError(
            QUORUM_VOTERS, f"must name the controllers when {PROCESS_ROLES}={kept}"
        )
    if kept.is_controller and voters and node_id not in ids:
        raise ConfigError(
            QUORUM_VOTERS,
            f"node.id {node_id} is not one of the voters ({_list(voters)}), but "
            f"{PROCESS_ROLES}={kept} makes this node a controller",
        )
    if not kept.is_controller and node_id in ids:
        raise ConfigError(
            QUORUM_VOTERS,
            f"names node.id {node_id}, but {PROCESS_ROLES}={kept}: only controllers "
            "vote",
        )
    if not kept.is_combined and not names:
        raise ConfigError(
            CONTROLLER_LISTENER_NAMES,
            f"must name the controllers' listener when {PROCESS_ROLES}={kept}",
        )
    if kept.is_controller and names and not listening & set(names):
        raise ConfigError(
            CONTROLLER_LISTENER_NAMES,
            f"none of {','.join(names)} is one of the listeners "
            f"({','.join(sorted(listening))}),"
            " so this controller could not be reached",
        )
    if not kept.is_broker and listening - set(names):
        raise ConfigError(
            LISTENERS,
            f"{','.join(sorted(listening - set(names)))} is not a controller listener "
            f"({CONTROLLER_LISTENER_NAMES}), and {PROCESS_ROLES}=controller serves no "
            "clients",
        )
    if not kept.is_controller and listening & set(names):
        raise ConfigError(
            CONTROLLER_LISTENER_NAMES,
            f"{','.join(sorted(listening & set(names)))} is also one of the listeners, "
            f"but {PROCESS_ROLES}=broker: a broker-only node does not listen as a "
            "controller",
        )
    if not kept.is_broker:
        return kept
    for listener in advertised:
        if listener.name in names:
            raise ConfigError(
                ADVERTISED_LISTENERS,
                f"{listener.name} is a controller listener: clients send nothing to "
                "controllers, so a broker does not advertise it",
            )
    effective = advertised or tuple(lst for lst in listeners if lst.name not in names)
    inter_broker = (
        (inter_broker_listener_name or DEFAULT_INTER_BROKER_LISTENER).strip().upper()
    )
    offered = [listener.name for listener in effective]
    if inter_broker not in offered:
        raise ConfigError(
            INTER_BROKER_LISTENER_NAME,
            f"{inter_broker} is not one of the advertised listeners "
            f"({','.join(offered)}); "
            f"set {INTER_BROKER_LISTENER_NAME} to one of them",
        )
    return attrs.evolve(
        kept, inter_broker_listener_name=inter_broker, advertised_listeners=effective
    )


def check_zookeeper_mode(
    props: Mapping[str, str],
    node_id: int,
    inter_broker_listener_name: str | None,
    listeners: tuple[Listener, ...],
    advertised: tuple[Listener, ...],
) -> Roles:
    """ZooKeeper mode (``zookeeper.connect`` set): a broker, whose controller is whichever
    broker wins ``/controller``. The KRaft keys mean nothing there, so setting one is a
    mistake Kafka 2.8 would not let pass either."""
    for key in (PROCESS_ROLES, QUORUM_VOTERS, CONTROLLER_LISTENER_NAMES):
        if key in props:
            raise ConfigError(
                key,
                "is a KRaft setting; zookeeper.connect is set, so this is ZooKeeper mode",
            )
    # The listener rules are a combined node's with no controller listener: every
    # listener is the broker's and the inter-broker one must be advertised.
    checked = check_roles(
        (BROKER, CONTROLLER),
        node_id,
        (),
        (),
        inter_broker_listener_name,
        listeners,
        advertised,
    )
    return attrs.evolve(checked, roles=(BROKER,))


def _list(voters: tuple[QuorumVoter, ...]) -> str:
    return ",".join(str(v) for v in voters)
