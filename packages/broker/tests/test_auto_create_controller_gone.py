"""Metadata's auto-creation when the controller cannot answer: the topics are
LEADER_NOT_AVAILABLE, which every client retries, as Kafka's AutoTopicCreationManager
answers whatever becomes of the forwarded CreateTopics. A chaos run showed minikafka's
producer failing a send on the NOT_CONTROLLER this used to pass on."""

from __future__ import annotations

from typing import cast

import trio
from kio.schema.errors import ErrorCode

from minikafka.broker._admin import auto_create_topics
from minikafka.broker._controller_channel import ControllerChannel
from minikafka.broker._metadata_cache import MetadataCache
from minikafka.controller import ControllerConfig, ControllerError


class _GoneController:
    """A controller channel whose every request fails, as after a resignation."""

    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    async def submit(self, request: object) -> object:
        raise ControllerError(self.error)


def test_a_controller_that_cannot_answer_leaves_the_topics_leader_not_available() -> (
    None
):
    for error in (ErrorCode.not_controller, ErrorCode.request_timed_out):
        errors = trio.run(
            auto_create_topics,
            cast(ControllerChannel, _GoneController(error)),
            cast(MetadataCache, None),
            ControllerConfig(),
            ["orders", "orders", "payments"],
        )
        assert errors == {
            "orders": ErrorCode.leader_not_available,
            "payments": ErrorCode.leader_not_available,
        }
