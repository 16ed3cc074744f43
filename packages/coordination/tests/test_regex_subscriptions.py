"""Subscriptions by regular expression (KIP-848): the RE2/J subset and its refusals,
the coordinator's resolution against the cluster's topics (the group epoch moves when
it changes, topics created or deleted are picked up), the records a new coordinator
loads, and OffsetFetch v9's member check."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
)
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.group._regex_subscriptions import (
    REGEX_BATCH_REFRESH_INTERVAL_MS,
    InvalidRegex,
    compile_re2j,
    regex_error_message,
)

from .test_consumer_heartbeat import GROUP, IDS, TOPICS, Group, all_partitions

WITH_NEW = {**TOPICS, "orders-eu": 2}
NEW_IDS = {**IDS, "orders-eu": IDS["orders"].__class__(int=7)}


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("orders.*", ["orders", "orders-eu"], ["audit", "xorders"]),
        ("^orders$", ["orders"], ["orders-eu"]),
        ("(?i)ORDERS", ["orders"], ["audit"]),
        ("[[:alpha:]]+", ["orders"], ["orders-eu"]),
        (r"\Qorders.eu\E", ["orders.eu"], ["orders-eu"]),
        ("(?<region>eu|us)-.*", ["eu-x", "us-y"], ["ap-z"]),
        (r"\d+", ["123"], ["١٢٣"]),  # ASCII digits only, as RE2/J's \d
        ("a{2,1000}", ["aa"], ["a"]),
        # valid in RE2/J, read over the ASCII of topic names
        ("(?U)orders.*", ["orders-eu"], ["audit"]),
        (r"\pL+", ["orders"], ["orders-eu"]),
        (r"\p{Greek}|x", ["x"], ["orders"]),
        (r"[\pN-]+", ["1-2"], ["a"]),
        ("[[:^alpha:]]+", ["1-2"], ["a1"]),
        (r"orders\z", ["orders"], ["orders-eu"]),
        (r"\(?=x", ["=x", "(=x"], ["x"]),  # an escaped paren is no group
        ("a{,5}", ["a{,5}"], ["a"]),  # not a count in RE2/J: literal
    ],
)
def test_the_re2j_subset_matches_whole_topic_names(
    pattern: str, matches: list[str], misses: list[str]
) -> None:
    compiled = compile_re2j(pattern)
    assert all(compiled.fullmatch(t) for t in matches)
    assert not any(compiled.fullmatch(t) for t in misses)


@pytest.mark.parametrize(
    ("pattern", "description"),
    # Kafka 4.1's answers, each read from the reference node
    [
        ("(", "missing closing )"),
        (")", "regexp/syntax: internal error"),
        ("[a", "missing closing ]"),
        ("*", "missing argument to repetition operator"),
        ("a**", "invalid nested repetition operator"),
        ("[z-a]", "invalid character class range"),
        ("orders(?=-eu)", "invalid or unsupported Perl syntax"),
        ("(?<!x)y", "invalid named capture"),
        ("x(?<=y)", "invalid named capture"),
        ("(a)\\1", "invalid escape sequence"),
        ("\\8", "invalid escape sequence"),
        ("(?P<n>a)(?P=n)", "invalid or unsupported Perl syntax"),
        ("(?>a)", "invalid or unsupported Perl syntax"),
        ("a*+", "invalid nested repetition operator"),
        ("a{1001}", "invalid repeat count"),
        ("a{2,1}", "invalid repeat count"),
        ("(?x)a", "invalid or unsupported Perl syntax"),
        ("\\Z", "invalid escape sequence"),
        ("\\C", "invalid escape sequence"),
    ],
)
def test_what_re2j_refuses_is_refused_with_its_description(
    pattern: str, description: str
) -> None:
    with pytest.raises(InvalidRegex) as refused:
        compile_re2j(pattern)
    assert refused.value.description == description
    assert regex_error_message(pattern) == (
        f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
        f"{description}."
    )


def test_an_invalid_regex_is_invalid_regular_expression_and_nothing_joins() -> None:
    group = Group.make()
    refused = group.join("a", topics=(), subscribed_topic_regex="orders(?=x)")
    assert refused.error is ErrorCode.invalid_regular_expression
    assert refused.error_message is not None
    assert "orders(?=x)" in refused.error_message
    assert group.coordinator.consumer_group(GROUP) is None
    assert group.log.partitions == {} or not any(group.log.partitions.values())
    # a member of a live group that switches to a bad one keeps what it had
    group.join("a")
    group.settle(["a"])
    owned = group.owned["a"]
    bad = group.beat("a", subscribed_topic_regex="(")
    assert bad.error is ErrorCode.invalid_regular_expression
    assert group.beat("a").error is ErrorCode.none
    assert group.owned["a"] == owned


def test_a_regex_member_is_assigned_the_matching_topics() -> None:
    group = Group.make()
    joined = group.join("a", topics=(), subscribed_topic_regex="ord.*")
    assert joined.error is ErrorCode.none
    group.settle(["a"])
    assert group.owned["a"] == all_partitions(TOPICS, "orders")
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert set(described.regex.resolved["ord.*"].topics) == {"orders"}
    assert described.subscriptions["a"].subscribed_topic_names == frozenset()


def test_names_and_a_regex_together_are_their_union() -> None:
    group = Group.make()
    group.join("a", topics=("audit",), subscribed_topic_regex="ord.*")
    group.settle(["a"])
    assert group.owned["a"] == all_partitions(TOPICS, "orders", "audit")


def test_a_created_topic_that_matches_moves_the_epoch_after_the_batch_interval() -> (
    None
):
    """Kafka re-resolves at most every REGEX_BATCH_REFRESH_INTERVAL_MS: a topic created
    meanwhile is picked up at the first heartbeat after it, with a new group epoch."""
    group = Group.make()
    group.join("a", topics=(), subscribed_topic_regex="orders.*")
    group.settle(["a"])
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    epoch = described.group_epoch
    more = {"topics": WITH_NEW, "topic_ids": NEW_IDS}
    group.beat("a", **more)
    assert described.group_epoch == epoch  # too soon after the last resolution
    group.now += REGEX_BATCH_REFRESH_INTERVAL_MS / 1000 + 1
    group.beat("a", **more)
    assert described.group_epoch == epoch + 1
    for _ in range(3):
        group.beat("a", **more)
    assert group.owned["a"] == all_partitions(WITH_NEW, "orders", "orders-eu")


def test_a_deleted_topic_leaves_the_resolution_and_the_assignment() -> None:
    group = Group.make()
    both = {"topics": WITH_NEW, "topic_ids": NEW_IDS}
    request = ConsumerGroupHeartbeatRequest(
        GROUP,
        "a",
        0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_regex="orders.*",
        owned=frozenset(),
        **both,  # type: ignore[arg-type]
    )
    group._track("a", group.send(request))
    for _ in range(3):
        group.beat("a", **both)
    assert group.owned["a"] == all_partitions(WITH_NEW, "orders", "orders-eu")
    group.now += REGEX_BATCH_REFRESH_INTERVAL_MS / 1000 + 1
    for _ in range(3):
        group.beat("a")  # orders-eu is gone from the cluster
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert described.regex.resolved["orders.*"].topics == {"orders"}
    assert group.owned["a"] == all_partitions(TOPICS, "orders")


def test_two_members_share_a_regex_and_the_last_one_out_drops_it() -> None:
    group = Group.make()
    group.join("a", topics=(), subscribed_topic_regex="orders")
    group.join("b", topics=(), subscribed_topic_regex="orders")
    group.settle(["a", "b"])
    assert sorted(len(group.owned[m]) for m in "ab") == [3, 3]
    group.beat("a", subscribed_topic_regex="", subscribed_topic_names=("audit",))
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert set(described.regex.resolved) == {"orders"}
    group.beat("b", member_epoch=-1)
    assert described.regex.resolved == {}


def test_a_new_coordinator_loads_the_resolved_regexes_and_member_regexes() -> None:
    group = Group.make(offsets_topic_num_partitions=1)
    group.join("a", topics=(), subscribed_topic_regex="orders|audit")
    group.join("b", topics=("audit",))
    group.settle(["a", "b"])
    before = group.coordinator.consumer_group(GROUP)
    assert before is not None
    fresh = GroupCoordinator(GroupConfig(offsets_topic_num_partitions=1))
    fresh.begin_loading(0)
    fresh.load_partition(0, group.log.partitions[0], group.now)
    after = fresh.consumer_group(GROUP)
    assert after is not None
    assert after.subscriptions == before.subscriptions
    assert after.regex.resolved == before.regex.resolved
    assert after.target == before.target
    group.coordinator = fresh
    epoch = after.group_epoch
    group.settle(["a", "b"])
    assert after.group_epoch == epoch  # nothing to re-assign after a failover


def test_offset_fetch_v9_checks_a_consumer_group_members_epoch() -> None:
    """Kafka's ``validateOffsetFetch``: no member id and a negative epoch is an
    admin's fetch; a member must be known and at its current epoch."""
    group = Group.make()
    group.join("a")
    group.settle(["a"])
    epoch = group.epochs["a"]
    tp = TopicPartition("orders", 0)
    fetch = group.coordinator.fetch_offsets
    assert fetch(GROUP, [tp]).error_code is ErrorCode.none
    assert fetch(GROUP, [tp], member_id="a", member_epoch=epoch).error_code is (
        ErrorCode.none
    )
    for stale in (epoch - 1, epoch + 1):
        answer = fetch(GROUP, [tp], member_id="a", member_epoch=stale)
        assert answer.error_code is ErrorCode.stale_member_epoch
        assert answer.offsets == ()
    unknown = fetch(GROUP, [tp], member_id="ghost", member_epoch=epoch)
    assert unknown.error_code is ErrorCode.unknown_member_id
    # a classic group does not check them
    classic = fetch("classic", [tp], member_id="ghost", member_epoch=3)
    assert classic.error_code is ErrorCode.none


