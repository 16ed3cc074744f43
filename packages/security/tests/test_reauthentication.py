"""KIP-368's client side as a core: when a connection re-authenticates its SASL session.

- A session lifetime of L ms, authenticated at ``now``, falls due at a random point
  between 85% and 95% of L after ``now`` (Kafka's ``SaslClientAuthenticator``), and the
  broker ends it at ``now + L``; over many draws the points spread across the window.
- A lifetime of 0 (no ``connections.max.reauth.ms``, no expiring credential) never
  falls due.
- Each re-authentication starts a new session from its own completion time.
"""

from __future__ import annotations

import random

import pytest

from minikafka.security import REAUTHENTICATION_WINDOW, ClientReauthentication


class _Fixed(random.Random):
    """A draw that always returns ``value``: the window's edges, exactly."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_the_window_is_kafkas_85_to_95_percent() -> None:
    assert REAUTHENTICATION_WINDOW == (0.85, 0.95)


@pytest.mark.parametrize(("draw", "share"), [(0.0, 0.85), (0.5, 0.90)])
def test_reauthentication_falls_due_at_the_drawn_share_of_the_lifetime(
    draw: float, share: float
) -> None:
    session = ClientReauthentication(rng=_Fixed(draw))
    at = session.authenticated(2_000, now=100.0)
    assert at is not None
    assert at == pytest.approx(100.0 + 2.0 * share)
    assert session.next_deadline() == at
    assert session.expires_at == pytest.approx(102.0)
    assert not session.due(at - 0.001)
    assert session.due(at)
    assert not session.expired(101.999)
    assert session.expired(102.0)


def test_every_draw_lands_before_the_sessions_end_and_they_spread() -> None:
    """1000 seeded draws: all within [85%, 95%), low and high ends both reached."""
    session = ClientReauthentication(rng=random.Random(368))
    shares = []
    for _ in range(1000):
        at = session.authenticated(10_000, now=0.0)
        assert at is not None
        shares.append(at / 10.0)
    assert all(0.85 <= share < 0.95 for share in shares)
    assert min(shares) < 0.86
    assert max(shares) > 0.94


def test_no_lifetime_never_falls_due() -> None:
    session = ClientReauthentication()
    assert session.authenticated(0, now=5.0) is None
    assert session.next_deadline() is None
    assert not session.due(1e12)
    assert not session.expired(1e12)


def test_a_reauthentication_starts_a_new_session_from_its_completion() -> None:
    session = ClientReauthentication(rng=_Fixed(0.0))
    session.authenticated(1_000, now=0.0)
    assert session.due(0.9)
    session.authenticated(1_000, now=0.9)
    assert not session.due(0.9)
    assert session.next_deadline() == pytest.approx(0.9 + 0.85)
    assert session.expires_at == pytest.approx(1.9)
    # A broker that stops giving a lifetime ends the schedule.
    session.authenticated(0, now=2.0)
    assert not session.due(1e12)
