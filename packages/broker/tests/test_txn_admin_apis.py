"""DescribeTransactions and ListTransactions on one broker, on the wire, every advertised
version (KIP-664; ListTransactions v1's duration filter is KIP-994): one transaction
followed from InitProducerId through an open transaction to its commit, each step
described and listed as Kafka's coordinator reports it.

What each test proves:

- DescribeTransactions gives the id's state (Empty, Ongoing, CompleteCommit), its
  producer id and epoch, timeout, start time (-1 before a transaction begins) and the
  partitions of the open transaction; an unknown id is TRANSACTIONAL_ID_NOT_FOUND and
  an empty one INVALID_REQUEST, each in its own entry beside the others, its other
  fields zero as in Kafka's answer;
- ListTransactions lists the id with its producer and state in every version, and
  narrows the list by state (an unknown state name is returned in
  ``unknown_state_filters``), by producer id, from v1 by how long the transaction has
  been open and from v2 by a pattern of the whole id (KIP-1152); a pattern that does
  not compile is INVALID_REGULAR_EXPRESSION.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import WireClient, request_body

from .test_txn_apis import (
    DEADLINE,
    RETRY_S,
    TOPIC,
    add_partitions,
    begin,
    broker_and_client,
    end_txn,
    first_partition_error,
    produce,
    retried,
    versions,
)

DESCRIBE, LIST = 65, 66


async def describe(client: WireClient, *ids: str) -> list[Any]:
    answer = await client.call(request_body(DESCRIBE, 0, transactional_ids=ids))
    return list(answer.transaction_states)


async def listed(
    client: WireClient,
    version: int,
    *,
    states: tuple[str, ...] = (),
    pids: tuple[int, ...] = (),
    duration: int = -1,
    pattern: str | None = None,
) -> tuple[dict[str, tuple[int, str]], tuple[str, ...]]:
    """``{id: (producer id, state)}`` and the unknown state filters."""
    answer = await client.call(
        request_body(
            LIST,
            version,
            state_filters=states,
            producer_id_filters=pids,
            duration_filter=duration,
            transactional_id_pattern=pattern,
        )
    )
    assert answer.error_code is ErrorCode.none
    found = {
        str(t.transactional_id): (int(t.producer_id), t.transaction_state)
        for t in answer.transaction_states
    }
    return found, tuple(answer.unknown_state_filters)


def millis(when: datetime.datetime) -> int:
    return round(when.timestamp() * 1000)


async def test_a_transaction_is_described_and_listed_through_its_states(
    tmp_path: Path,
) -> None:
    async with broker_and_client(tmp_path) as (_, client):
        pid, epoch = await begin(client, "watched")
        [idle] = await describe(client, "watched")
        assert idle.error_code is ErrorCode.none
        assert (idle.transaction_state, int(idle.producer_id)) == ("Empty", pid)
        assert int(idle.producer_epoch) == epoch
        assert idle.transaction_timeout == datetime.timedelta(minutes=1)
        assert idle.transaction_start_time is None  # -1 on the wire
        assert idle.topics == ()
        for version in versions(LIST):
            found, _ = await listed(client, version)
            assert found == {"watched": (pid, "Empty")}

        await retried(
            client,
            add_partitions(3, "watched", pid, epoch, [0]),
            first_partition_error,
        )
        await produce(client, "watched", pid, epoch, 0)
        [open_] = await describe(client, "watched")
        assert open_.transaction_state == "Ongoing"
        assert [(t.topic, list(t.partitions)) for t in open_.topics] == [(TOPIC, [0])]
        assert open_.transaction_start_time is not None
        assert millis(open_.transaction_start_time) > 0
        assert (await listed(client, 0, states=("Ongoing",)))[0] == {
            "watched": (pid, "Ongoing")
        }
        assert (await listed(client, 0, states=("Empty",)))[0] == {}
        assert (await listed(client, 0, pids=(pid + 1,)))[0] == {}
        found, unknown = await listed(client, 0, states=("Ongoing", "Hanging"))
        assert (found, unknown) == ({"watched": (pid, "Ongoing")}, ("Hanging",))
        # v1: open for longer than an hour? Not yet; longer than 0 ms: yes, once a
        # millisecond has passed on the broker's clock.
        assert (await listed(client, 1, duration=3_600_000))[0] == {}
        with trio.fail_after(DEADLINE):
            while True:
                if (await listed(client, 1, duration=0))[0]:
                    break
                await trio.sleep(RETRY_S)

        # v2: the whole id must match the pattern.
        assert (await listed(client, 2, pattern="watch.*"))[0] == {
            "watched": (pid, "Ongoing")
        }
        assert (await listed(client, 2, pattern="watch"))[0] == {}

        ended = await retried(client, end_txn(4, "watched", pid, epoch, True))
        assert ended.error_code is ErrorCode.none
        with trio.fail_after(DEADLINE):
            while True:
                [done] = await describe(client, "watched")
                if done.transaction_state == "CompleteCommit":
                    break
                await trio.sleep(RETRY_S)
        assert done.topics == ()
        assert (await listed(client, 1, states=("CompleteCommit",)))[0] == {
            "watched": (pid, "CompleteCommit")
        }


async def test_a_pattern_that_does_not_compile_is_refused(tmp_path: Path) -> None:
    async with broker_and_client(tmp_path) as (_, client):
        await begin(client, "patterned")
        answer = await client.call(
            request_body(
                LIST,
                2,
                state_filters=(),
                producer_id_filters=(),
                duration_filter=-1,
                transactional_id_pattern="[",
            )
        )
        assert answer.error_code is ErrorCode.invalid_regular_expression
        assert answer.transaction_states == ()


async def test_each_id_described_gets_its_own_answer(tmp_path: Path) -> None:
    async with broker_and_client(tmp_path) as (_, client):
        pid, _ = await begin(client, "known")
        answers = await describe(client, "nobody", "known", "")
        assert [(str(a.transactional_id), a.error_code) for a in answers] == [
            ("nobody", ErrorCode.transactional_id_not_found),
            ("known", ErrorCode.none),
            ("", ErrorCode.invalid_request),
        ]
        assert int(answers[1].producer_id) == pid
        # An error's other fields are left at the message's defaults, as Kafka does.
        assert (int(answers[0].producer_id), int(answers[0].producer_epoch)) == (0, 0)
