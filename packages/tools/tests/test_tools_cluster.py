"""``minikafka cluster unregister``: kafka-cluster.sh's ``unregister --id N`` (KIP-631),
against a small server on 127.0.0.1 that answers UnregisterBroker v0 as a KRaft broker
would (the controller knows brokers 1 to 3), or that does not serve the API at all, as a
ZooKeeper-mode broker does not.

The lines printed are Kafka's ``ClusterTool``'s. The command calls ``trio.run`` itself,
so it runs through typer's CliRunner in a worker thread while the server runs in the
test's trio loop; every wait has a deadline.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import attrs
import trio
import typer
from kio.schema.errors import ErrorCode
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest
from kio.schema.unregister_broker.v0.response import UnregisterBrokerResponse
from kio.static.primitive import i32Timedelta
from typer.testing import CliRunner

from minikafka.net import ApiKey, Request, handle_api_versions
from minikafka.net.testing import serving
from minikafka.tools import unregister_command

DEADLINE = 30.0  # seconds; a shared machine may be slow, never this slow
KRAFT_APIS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.UNREGISTER_BROKER: (0, 0),
}
ZK_APIS: dict[int, tuple[int, int]] = {ApiKey.API_VERSIONS: (0, 4)}


@attrs.define(eq=False)
class Broker:
    """A RequestHandler: UnregisterBroker for the registered ids, when ``supported``
    lists it."""

    supported: Mapping[int, tuple[int, int]]
    registered: set[int] = attrs.field(factory=lambda: {1, 2, 3})

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.supported

    async def handle(self, request: Request) -> None:
        if request.api_key != ApiKey.UNREGISTER_BROKER:
            handle_api_versions(request, self.supported)
            return
        body = request.body_as((UnregisterBrokerRequest,))
        broker_id = int(body.broker_id)
        error = ErrorCode.broker_id_not_registered
        if broker_id in self.registered:
            self.registered.remove(broker_id)
            error = ErrorCode.none
        request.respond(
            UnregisterBrokerResponse(
                throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                error_code=error,
                error_message=None,
            )
        )


@asynccontextmanager
async def broker(handler: Broker) -> AsyncIterator[str]:
    async with serving(handler) as server:
        host, port = server.bound_address()
        yield f"{host}:{port}"


async def invoke(*args: str) -> tuple[int, str, str]:
    """Run ``minikafka cluster unregister ARGS`` in a thread: (exit code, stdout,
    stderr)."""
    app = typer.Typer()
    app.command()(unregister_command)

    def run() -> tuple[int, str, str]:
        result = CliRunner().invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    with trio.fail_after(DEADLINE):
        return await trio.to_thread.run_sync(run)


async def test_a_registered_broker_is_unregistered_in_kafkas_words() -> None:
    handler = Broker(KRAFT_APIS)
    async with broker(handler) as bootstrap:
        code, out, err = await invoke("--bootstrap-server", bootstrap, "--id", "3")
        assert (code, out, err) == (0, "Broker 3 is no longer registered.\n", "")
        assert handler.registered == {1, 2}
        # Kafka's short flags
        code, out, _ = await invoke("-b", bootstrap, "-i", "2")
        assert (code, out) == (0, "Broker 2 is no longer registered.\n")


async def test_an_unknown_broker_is_kafkas_error_and_exit_status_1() -> None:
    async with broker(Broker(KRAFT_APIS)) as bootstrap:
        code, out, err = await invoke("--bootstrap-server", bootstrap, "--id", "7")
    assert (code, out) == (1, "")
    assert err.startswith("Error: BROKER_ID_NOT_REGISTERED"), err


async def test_a_cluster_without_the_api_says_so_as_kafkas_tool_does() -> None:
    """A ZooKeeper-mode broker does not list UnregisterBroker in ApiVersions: Kafka's
    tool catches the UnsupportedVersionException, prints its line and exits 0."""
    async with broker(Broker(ZK_APIS)) as bootstrap:
        code, out, err = await invoke("--bootstrap-server", bootstrap, "--id", "3")
    assert (code, out, err) == (
        0,
        "The target cluster does not support the broker unregistration API.\n",
        "",
    )


def test_the_id_is_required() -> None:
    app = typer.Typer()
    app.command()(unregister_command)
    result = CliRunner().invoke(app, ["--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 2
