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
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from typer.testing import CliRunner

from minikafka.broker._cli import app
from minikafka.broker._meta_properties import new_cluster_id
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


def _per_user(answer: object) -> dict[str, Future[Any]]:
    """describe_user_scram_credentials(users) answers one future per user."""
    assert isinstance(answer, dict)
    return answer


def _all_users(answer: object) -> dict[str, Any]:
    """describe_user_scram_credentials() answers one future of every user."""
    assert isinstance(answer, Future)
    result = answer.result(timeout=TIMEOUT)
    assert isinstance(result, dict)
    return result


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
    described = _per_user(admin.describe_user_scram_credentials([user]))[user].result(
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
        _per_user(admin.describe_user_scram_credentials([ghost]))[ghost].result(
            timeout=TIMEOUT
        )
    assert _code(refused.value) == KafkaError.RESOURCE_NOT_FOUND


def test_users_added_by_storage_format_authenticate_from_the_first_start(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``minikafka storage format --add-scram`` (kafka-storage.sh's flag) writes the
    users into the bootstrap checkpoint; the new cluster's first controller writes them
    into the metadata log, and a client authenticates as each from the first start,
    with the right password only."""
    plaintext, sasl = free_ports(2)
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
            f"{SCRAM_MODULE} required;"
        ),
    }
    data_dir = tmp_path / "data"
    args = ["storage", "format", "-t", new_cluster_id()]
    for key, value in {**overrides, "log.dirs": str(data_dir)}.items():
        args += ["--override", f"{key}={value}"]
    args += [
        "--add-scram",
        "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        "--add-scram",
        "SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    address = f"127.0.0.1:{sasl}"
    topic = unique_name(request, "boot")
    with BrokerProcess(data_dir, port=plaintext, overrides=overrides) as process:
        assert _produces(
            _scram(address, "SCRAM-SHA-256", "alice", "alice-secret"), topic
        )
        assert _produces(_scram(address, "SCRAM-SHA-512", "bob", "bob-secret"), topic)
        assert not _produces(_scram(address, "SCRAM-SHA-256", "alice", "guess"), topic)
        admin = AdminClient(_scram(address, "SCRAM-SHA-256", "alice", "alice-secret"))
        users = _all_users(admin.describe_user_scram_credentials())
        assert {
            u: [i.iterations for i in d.scram_credential_infos]
            for u, d in users.items()
        } == {
            "alice": [4096],
            "bob": [8192],
        }
        assert "Traceback" not in "\n".join(process.output)


def test_a_bad_add_scram_argument_is_refused_and_formats_nothing(
    tmp_path: Path,
) -> None:
    """An unknown mechanism, a missing name or iterations out of bounds: kafka-storage.sh's
    refusal, exit code 1, and no directory formatted."""
    for bad in (
        "SCRAM-SHA-1=[name=a,password=b]",
        "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
    ):
        data_dir = tmp_path / "never"
        result = CliRunner().invoke(
            app,
            [
                "storage",
                "format",
                "-t",
                new_cluster_id(),
                "--override",
                f"log.dirs={data_dir}",
                "--add-scram",
                bad,
            ],
        )
        assert result.exit_code == 1, (bad, result.output)
        assert "--add-scram" in result.output
        assert not data_dir.exists()
