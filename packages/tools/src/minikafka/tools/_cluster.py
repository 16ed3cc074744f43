"""``minikafka cluster unregister``: Kafka's ``kafka-cluster.sh unregister --id N``
(KIP-631's UnregisterBroker, through the admin client's ``unregister_broker``).

A KRaft broker taken out of service for good keeps its fenced registration until an
operator removes it; this is how. ``minikafka cluster`` is also the local cluster's
supervisor (the broker package's ``up``, ``down``, ``status``...), which adds this
command beside its own, so the line reads as Kafka's does: ``minikafka cluster
unregister --bootstrap-server HOST:PORT --id N``.

The output is Kafka's ``ClusterTool``'s: ``Broker N is no longer registered.``, or, from
a cluster that does not serve the API (a ZooKeeper-mode broker), ``The target cluster
does not support the broker unregistration API.``, exit status 0 both. Any other error
(BROKER_ID_NOT_REGISTERED for an id the controller does not know) is printed under
Kafka's name, exit status 1.
"""

from __future__ import annotations

from typing import Annotated

import typer
from kio.schema.errors import ErrorCode

from minikafka.client import AsyncAdminClient, KafkaException

from ._cli_common import run_tool
from ._connection import raise_for

CLIENT_ID = "minikafka-cluster"
UNSUPPORTED = "The target cluster does not support the broker unregistration API."


async def unregister_broker(cluster: AsyncAdminClient, broker_id: int) -> str:
    """What ``unregister --id broker_id`` prints; a broker's other error raised as the
    tools' :class:`~._connection.BrokerError`."""
    try:
        await cluster.unregister_broker(broker_id)
    except KafkaException as e:
        error = e.args[0]
        if error.code() == ErrorCode.unsupported_version:
            return UNSUPPORTED
        raise_for(error)
        raise
    return f"Broker {broker_id} is no longer registered."


def unregister(
    bootstrap_server: Annotated[
        str,
        typer.Option(
            "--bootstrap-server",
            "-b",
            metavar="HOST:PORT",
            help="the broker(s), comma-separated; a broker forwards the request to the "
            "active controller",
        ),
    ],
    broker_id: Annotated[
        int,
        typer.Option("--id", "-i", help="the id of the broker to unregister"),
    ],
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            metavar="FILE",
            help="a properties file for the admin client (security.protocol, ssl.*, "
            "sasl.*)",
        ),
    ] = None,
) -> None:
    """Unregister a broker (kafka-cluster.sh unregister): remove its registration from
    the KRaft cluster's metadata, for a broker retired for good."""

    async def run(cluster: AsyncAdminClient) -> str:
        return await unregister_broker(cluster, broker_id)

    print(run_tool(run, bootstrap_server, CLIENT_ID, config))
