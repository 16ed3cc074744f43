"""A cluster whose every listener speaks TLS, SASL or both: its keys, and its clients'.

``make cluster TLS=1`` (``minikafka cluster up --security-protocol SSL``) and ``SASL=1``
(``SASL_PLAINTEXT``, or ``SASL_SSL`` with both) lay a cluster out with a throw-away CA and
one certificate for ``localhost``/``127.0.0.1`` that every node presents (made with
:func:`minikafka.net.testing.make_pki`, under ``<cluster>/pki``), and, with SASL,
SCRAM-SHA-512 users: the brokers' own (``broker``, the principal their inter-broker
and controller traffic carries) and a client's (``alice``). The keys are Kafka's; a
client's settings are written beside them, in Kafka's form (``client.properties``, for
the Java tools) and librdkafka's (``librdkafka.config``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from minikafka.net import SECURITY_PROTOCOLS
from minikafka.net.testing import ThrowawayPki

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
MECHANISM = "SCRAM-SHA-512"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
LOGIN_MODULES = {MECHANISM: SCRAM_LOGIN, "PLAIN": PLAIN_LOGIN}
"""The mechanisms served: SCRAM-SHA-512 (the brokers' own), and PLAIN for clients whose
SCRAM Kafka refuses (kcat's librdkafka 2.0.2, COMPAT.md)."""
BROKER_USER = ("broker", "broker-secret")
"""The brokers' own user: their inter-broker and controller logins."""
CLIENT_USER = ("alice", "alice-secret")


def security_protocol(tls: bool, sasl: bool) -> str:
    """The protocol every listener speaks, from ``TLS=1`` and ``SASL=1``."""
    return ("SASL_" if sasl else "") + ("SSL" if tls else "PLAINTEXT")


def jaas(module: str, username: str, password: str, users: Mapping[str, str]) -> str:
    """A login module's JAAS line: the node's own login, and the users it accepts."""
    accepted = " ".join(f'user_{user}="{secret}"' for user, secret in users.items())
    return f'{module} required username="{username}" password="{password}" {accepted};'


def secure_overrides(
    protocol: str,
    pki: ThrowawayPki | None,
    *,
    listeners: tuple[str, ...],
    kraft: bool,
    broker_password: str = BROKER_USER[1],
    users: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The keys every node of a cluster whose ``listeners`` all speak ``protocol``
    needs: the TLS stores (``pki``'s), and with SASL, SCRAM-SHA-512 served on each
    listener to the brokers' user and ``users``, the node logging in as ``broker`` with
    ``broker_password`` (a wrong one is what a misconfigured broker looks like)."""
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"{protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
    props: dict[str, str] = {}
    if protocol in TLS_PROTOCOLS:
        assert pki is not None, "a TLS cluster needs its certificates"
        props |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
        }
    if protocol in SASL_PROTOCOLS:
        accepted = {BROKER_USER[0]: BROKER_USER[1], **(users or {})}
        props |= {
            "sasl.enabled.mechanisms": ",".join(LOGIN_MODULES),
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            **{
                f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config": (
                    jaas(module, BROKER_USER[0], broker_password, accepted)
                )
                for name in listeners
                for mechanism, module in LOGIN_MODULES.items()
            },
        }
        if kraft:
            props["sasl.mechanism.controller.protocol"] = MECHANISM
    return props


def client_settings(
    protocol: str, pki: ThrowawayPki | None, user: tuple[str, str] = CLIENT_USER
) -> tuple[dict[str, str], dict[str, str]]:
    """(Kafka's Java client keys, librdkafka's) of a client of such a cluster."""
    java: dict[str, str] = {"security.protocol": protocol}
    rdkafka: dict[str, str] = {"security.protocol": protocol.lower()}
    if protocol in TLS_PROTOCOLS:
        assert pki is not None
        java |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
        rdkafka["ssl.ca.location"] = str(pki.ca)
    if protocol in SASL_PROTOCOLS:
        name, password = user
        java |= {
            "sasl.mechanism": MECHANISM,
            "sasl.jaas.config": (
                f'{SCRAM_LOGIN} required username="{name}" password="{password}";'
            ),
        }
        rdkafka |= {
            "sasl.mechanism": MECHANISM,
            "sasl.username": name,
            "sasl.password": password,
        }
    return java, rdkafka


def write_client_settings(root: Path, protocol: str, pki: ThrowawayPki | None) -> Path:
    """``client.properties`` and ``librdkafka.config`` under ``root``; the first's path."""
    java, rdkafka = client_settings(protocol, pki)
    path = root / "client.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in java.items()))
    (root / "librdkafka.config").write_text(
        "".join(f"{k}={v}\n" for k, v in rdkafka.items())
    )
    return path
