"""Scenarios of the security APIs and KIP-848's two, at every version minikafka
advertises, each as a client meets them on a PLAINTEXT listener with no authorizer.

- SaslHandshake and SaslAuthenticate outside a SASL listener: the channel did not ask
  for authentication, so both are refused as out of place (ILLEGAL_SASL_STATE).
- DescribeUserScramCredentials of a user nobody made, and of one user named twice;
  AlterUserScramCredentials that can only fail: deleting a credential nobody has, too few
  iterations, an unknown mechanism, one user and mechanism twice in one request (the
  reference node is shared with the other tests, so nothing here creates a user).
- DescribeAcls, CreateAcls and DeleteAcls with no authorizer configured (Kafka's
  default, and the reference node's): SECURITY_DISABLED.
- ConsumerGroupHeartbeat that can only fail (an unknown server assignor, a member epoch
  from a member the group never had, a group id that is empty, a regular expression
  RE2/J does not compile) and ConsumerGroupDescribe of a group nobody made; OffsetFetch
  v9's check of a consumer group's member id and epoch.
"""

from __future__ import annotations

from collections.abc import Iterator

from kio.static.protocol import RequestPayload

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, each_version
from ._fixtures import DATA
from ._scenario import Scenario, Session

_SCRAM_SHA_256 = 1
_UNKNOWN_MECHANISM = 9
_SALT = b"conformance-salt"
_SALTED = bytes(32)


def _handshake(s: Session, v: int) -> None:
    s.check(make(ApiKey.SASL_HANDSHAKE, v, mechanism="PLAIN"))


def _authenticate(s: Session, v: int) -> None:
    s.check(make(ApiKey.SASL_AUTHENTICATE, v, auth_bytes=b"\x00alice\x00secret"))


def _describe_unknown_user(s: Session, v: int) -> None:
    s.check(
        make(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            v,
            users=[{"name": f"conf-scram-v{v}-nobody"}],
        )
    )


def _describe_twice(s: Session, v: int) -> None:
    name = f"conf-scram-v{v}-twice"
    s.check(
        make(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            v,
            users=[{"name": name}, {"name": name}],
        )
    )


def _upsertion(name: str, mechanism: int, iterations: int) -> dict[str, object]:
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": _SALT,
        "salted_password": _SALTED,
    }


def _alter_refused(s: Session, v: int) -> None:
    prefix = f"conf-scram-v{v}"
    s.check(
        make(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            v,
            deletions=[{"name": f"{prefix}-nobody", "mechanism": _SCRAM_SHA_256}],
            upsertions=[
                _upsertion(f"{prefix}-few", _SCRAM_SHA_256, 100),
                _upsertion(f"{prefix}-unknown", _UNKNOWN_MECHANISM, 8192),
            ],
        )
    )


def _alter_twice(s: Session, v: int) -> None:
    name = f"conf-scram-v{v}-dup"
    s.check(
        make(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            v,
            deletions=[{"name": name, "mechanism": _SCRAM_SHA_256}],
            upsertions=[_upsertion(name, _SCRAM_SHA_256, 8192)],
        )
    )


# ACL enums as the protocol numbers them: resource type TOPIC 2 (ANY 1), pattern type
# LITERAL 3 (ANY 1), operation READ 3 (ANY 1), permission ALLOW 3 (ANY 1).
def _describe_acls(s: Session, v: int) -> None:
    s.check(
        make(
            ApiKey.DESCRIBE_ACLS,
            v,
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        )
    )


