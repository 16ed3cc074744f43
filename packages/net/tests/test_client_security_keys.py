"""The client's security configuration: Kafka's keys read into TLS and SASL settings,
and a key that cannot work refused by name before anything connects."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from minikafka.common import ConfigError
from minikafka.net import ClientSecurity
from minikafka.net.testing import ThrowawayPki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("pki"), clients=("alice",))


def test_plaintext_is_the_default_and_needs_nothing() -> None:
    security = ClientSecurity.from_config({})
    assert (security.protocol, security.context, security.sasl) == (
        "PLAINTEXT",
        None,
        None,
    )


def test_ssl_checks_the_broker_and_its_host_name_by_default(pki: ThrowawayPki) -> None:
    security = ClientSecurity.from_config(
        {"security.protocol": "SSL", "ssl.truststore.location": str(pki.ca)}
    )
    assert security.context is not None
    assert security.context.verify_mode is ssl.CERT_REQUIRED
    assert security.context.check_hostname


def test_an_empty_identification_algorithm_turns_the_host_name_check_off(
    pki: ThrowawayPki,
) -> None:
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(pki.ca),
            "ssl.endpoint.identification.algorithm": "",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
        }
    )
    assert security.context is not None
    assert not security.context.check_hostname
    assert security.sasl is not None
    assert security.sasl.mechanism == "PLAIN"


def test_a_pem_key_store_is_the_clients_certificate(pki: ThrowawayPki) -> None:
    alice = pki.clients["alice"]
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(pki.ca),
            "ssl.keystore.certificate.chain": Path(alice.cert).read_text(),
            "ssl.keystore.key": Path(alice.key).read_text(),
        }
    )
    assert security.context is not None


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"security.protocol": "TLS"}, "security.protocol"),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/no/such/ca.pem"},
            "ssl.truststore.location",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.type": "JKS"},
            "ssl.truststore.type",
        ),
        (
            {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "x"},
            "ssl.endpoint.identification.algorithm",
        ),
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256"},
            "sasl.jaas.config",
        ),
    ],
)
def test_a_key_that_cannot_work_is_refused_by_name(
    config: dict[str, str], key: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        ClientSecurity.from_config(config)
    assert refused.value.key == key
