"""The security of a node's own channels: inter-broker and controller traffic.

Kafka's brokers reach each other on the inter-broker listener, named by
``inter.broker.listener.name`` or, the older way, by ``security.inter.broker.protocol``
(the listener named after the protocol; setting both is refused, as Kafka refuses it).
That listener's security protocol is what the replica fetchers, the transaction marker
and AddPartitionsToTxn senders, and in ZooKeeper mode the controller's channels to the
brokers (LeaderAndIsr, UpdateMetadata, StopReplica) and the brokers' to the controller
(AlterPartition, ControlledShutdown) speak, with ``sasl.mechanism.inter.broker.protocol``.

In KRaft the controllers are reached on the first of ``controller.listener.names``: the
brokers' channel to the active controller (registration, heartbeats, AlterPartition,
forwarded requests), the observers' metadata fetches and the Raft traffic between the
voters speak its protocol, with ``sasl.mechanism.controller.protocol``.

Each side's TLS settings and the node's own SASL login are that listener's
(:class:`minikafka.net.ClientSecurity`), read at start-up so that a bad value stops it
naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import ConfigError
from minikafka.net import (
    CONTROLLER_MECHANISM,
    INTER_BROKER_MECHANISM,
    SECURITY_PROTOCOLS,
    ClientSecurity,
    security_protocol_map,
)

from ._roles import INTER_BROKER_LISTENER_NAME, Roles

SECURITY_INTER_BROKER_PROTOCOL = "security.inter.broker.protocol"


def inter_broker_listener_name(props: Mapping[str, str]) -> str | None:
    """``inter.broker.listener.name``, or the listener ``security.inter.broker.protocol``
    names; None when neither is set (Kafka's default: PLAINTEXT)."""
    name = props.get(INTER_BROKER_LISTENER_NAME, "").strip()
    protocol = props.get(SECURITY_INTER_BROKER_PROTOCOL, "").strip().upper()
    if name and protocol:
        raise ConfigError(
            SECURITY_INTER_BROKER_PROTOCOL,
            f"only one of {INTER_BROKER_LISTENER_NAME} and "
            f"{SECURITY_INTER_BROKER_PROTOCOL} should be set",
        )
    if protocol and protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(
            SECURITY_INTER_BROKER_PROTOCOL,
            f"{protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}",
        )
    return name or protocol or None


@attrs.frozen
class ChannelSecurity:
    """How this node's own clients connect: to brokers, and to controllers."""

    inter_broker: ClientSecurity = attrs.field(factory=ClientSecurity)
    controller: ClientSecurity = attrs.field(factory=ClientSecurity)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], roles: Roles) -> ChannelSecurity:
        protocols = security_protocol_map(props)
        inter_broker = ClientSecurity()
        if roles.inter_broker_listener_name is not None:
            name = roles.inter_broker_listener_name
            inter_broker = ClientSecurity.for_listener(
                props, name, protocols.get(name, name), INTER_BROKER_MECHANISM
            )
        controller = ClientSecurity()
        if roles.controller_listener_names:
            name = roles.controller_listener_names[0]
            controller = ClientSecurity.for_listener(
                props, name, protocols.get(name, name), CONTROLLER_MECHANISM
            )
        return cls(inter_broker, controller)
