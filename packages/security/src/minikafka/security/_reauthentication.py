"""When a client re-authenticates its SASL session: KIP-368's client side as a core.

A broker with ``connections.max.reauth.ms`` (or a credential that expires, such as an
OAUTHBEARER token) tells a SaslAuthenticate v1+ client its session's lifetime in
``session_lifetime_ms``. A request that reaches the broker after the session's end
closes the connection, so the client re-authenticates on the same connection before
then: SaslHandshake and SaslAuthenticate again, with the same mechanism and principal,
while no other request of the connection is in flight. Kafka's
``SaslClientAuthenticator`` picks the moment at random between 85% and 95% of the
lifetime, counted from the end of the exchange: the 85% leaves room for the network's
latency and the two clocks' drift, the random 10% keeps a client's many connections from
re-authenticating all at once. A lifetime of 0 means the session does not expire.

The core only keeps time: ``now`` (seconds, on the shell's clock) comes with each call
and the random draw from a ``random.Random`` of its own (a test passes a seeded one). The
network layer's ``NetworkClient`` runs the exchange when :meth:`ClientReauthentication.due`
says so.
"""

from __future__ import annotations

import random

import attrs

REAUTHENTICATION_WINDOW = (0.85, 0.95)
"""The share of the session's lifetime within which the client re-authenticates."""


@attrs.define
class ClientReauthentication:
    """One connection's SASL session, seen from the client: when it ends, and when to
    re-authenticate before it does."""

    rng: random.Random = attrs.field(factory=random.Random)
    reauthenticate_at: float | None = None
    """When the next re-authentication falls due (None: the session does not expire)."""
    expires_at: float | None = None
    """When the broker ends the session (None: it does not)."""

    def authenticated(self, session_lifetime_ms: int, now: float) -> float | None:
        """An exchange (the first or a re-authentication) completed at ``now`` and the
        broker's last SaslAuthenticate answer gave ``session_lifetime_ms``: when to
        re-authenticate next, None if never."""
        if session_lifetime_ms <= 0:
            self.reauthenticate_at = self.expires_at = None
            return None
        low, high = REAUTHENTICATION_WINDOW
        share = low + self.rng.random() * (high - low)
        lifetime = session_lifetime_ms / 1000
        self.expires_at = now + lifetime
        self.reauthenticate_at = now + lifetime * share
        return self.reauthenticate_at

    def due(self, now: float) -> bool:
        """Whether the connection should re-authenticate before its next request."""
        return self.reauthenticate_at is not None and now >= self.reauthenticate_at

    def next_deadline(self) -> float | None:
        """When :meth:`due` turns true, for the shell's timer."""
        return self.reauthenticate_at

    def expired(self, now: float) -> bool:
        """Whether the broker's session has already ended (a re-authentication that
        starts this late may find the connection closed)."""
        return self.expires_at is not None and now >= self.expires_at
