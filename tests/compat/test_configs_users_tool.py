"""``minikafka configs --entity-type users``: SCRAM credentials set, shown and deleted
as kafka-configs.sh does, then used.

The tool connects over SASL_PLAINTEXT/PLAIN as ``admin`` through ``--command-config``;
``--alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'`` makes a
credential (AlterUserScramCredentials), ``--describe`` prints ConfigCommand's line for it
(DescribeUserScramCredentials), minikafka's own client then authenticates with it and
produces and consumes, and after ``--delete-config`` the same client is refused.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from minikafka.broker.testing import BrokerProcess, free_ports
from tests.compat._groups import unique_name
from tests.compat._secure_clients import Secured, minikafka_round_trip, values

pytestmark = pytest.mark.external

TIMEOUT = 60.0
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@attrs.frozen
class Tool:
    bootstrap: str
    command: list[str]


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tool]:
    plaintext, sasl = free_ports(2)
    directory = tmp_path_factory.mktemp("configs-users")
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            f'{PLAIN_MODULE} required user_admin="admin-secret";'
        ),
    }
    for mechanism in ("scram-sha-256", "scram-sha-512"):
        # No users of its own: the credentials are the metadata log's, as in Kafka.
        key = f"listener.name.sasl_plaintext.{mechanism}.sasl.jaas.config"
        overrides[key] = f"{SCRAM_MODULE} required;"
    properties = directory / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=admin\nsasl.password=admin-secret\n"
    )
    bootstrap = f"127.0.0.1:{sasl}"
    with BrokerProcess(
        directory / "broker", port=plaintext, overrides=overrides
    ) as process:
        yield Tool(
            bootstrap,
            [
                sys.executable, "-m", "minikafka.tools", "configs",
                "--bootstrap-server", bootstrap,
                "--command-config", str(properties),
            ],
        )  # fmt: skip
        assert "Traceback" not in "\n".join(process.output)


def run(tool: Tool, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tool.command, *args], capture_output=True, text=True, timeout=TIMEOUT
    )


def scram(tool: Tool, user: str, mechanism: str, password: str) -> Secured:
    return Secured(
        tool.bootstrap, "SASL_PLAINTEXT", mechanism=mechanism, user=user,
        password=password,
    )  # fmt: skip


def test_a_credential_set_by_the_tool_is_described_and_authenticates(
    tool: Tool, request: pytest.FixtureRequest
) -> None:
    user = unique_name(request, "carol-")
    added = run(
        tool, "--alter", "--entity-type", "users", "--entity-name", user,
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=carol-secret],"
        "SCRAM-SHA-512=[password=carol-512]",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout == f"Completed updating config for user {user}.\n"
    described = run(tool, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.stdout == (
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    everyone = run(tool, "--describe", "--entity-type", "users")
    assert (
        f"SCRAM credential configs for user-principal '{user}' are" in everyone.stdout
    )
    topic = unique_name(request, "scram-tool-")
    good = scram(tool, user, "SCRAM-SHA-256", "carol-secret")
    assert minikafka_round_trip(good, topic) == values(topic)


def test_a_deleted_credential_is_gone_and_no_longer_authenticates(
    tool: Tool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from minikafka.client import KafkaException, Producer

    user = unique_name(request, "dave-")
    common = ("--alter", "--entity-type", "users", "--entity-name", user)
    run(tool, *common, "--add-config", "SCRAM-SHA-512=[password=dave-secret]")
    deleted = run(tool, *common, "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    described = run(tool, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.stdout == ""
    config = {
        "bootstrap.servers": tool.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": "dave-secret",
    }
    producer = Producer(config)
    with pytest.raises(KafkaException) as refused:
        producer.produce("never", b"x")
    producer.close()
    assert refused.value.args[0].name() == "SASL_AUTHENTICATION_FAILED"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--add-config", "SCRAM-SHA-256=[iterations=8192]"], "must specify a password"),
        (["--add-config", "consumer_byte_rate=1024"], "not client quotas"),
        (
            ["--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"],
            "UnacceptableCredentialException: Too few iterations",
        ),
    ],
)  # fmt: skip
def test_refused_user_alterations_exit_1_saying_why(
    tool: Tool, args: list[str], message: str
) -> None:
    result = run(
        tool, "--alter", "--entity-type", "users", "--entity-name", "erin", *args
    )
    assert result.returncode == 1
    assert message in result.stderr


def test_topics_console_producer_and_consumer_connect_through_property_files(
    tool: Tool, request: pytest.FixtureRequest
) -> None:
    """``topics --command-config``, ``produce --producer.config`` and ``consume
    --consumer.config`` over SASL_PLAINTEXT: the topic is made, the lines go in, and
    the same lines come out."""
    properties = tool.command[tool.command.index("--command-config") + 1]
    topic = unique_name(request, "console-sasl-")
    base = [sys.executable, "-m", "minikafka.tools"]
    where = ["--bootstrap-server", tool.bootstrap]
    created = subprocess.run(
        [*base, "topics", *where, "--command-config", properties, "--create",
         "--topic", topic, "--partitions", "1"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    produced = subprocess.run(
        [*base, "produce", *where, "--producer.config", properties, "--topic", topic],
        input="one\ntwo\nthree\n", capture_output=True, text=True, timeout=TIMEOUT,
        check=False,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*base, "consume", *where, "--consumer.config", properties, "--topic", topic,
         "--from-beginning", "--max-messages", "3"],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert consumed.stdout.splitlines() == ["one", "two", "three"]