def test_a_regex_member_of_a_static_group_keeps_its_regex_across_restarts() -> None:
    group = Group.make()
    group.join("a", topics=(), subscribed_topic_regex="orders", instance_id="i")
    group.settle(["a"])
    group.beat("a", member_epoch=-2, instance_id="i")
    back = group.join("a2", topics=(), subscribed_topic_regex="orders", instance_id="i")
    assert back.error is ErrorCode.none
    described = group.coordinator.consumer_group(GROUP)
    assert described is not None
    assert described.subscriptions["a2"].subscribed_topic_regex == "orders"
    assert set(described.regex.resolved) == {"orders"}


@pytest.mark.parametrize(
    "pattern", ["(a+)+", "(a|aa)*b", "(x*)*y", "((ab)*c)+", "a.*b.*c.*d.*"]
)
def test_patterns_a_backtracking_matcher_could_hang_on_are_refused(
    pattern: str,
) -> None:
    """RE2/J matches in linear time; Python's ``re`` backtracks, and ``(a+)+`` against
    a 249-character name would not finish. Such patterns (nested repetition, more than
    three unbounded repetitions) are refused, as COMPAT.md states, so the coordinator
    never runs one."""
    message = regex_error_message(pattern)
    assert message is not None
    assert "not supported by this broker" in message


@pytest.mark.parametrize("pattern", ["(ab)*", "(eu|us)-.*", "(?:a+)?", "a.*b.*c.*"])
def test_repetition_without_nesting_is_accepted(pattern: str) -> None:
    assert regex_error_message(pattern) is None
