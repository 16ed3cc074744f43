"""The client side of SASL: configuration read as Kafka's clients read it, and each
mechanism's client exchange accepted by the server core of the same mechanism."""

from __future__ import annotations

import pytest

from minikafka.security import (
    SCRAM_MECHANISMS,
    OAuthBearerSaslServer,
    PlainSaslServer,
    SaslClientSettings,
    ScramSaslServer,
    UnsecuredValidatorOptions,
    generate_credential,
)

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_a_jaas_config_names_the_user_and_password() -> None:
    settings = SaslClientSettings.from_config(
        {
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM_MODULE} required username="alice" '
            'password="a;b c";',
        }
    )
    assert (settings.username, settings.password) == ("alice", "a;b c")


def test_sasl_username_and_password_work_without_jaas() -> None:
    settings = SaslClientSettings.from_config(
        {"sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "pw"}
    )
    assert (settings.mechanism, settings.username) == ("PLAIN", "bob")


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "sasl.mechanism"),  # Kafka's default is GSSAPI, not built
        ({"sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
        (
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": "nonsense"},
            "sasl.jaas.config",
        ),
        ({"sasl.mechanism": "OAUTHBEARER"}, "sasl.jaas.config"),
    ],
)
def test_a_configuration_that_cannot_authenticate_names_its_key(
    config: dict[str, str], key: str
) -> None:
    with pytest.raises(ValueError, match=f"^{key}: "):
        SaslClientSettings.from_config(config)


@pytest.mark.parametrize("name", sorted(SCRAM_MECHANISMS))
def test_the_scram_client_is_accepted_by_the_scram_server(name: str) -> None:
    mechanism = SCRAM_MECHANISMS[name]
    server = ScramSaslServer(
        mechanism, {"alice": generate_credential(mechanism, "secret", 4096)}
    )
    client = SaslClientSettings(name, "alice", "secret").client(now=0.0)
    challenge = server.evaluate_response(client.initial_response(), now=0.0)
    final = server.evaluate_response(client.evaluate_challenge(challenge), now=0.0)
    assert client.evaluate_challenge(final) == b""
    assert client.complete
    assert server.authorization_id() == "alice"


def test_the_plain_client_sends_one_message_the_server_accepts() -> None:
    client = SaslClientSettings("PLAIN", "bob", "pw").client(now=0.0)
    server = PlainSaslServer({"bob": "pw"})
    assert server.evaluate_response(client.initial_response(), now=0.0) == b""
    assert client.complete
    assert server.authorization_id() == "bob"


def test_the_oauthbearer_client_sends_an_unsecured_token_for_its_principal() -> None:
    settings = SaslClientSettings.from_config(
        {
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="carol";',
        }
    )
    now = 1_700_000_000.0
    client = settings.client(now)
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions())
    assert server.evaluate_response(client.initial_response(), now) == b""
    assert client.evaluate_challenge(b"") == b""
    assert client.complete
    assert server.authorization_id() == "carol"
