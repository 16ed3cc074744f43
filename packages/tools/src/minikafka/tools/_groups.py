"""``minikafka groups``: Kafka's ``kafka-consumer-groups.sh`` (ConsumerGroupCommand).

What the command asks, and of whom, is what Kafka's AdminClient asks for it:

- ``--list`` sends ListGroups to every broker the metadata names (each knows only the
  groups it coordinates) and keeps the consumer groups: protocol type ``consumer``, or
  ``""`` for a group that only ever committed offsets (``listConsumerGroups``).
- ``--describe`` finds each group's coordinator (FindCoordinator) and asks it for the
  group (DescribeGroups: state, protocol type, assignor, members) and its committed
  offsets (OffsetFetch with a null topic list: every partition). A member's partitions
  are its assignment bytes decoded with the consumer protocol, when the protocol type
  is ``consumer``. The log end offsets come from each partition's leader (ListOffsets,
  latest), and lag is log end minus committed offset.
- ``--delete`` sends DeleteGroups to each group's coordinator; only a group without
  members (Empty) may go.

A coordinator that is loading its ``__consumer_offsets`` partition, not yet elected, or
no longer the group's (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR) is asked again, as the AdminClient retries them, until ``--timeout``.

The tables are ConsumerGroupCommand's fixed-width ``printf`` tables, ``-`` where a value
is unknown, and its notices go to stderr ("has no active members", "is rebalancing").

Versions: the highest the broker advertises, as the other tools use and as Kafka's
AdminClient would negotiate; each carries what the command needs (DescribeGroups v4 the
members' group instance ids for ``--members``, OffsetFetch v2+ the null topic list and
the top-level error, FindCoordinator v1+ the error message).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal, TextIO, TypeVar

import attrs
import trio
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.describe_groups.v4.response import DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import GroupId

from minikafka.client import (
    AsyncAdminClient,
    KafkaError,
    ListOffsetsResultInfo,
    OffsetSpec,
)
from minikafka.common import TopicPartition
from minikafka.coordination import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)
from minikafka.net import Node

from ._connection import (
    BrokerError,
    ToolError,
    as_tool_error,
    check,
    error_name,
    raise_for,
)

T = TypeVar("T")

MISSING = "-"  # ConsumerGroupCommand.MISSING_COLUMN_VALUE
DEFAULT_TIMEOUT_MS = 5000  # kafka-consumer-groups.sh --timeout
RETRY_BACKOFF = 0.1  # retry.backoff.ms
GROUP_KEY_TYPE = 0  # FindCoordinator key_type of a consumer group
# Errors that a moment and a fresh FindCoordinator fix; the AdminClient retries them.
RETRIABLE = frozenset(
    {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    }
)
View = Literal["offsets", "members", "state"]


@attrs.frozen
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    partitions: tuple[TopicPartition, ...]
    """Decoded from the assignment for a ``consumer`` group; empty while it rebalances."""


@attrs.frozen
class GroupDescription:
    """One group as DescribeGroups tells it, with the coordinator that answered."""

    group_id: str
    coordinator: Node
    state: str
    """Kafka's name: Empty, PreparingRebalance, CompletingRebalance, Stable or Dead."""
    protocol_type: str
    protocol: str
    """The chosen protocol; for a consumer group, the assignor (``range``...)."""
    members: tuple[GroupMember, ...]

    @property
    def exists(self) -> bool:
        # An unknown group is described as Dead, with no members.
        return self.state != "Dead"


