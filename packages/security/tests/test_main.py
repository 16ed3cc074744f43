"""``python -m minikafka.security``: the command line that shows the cores."""

from __future__ import annotations

import pytest

from minikafka.security.__main__ import main


def test_the_scram_demo_ends_authenticated(capsys: pytest.CaptureFixture[str]) -> None:
    """The SCRAM-SHA-256 walk through the authenticator completes as the user."""
    assert main(["scram", "--user", "carol", "--password", "pw"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "COMPLETE: User:carol"


def test_map_principal_prints_the_mapped_principal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A rule with a group and the lower-case flag maps a subject to its principal."""
    rules = "RULE:^CN=(.*?),.*$/$1/L,DEFAULT"
    assert main(["map-principal", "CN=Dave,O=x", "--rules", rules]) == 0
    assert capsys.readouterr().out.strip() == "User:dave"


def test_the_authorize_demo_shows_deny_winning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo's DENY on orders-eu beats its prefixed ALLOW."""
    assert main(["authorize"]) == 0
    assert "User:alice WRITE orders-eu: DENIED" in capsys.readouterr().out
