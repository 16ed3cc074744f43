"""A member subscribed by regular expression, without a network: the ``^`` entries of a
subscription read as the broker reads ``SubscribedTopicRegex`` (whole names, RE2/J's
syntax, its refusals in its words), matched by the member itself under the classic
protocol, and sent as ``SubscribedTopicRegex`` with no names under the consumer
protocol (every field on a join, a change only otherwise, ``""`` to drop it), whose
INVALID_REGULAR_EXPRESSION stops the member as Kafka's consumer stops."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from minikafka.coordination.member import (
    InvalidPattern,
    SubscriptionPattern,
    SubscriptionState,
)
from minikafka.coordination.member._pattern import split_subscription

from .test_consumer_protocol_member import S, heartbeats, joined, member, state_of


def test_caret_entries_are_one_expression_and_the_others_topic_names() -> None:
    names, pattern = split_subscription(["audit", "^orders-.*", "^pay(ments)?"])
    assert names == frozenset({"audit"})
    assert pattern is not None
    assert pattern.regex == "(^orders-.*)|(^pay(ments)?)"  # librdkafka's combination
    topics = ["orders-eu", "orders", "payments", "pay", "xpay", "audit", "pays"]
    assert pattern.matching(topics) == {"orders-eu", "payments", "pay"}
    assert split_subscription(["a", "b"]) == (frozenset({"a", "b"}), None)
    assert SubscriptionPattern.of(["^t.*"]).regex == "^t.*"  # one goes as given


def test_a_pattern_matches_whole_names_only_as_kafka_matches() -> None:
    pattern = SubscriptionPattern.of(["^orders"])
    assert pattern.matching(["orders", "orders-eu", "my-orders"]) == {"orders"}


@pytest.mark.parametrize(
    ("patterns", "culprit", "description"),
    [
        (["^ok.*", "^(?=x)y"], "^(?=x)y", "invalid or unsupported Perl syntax"),
        (["^a(b"], "^a(b", "missing closing )"),
        (["^(a+)+"], "^(a+)+", "nested repetition is not supported by this broker"),
        (  # each is valid; together they repeat without bound four times
            ["^a.*", "^b.*", "^c.*", "^d.*"],
            "(^a.*)|(^b.*)|(^c.*)|(^d.*)",
            "more than 3 unbounded repetitions",
        ),
    ],
)
def test_a_pattern_the_broker_refuses_is_refused_in_its_words(
    patterns: list[str], culprit: str, description: str
) -> None:
    with pytest.raises(InvalidPattern) as refused:
        SubscriptionPattern.of(patterns)
    assert refused.value.message.startswith(
        "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
        f"SubscribedTopicRegex `{culprit}` is not a valid regular expression: "
    )
    assert description in refused.value.message


def test_a_refused_pattern_leaves_the_subscription_as_it_was() -> None:
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["^t.*"])
    with pytest.raises(InvalidPattern):
        subscriptions.subscribe(["^(?!x)"])
    assert subscriptions.pattern == SubscriptionPattern.of(["^t.*"])


def test_the_classic_member_matches_its_pattern_and_reports_a_change() -> None:
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["named", "^t-.*"])
    assert subscriptions.subscribed
    assert not subscriptions.pattern_matched
    assert subscriptions.subscription == {"named"}
    assert subscriptions.match_pattern(["t-1", "u-1"])
    assert subscriptions.subscription == {"named", "t-1"}
    assert not subscriptions.match_pattern(["t-1", "u-1", "u-2"])  # nothing new
    assert subscriptions.match_pattern(["t-1", "t-2"])
    assert subscriptions.subscription == {"named", "t-1", "t-2"}
    subscriptions.unsubscribe()
    assert (subscriptions.subscribed, subscriptions.pattern) == (False, None)


def test_a_pattern_goes_as_subscribed_topic_regex_with_no_names_on_join() -> None:
    m = member()
    m.subscriptions.subscribe(["^t.*"])
    [join] = heartbeats(m, 0.0)
    assert join.member_epoch == 0
    assert join.subscribed_topic_regex == "^t.*"
    assert join.subscribed_topic_names == ()


def test_later_heartbeats_carry_the_pattern_only_when_it_changes() -> None:
    m = member()
    m.subscriptions.subscribe(["^t.*"])
    joined(m)
    m.on_timer(0.0)
    [steady] = heartbeats(m, 5.0)
    assert steady.subscribed_topic_regex is None  # unchanged
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 5.0)
    m.subscriptions.subscribe(["^u.*"])
    m.request_rejoin()
    [changed] = heartbeats(m, 5.0)
    assert changed.subscribed_topic_regex == "^u.*"
    assert changed.subscribed_topic_names is None  # still none
    m.on_heartbeat_response(ErrorCode.none, "m-1", 1, 1000, None, 5.0)
    m.subscriptions.subscribe(["t"])
    m.request_rejoin()
    [by_name] = heartbeats(m, 5.0)
    assert by_name.subscribed_topic_regex == ""  # the pattern dropped
    assert by_name.subscribed_topic_names == ("t",)


def test_invalid_regular_expression_stops_the_member_with_kafkas_message() -> None:
    m = member()
    m.subscriptions.subscribe(["^t.*"])
    heartbeats(m, 0.0)
    m.on_heartbeat_response(
        ErrorCode.invalid_regular_expression, None, 0, 0, None, 0.0, "refused"
    )
    assert m.fatal == (
        ErrorCode.invalid_regular_expression,
        "Invalid RE2J SubscriptionPattern provided in the call to subscribe. refused",
    )
    assert heartbeats(m, 10.0) == []  # no more heartbeats
    assert state_of(m) is S.JOINING
