"""A broker sends a controller request again when the controller moved (Kafka's
``NodeToControllerRequestThread``, KIP-590 forwarding).

What is checked:

- the decision, without I/O: a failed attempt is followed by another after the backoff
  until the forwarding timeout (60 s) has passed, then none; a request with no retry
  (heartbeats, registration) gets one attempt;
- an answer is from a stale controller when NOT_CONTROLLER is anywhere in it (Kafka's
  ``errorCounts``), for DescribeQuorum when NOT_LEADER_OR_FOLLOWER is;
- the channel: a CreateTopics answered NOT_CONTROLLER, or whose connection dropped, goes
  to the next voter, and the caller gets the active controller's answer, never
  NOT_CONTROLLER; one no voter answers fails REQUEST_TIMED_OUT once the timeout passed;
  a heartbeat hears NOT_CONTROLLER at once, its loop sending the next;
- a topic the broker creates for a Metadata request is asked once, and a voter that
  does not lead leaves it LEADER_NOT_AVAILABLE at once (Kafka's AutoTopicCreationManager
  answers so; the client asks again), not held through the election.
"""

from __future__ import annotations

import functools
import uuid
from typing import cast

import attrs
import pytest
import trio
from kio.schema.describe_quorum.v1 import response as dq_v1
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32

from minikafka.broker._admin import auto_create_topics
from minikafka.broker._controller_channel import ControllerLocator, RemoteController
from minikafka.broker._controller_retry import (
    FORWARDING_RETRY_TIMEOUT,
    RETRY_BACKOFF,
    ControllerRetry,
    from_stale_controller,
    retry_timeout,
)
from minikafka.broker._metadata_cache import MetadataCache
from minikafka.controller import (
    AllocateProducerIdsRequest,
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    ControllerConfig,
    ControllerError,
    ControllerRequest,
    ControllerResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from minikafka.net import ClientError, Node

CREATE = CreateTopicsRequest((CreatableTopic("orders", 1, 1),))


def created(error: ErrorCode) -> CreateTopicsResponse:
    return CreateTopicsResponse((CreatableTopicResult("orders", error),))


# --- the decision ----------------------------------------------------------------------


def test_a_failed_attempt_is_sent_again_after_the_backoff_until_the_timeout() -> None:
    retry = ControllerRetry(first_attempt=100.0, timeout=FORWARDING_RETRY_TIMEOUT)
    assert retry.retries
    assert retry.after_failure(100.0) == RETRY_BACKOFF
    assert retry.after_failure(130.0) == RETRY_BACKOFF
    assert retry.attempts == 3
    # The next attempt would go out at the timeout: the request has timed out.
    assert retry.after_failure(160.0 - RETRY_BACKOFF) is None
    assert retry.after_failure(175.0) is None
    assert retry.attempts == 3


def test_a_request_without_retries_gets_one_attempt() -> None:
    retry = ControllerRetry(first_attempt=5.0, timeout=0.0)
    assert not retry.retries
    assert retry.after_failure(5.0) is None


def test_heartbeats_and_registration_are_not_retried_here_the_others_for_60_s() -> None:
    assert retry_timeout(BrokerHeartbeatRequest(1, 2, 3)) == 0.0
    assert retry_timeout(BrokerRegistrationRequest(1, uuid.uuid4(), ())) == 0.0
    forwarded: list[ControllerRequest] = [
        CREATE,
        AlterPartitionRequest(1, 2, ()),
        AllocateProducerIdsRequest(1, 2),
    ]
    assert [retry_timeout(r) for r in forwarded] == [60.0] * 3


def test_not_controller_anywhere_in_an_answer_marks_it_stale() -> None:
    mixed = CreateTopicsResponse(
        (
            CreatableTopicResult("a", ErrorCode.none),
            CreatableTopicResult("b", ErrorCode.not_controller),
        )
    )
    assert from_stale_controller(mixed)
    assert from_stale_controller(BrokerHeartbeatResponse(ErrorCode.not_controller))
    assert not from_stale_controller(created(ErrorCode.topic_already_exists))
    assert not from_stale_controller(created(ErrorCode.none))


def test_a_describe_quorum_from_a_follower_is_stale_only_for_describe_quorum() -> None:
    wire = dq_v1.DescribeQuorumResponse(
        error_code=ErrorCode.none,
        topics=(
            dq_v1.TopicData(
                topic_name=TopicName("__cluster_metadata"),
                partitions=(
                    dq_v1.PartitionData(
                        partition_index=i32(0),
                        error_code=ErrorCode.not_leader_or_follower,
                        leader_id=i32(-1),  # type: ignore[arg-type]
                        leader_epoch=i32(-1),
                        high_watermark=-1,  # type: ignore[arg-type]
                        current_voters=(),
                        observers=(),
                    ),
                ),
            ),
        ),
    )
    assert from_stale_controller(wire, api_key=55)
    assert not from_stale_controller(wire)


# --- the channel -----------------------------------------------------------------------


@attrs.define(eq=False)
class ScriptedController(RemoteController):
    """A RemoteController whose voters answer from a script instead of the network:
    each voter's answer (or a dropped connection) for every attempt sent to it."""

    script: dict[int, object] = attrs.field(factory=dict, kw_only=True)
    asked: list[int] = attrs.field(factory=list, kw_only=True)

    async def _submit(self, request: ControllerRequest) -> ControllerResponse:
        node_id = self.node.node_id
        self.asked.append(node_id)
        answer = self.script[node_id]
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, CreateTopicsResponse | BrokerHeartbeatResponse)
        return answer


