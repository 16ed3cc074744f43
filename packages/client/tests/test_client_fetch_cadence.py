"""How soon a consumer asks a leader again: the next Fetch goes out from the task that
handled the last answer, with no round of trio's scheduler between (the broker can hand
a new record only to a Fetch it holds: a consumer slow to ask again adds that delay to
the latency of every record that arrives in the gap).

The shell runs against a leader that answers each Fetch at once with the record at the
fetch offset, in virtual time (``autojump_clock``)."""

from __future__ import annotations

import datetime
from typing import cast

import trio
import trio.testing
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchRequest
from kio.schema.fetch.v11.response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from kio.static.primitive import Records, i32, i32Timedelta, i64

from minikafka.client import ConsumerConfig, TopicInfo
from minikafka.client._consumer import consumer_cores
from minikafka.client._consumer_shell import ConsumerShell
from minikafka.common import TopicPartition
from minikafka.log import build_batch, make_records
from minikafka.net import NetworkClient, Node

TP = TopicPartition("t", 0)
LEADER = Node(1, "h", 9001)


class Leader:
    """Answers each Fetch of ``t-0`` at once with the one record at its offset,
    noting which task sent it; after ``answers`` Fetches, answers no more."""

    def __init__(self, answers: int) -> None:
        self.left = answers
        self.senders: list[trio.lowlevel.Task] = []
        self.done = trio.Event()

    async def send(self, node: Node, body: object) -> object:
        if not isinstance(body, FetchRequest) or self.left == 0:
            self.done.set()
            await trio.sleep_forever()
        assert isinstance(body, FetchRequest)
        self.senders.append(trio.lowlevel.current_task())
        self.left -= 1
        offset = int(body.topics[0].partitions[0].fetch_offset)
        await trio.lowlevel.checkpoint()  # as a socket's answer would
        records = make_records([(None, b"v")], first_offset=offset, timestamp_ms=0)
        return FetchResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            error_code=ErrorCode.none,
            responses=(
                FetchableTopicResponse(
                    topic=body.topics[0].topic,
                    partitions=(
                        PartitionData(
                            partition_index=i32(0),
                            error_code=ErrorCode.none,
                            high_watermark=i64(offset + 1),
                            aborted_transactions=None,
                            records=Records(build_batch(records)),
                        ),
                    ),
                ),
            ),
        )


async def test_the_next_fetch_goes_from_the_task_that_handled_the_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = ConsumerConfig.from_dict({"bootstrap.servers": "h:9001"})
    fetcher, _ = consumer_cores(config)
    fetcher.metadata.nodes = {1: LEADER}
    fetcher.metadata.topics["t"] = TopicInfo(0, (1,))
    fetcher.subscriptions.assign_manually([TP])
    fetcher.subscriptions.seek(TP, 0)
    taken: list[int] = []

    def on_change() -> None:  # the application polls as soon as records arrive
        with shell.lock:
            taken.extend(r.offset for _, run in fetcher.take(500) for r in run)

    leader = Leader(answers=5)
    shell = ConsumerShell(
        fetcher,
        None,
        cast(NetworkClient, leader),
        on_change=on_change,
        clock=trio.current_time,
    )
    with trio.fail_after(10):  # virtual time
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.run)
            await leader.done.wait()
            nursery.cancel_scope.cancel()
    assert taken == [0, 1, 2, 3, 4]
    # One task fetched all five: each next Fetch was sent where the last answer was
    # handled, not by a new task the fetch loop starts on its next turn.
    assert len(set(leader.senders)) == 1
