"""``--command-config`` for ``minikafka reassign-partitions``, ``leader-election``,
``delete-records``, ``metadata-quorum`` and ``transactions``, as kafka-*.sh take it.

Each tool reaches a broker's SASL_PLAINTEXT listener (PLAIN, the StandardAuthorizer on)
as the super user ``admin`` named by a Java properties file (``security.protocol``,
``sasl.mechanism``, a ``sasl.jaas.config`` continued over two lines), and prints
Kafka's answer. The same file with a wrong password makes each exit 1 with the
broker's authentication error, so the file's keys are what the tool connects with.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerProcess, free_ports
from tests.compat.test_acls import USERS, sasl_overrides

pytestmark = pytest.mark.external

TIMEOUT = 60.0
TOPIC = "secured-tools"
RECORDS = 5
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule"


@attrs.frozen
class Secured:
    """The SASL listener's address, the admin's properties file, one with a wrong
    password, and the directory for the tools' JSON files."""

    sasl: str
    admin: Path
    wrong: Path
    directory: Path


def properties(path: Path, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={JAAS} \\\n"
        f'  required username="admin" password="{password}";\n'
    )
    return path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A broker with a PLAINTEXT and a SASL_PLAINTEXT listener, and topic
    :data:`TOPIC` holding :data:`RECORDS` records (written over PLAINTEXT)."""
    plaintext, sasl = free_ports(2)
    directory = tmp_path_factory.mktemp("tools-command-config")
    with BrokerProcess(
        directory / "broker", port=plaintext, overrides=sasl_overrides(plaintext, sasl)
    ) as process:
        bootstrap: dict[str, str | int | float | bool] = {
            "bootstrap.servers": f"127.0.0.1:{plaintext}"
        }
        admin = AdminClient(bootstrap)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(TIMEOUT)
        producer = Producer(bootstrap)
        for i in range(RECORDS):
            producer.produce(TOPIC, f"v{i}".encode(), partition=0)
        assert producer.flush(TIMEOUT) == 0
        yield Secured(
            f"127.0.0.1:{sasl}",
            properties(directory / "admin.properties", USERS["admin"]),
            properties(directory / "wrong.properties", "not-the-password"),
            directory,
        )
        assert "Traceback" not in "\n".join(process.output)


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka.tools", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def broker_id(secured: Secured) -> int:
    """The one broker's id, as the SASL listener's metadata names it."""
    admin = AdminClient(
        {
            "bootstrap.servers": secured.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )
    [broker] = admin.list_topics(timeout=TIMEOUT).brokers
    return int(broker)


def command(secured: Secured, name: str, config: Path) -> list[str]:
    """The arguments of tool ``name`` run as ``config`` says; each asks the cluster
    something a SASL listener answers only once authenticated."""
    if name == "reassign-partitions":
        plan = secured.directory / "reassignment.json"
        replicas = [broker_id(secured)]
        partitions = [{"topic": TOPIC, "partition": 0, "replicas": replicas}]
        plan.write_text(json.dumps({"version": 1, "partitions": partitions}))
        return [name, "--bootstrap-server", secured.sasl, "--command-config",
                str(config), "--verify", "--reassignment-json-file", str(plan)]  # fmt: skip
    if name == "leader-election":
        return [name, "--bootstrap-server", secured.sasl, "--command-config",
                str(config), "--election-type", "PREFERRED", "--topic", TOPIC,
                "--partition", "0"]  # fmt: skip
    if name == "delete-records":
        offsets = secured.directory / "offsets.json"
        partitions = [{"topic": TOPIC, "partition": 0, "offset": 2}]
        offsets.write_text(json.dumps({"version": 1, "partitions": partitions}))
        return [name, "--bootstrap-server", secured.sasl, "--command-config",
                str(config), "--offset-json-file", str(offsets)]  # fmt: skip
    # metadata-quorum and transactions take their connection options before the
    # subcommand, as kafka-metadata-quorum.sh and kafka-transactions.sh do
    after = ["describe", "--status"] if name == "metadata-quorum" else ["list"]
    return [name, "--bootstrap-server", secured.sasl, "--command-config", str(config),
            *after]  # fmt: skip


def test_reassign_partitions_verifies_over_sasl(secured: Secured) -> None:
    """``--verify`` of the partition's current placement over SASL: complete."""
    result = tool(*command(secured, "reassign-partitions", secured.admin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {TOPIC}-0 is complete.",
    ]


def test_leader_election_over_sasl(secured: Secured) -> None:
    """A preferred election of a partition whose preferred replica leads: not needed,
    which kafka-leader-election.sh reports without failing."""
    result = tool(*command(secured, "leader-election", secured.admin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Valid replica already elected for partitions {TOPIC}-0"
    ]


def test_delete_records_over_sasl(secured: Secured) -> None:
    """Records below offset 2 deleted over SASL: the low watermark is 2."""
    result = tool(*command(secured, "delete-records", secured.admin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {TOPIC}-0\tlow_watermark: 2",
    ]


def test_metadata_quorum_describes_over_sasl(secured: Secured) -> None:
    """``describe --status`` over SASL names the quorum's leader, the one broker."""
    result = tool(*command(secured, "metadata-quorum", secured.admin))
    assert result.returncode == 0, result.stderr
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines())
    assert fields["LeaderId"].strip() == str(broker_id(secured))


def test_transactions_lists_over_sasl(secured: Secured) -> None:
    """``list`` over SASL: the table's header, and no transaction yet."""
    result = tool(*command(secured, "transactions", secured.admin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "TransactionalId",
        "Coordinator",
        "ProducerId",
        "TransactionState",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "reassign-partitions",
        "leader-election",
        "delete-records",
        "metadata-quorum",
        "transactions",
    ],
)
def test_a_wrong_password_in_the_command_config_is_refused(
    secured: Secured, name: str
) -> None:
    """The same tool with a wrong password in its ``--command-config`` exits 1 with
    the broker's authentication error: the file is what the tool connects with."""
    result = tool(*command(secured, name, secured.wrong))
    assert result.returncode == 1, result.stdout
    assert "Authentication failed" in result.stderr, result.stderr
