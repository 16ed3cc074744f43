"""``minikafka groups --reset-offsets`` and ``--delete-offsets``: kafka-consumer-groups.sh's
two ways of changing a group's committed offsets (ConsumerGroupCommand's
``resetOffsets`` and ``deleteOffsets``).

``--reset-offsets`` plans a new offset for each partition in scope (``--topic
T[:partitions]`` or ``--all-topics``, the partitions the group committed) by one
scenario: the log start (``--to-earliest``), the high watermark (``--to-latest``), the
committed offset (``--to-current``; the high watermark where none is), a number
(``--to-offset``), the committed offset moved (``--shift-by``), or the first offset at a
time (``--to-datetime``, ``--by-duration`` before now; a partition with no record that
late falls back to the high watermark, with Kafka's warning). A number out of the log's
range is clamped to it, as Kafka's ``checkOffsetsRange`` does. ``--dry-run`` (the
default) prints the plan; ``--execute`` commits it through the admin client's
``alter_consumer_group_offsets`` (OffsetCommit with generation -1). Only a group with no
members may be reset: Empty, or one the coordinator does not know (Dead), which the
commit creates; any other state is refused with Kafka's message and an empty plan.

``--delete-offsets`` deletes one group's offsets of the partitions given (a topic alone
means all its partitions) with OffsetDelete (KIP-496), and prints Kafka's table of each
partition's outcome.

Kafka writes these tools' errors to stdout after a blank line, and so do these. Unlike
Kafka's, the command then exits 1, so that a script notices.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TextIO

import attrs
from kio.schema.errors import ErrorCode

from minikafka.client import AsyncAdminClient, KafkaError, OffsetSpec
from minikafka.common import TopicPartition

from ._connection import BrokerError, ToolError, as_tool_error, error_name, raise_for
from ._groups import (
    DEFAULT_TIMEOUT_MS,
    committed_offsets,
    describe_group,
    list_log_offsets,
)

Scenario = Literal[
    "to-earliest",
    "to-latest",
    "to-current",
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
]
SCENARIOS: tuple[Scenario, ...] = (
    "to-earliest",
    "to-latest",
    "to-current",
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
)
RESETTABLE_STATES = ("Empty", "Dead")  # no members: nobody would overwrite the offsets
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing."
    "In a future major release, the default behavior of this command will be to prompt "
    "the user before executing the reset rather than doing a dry run. You should add the "
    "--dry-run option explicitly if you are scripting this command and want to keep the "
    "current default behavior without prompting."
)


@attrs.frozen
class Reset:
    """A scenario and its argument: an offset, a shift, a time in ms since the epoch, or
    a duration in ms (``by-duration``, subtracted from now when the plan is made)."""

    scenario: Scenario
    value: int = 0


# --- the arguments ------------------------------------------------------------------------


def parse_topic_arg(arg: str) -> tuple[str, tuple[int, ...] | None]:
    """``T`` (every partition) or ``T:0,2``, as ConsumerGroupCommand reads ``--topic``."""
    if ":" not in arg:
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2 or not parts[1]:
        raise ToolError(
            f"Invalid topic arg '{arg}', expected topic name and partitions"
        )
    topic, partitions = parts
    numbers = []
    for p in partitions.split(","):
        if not re.fullmatch(r"[+-]?\d+", p.strip()):
            # Kafka's message, its doubled quote included
            raise ToolError(f"Invalid partition '{p}' specified in topic arg '{arg}''")
        numbers.append(int(p))
    return topic, tuple(numbers)


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_datetime(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+hh``, ``+hh:mm``,
    ``+hhmm``) as ms since the epoch; no zone is UTC, as Kafka's ``Utils.getDateTime``."""
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise ToolError(f'Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = map(int, match.groups()[:7])
    zone = match.group(8) or "Z"
    offset = datetime.timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        offset = -offset if zone[0] == "-" else offset
    try:
        moment = datetime.datetime(
            year,
            month,
            day,
            hour,
            minute,
            second,
            millis * 1000,
            tzinfo=datetime.timezone(offset),
        )
    except ValueError:  # 2024-02-30: Kafka parses strictly
        raise ToolError(f'Unparseable date: "{text}"') from None
    return int(moment.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """An ISO-8601 duration ``PnDTnHnMn.nS`` in ms, as Java's ``Duration.parse`` reads
    it (days are 24 hours; each part may be signed; a ``T`` needs a time part)."""
    match = _DURATION.fullmatch(text)
    if match is None or text.upper().endswith("T") or not any(match.groups()[1:]):
        raise ToolError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    millis = (
        int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60
    ) * 1000 + int(seconds or 0) * 1000
    if fraction:
        part = int(fraction.ljust(9, "0")[:3])
        millis += -part if (seconds or "").startswith("-") else part
    return -millis if sign == "-" else millis


# --- the plan -----------------------------------------------------------------------------


async def partitions_in_scope(
    cluster: AsyncAdminClient,
    group: str,
    topics: Sequence[str],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> list[TopicPartition]:
    """``--all-topics`` (no ``topics``): the partitions the group committed; else each
    ``--topic`` argument's partitions, all of a topic's when none are named (an unknown
    topic is UNKNOWN_TOPIC_OR_PARTITION)."""
    if not topics:
        return sorted(await committed_offsets(cluster, group, timeout_ms=timeout_ms))
    parsed = [parse_topic_arg(t) for t in topics]
    found: list[TopicPartition] = []
    whole = sorted({t for t, ps in parsed if ps is None})
    counts: dict[str, list[int]] = {}
    if whole:
        metadata = await as_tool_error(cluster.list_topics())
        for t in whole:
            described = metadata.topics.get(t)
            if described is None or described.error is not None:
                raise BrokerError(ErrorCode.unknown_topic_or_partition, f"topic '{t}'")
            counts[t] = sorted(described.partitions)
    for topic, partitions in parsed:
        chosen = counts[topic] if partitions is None else partitions
        found += [TopicPartition(topic, p) for p in chosen]
    return list(dict.fromkeys(found))


async def plan(
    cluster: AsyncAdminClient,
    group: str,
    partitions: Sequence[TopicPartition],
    reset: Reset,
    now_ms: int,
    out: TextIO,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[TopicPartition, int]:
    """Each partition's new offset under ``reset`` (ConsumerGroupCommand's
    ``prepareOffsetsToReset``); its warnings go to ``out``, as Kafka prints them."""

    async def offsets(spec: OffsetSpec) -> dict[TopicPartition, int]:
        return await list_log_offsets(cluster, partitions, spec)

    def every(
        found: Mapping[TopicPartition, int], what: str
    ) -> dict[TopicPartition, int]:
        for tp in partitions:
            if tp not in found:
                raise ToolError(f"Error getting {what} offset of topic partition: {tp}")
        return {tp: found[tp] for tp in partitions}

    scenario = reset.scenario
    if scenario == "to-earliest":
        return every(await offsets(OffsetSpec.earliest()), "starting")
    if scenario == "to-latest":
        return every(await offsets(OffsetSpec.latest()), "ending")
    if scenario in ("to-datetime", "by-duration"):
        when = reset.value if scenario == "to-datetime" else now_ms - reset.value
        return every(await _by_time(cluster, partitions, when, out), "by timestamp")
    if scenario == "to-offset":
        return await _in_range(cluster, dict.fromkeys(partitions, reset.value))
    committed = await committed_offsets(cluster, group, timeout_ms=timeout_ms)
    if scenario == "shift-by":
        for tp in partitions:
            if tp not in committed:
                raise ToolError(
                    f"Cannot shift offset for partition {tp} since there is no current "
                    "committed offset"
                )
        shifted = {tp: committed[tp] + reset.value for tp in partitions}
        return await _in_range(cluster, shifted)
    # to-current: the committed offset; the high watermark where there is none
    missing = [tp for tp in partitions if tp not in committed]
    ends = await list_log_offsets(cluster, missing, OffsetSpec.latest())
    if missing:
        every_end = {tp: ends[tp] for tp in missing if tp in ends}
        for tp in missing:
            if tp not in every_end:
                raise ToolError(f"Error getting ending offset of topic partition: {tp}")
    return {tp: committed[tp] if tp in committed else ends[tp] for tp in partitions}


async def _by_time(
    cluster: AsyncAdminClient,
    partitions: Sequence[TopicPartition],
    timestamp_ms: int,
    out: TextIO,
) -> dict[TopicPartition, int]:
    """The first offset at or after ``timestamp_ms``; the high watermark, with Kafka's
    warning, for a partition with no record that late."""
    found = await list_log_offsets(
        cluster, partitions, OffsetSpec.for_timestamp(max(timestamp_ms, 0))
    )
    late = sorted(tp for tp, offset in found.items() if offset < 0)
    for tp in late:
        print(
            f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. "
            "Falling back to latest known offset.",
            file=out,
        )
    kept = {tp: o for tp, o in found.items() if o >= 0}
    kept.update(await list_log_offsets(cluster, late, OffsetSpec.latest()))
    return kept


async def _in_range(
    cluster: AsyncAdminClient, requested: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Kafka's ``checkOffsetsRange``: past the high watermark is the high watermark,
    before the log start the log start; an offset with an unknown bound stays."""
    starts = await list_log_offsets(cluster, requested, OffsetSpec.earliest())
    ends = await list_log_offsets(cluster, requested, OffsetSpec.latest())
    clamped = {}
    for tp, offset in requested.items():
        if tp in ends and offset > ends[tp]:
            offset = ends[tp]
        elif tp in starts and offset < starts[tp]:
            offset = starts[tp]
        clamped[tp] = offset
    return clamped


async def reset_offsets(
    cluster: AsyncAdminClient,
    groups: Sequence[str],
    topics: Sequence[str],
    reset: Reset,
    *,
    execute: bool,
    out: TextIO,
    now_ms: Callable[[], int],
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> tuple[dict[str, dict[TopicPartition, int]], bool]:
    """(each group's plan, whether every group could be reset). A group with members is
    refused with Kafka's message on ``out`` and an empty plan; with ``execute`` the
    others' plans are committed."""
    result: dict[str, dict[TopicPartition, int]] = {}
    ok = True
    for group in dict.fromkeys(groups):
        state = (await describe_group(cluster, group, timeout_ms=timeout_ms)).state
        if state not in RESETTABLE_STATES:
            print(
                f"\nError: Assignments can only be reset if the group '{group}' is "
                f"inactive, but the current state is {state}.",
                file=out,
            )
            result[group] = {}
            ok = False
            continue
        partitions = await partitions_in_scope(
            cluster, group, topics, timeout_ms=timeout_ms
        )
        offsets = await plan(
            cluster, group, partitions, reset, now_ms(), out, timeout_ms=timeout_ms
        )
        if execute and offsets:
            answers = await cluster.alter_consumer_group_offsets(group, offsets)
            for tp, error in sorted(answers.items()):
                raise_for(error, f"committing {tp} for group '{group}'")
        result[group] = offsets
    return result, ok


def reset_table(result: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """What ``--reset-offsets`` prints: a blank line and Kafka's header (if any group was
    considered), a row a partition, by group, topic and partition, and a newline."""
    text = ""
    if result:
        text += "\n" + _row("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
    for group in sorted(result):
        for tp in sorted(result[group]):
            text += "\n" + _row(group, tp.topic, tp.partition, result[group][tp])
    return text + "\n"


def _row(*values: object) -> str:
    return _cells(values, (30, 30, 10, 15))


def _cells(values: Sequence[object], widths: Sequence[int]) -> str:
    """Java's ``%-Ns`` columns joined by one space, the line's trailing blanks dropped."""
    return " ".join(f"{v!s:<{w}}" for v, w in zip(values, widths, strict=True)).rstrip()


# --- --delete-offsets ---------------------------------------------------------------------

NOT_PROVIDED = (
    -1
)  # a topic whose partitions could not be listed: Kafka's "Not Provided"


async def delete_offsets(
    cluster: AsyncAdminClient, group: str, topics: Sequence[str]
) -> tuple[int, dict[TopicPartition, KafkaError | None]]:
    """(the request's error, each partition's outcome): ``topics`` as ``--topic`` takes
    them; a topic alone whose partitions cannot be listed is one row, partition -1.
    The request's error is the group's, else the first partition's, as Kafka's
    ``DeleteConsumerGroupOffsetsResult.all()`` fails."""
    outcome: dict[TopicPartition, KafkaError | None] = {}
    asked: list[TopicPartition] = []
    parsed = [parse_topic_arg(t) for t in topics]
    whole = sorted({t for t, ps in parsed if ps is None})
    if whole:
        metadata = await as_tool_error(cluster.list_topics())
        for t in whole:
            described = metadata.topics.get(t)
            if described is None or described.error is not None:
                code = ErrorCode.unknown_topic_or_partition
                outcome[TopicPartition(t, NOT_PROVIDED)] = (
                    described.error if described is not None else KafkaError(code)
                )
            else:
                asked += [TopicPartition(t, p) for p in sorted(described.partitions)]
    for topic, partitions in parsed:
        if partitions is not None:
            asked += [TopicPartition(topic, p) for p in partitions]
    asked = list(dict.fromkeys(asked))
    answers = await cluster.delete_consumer_group_offsets(group, asked) if asked else {}
    outcome.update(answers)
    failed = [e for tp in asked if (e := answers.get(tp)) is not None]
    return (failed[0].code() if failed else ErrorCode.none), outcome


def delete_offsets_report(
    group: str,
    topics: Sequence[str],
    error: int,
    outcome: Mapping[TopicPartition, KafkaError | None],
) -> str:
    """What ``--delete-offsets`` prints: the request's outcome in Kafka's words, then a
    blank line and the table of TOPIC, PARTITION and STATUS."""
    messages = {
        ErrorCode.invalid_group_id: f"'{group}' is not valid.",
        ErrorCode.group_id_not_found: f"'{group}' does not exist.",
        ErrorCode.group_authorization_failed: f"Access to '{group}' is not authorized.",
        ErrorCode.non_empty_group: f"Deleting offsets of a consumer group '{group}' "
        "is forbidden if the group is not empty.",
    }
    partition_level = (
        ErrorCode.group_subscribed_to_topic,
        ErrorCode.topic_authorization_failed,
        ErrorCode.unknown_topic_or_partition,
    )
    if error == ErrorCode.none:
        text = (
            f"Request succeed for deleting offsets with topic {', '.join(topics)} "
            f"group {group}"
        )
    elif error in messages:
        text = f"\nError: {messages[ErrorCode(error)]}"
    elif error in partition_level:
        text = (
            "\nError: Encounter some partition level error, see the follow-up details:"
        )
    else:
        text = f"\nError: Encounter some unknown error: {error_name(error)}"
    text += "\n\n" + _cells(("TOPIC", "PARTITION", "STATUS"), (30, 15, 15))
    for tp in sorted(outcome, key=lambda tp: tp.topic + str(tp.partition)):
        failure = outcome[tp]
        status = "Successful" if failure is None else f"Error: :{_said(failure)}"
        partition = "Not Provided" if tp.partition < 0 else str(tp.partition)
        text += "\n" + _cells((tp.topic, partition, status), (30, 15, 15))
    return text + "\n"


def _said(error: KafkaError) -> str:
    """A partition's error as the table says it: Kafka's name, and the broker's message
    if it gave one (Kafka's own tool prints its Java exception's name and message)."""
    text = error.str()
    return error.name() if text == error.name() else f"{error.name()}: {text}"