def three_voters(**script: object) -> ScriptedController:
    voters = tuple(Node(i, "127.0.0.1", 9000 + i) for i in range(3))
    return ScriptedController(
        ControllerLocator(voters),
        "cluster",
        script={int(k[1:]): v for k, v in script.items()},
    )


async def test_an_answer_from_a_stale_controller_goes_to_the_next_voter(
    autojump_clock: trio.abc.Clock,
) -> None:
    channel = three_voters(
        n0=ClientError("connection refused"),  # the killed controller
        n1=created(ErrorCode.not_controller),  # a voter that does not lead
        n2=created(ErrorCode.none),  # the new active controller
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        answer = await channel.submit(CREATE)
        nursery.cancel_scope.cancel()
    assert answer == created(ErrorCode.none)
    assert channel.asked == [0, 1, 2]
    assert channel.node.node_id == 2  # the next request goes there first


async def test_a_request_no_controller_answers_times_out_after_the_forwarding_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    channel = three_voters(
        n0=ClientError("connection refused"),
        n1=created(ErrorCode.not_controller),
        n2=created(ErrorCode.not_controller),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        start = trio.current_time()
        with pytest.raises(ControllerError) as caught:
            await channel.submit(CREATE)
        waited = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert caught.value.error_code is ErrorCode.request_timed_out
    assert waited >= FORWARDING_RETRY_TIMEOUT - RETRY_BACKOFF
    assert waited <= FORWARDING_RETRY_TIMEOUT
    assert len(channel.asked) == pytest.approx(
        FORWARDING_RETRY_TIMEOUT / RETRY_BACKOFF, abs=2
    )


async def test_a_heartbeat_hears_not_controller_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    refused = BrokerHeartbeatResponse(ErrorCode.not_controller)
    channel = three_voters(n0=refused, n1=refused, n2=refused)
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        answer = await channel.submit(BrokerHeartbeatRequest(1, 2, 3))
        nursery.cancel_scope.cancel()
    assert answer == refused
    assert channel.asked == [0]
    assert channel.node.node_id == 1  # its next heartbeat asks the next voter


async def test_an_auto_creation_is_asked_once_and_left_leader_not_available(
    autojump_clock: trio.abc.Clock,
) -> None:
    channel = three_voters(
        n0=created(ErrorCode.not_controller),
        n1=created(ErrorCode.not_controller),
        n2=created(ErrorCode.none),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        start = trio.current_time()
        errors = await auto_create_topics(
            channel, cast(MetadataCache, None), ControllerConfig(), ["orders"]
        )
        waited = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert errors == {"orders": ErrorCode.leader_not_available}
    assert channel.asked == [0]
    assert waited == 0
    assert channel.node.node_id == 1  # the client's next Metadata asks the next voter


async def _silent(stream: trio.SocketStream) -> None:
    """A controller cut off mid-session: the connection is there, no answer comes."""
    while await stream.receive_some():
        pass


async def test_a_heartbeat_to_a_silent_controller_gives_up_at_half_the_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Guarantee: a heartbeat the controller never answers fails after the lifecycle
    # timeout (Kafka: half broker.session.timeout.ms), connecting included, and the
    # next goes to the next voter; the broker is not left waiting on a controller cut
    # off until the new active one fences it.
    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, _silent, 0, host="127.0.0.1")
        (listener,) = await nursery.start(serve)
        port = listener.socket.getsockname()[1]
        voters = (Node(0, "127.0.0.1", port), Node(1, "127.0.0.1", 1))
        channel = RemoteController(
            ControllerLocator(voters), "cluster", lifecycle_timeout=2.5
        )
        await nursery.start(channel.run)
        start = trio.current_time()
        with pytest.raises(ControllerError) as caught:
            await channel.submit(BrokerHeartbeatRequest(1, 2, 3))
        waited = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert caught.value.error_code is ErrorCode.request_timed_out
    assert waited == pytest.approx(2.5)
    assert channel.node.node_id == 1