def _create_acls(s: Session, v: int) -> None:
    creation = {
        "resource_type": 2,
        "resource_name": f"conf-acl-v{v}",
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    s.check(make(ApiKey.CREATE_ACLS, v, creations=[creation]))


def _delete_acls(s: Session, v: int) -> None:
    acl_filter = {
        "resource_type_filter": 2,
        "resource_name_filter": f"conf-acl-v{v}",
        "pattern_type_filter": 3,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    s.check(make(ApiKey.DELETE_ACLS, v, filters=[acl_filter]))


def _heartbeat(v: int, group: str, **fields: object) -> RequestPayload:
    values: dict[str, object] = {
        "group_id": group,
        # v1's member chooses its own id (KIP-1082); v0's join sends none
        "member_id": f"conf-848-member-v{v}" if v >= 1 else "",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": ["conf-848-topic"],
        "server_assignor": None,
        "topic_partitions": [],
    }
    values.update(fields)
    return make(ApiKey.CONSUMER_GROUP_HEARTBEAT, v, **values)


def _unknown_assignor(s: Session, v: int) -> None:
    body = _heartbeat(v, f"conf-848-v{v}-assignor", server_assignor="no-such-assignor")
    s.check(body)


def _stranger_epoch(s: Session, v: int) -> None:
    body = _heartbeat(
        v,
        f"conf-848-v{v}-stranger",
        member_id=f"conf-848-stranger-v{v}",
        member_epoch=7,
        subscribed_topic_names=None,
        topic_partitions=None,
    )
    s.check(body)


def _empty_group_id(s: Session, v: int) -> None:
    s.check(_heartbeat(v, ""))


def _invalid_regex(s: Session, v: int) -> None:
    """v1's SubscribedTopicRegex that RE2/J does not compile: INVALID_REGULAR_EXPRESSION
    and RE2/J's description of the fault, for an unclosed group, a lookahead (Perl
    syntax RE2/J refuses) and a backreference."""
    for n, regex in enumerate(("conf-848-(", "conf(?=-848)", "(conf)\\1")):
        body = _heartbeat(
            v,
            f"conf-848-v{v}-regex-{n}",
            subscribed_topic_names=None,
            subscribed_topic_regex=regex,
        )
        s.check(body, f"regex {regex}")


def _fetch_as_member(s: Session, v: int) -> None:
    """OffsetFetch v9 of a consumer group (KIP-848): the member's own epoch is
    answered; an epoch that is not its current one is STALE_MEMBER_EPOCH, a member id
    the group does not have UNKNOWN_MEMBER_ID, and no member id with epoch -1 (an
    admin's fetch) is answered."""
    group = f"conf-848-v{v}-fetch"
    member = f"conf-848-fetcher-v{v}"
    joined = s.call(
        _heartbeat(1, group, member_id=member, subscribed_topic_names=[DATA])
    )
    epoch = int(joined.member_epoch)
    for label, who, at in (
        ("own epoch", member, epoch),
        ("stale epoch", member, epoch + 1),
        ("unknown member", "conf-848-nobody", epoch),
        ("admin", None, -1),
    ):
        topics = [{"name": DATA, "partition_indexes": [0]}]
        body = make(
            ApiKey.OFFSET_FETCH,
            v,
            groups=[
                {
                    "group_id": group,
                    "topics": topics,
                    "member_id": who,
                    "member_epoch": at,
                }
            ],
            require_stable=False,
        )
        s.check(body, label)
    s.call(_heartbeat(1, group, member_id=member, member_epoch=-1))


def _describe_unknown_group(s: Session, v: int) -> None:
    s.check(
        make(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            v,
            group_ids=[f"conf-848-v{v}-nobody"],
            include_authorized_operations=False,
        )
    )


SASL_HANDSHAKE: dict[str, Case] = {"plaintext-listener": _handshake}
SASL_AUTHENTICATE: dict[str, Case] = {"plaintext-listener": _authenticate}
DESCRIBE_SCRAM: dict[str, Case] = {
    "unknown-user": _describe_unknown_user,
    "duplicate-user": _describe_twice,
}
ALTER_SCRAM: dict[str, Case] = {"refused": _alter_refused, "duplicate": _alter_twice}
HEARTBEAT: dict[str, Case] = {
    "unknown-assignor": _unknown_assignor,
    "stranger-epoch": _stranger_epoch,
    "empty-group-id": _empty_group_id,
    "invalid-regex": _invalid_regex,
}
HEARTBEAT_SINCE = {"invalid-regex": 1}  # SubscribedTopicRegex is v1's


def scenarios() -> Iterator[Scenario]:
    yield from each_version(ApiKey.SASL_HANDSHAKE, "sasl-handshake", SASL_HANDSHAKE)
    yield from each_version(
        ApiKey.SASL_AUTHENTICATE, "sasl-authenticate", SASL_AUTHENTICATE
    )
    yield from each_version(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        "describe-user-scram-credentials",
        DESCRIBE_SCRAM,
    )
    yield from each_version(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        "alter-user-scram-credentials",
        ALTER_SCRAM,
    )
    yield from each_version(
        ApiKey.DESCRIBE_ACLS, "describe-acls", {"no-authorizer": _describe_acls}
    )
    yield from each_version(
        ApiKey.CREATE_ACLS, "create-acls", {"no-authorizer": _create_acls}
    )
    yield from each_version(
        ApiKey.DELETE_ACLS, "delete-acls", {"no-authorizer": _delete_acls}
    )
    yield from each_version(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        "consumer-group-heartbeat",
        HEARTBEAT,
        HEARTBEAT_SINCE,
    )
    yield from each_version(
        ApiKey.OFFSET_FETCH,
        "offset-fetch",
        {"consumer-member-epoch": _fetch_as_member},
        {"consumer-member-epoch": 9},  # the member id and epoch are v9's
    )
    yield from each_version(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        "consumer-group-describe",
        {"unknown-group": _describe_unknown_group},
    )
