"""When a broker sends a request to its controller again (Kafka's
``NodeToControllerRequestThread``; KIP-590's forwarding).

The active controller can move at any moment: it is killed, or loses its quorum and
resigns. A request the broker sent it then fails in one of two ways: the connection
drops (or the answer never comes), or another voter answers NOT_CONTROLLER. Kafka's
broker hands neither to the client of a request it forwarded. Its channel to the
controller puts the request back at the head of its queue, forgets that controller, and
sends the request again to the controller it learns of next; only once the request has
waited the channel's ``retryTimeoutMs`` since it was queued (60 s on the ``forwarding``
channel, ``BrokerServer``) does ``ForwardingManager`` answer the client
REQUEST_TIMED_OUT for every item. The controller marks such an answer for the broker:
``RequestChannel.shouldReturnNotController`` turns a forwarded answer with
NOT_CONTROLLER anywhere in it (its ``errorCounts``; NOT_LEADER_OR_FOLLOWER for
DescribeQuorum) into an envelope whose own error is NOT_CONTROLLER.

This module is that decision, without I/O: :func:`from_stale_controller` reads an
answer as ``errorCounts`` does, :func:`retry_timeout` says how long each of the
controller's requests is retried, and :class:`ControllerRetry` says, after each failed
attempt, whether to send again and when. :class:`~._controller_channel.RemoteController`
carries it out.

Not every request is retried here. The broker's registration and heartbeats are sent
again by their own loop, on their own schedule, as Kafka's ``BrokerLifecycleManager``
does on its own channel; they get one attempt each, and their loop hears what went
wrong. AlterPartition is retried here like a forwarded request, and once its timeout
passes the replica manager's sender sends the proposals again after its backoff, as
Kafka's ``alter-partition`` channel retries without end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import cast

import attrs
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerRequest,
)

FORWARDING_RETRY_TIMEOUT = 60.0
"""Seconds a request is sent again after failed attempts: the ``retryTimeoutMs`` Kafka's
``BrokerServer`` gives its ``forwarding`` channel (60000)."""

RETRY_BACKOFF = 0.1
"""Seconds between a failed attempt and the next: the 100 ms Kafka's request thread
waits while it knows of no active controller, so a quorum still electing is not asked
in a tight loop."""

DESCRIBE_QUORUM_API_KEY = 55
"""DescribeQuorum's answer names a stale leader NOT_LEADER_OR_FOLLOWER (KIP-595)."""


def retry_timeout(request: ControllerRequest) -> float:
    """How long ``request`` is sent again after failed attempts (0: one attempt)."""
    if isinstance(request, BrokerRegistrationRequest | BrokerHeartbeatRequest):
        return 0.0  # their own loop sends them again (BrokerLifecycleManager)
    return FORWARDING_RETRY_TIMEOUT


def error_codes(answer: object) -> Iterator[ErrorCode]:
    """Every error code in ``answer``, at any depth (Kafka's ``errorCounts``): the
    answer's own and its items', in the controller's response types (attrs) and in
    the wire's (kio's dataclasses)."""
    if attrs.has(type(answer)):
        kind = cast("type[attrs.AttrsInstance]", type(answer))
        values = [getattr(answer, f.name) for f in attrs.fields(kind)]
    elif dataclasses.is_dataclass(answer) and not isinstance(answer, type):
        values = [getattr(answer, f.name) for f in dataclasses.fields(answer)]
    else:
        return
    for value in values:
        if isinstance(value, ErrorCode):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from error_codes(item)


def from_stale_controller(answer: object, api_key: int | None = None) -> bool:
    """Whether ``answer`` came from a node that is not the active controller
    (``shouldReturnNotController``): NOT_CONTROLLER anywhere in it, or for a
    DescribeQuorum (``api_key`` 55) NOT_LEADER_OR_FOLLOWER."""
    stale = (
        ErrorCode.not_leader_or_follower
        if api_key == DESCRIBE_QUORUM_API_KEY
        else ErrorCode.not_controller
    )
    return any(code is stale for code in error_codes(answer))


@attrs.define
class ControllerRetry:
    """One request's attempts: created when it is first sent, asked after each failure.

    The request is sent again as long as it would go out before ``timeout`` seconds
    have passed since the first attempt (Kafka checks the same when it takes the request
    from its queue); an attempt under way is never cut short, as Kafka's in-flight
    request is not."""

    first_attempt: float
    timeout: float
    backoff: float = RETRY_BACKOFF
    attempts: int = 1

    @property
    def retries(self) -> bool:
        """Whether this request is sent more than once at all (else the caller hears
        the first attempt's outcome as it was)."""
        return self.timeout > 0

    def after_failure(self, now: float) -> float | None:
        """The attempt that ended at ``now`` failed: the seconds to wait before sending
        again, or None if the next attempt would go out past the timeout (the request
        has timed out: REQUEST_TIMED_OUT, ``ForwardingManager``'s ``onTimeout``)."""
        if now + self.backoff - self.first_attempt >= self.timeout:
            return None
        self.attempts += 1
        return self.backoff
