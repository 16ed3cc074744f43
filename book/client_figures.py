"""The producer and consumer chapters' figures: each client's parts and the requests
between them and the brokers, with the settings that govern each part read from a real
``ProducerConfig`` or ``ConsumerConfig`` (so a changed default changes the figure).
"""

from __future__ import annotations

from typing import Any

from diagrams import SVG, Block, block_diagram

__all__ = ["consumer_parts", "producer_parts"]

_FIELDS = {"max.in.flight.requests.per.connection": "max_in_flight"}


def _setting(config: Any, key: str) -> str:
    """``key = value`` as Kafka names the key, the value read from ``config``."""
    value = getattr(config, _FIELDS.get(key, key.replace(".", "_")))
    if isinstance(value, bool):
        value = str(value).lower()
    elif hasattr(value, "name"):  # an enum such as Acks
        value = value.name.lower()
    return f"{key} = {value}"


def _settings(config: Any, *keys: str) -> str:
    return "\n".join(_setting(config, key) for key in keys)


def producer_parts(config: Any, title: str = "") -> SVG:
    """``produce`` puts a record in its partition's last batch; the Sender drains ready
    batches into requests, up to max.in.flight per leader, and an answer completes a
    batch, sends it back to the front of its queue, or fails it."""
    blocks: list[Block] = [
        ("app", 0, 60, 150, 56, "application\nproduce(topic, value, key)", "#f4f4f4"),
        (
            "partitioner",
            0,
            170,
            150,
            50,
            "Partitioner\nmurmur2(key) or sticky",
            "#e8f0fb",
        ),
        (
            "accumulator",
            200,
            20,
            250,
            150,
            "RecordAccumulator\nper partition, a queue of batches:\n"
            "orders-0: [batch][batch][...]\norders-1: [batch]\n"
            + _settings(config, "batch.size", "linger.ms", "buffer.memory"),
            "#fdebd0",
        ),
        (
            "sender",
            200,
            220,
            250,
            92,
            "Sender\nready(): full, lingered or flushed\ndrains one batch per partition\n"
            + _settings(config, "max.in.flight.requests.per.connection"),
            "#e8f0fb",
        ),
        (
            "inflight1",
            510,
            190,
            170,
            44,
            f"in flight to broker 1\n<= {config.max_in_flight} requests, numbered",
            "#e8f0fb",
        ),
        (
            "inflight2",
            510,
            280,
            170,
            44,
            f"in flight to broker 2\n<= {config.max_in_flight} requests, numbered",
            "#e8f0fb",
        ),
        ("broker1", 780, 190, 110, 44, "leader\nbroker 1", "#f4f4f4"),
        ("broker2", 780, 280, 110, 44, "leader\nbroker 2", "#f4f4f4"),
        (
            "reports",
            510,
            40,
            250,
            70,
            "delivery reports\nhanded out by poll() and flush()\n"
            + _settings(config, "delivery.timeout.ms"),
            "#f4f4f4",
        ),
    ]
    arrows = [
        ("app", "partitioner", "", "request"),
        ("partitioner", "accumulator", "append", "request"),
        ("accumulator", "sender", "ready batches", "request"),
        ("sender", "inflight1", "", "request"),
        ("sender", "inflight2", "", "request"),
        ("inflight1", "broker1", "Produce", "request"),
        ("inflight2", "broker2", "Produce", "request"),
        ("broker1", "inflight1", "", "response"),
        ("broker2", "inflight2", "", "response"),
        ("inflight1", "reports", "done", "data"),
    ]
    return block_diagram(
        blocks,
        arrows,
        title=title,
        note="A retriable error puts the batch back at the front of its queue after "
        + _setting(config, "retry.backoff.ms")
        + ", the same bytes and sequence numbers.",
    )


def consumer_parts(config: Any, title: str = "") -> SVG:
    """The Fetcher asks each leader for records from the positions; poll hands them
    out and moves the positions; the ConsumerCoordinator keeps the member in its group
    and commits the positions."""
    blocks: list[Block] = [
        ("app", 0, 130, 130, 56, "application\npoll(), commit()", "#f4f4f4"),
        (
            "positions",
            250,
            120,
            230,
            76,
            "SubscriptionState\npositions: partition -> next offset\n"
            + _settings(config, "auto.offset.reset", "max.poll.records"),
            "#fdebd0",
        ),
        (
            "fetcher",
            250,
            0,
            230,
            76,
            "Fetcher\none Fetch per leader at a time\n"
            + _settings(config, "fetch.min.bytes", "fetch.max.wait.ms"),
            "#e8f0fb",
        ),
        (
            "coordinator",
            250,
            250,
            230,
            92,
            "ConsumerCoordinator\nJoinGroup, SyncGroup, Heartbeat\n"
            + _settings(
                config,
                "session.timeout.ms",
                "heartbeat.interval.ms",
                "auto.commit.interval.ms",
            ),
            "#e8f0fb",
        ),
        ("leaders", 590, 16, 150, 44, "partition leaders", "#f4f4f4"),
        ("groupcoord", 590, 272, 150, 48, "group coordinator\n(a broker)", "#f4f4f4"),
    ]
    arrows = [
        ("fetcher", "leaders", "Fetch", "request"),
        ("leaders", "fetcher", "records", "response"),
        ("fetcher", "positions", "records", "data"),
        ("positions", "app", "poll: records", "data"),
        ("coordinator", "groupcoord", "", "request"),
        ("groupcoord", "coordinator", "", "response"),
        ("coordinator", "positions", "assignment", "data"),
    ]
    return block_diagram(
        blocks,
        arrows,
        title=title,
        note="OffsetCommit sends the positions to the coordinator; OffsetFetch starts "
        "a newly assigned partition from its committed offset.",
    )
