"""KIP-848's group APIs on the wire: every advertised version of ConsumerGroupHeartbeat
and ConsumerGroupDescribe answered, Kafka's error for an unknown server assignor, an invalid
regular expression and a fenced epoch, a member subscribed by regular expression, and
ListGroups and DescribeGroups telling a consumer group from a classic one."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from minikafka.broker import KafkaApis
from minikafka.broker.testing import request_body

from .test_group_apis import TOPIC, Client, prepared, versions

HEARTBEAT, DESCRIBE, LIST_GROUPS, DESCRIBE_GROUPS = 68, 69, 16, 15


async def heartbeat(
    client: Client, version: int, group: str, member: str, **fields: Any
) -> Any:
    values: dict[str, Any] = {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "rebalance_timeout": datetime.timedelta(seconds=30),
        "subscribed_topic_names": (TOPIC,),
        "topic_partitions": (),
        **fields,
    }
    return await client.call(request_body(HEARTBEAT, version, **values))


async def test_every_version_of_the_consumer_group_apis_is_answered(
    tmp_path: Path,
) -> None:
    """A member joins with each ConsumerGroupHeartbeat version and is given its
    partitions at once (it is alone); each ConsumerGroupDescribe version describes
    the group: both members, their epochs and assignments, the group's epochs."""
    assert KafkaApis.SUPPORTED[HEARTBEAT] == (0, 1)
    assert KafkaApis.SUPPORTED[DESCRIBE] == (0, 1)
    async with prepared(tmp_path) as broker:
        client = await broker.client("kip848")
        topic_id = broker.server.metadata_cache.topic(TOPIC).topic_id  # type: ignore[union-attr]
        for v in versions(HEARTBEAT):
            group = f"cg-{v}"
            answer = await heartbeat(client, v, group, uuid.uuid4().hex)
            assert answer.error_code is ErrorCode.none, answer
            assert int(answer.member_epoch) == 1
            assert answer.heartbeat_interval == datetime.timedelta(seconds=5)
            [owned] = answer.assignment.topic_partitions
            assert (owned.topic_id, sorted(owned.partitions)) == (topic_id, [0, 1])
        for v in versions(DESCRIBE):
            answer = await client.call(
                request_body(
                    DESCRIBE,
                    v,
                    group_ids=("cg-0", "cg-1", "nobody"),
                    include_authorized_operations=False,
                )
            )
            described = {g.group_id: g for g in answer.groups}
            for group in ("cg-0", "cg-1"):
                g = described[group]
                assert (g.error_code, g.group_state) == (ErrorCode.none, "Stable")
                assert (int(g.group_epoch), int(g.assignment_epoch)) == (1, 1)
                assert g.assignor_name == "uniform"
                [member] = g.members
                [held] = member.assignment.topic_partitions
                assert (held.topic_name, sorted(held.partitions)) == (TOPIC, [0, 1])
            assert described["nobody"].error_code is ErrorCode.group_id_not_found


async def test_an_unknown_assignor_is_refused_and_the_group_is_typed(
    tmp_path: Path,
) -> None:
    """UNSUPPORTED_ASSIGNOR for a ServerAssignor the broker does not have, and nothing
    joined; ListGroups v5 filters by type; DescribeGroups v6 says a consumer group is
    not a classic group."""
    async with prepared(tmp_path) as broker:
        client = await broker.client("kip848")
        refused = await heartbeat(client, 1, "typed", "m1", server_assignor="sticky")
        assert refused.error_code is ErrorCode.unsupported_assignor
        assert broker.server.groups.core.consumer_group("typed") is None
        joined = await heartbeat(client, 1, "typed", "m1", server_assignor="range")
        assert joined.error_code is ErrorCode.none
        stale = await heartbeat(
            client, 1, "typed", "m1", member_epoch=7, subscribed_topic_names=None
        )
        assert stale.error_code is ErrorCode.fenced_member_epoch
        for types, expected in (
            ((), True),
            (("consumer",), True),
            (("classic",), False),
        ):
            listed = await client.call(
                request_body(LIST_GROUPS, 5, states_filter=(), types_filter=types)
            )
            rows = {(g.group_id, g.group_type, g.group_state) for g in listed.groups}
            assert (("typed", "consumer", "Stable") in rows) is expected, rows
        described = await client.call(
            request_body(
                DESCRIBE_GROUPS,
                6,
                groups=("typed",),
                include_authorized_operations=False,
            )
        )
        [group] = described.groups
        assert group.error_code is ErrorCode.group_id_not_found
        assert group.error_message == "Group typed is not a classic group."
        # and ConsumerGroupDescribe says a classic group is not a consumer group
        joined = await client.join_as_new("old-style", 9)
        assert joined.error_code is ErrorCode.none
        answer = await client.call(
            request_body(
                DESCRIBE,
                1,
                group_ids=("old-style",),
                include_authorized_operations=False,
            )
        )
        [group] = answer.groups
        assert group.error_code is ErrorCode.group_id_not_found
        assert group.error_message == "Group old-style is not a consumer group."


async def test_a_regex_member_is_served_and_bad_input_gets_kafkas_errors(
    tmp_path: Path,
) -> None:
    """On the wire (v1): a member subscribed by regular expression is assigned the
    matching topic and ConsumerGroupDescribe shows its expression; a pattern RE2/J
    refuses is INVALID_REGULAR_EXPRESSION with RE2/J's description, and a heartbeat with
    an epoch the member does not have is FENCED_MEMBER_EPOCH; neither changes the
    member, whose next heartbeat is answered."""
    async with prepared(tmp_path) as broker:
        client = await broker.client("kip848-regex")
        member = uuid.uuid4().hex
        fields = {"subscribed_topic_names": None}
        joined = await heartbeat(
            client,
            1,
            "cg-re",
            member,
            subscribed_topic_regex=TOPIC[:3] + ".*",
            **fields,
        )
        assert joined.error_code is ErrorCode.none, joined
        [owned] = joined.assignment.topic_partitions
        assert sorted(owned.partitions) == [0, 1]
        epoch = int(joined.member_epoch)
        described = await client.call(
            request_body(
                DESCRIBE, 1, group_ids=("cg-re",), include_authorized_operations=False
            )
        )
        [m] = described.groups[0].members
        assert m.subscribed_topic_regex == TOPIC[:3] + ".*"

        bad = await heartbeat(
            client,
            1,
            "cg-re",
            member,
            member_epoch=epoch,
            topic_partitions=None,
            subscribed_topic_regex="(",
            **fields,
        )
        assert bad.error_code is ErrorCode.invalid_regular_expression
        assert bad.error_message == (
            "SubscribedTopicRegex `(` is not a valid regular expression: "
            "missing closing )."
        )
        fenced = await heartbeat(
            client,
            1,
            "cg-re",
            member,
            member_epoch=epoch + 3,
            topic_partitions=None,
            **fields,
        )
        assert fenced.error_code is ErrorCode.fenced_member_epoch
        again = await heartbeat(
            client,
            1,
            "cg-re",
            member,
            member_epoch=epoch,
            topic_partitions=None,
            **fields,
        )
        assert again.error_code is ErrorCode.none
        assert int(again.member_epoch) == epoch
