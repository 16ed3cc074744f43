"""Subscriptions by regular expression in a consumer group (KIP-848, Kafka 4.0).

A member may subscribe with ``SubscribedTopicRegex`` (ConsumerGroupHeartbeat v1)
instead of, or beside, topic names. The member never lists the topics: the coordinator
resolves each regular expression its members use against the cluster's topics (a topic
is in when the expression matches its whole name), keeps the resolution per expression,
not per member, and writes it as a ConsumerGroupRegularExpression record (type 16; key:
group and expression; value: the topics, the metadata version and the time it was
resolved), so a new coordinator loads it after failover. A member's topics are then its
names plus its expression's resolution (:func:`expand`), and everything downstream (the
subscribed topics' metadata, the epoch bumps, the assignor) sees only topic names.

When an expression is resolved again (:meth:`RegexSubscriptions.refresh`, Kafka's
``GroupMetadataManager.maybeUpdateRegularExpressions``): when some member uses one the
group has not resolved yet, or when the cluster's topics changed since the last
resolution; and, as Kafka batches them, not sooner than ``REGEX_BATCH_REFRESH_INTERVAL_MS``
after the last one. Kafka resolves on an executor and applies the result in a later
write; this core resolves within the heartbeat that needs it, so the member that brings
a new expression is given its topics in the same answer. A resolution that changes some
member's topics moves the group epoch (through :func:`expand` and ``epoch_bumps``).

Kafka compiles expressions with RE2/J; ``_re2j.py`` reads RE2/J's syntax and runs it
on Python's ``re`` (:func:`compile_re2j`). What RE2/J refuses
(lookarounds, backreferences, possessive quantifiers, atomic groups, conditionals,
counts over 1000) is refused with RE2/J's description, and the heartbeat is answered
INVALID_REGULAR_EXPRESSION, as Kafka's ``throwIfRegularExpressionIsInvalid`` does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import attrs

from ._re2j import InvalidRegex, compile_re2j, regex_error_message
from ._target_assignment import MemberSubscription

__all__ = [
    "REGEX_BATCH_REFRESH_INTERVAL_MS",
    "REGULAR_EXPRESSION",
    "InvalidRegex",
    "RegexSubscriptions",
    "ResolvedRegularExpression",
    "compile_re2j",
    "expand",
    "regex_error_message",
]

REGULAR_EXPRESSION = 16
"""The ConsumerGroupRegularExpression record's type (its key's version)."""

REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000
"""Kafka's ``GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS``."""


@attrs.frozen
class ResolvedRegularExpression:
    """The ConsumerGroupRegularExpression record's value (Kafka's
    ``ResolvedRegularExpression``): the topics, the metadata version resolved against,
    and when (wall clock, ms)."""

    topics: frozenset[str]
    version: int = -1
    timestamp_ms: int = 0


def used_regexes(subscriptions: Mapping[str, MemberSubscription]) -> set[str]:
    """The expressions some member subscribes with ("" is no expression)."""
    return {
        s.subscribed_topic_regex
        for s in subscriptions.values()
        if s.subscribed_topic_regex
    }


def expand(
    subscriptions: Mapping[str, MemberSubscription],
    resolved: Mapping[str, ResolvedRegularExpression],
) -> dict[str, MemberSubscription]:
    """Each member's subscription with its expression's topics among its names: what
    the group's metadata, its epoch and its assignor are computed from."""
    out = {}
    for member_id, s in subscriptions.items():
        regex = s.subscribed_topic_regex
        found = resolved.get(regex) if regex else None
        out[member_id] = (
            s
            if found is None
            else attrs.evolve(
                s, subscribed_topic_names=s.subscribed_topic_names | found.topics
            )
        )
    return out


@attrs.define
class RegexSubscriptions:
    """A consumer group's resolved expressions, and the topics they were resolved
    against (not written: after a load the first heartbeat resolves them again)."""

    resolved: dict[str, ResolvedRegularExpression] = attrs.field(factory=dict)
    resolved_against: frozenset[str] | None = None

    def forget_unused(self, subscriptions: Mapping[str, MemberSubscription]) -> None:
        """Drop the resolutions of the expressions no member uses any more."""
        wanted = used_regexes(subscriptions)
        self.resolved = {r: v for r, v in self.resolved.items() if r in wanted}

    def refresh(
        self,
        subscriptions: Mapping[str, MemberSubscription],
        topics: Iterable[str],
        now: float,
        version: int = -1,
    ) -> bool:
        """Drop the expressions no member uses, and resolve them all again when one
        is new or the topics changed, at most once per batch interval. Returns
        whether the resolutions changed (new records to write)."""
        wanted = used_regexes(subscriptions)
        before = dict(self.resolved)
        self.forget_unused(subscriptions)
        names = frozenset(topics)
        stale = wanted - self.resolved.keys() or names != self.resolved_against
        now_ms = int(now * 1000)
        last = max((v.timestamp_ms for v in self.resolved.values()), default=None)
        if (
            wanted
            and stale
            and (last is None or now_ms > last + REGEX_BATCH_REFRESH_INTERVAL_MS)
        ):
            self.resolved = resolve(wanted, names, version, now_ms)
            self.resolved_against = names
        return self.resolved != before


def resolve(
    regexes: Iterable[str], topics: Iterable[str], version: int, now_ms: int
) -> dict[str, ResolvedRegularExpression]:
    """Kafka's ``refreshRegularExpressions``: each expression's matching topics (a
    whole-name match). The topics are those the broker offers the group: its
    internal topics are not among them, where Kafka's image lists them too."""
    names = sorted(topics)
    out = {}
    for regex in regexes:
        try:
            compiled = compile_re2j(regex)
        except InvalidRegex:
            continue  # never accepted from a member; a bad record's is ignored
        matched = frozenset(t for t in names if compiled.fullmatch(t))
        out[regex] = ResolvedRegularExpression(matched, version, now_ms)
    return out


# --- the record ----------------------------------------------------------------------


def regex_key(group_id: str, regex: str) -> bytes:
    """ConsumerGroupRegularExpressionKey: the type, the group and the expression."""
    parts = [struct.pack(">h", REGULAR_EXPRESSION)]
    for s in (group_id, regex):
        raw = s.encode()
        parts.append(struct.pack(">h", len(raw)) + raw)
    return b"".join(parts)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def regex_value(resolution: ResolvedRegularExpression) -> bytes:
    """ConsumerGroupRegularExpressionValue v0 (flexible): compact array of compact
    strings, then int64 version and int64 timestamp, then no tagged fields."""
    topics = sorted(resolution.topics)
    body = _uvarint(len(topics) + 1)
    for t in topics:
        raw = t.encode()
        body += _uvarint(len(raw) + 1) + raw
    body += struct.pack(">qq", resolution.version, resolution.timestamp_ms)
    return struct.pack(">h", 0) + body + _uvarint(0)


def regex_records(group_id: str, regexes: RegexSubscriptions) -> dict[bytes, bytes]:
    """The group's resolutions as records, key to value."""
    return {
        regex_key(group_id, regex): regex_value(resolution)
        for regex, resolution in sorted(regexes.resolved.items())
    }
