"""SCRAM credentials kept in the metadata log (KIP-554), set and read by a real client.

confluent-kafka's AdminClient, authenticated with PLAIN on a SASL_PLAINTEXT listener,
creates a SCRAM user with AlterUserScramCredentials; a producer then authenticates as
that user with SCRAM-SHA-256 and SCRAM-SHA-512 and produces. An altered password
refuses the old one, a deleted user is refused, DescribeUserScramCredentials lists the
mechanisms and iterations, and bad alterations get Kafka's errors. The broker's JAAS
config names no SCRAM user at all: every SCRAM credential here comes from the image.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from minikafka.broker.testing import BrokerProcess, free_ports
from tests.compat._groups import unique_name

pytestmark = pytest.mark.external

TIMEOUT = 30.0
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}


@pytest.fixture(scope="module")
def sasl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker whose SASL_PLAINTEXT listener serves PLAIN (user ``admin``) and SCRAM
    with no configured users; the listener's bootstrap address."""
    plaintext, sasl = free_ports(2)
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            f'{PLAIN_MODULE} required user_admin="admin-secret";'
        ),
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
    }
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), port=plaintext, overrides=overrides
    ) as process:
        yield f"127.0.0.1:{sasl}"
        assert "Traceback" not in "\n".join(process.output)


def _admin(address: str) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )


def _scram(address: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def _upsert(
    user: str, password: str, mechanism: str = "SCRAM-SHA-256", iterations: int = 8192
) -> UserScramCredentialUpsertion:
    info = ScramCredentialInfo(MECHANISMS[mechanism], iterations)
    return UserScramCredentialUpsertion(user, info, password.encode())


def _alter(admin: AdminClient, alterations: list[Any]) -> dict[str, Exception | None]:
    """Each user's outcome: None, or the exception its future raised."""
    outcome: dict[str, Exception | None] = {}
    for user, future in admin.alter_user_scram_credentials(alterations).items():
        try:
            future.result(timeout=TIMEOUT)
            outcome[user] = None
        except KafkaException as exc:
            outcome[user] = exc
    return outcome


def _code(exc: Exception | None) -> int | None:
    assert isinstance(exc, KafkaException), exc
    error = exc.args[0]
    assert isinstance(error, KafkaError)
    return int(error.code())


def _produces(config: dict[str, Any], topic: str) -> bool:
    """Whether a producer with ``config`` authenticates and gets a record acknowledged
    (False: the broker refused its authentication)."""
    errors: list[str] = []
    producer = Producer(
        {
            **config,
            "error_cb": lambda e: errors.append(str(e)),
            "message.timeout.ms": 8000,
        }
    )
    delivered: list[bool] = []
    producer.produce(topic, b"v", on_delivery=lambda e, _m: delivered.append(e is None))
    deadline = time.monotonic() + TIMEOUT
    while not delivered and time.monotonic() < deadline:
        producer.poll(0.2)
        if any("Authentication failed" in e or "credentials" in e for e in errors):
            return False
    return delivered == [True]


@pytest.mark.compat("AlterUserScramCredentials", "confluent-kafka")
@pytest.mark.compat("DescribeUserScramCredentials", "confluent-kafka")
@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_an_admin_made_user_authenticates_until_altered_or_deleted(
    sasl_address: str, mechanism: str, request: pytest.FixtureRequest
) -> None:
    """A user created with AlterUserScramCredentials produces with SCRAM; after its
    password changes the old one is refused and the new one accepted; once deleted it
    is refused. DescribeUserScramCredentials lists its mechanism and iterations."""
    admin = _admin(sasl_address)
    user = unique_name(request, "user")
    topic = unique_name(request, "scram")
    assert _alter(admin, [_upsert(user, "first", mechanism)]) == {user: None}
    described = admin.describe_user_scram_credentials([user])[user].result(
        timeout=TIMEOUT
    )
    infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
    assert infos == [(MECHANISMS[mechanism], 8192)]
    assert _produces(_scram(sasl_address, mechanism, user, "first"), topic)

    assert _alter(admin, [_upsert(user, "second", mechanism)]) == {user: None}
    assert not _produces(_scram(sasl_address, mechanism, user, "first"), topic)
    assert _produces(_scram(sasl_address, mechanism, user, "second"), topic)

    deletion = UserScramCredentialDeletion(user, MECHANISMS[mechanism])
    assert _alter(admin, [deletion]) == {user: None}
    assert not _produces(_scram(sasl_address, mechanism, user, "second"), topic)


def test_bad_alterations_and_descriptions_get_kafkas_errors(
    sasl_address: str, request: pytest.FixtureRequest
) -> None:
    """Too few or too many iterations: UNACCEPTABLE_CREDENTIAL; deleting a credential
    that does not exist, or describing an unknown user: RESOURCE_NOT_FOUND; a good
    alteration in the same request still happens."""
    admin = _admin(sasl_address)
    few, many, ghost, good = (
        unique_name(request, name) for name in ("few", "many", "ghost", "good")
    )
    outcome = _alter(
        admin,
        [
            _upsert(few, "x", iterations=4095),
            _upsert(many, "x", iterations=16385),
            UserScramCredentialDeletion(ghost, ScramMechanism.SCRAM_SHA_256),
            _upsert(good, "good-secret"),
        ],
    )
    assert _code(outcome[few]) == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert _code(outcome[many]) == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert _code(outcome[ghost]) == KafkaError.RESOURCE_NOT_FOUND
    assert outcome[good] is None
    with pytest.raises(KafkaException) as refused:
        admin.describe_user_scram_credentials([ghost])[ghost].result(timeout=TIMEOUT)
    assert _code(refused.value) == KafkaError.RESOURCE_NOT_FOUND
