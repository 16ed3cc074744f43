"""A consumer's subscription by regular expression, the member's side.

The consumer API follows confluent-kafka (librdkafka): in the list given to
``subscribe``, a name that starts with ``^`` is a regular expression, the others are
topic names (a topic name cannot hold ``^``). Several expressions make one,
``(p1)|(p2)``, as librdkafka combines them. A topic is matched when the expression
matches its *whole* name, as Kafka's consumers and its broker match (Java's
``Pattern.matcher(topic).matches()``, RE2/J's on the broker).

What the member does with the expression depends on the group protocol:

- **classic**: the member matches it itself, against the cluster's topics from its
  Metadata (every topic, refreshed every ``metadata.max.age.ms``; internal topics left
  out unless ``exclude.internal.topics=false``), and joins with the names it matched;
  when the matched names change it joins again (Kafka's ``ConsumerCoordinator``,
  ``updatePatternSubscription``).
- **consumer** (KIP-848): the member sends the expression as ConsumerGroupHeartbeat's
  ``SubscribedTopicRegex`` and lists no topic names for it; the coordinator resolves it
  (Kafka's ``ConsumerHeartbeatRequestManager`` with a ``SubscriptionPattern``).

Either way the expression is read as the broker reads ``SubscribedTopicRegex``, RE2/J's
syntax (:func:`~minikafka.coordination.group._re2j.compile_re2j`), so a pattern means
the same under both protocols, and one the broker would refuse is refused at
``subscribe`` with the broker's words (INVALID_REGULAR_EXPRESSION).

A core: plain values, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from ..group._re2j import compile_re2j, regex_error_message

__all__ = [
    "INVALID_PATTERN_PREFIX",
    "InvalidPattern",
    "SubscriptionPattern",
    "split_subscription",
]

INVALID_PATTERN_PREFIX = (
    "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
)
"""What Kafka's consumer puts before the broker's INVALID_REGULAR_EXPRESSION message
(``AbstractHeartbeatRequestManager``)."""


class InvalidPattern(ValueError):
    """A ``^`` subscription the broker would refuse: ``message`` is Kafka's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen
class SubscriptionPattern:
    """The expressions of a subscription, combined into one (``regex``, what the member
    sends as ``SubscribedTopicRegex``), compiled as the broker compiles it."""

    regex: str
    compiled: re.Pattern[str] = attrs.field(eq=False, repr=False)

    @classmethod
    def of(cls, patterns: Iterable[str]) -> SubscriptionPattern:
        """One expression from ``patterns`` (each still with its ``^``), or
        :class:`InvalidPattern` with the message the broker would answer."""
        given = list(dict.fromkeys(patterns))
        regex = given[0] if len(given) == 1 else "|".join(f"({p})" for p in given)
        for candidate in dict.fromkeys((*given, regex)):  # the culprit, or the whole
            message = regex_error_message(candidate)
            if message is not None:
                raise InvalidPattern(INVALID_PATTERN_PREFIX + message)
        return cls(regex, compile_re2j(regex))

    def matching(self, topics: Iterable[str]) -> frozenset[str]:
        """The topics whose whole name the expression matches."""
        return frozenset(t for t in topics if self.compiled.fullmatch(t))


def split_subscription(
    topics: Iterable[str],
) -> tuple[frozenset[str], SubscriptionPattern | None]:
    """``subscribe``'s list as topic names and the expression of its ``^`` entries
    (None without one); :class:`InvalidPattern` for an expression the broker refuses."""
    names: set[str] = set()
    patterns: list[str] = []
    for topic in topics:
        if topic.startswith("^"):
            patterns.append(topic)
        else:
            names.add(topic)
    return frozenset(names), SubscriptionPattern.of(patterns) if patterns else None
