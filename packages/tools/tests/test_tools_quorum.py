"""``minikafka metadata-quorum describe``: kafka-metadata-quorum.sh's two views of a
quorum, from a small server on 127.0.0.1 that answers DescribeQuorum v1 with a canned
quorum (through the wire codec a controller uses) and Metadata or DescribeCluster with a
cluster id.

The command calls ``trio.run`` itself, so it runs through typer's CliRunner in a worker
thread while the server runs in the test's trio loop; every wait has a deadline.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager

import attrs
import pytest
import trio
from kio.schema.describe_cluster.v1.response import DescribeClusterResponse
from kio.schema.describe_quorum.v1 import request as dq_req
from kio.schema.describe_quorum.v2 import request as dq_req_v2
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta
from kio.static.protocol import ResponsePayload
from typer.testing import CliRunner

from minikafka.common.testing import free_ports
from minikafka.net import ApiKey, Request, build, handle_api_versions, response_schema
from minikafka.net.testing import serving
from minikafka.raft._describe import QuorumInfo, ReplicaInfo
from minikafka.raft._describe_wire import QuorumNode as QuorumVoterNode
from minikafka.raft._describe_wire import (
    check_describe_quorum_request,
    encode_describe_quorum_error,
    encode_describe_quorum_response,
    encode_describe_quorum_response_v2,
)
from minikafka.tools._connection import BrokerError, connect
from minikafka.tools._quorum import describe, quorum_app

DEADLINE = 30.0  # seconds; a shared machine may be slow, never this slow
WALL = 1_700_000_000.0  # the wall clock when the leader's clock read 0
CLUSTER_ID = "MkQuorumTestCluster0"
ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's zero uuid: static voters have no directory

QUORUM = QuorumInfo(
    leader_id=2,
    leader_epoch=7,
    high_watermark=120,
    voters=(
        ReplicaInfo(1, 100, last_fetch=3.25, last_caught_up=2.5),
        ReplicaInfo(2, 130, last_fetch=None, last_caught_up=4.0),
        ReplicaInfo(3, 130, last_fetch=3.999, last_caught_up=3.999),
    ),
    observers=(ReplicaInfo(4, 90, last_fetch=1.0, last_caught_up=None),),
)

BASE_APIS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.DESCRIBE_QUORUM: (0, 1),
}


def leader(request: dq_req.DescribeQuorumRequest) -> ResponsePayload:
    check_describe_quorum_request(request)
    return encode_describe_quorum_response(QUORUM, wall_clock_offset=WALL)


def leader_v2(request: dq_req.DescribeQuorumRequest) -> ResponsePayload:
    check_describe_quorum_request(request)
    voters = [
        QuorumVoterNode(n, "CONTROLLER", "127.0.0.1", 9090 + n) for n in (1, 2, 3)
    ]
    return encode_describe_quorum_response_v2(
        QUORUM, wall_clock_offset=WALL, nodes=voters
    )


def follower(request: dq_req.DescribeQuorumRequest) -> ResponsePayload:
    return encode_describe_quorum_error(ErrorCode.not_leader_or_follower, request)


def failing(request: dq_req.DescribeQuorumRequest) -> ResponsePayload:
    return encode_describe_quorum_error(ErrorCode.broker_not_available)


@attrs.define(eq=False)
class QuorumNode:
    """A RequestHandler: DescribeQuorum from ``answer``; Metadata or DescribeCluster with
    the cluster id when ``supported`` lists them."""

    answer: Callable[[dq_req.DescribeQuorumRequest], ResponsePayload]
    supported: Mapping[int, tuple[int, int]]
    asked: list[int] = attrs.field(factory=list)

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.supported

    async def handle(self, request: Request) -> None:
        self.asked.append(request.api_key)
        if request.api_key == ApiKey.DESCRIBE_QUORUM:
            body = request.body_as(
                (dq_req.DescribeQuorumRequest, dq_req_v2.DescribeQuorumRequest)
            )
            request.respond(self.answer(body))  # type: ignore[arg-type]
        elif request.api_key == ApiKey.METADATA:
            cls = response_schema(ApiKey.METADATA, request.api_version)
            assert cls is not None
            request.respond(
                build(
                    cls,
                    throttle_time=datetime.timedelta(0),
                    brokers=(),
                    cluster_id=CLUSTER_ID,
                    controller_id=-1,
                    topics=(),
                )
            )
        elif request.api_key == ApiKey.DESCRIBE_CLUSTER:
            request.respond(
                DescribeClusterResponse(
                    throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                    error_code=ErrorCode.none,
                    cluster_id=CLUSTER_ID,
                    brokers=(),
                )
            )
        else:
            handle_api_versions(request, self.supported)


BROKER_APIS: dict[int, tuple[int, int]] = {**BASE_APIS, ApiKey.METADATA: (0, 12)}


@asynccontextmanager
async def nodes(*handlers: QuorumNode) -> AsyncIterator[str]:
    """The handlers served on 127.0.0.1, as a bootstrap list in their order."""
    async with AsyncExitStack() as stack:
        addresses = []
        for handler in handlers:
            server = await stack.enter_async_context(serving(handler))
            host, port = server.bound_address()
            addresses.append(f"{host}:{port}")
        yield ",".join(addresses)


async def invoke(*args: str) -> tuple[int, str, str]:
    """Run ``minikafka metadata-quorum ARGS`` in a thread: (exit code, stdout, stderr)."""

    def run() -> tuple[int, str, str]:
        result = CliRunner().invoke(quorum_app, list(args), env={"COLUMNS": "200"})
        return result.exit_code, result.stdout, result.stderr

    with trio.fail_after(DEADLINE):
        return await trio.to_thread.run_sync(run)


def fields(output: str) -> dict[str, str]:
    return {
        name: value.strip()
        for name, value in (line.split(":", 1) for line in output.splitlines())
    }


# --- the two views -----------------------------------------------------------------------


async def test_status_through_a_broker() -> None:
    broker = QuorumNode(leader, BROKER_APIS)
    async with nodes(broker) as bootstrap:
        code, out, err = await invoke(
            "--bootstrap-server", bootstrap, "describe", "--status"
        )
    assert (code, err) == (0, "")
    status = fields(out)
    assert list(status) == [
        "ClusterId",
        "LeaderId",
        "LeaderEpoch",
        "HighWatermark",
        "MaxFollowerLag",
        "MaxFollowerLagTimeMs",
        "CurrentVoters",
        "CurrentObservers",
    ]
    assert status["ClusterId"] == CLUSTER_ID  # from the broker's Metadata
    assert status["LeaderId"] == "2"
    assert status["LeaderEpoch"] == "7"
    assert status["HighWatermark"] == "120"
    assert status["MaxFollowerLag"] == "30"
    # Kafka 4's lists; a v1 answer names no endpoints
    assert status["CurrentVoters"] == '[{"id": 1}, {"id": 2}, {"id": 3}]'
    assert status["CurrentObservers"] == '[{"id": 4}]'
    # Measured on this machine's wall clock against the leader's: long ago, in 2023.
    assert int(status["MaxFollowerLagTimeMs"]) > 10**10
    assert broker.asked.count(ApiKey.METADATA) == 1
    assert broker.asked.count(ApiKey.DESCRIBE_QUORUM) == 1


async def test_the_lag_time_is_the_leaders_wall_clock_against_now() -> None:
    async with nodes(QuorumNode(leader, BROKER_APIS)) as bootstrap:
        with trio.fail_after(DEADLINE):
            async with connect(bootstrap, client_id="test") as cluster:
                out = await describe(
                    cluster, "status", via_controller=False, now=lambda: WALL + 10.0
                )
    # Voter 1 last caught up at 2.5 s on the leader's clock: 7.5 s before 10.0.
    assert fields(out)["MaxFollowerLagTimeMs"] == "7500"


async def test_replication_prints_one_row_a_replica_in_epoch_milliseconds() -> None:
    broker = QuorumNode(leader, BROKER_APIS)
    async with nodes(broker) as bootstrap:
        code, out, err = await invoke(
            "--bootstrap-server", bootstrap, "describe", "--replication"
        )
    assert (code, err) == (0, "")
    rows = [line.split() for line in out.splitlines()]
    assert rows == [
        [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
        ],
        ["2", ZERO_ID, "130", "0", "-1", "1700000004000", "Leader"],
        ["1", ZERO_ID, "100", "30", "1700000003250", "1700000002500", "Follower"],
        ["3", ZERO_ID, "130", "0", "1700000003999", "1700000003999", "Follower"],
        ["4", ZERO_ID, "90", "40", "1700000001000", "-1", "Observer"],
    ]
    assert ApiKey.METADATA not in broker.asked  # no cluster id in this view


async def test_controllers_are_asked_in_turn_until_the_leader_answers() -> None:
    first = QuorumNode(follower, BASE_APIS)
    second = QuorumNode(leader, BASE_APIS)
    async with nodes(first, second) as bootstrap:
        code, out, err = await invoke(
            "--bootstrap-controller", bootstrap, "describe", "--status"
        )
    assert (code, err) == (0, "")
    status = fields(out)
    assert status["ClusterId"] == ""  # the controllers serve no DescribeCluster
    assert status["LeaderId"] == "2"
    assert first.asked.count(ApiKey.DESCRIBE_QUORUM) == 1
    assert second.asked.count(ApiKey.DESCRIBE_QUORUM) == 1


async def test_a_controller_serving_describe_cluster_gives_the_cluster_id() -> None:
    controller = QuorumNode(leader, {**BASE_APIS, ApiKey.DESCRIBE_CLUSTER: (0, 1)})
    async with nodes(controller) as bootstrap:
        code, out, _ = await invoke(
            "--bootstrap-controller", bootstrap, "describe", "--status"
        )
    assert code == 0
    assert fields(out)["ClusterId"] == CLUSTER_ID


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--bootstrap-controller", "--bootstrap-server"])
async def test_a_node_that_is_not_the_leader_is_an_error(option: str) -> None:
    async with nodes(QuorumNode(follower, BROKER_APIS)) as bootstrap:
        code, out, err = await invoke(option, bootstrap, "describe", "--replication")
    assert (code, out) == (1, "")
    assert err.startswith("Error: NOT_LEADER_OR_FOLLOWER")
    assert bootstrap in err


async def test_a_top_level_error_is_printed_under_its_kafka_name() -> None:
    async with nodes(QuorumNode(failing, BROKER_APIS)) as bootstrap:
        code, out, err = await invoke(
            "--bootstrap-server", bootstrap, "describe", "--replication"
        )
    assert (code, out) == (1, "")
    assert err.startswith("Error: BROKER_NOT_AVAILABLE")


async def test_the_async_call_raises_the_kafka_error() -> None:
    async with nodes(QuorumNode(follower, BASE_APIS)) as bootstrap:
        with trio.fail_after(DEADLINE):
            async with connect(bootstrap, client_id="test") as cluster:
                with pytest.raises(BrokerError) as caught:
                    await describe(cluster, "replication", via_controller=True)
    assert caught.value.code == ErrorCode.not_leader_or_follower


def closed_port() -> int:
    """A port nothing listens on (free_ports's: no other test binds it meanwhile)."""
    return free_ports(1)[0]


async def test_an_unreachable_controller_is_an_error() -> None:
    code, out, err = await invoke(
        "--bootstrap-controller",
        f"127.0.0.1:{closed_port()}",
        "describe",
        "--replication",
    )
    assert (code, out) == (1, "")
    assert err.startswith("Error: DescribeQuorum to bootstrap server")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["describe", "--status"],
            "exactly one of --bootstrap-server, --bootstrap-controller",
        ),
        (
            [
                "--bootstrap-server",
                "h:1",
                "--bootstrap-controller",
                "h:2",
                "describe",
                "--status",
            ],
            "exactly one of --bootstrap-server, --bootstrap-controller",
        ),
        (
            ["--bootstrap-server", "h:1", "describe"],
            "exactly one of --status, --replication",
        ),
        (
            ["--bootstrap-server", "h:1", "describe", "--status", "--replication"],
            "exactly one of --status, --replication",
        ),
    ],
)
async def test_usage_errors_exit_2_before_connecting(
    args: list[str], says: str
) -> None:
    code, out, err = await invoke(*args)
    assert (code, out) == (2, "")
    assert says in " ".join(err.split())


async def test_a_v2_answer_names_each_voters_endpoint() -> None:
    """From a node that serves DescribeQuorum v2 (KIP-853) the tool asks v2 and prints
    each voter with its controller listener, as Kafka 4's tool does."""
    broker = QuorumNode(leader_v2, {**BROKER_APIS, ApiKey.DESCRIBE_QUORUM: (0, 2)})
    async with nodes(broker) as bootstrap:
        code, out, err = await invoke(
            "--bootstrap-server", bootstrap, "describe", "--status"
        )
    assert (code, err) == (0, "")
    status = fields(out)
    assert status["CurrentVoters"] == (
        '[{"id": 1, "endpoints": ["CONTROLLER://127.0.0.1:9091"]}, '
        '{"id": 2, "endpoints": ["CONTROLLER://127.0.0.1:9092"]}, '
        '{"id": 3, "endpoints": ["CONTROLLER://127.0.0.1:9093"]}]'
    )
    assert status["CurrentObservers"] == '[{"id": 4}]'
