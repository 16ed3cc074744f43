"""``minikafka metadata-quorum``: Kafka's kafka-metadata-quorum.sh, ``describe --status``
and ``describe --replication`` (KIP-595's DescribeQuorum, with KIP-836's lag times).

Only the quorum's leader can describe it, so the tool finds it one of two ways, as Kafka's
does: ``--bootstrap-server`` names brokers, any of which forwards the request to the
active controller; ``--bootstrap-controller`` names controllers, and the tool asks each in
turn until the leader answers (the others say NOT_LEADER_OR_FOLLOWER). Both are the admin
client's ``describe_metadata_quorum``, whose answer (decoded by
:mod:`minikafka.raft._describe_wire` to wall-clock seconds) is printed by
:mod:`minikafka.raft._describe`, whose two views are the script's.

``--status`` begins with the cluster id, which DescribeQuorum does not carry: from a
broker it comes from Metadata; a controller is asked DescribeCluster (KIP-919, the
client's ``describe_cluster`` through the controllers) if it advertises the API, and
the line is left empty otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Literal

import attrs
import typer
from kio.schema.errors import ErrorCode

from minikafka.client import AsyncAdminClient, KafkaException
from minikafka.raft import QuorumInfo, format_replication, format_status

from ._cli_common import CommandConfig, run_tool, usage
from ._connection import as_tool_error, raise_for

View = Literal["status", "replication"]
CLIENT_ID = "minikafka-metadata-quorum"


# --- the work ----------------------------------------------------------------------------


async def describe_quorum(
    cluster: AsyncAdminClient, *, via_controller: bool
) -> QuorumInfo:
    """The quorum as its leader describes it, times in seconds since the epoch: the
    client's ``describe_metadata_quorum``, which asks each bootstrap server in turn
    (skipping one that cannot be reached and, ``via_controller``, a controller that is
    not the leader). :class:`BrokerError` for an error code, :class:`ToolError` if none
    answered."""
    return await as_tool_error(
        cluster.describe_metadata_quorum(via_controller=via_controller)
    )


async def describe_cluster_id(
    cluster: AsyncAdminClient, *, via_controller: bool
) -> str:
    """The cluster id for ``--status``: a broker's Metadata, a controller's DescribeCluster
    (the client's ``describe_cluster`` through the controllers) if it serves v1, else
    ""."""
    if not via_controller:
        metadata = await cluster.metadata([])  # no topics: only the brokers and the id
        return metadata.cluster_id or ""
    try:
        described = await cluster.describe_cluster(via_controller=True)
    except KafkaException as e:
        error = e.args[0]
        if error.code() < 0:  # none reachable: describe_quorum reports it
            return ""
        if error.code() == ErrorCode.unsupported_version:
            return ""  # the controller does not serve DescribeCluster v1
        raise_for(error)
        raise
    return described.cluster_id


async def describe(
    cluster: AsyncAdminClient,
    view: View,
    *,
    via_controller: bool,
    now: Callable[[], float] = time.time,
) -> str:
    """What ``describe --status`` or ``describe --replication`` prints."""
    if view == "replication":
        return format_replication(
            await describe_quorum(cluster, via_controller=via_controller)
        )
    cluster_id = await describe_cluster_id(cluster, via_controller=via_controller)
    info = await describe_quorum(cluster, via_controller=via_controller)
    # The times are the leader's wall clock, so the lag time is measured on this one.
    return format_status(info, now(), cluster_id)


# --- the command -------------------------------------------------------------------------

quorum_app = typer.Typer(
    name="metadata-quorum",
    help="Describe the KRaft metadata quorum: its leader, voters and their replication "
    "(kafka-metadata-quorum.sh).",
    no_args_is_help=True,
)


@attrs.frozen
class _Bootstrap:
    server: str | None
    controller: str | None
    command_config: str | None


@quorum_app.callback()
def _quorum_group(
    ctx: typer.Context,
    bootstrap_server: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-server",
            metavar="HOST:PORT",
            help="broker(s), comma-separated; a broker forwards to the active controller",
        ),
    ] = None,
    bootstrap_controller: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-controller",
            metavar="HOST:PORT",
            help="controller(s), comma-separated; the quorum's leader answers",
        ),
    ] = None,
    command_config: CommandConfig = None,
) -> None:
    """Describe the KRaft metadata quorum: its leader, voters and their replication
    (kafka-metadata-quorum.sh)."""
    # Checked by the subcommand, so that `describe --help` works without either.
    ctx.obj = _Bootstrap(bootstrap_server, bootstrap_controller, command_config)


@quorum_app.command("describe")
def describe_command(
    ctx: typer.Context,
    status: Annotated[
        bool,
        typer.Option(
            "--status",
            help="a summary: leader, epoch, high watermark, lag, voters, observers",
        ),
    ] = False,
    replication: Annotated[
        bool,
        typer.Option(
            "--replication",
            help="one row a replica: log end offset, lag, last fetch and catch-up times",
        ),
    ] = False,
) -> None:
    """Describe the metadata quorum, as its leader sees it."""
    bootstrap = ctx.obj
    assert isinstance(bootstrap, _Bootstrap)
    if (bootstrap.server is None) == (bootstrap.controller is None):
        raise usage("give exactly one of --bootstrap-server, --bootstrap-controller")
    if status == replication:
        raise usage("give exactly one of --status, --replication")
    view: View = "status" if status else "replication"
    via_controller = bootstrap.controller is not None
    servers = (
        bootstrap.controller if bootstrap.controller is not None else bootstrap.server
    )
    assert servers is not None

    async def run(cluster: AsyncAdminClient) -> str:
        return await describe(cluster, view, via_controller=via_controller)

    print(run_tool(run, servers, CLIENT_ID, bootstrap.command_config))