@attrs.frozen
class PartitionOffsets:
    """A row of ``--describe``: Kafka's ``PartitionAssignmentState``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    """The committed offset; None if the group has none for the partition."""
    log_end_offset: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


# --- the requests -------------------------------------------------------------------------


async def retrying(
    call: Callable[[], Awaitable[T]], timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> T:
    """``call()``, again after a retriable coordinator error until ``timeout_ms`` passes."""
    deadline = trio.current_time() + timeout_ms / 1000
    while True:
        try:
            return await call()
        except BrokerError as e:
            if (
                e.code not in RETRIABLE
                or trio.current_time() + RETRY_BACKOFF > deadline
            ):
                raise
        await trio.sleep(RETRY_BACKOFF)


async def list_groups(
    cluster: AsyncAdminClient, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> list[str]:
    """The consumer groups of every broker, sorted (the Admin's ``list_consumer_groups``,
    asked again while a coordinator is still loading)."""
    return await retrying(
        lambda: as_tool_error(cluster.list_consumer_groups()), timeout_ms
    )


async def find_coordinator(cluster: AsyncAdminClient, group: str) -> Node:
    """The broker that coordinates ``group`` (it leads the group's offsets partition)."""
    return await as_tool_error(cluster.find_coordinator(group))


async def describe_group(
    cluster: AsyncAdminClient, group: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> GroupDescription:
    """DescribeGroups of ``group`` at its coordinator. Sent here rather than through
    the client's ``describe_consumer_groups``, which reads an assignment it cannot
    decode as no partitions: the tool reports it instead."""

    async def ask() -> GroupDescription:
        coordinator = await find_coordinator(cluster, group)
        body = DescribeGroupsRequest(
            groups=(GroupId(group),), include_authorized_operations=False
        )
        response = await cluster.request(coordinator, body, DescribeGroupsResponse)
        (described,) = response.groups
        check(described.error_code, f"DescribeGroups of group '{group}'")
        consumer = described.protocol_type == CONSUMER_PROTOCOL_TYPE
        return GroupDescription(
            group_id=group,
            coordinator=coordinator,
            state=described.group_state,
            protocol_type=described.protocol_type,
            protocol=described.protocol_data,
            members=tuple(
                GroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    host=m.client_host,
                    partitions=_assigned(group, m.member_id, m.member_assignment)
                    if consumer
                    else (),
                )
                for m in described.members
            ),
        )

    return await retrying(ask, timeout_ms)


def _assigned(group: str, member: str, assignment: bytes) -> tuple[TopicPartition, ...]:
    # A member of a group that is not Stable has no assignment yet: no bytes at all
    # (the AdminClient reads those as an empty assignment, not as an error).
    if not assignment:
        return ()
    try:
        return decode_assignment(assignment).partitions
    except ConsumerProtocolError as e:
        raise ToolError(f"group '{group}': member {member}'s assignment: {e}") from e


async def committed_offsets(
    cluster: AsyncAdminClient, group: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> dict[TopicPartition, int]:
    """Every offset ``group`` committed: the client's ``list_consumer_group_offsets``
    (OffsetFetch with a null topic list, at the group's coordinator)."""

    async def ask() -> dict[TopicPartition, int]:
        answer = (await cluster.list_consumer_group_offsets([group]))[group]
        if isinstance(answer, KafkaError):
            raise_for(answer)
            raise AssertionError("not reached: raise_for raised")
        return {tp: o.offset for tp, o in answer.items()}

    return await retrying(ask, timeout_ms)


async def log_end_offsets(
    cluster: AsyncAdminClient, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, int]:
    """The latest offset (high watermark) of each partition whose leader answers (the
    client's ``list_offsets``); a partition of a deleted topic, or with an error, is
    left out (Kafka's ``Unknown``)."""
    return await list_log_offsets(cluster, partitions, OffsetSpec.latest())


async def list_log_offsets(
    cluster: AsyncAdminClient, partitions: Iterable[TopicPartition], spec: OffsetSpec
) -> dict[TopicPartition, int]:
    """Each partition's offset for ``spec`` at its leader, the partitions with an error
    left out."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    answers = await cluster.list_offsets(dict.fromkeys(wanted, spec))
    return {
        tp: a.offset
        for tp, a in answers.items()
        if isinstance(a, ListOffsetsResultInfo)
    }


async def describe_offsets(
    cluster: AsyncAdminClient,
    group: GroupDescription,
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> list[PartitionOffsets]:
    """The rows of ``--describe``, in ConsumerGroupCommand's order: the members with
    partitions, most partitions first, each one's partitions by number; then the
    partitions with a committed offset that no member holds, consumer ``-``."""
    committed = await committed_offsets(cluster, group.group_id, timeout_ms=timeout_ms)
    members = sorted(
        (m for m in group.members if m.partitions),
        key=lambda m: len(m.partitions),
        reverse=True,
    )
    assigned = {tp for m in members for tp in m.partitions}
    unassigned = [tp for tp in committed if tp not in assigned]
    ends = await log_end_offsets(cluster, [*assigned, *unassigned])

    def rows(
        partitions: Iterable[TopicPartition], **who: str
    ) -> list[PartitionOffsets]:
        return [
            PartitionOffsets(
                group.group_id,
                tp.topic,
                tp.partition,
                committed.get(tp),
                ends.get(tp),
                **who,
            )
            for tp in sorted(partitions, key=lambda tp: (tp.partition, tp.topic))
        ]

    found = []
    for m in members:
        found += rows(
            m.partitions, consumer_id=m.member_id, host=m.host, client_id=m.client_id
        )
    return found + rows(unassigned)


async def delete_groups(
    cluster: AsyncAdminClient,
    groups: Sequence[str],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[str, ErrorCode]:
    """DeleteGroups at each group's coordinator (the client's ``delete_consumer_groups``);
    each group's error (NONE: deleted)."""
    results: dict[str, ErrorCode] = {}
    for group in dict.fromkeys(groups):

        async def ask(group: str = group) -> ErrorCode:
            error = (await cluster.delete_consumer_groups([group]))[group]
            if error is None:
                return ErrorCode.none
            if error.code() < 0:  # the connection, not the broker
                raise ToolError(error.str())
            if error.code() in RETRIABLE:
                raise BrokerError(error.code(), f"DeleteGroups of group '{group}'")
            return ErrorCode(error.code())

        try:
            results[group] = await retrying(ask, timeout_ms)
        except (
            BrokerError
        ) as e:  # still retriable at the deadline: report it as its error
            results[group] = ErrorCode(e.code)
    return results


# --- what the command prints --------------------------------------------------------------


def _line(widths: Sequence[int], values: Sequence[object]) -> str:
    """Java's ``%-Ns`` columns joined by one space: each value padded to at least N."""
    cells = [
        f"{value!s:<{width}}" for width, value in zip(widths, values, strict=False)
    ]
    cells += [str(v) for v in values[len(widths) :]]
    return " ".join(cells).rstrip()


def _shown(value: object | None) -> str:
    return MISSING if value is None else str(value)


def state_notice(group: str, state: str) -> str | None:
    """The line ConsumerGroupCommand writes to stderr about a group before its table."""
    if state == "Dead":
        return f"Consumer group '{group}' does not exist."
    if state == "Empty":
        return f"Consumer group '{group}' has no active members."
    if state in ("PreparingRebalance", "CompletingRebalance"):
        return f"Warning: Consumer group '{group}' is rebalancing."
    return None


def offsets_table(rows: Sequence[PartitionOffsets]) -> list[str]:
    """``--describe [--offsets]``: a blank line, the header, a line per row."""
    widths = [15, 15, 10, 15, 15, 15, 15, 15]
    for r in rows:
        widths[0] = max(widths[0], len(r.group))
        widths[1] = max(widths[1], len(_shown(r.topic)))
        widths[6] = max(widths[6], len(r.consumer_id))
        widths[7] = max(widths[7], len(r.host))
    header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")
    lines = ["", _line(widths, (*header, "CONSUMER-ID", "HOST", "CLIENT-ID"))]
    for r in rows:
        offsets = (r.partition, r.offset, r.log_end_offset, r.lag)
        values = (
            r.group,
            _shown(r.topic),
            *map(_shown, offsets),
            r.consumer_id,
            r.host,
        )
        lines.append(_line(widths, (*values, r.client_id)))
    return lines


def members_table(group: GroupDescription, *, verbose: bool = False) -> list[str]:
    """``--describe --members``; a GROUP-INSTANCE-ID column if a member is static, and
    with ``verbose`` each member's partitions as ``topic(0,1)``."""
    static = any(m.group_instance_id for m in group.members)
    widths = [max(15, len(group.group_id)), 15, 17, 15, 15, 15]
    for m in group.members:
        widths[1] = max(widths[1], len(m.member_id))
        widths[2] = max(widths[2], len(m.group_instance_id or ""))
        widths[3] = max(widths[3], len(m.host))
        widths[4] = max(widths[4], len(m.client_id))
    if not static:
        del widths[2]
    header = [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
    ]
    if not static:
        del header[2]
    if verbose:
        header.append("ASSIGNMENT")
    lines = ["", _line(widths, header)]
    for m in group.members:
        row: list[object] = [group.group_id, m.member_id, m.group_instance_id or ""]
        row += [m.host, m.client_id, len(m.partitions)]
        if not static:
            del row[2]
        if verbose:
            row.append(_assignment(m.partitions))
        lines.append(_line(widths, row))
    return lines


def _assignment(partitions: Sequence[TopicPartition]) -> str:
    if not partitions:
        return MISSING
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return ", ".join(
        sorted(
            f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in topics.items()
        )
    )


def state_table(group: GroupDescription) -> list[str]:
    """``--describe --state``: the coordinator as ``host:port (id)``, the assignor, the
    state and the member count."""
    node = group.coordinator
    coordinator = f"{node.host}:{node.port} ({node.node_id})"
    widths = [max(25, len(group.group_id)), max(25, len(coordinator)), 20, 15]
    header = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
    row = (group.group_id, coordinator, group.protocol, group.state, len(group.members))
    return ["", _line(widths, header), _line(widths, row)]


def deletion_report(results: dict[str, ErrorCode]) -> tuple[list[str], list[str]]:
    """What ``--delete`` prints: (stdout lines, stderr lines); stderr only on failure."""
    deleted = [g for g, e in results.items() if e == ErrorCode.none]
    failed = {g: e for g, e in results.items() if e != ErrorCode.none}
    names = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        return [f"Deletion of requested consumer groups ({names}) was successful."], []
    errors = ["Error: Deletion of some consumer groups failed:"]
    errors += [
        f"* Group '{g}' could not be deleted due to: {error_name(e)}"
        for g, e in failed.items()
    ]
    out = (
        [f"These consumer groups were deleted successfully: {names}"] if deleted else []
    )
    return out, errors


async def describe(
    cluster: AsyncAdminClient,
    groups: Sequence[str],
    view: View,
    out: TextIO,
    err: TextIO,
    *,
    verbose: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> bool:
    """``--describe`` each group (sorted, as Kafka's TreeMap) in ``view``; False if one
    does not exist. Tables go to ``out``, notices and errors to ``err``."""
    ok = True
    for group_id in sorted(dict.fromkeys(groups)):
        group = await describe_group(cluster, group_id, timeout_ms=timeout_ms)
        notice = state_notice(group_id, group.state)
        if not group.exists:
            ok = False
            print(f"Error: {notice}", file=err)
            continue
        # Kafka prints a table only when it has rows: an Empty group that committed
        # nothing, or (--members) has no member, gets its notice alone.
        if view == "offsets":
            rows = await describe_offsets(cluster, group, timeout_ms=timeout_ms)
            lines = offsets_table(rows) if rows else []
        elif view == "members":
            lines = members_table(group, verbose=verbose) if group.members else []
        else:
            lines = state_table(group)
        if notice is not None:
            print(notice, file=err)
            err.flush()
        if lines:
            print("\n".join(lines), file=out)
            out.flush()
    return ok
