"""Kafka's kafka-acls.sh against minikafka, beside ``minikafka acls``.

The broker is minikafka with KRaft's StandardAuthorizer and a SASL_PLAINTEXT listener;
both tools connect to it as the super user ``User:admin`` through ``--command-config``
(SASL/PLAIN), Kafka's AclCommand with the Java client, ``minikafka acls`` with
minikafka's own. What they print is compared line for line: the ``Adding ACLs for
resource`` block of ``--add``, the ``Current ACLs for resource`` blocks of ``--list``
(the entries of a block in whatever order Kafka's hash sets give, so compared as sets),
and nothing left after ``--remove --force``.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from minikafka.broker.testing import BrokerProcess, free_ports
from reference.kafka import run_tool
from tests.cluster._cluster import WAIT

pytestmark = [pytest.mark.external, pytest.mark.timeout(240)]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN_SECRET = "admin-secret"


@attrs.frozen
class Secured:
    bootstrap: str
    command_config: Path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A minikafka broker with the authorizer; a PLAIN ``--command-config`` for admin."""
    plaintext, sasl = free_ports(2)
    directory = tmp_path_factory.mktemp("acls")
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            f'{PLAIN_MODULE} required user_admin="{ADMIN_SECRET}";'
        ),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
    }
    config = directory / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="admin" '
        f'password="{ADMIN_SECRET}";\n'
    )
    with BrokerProcess(directory / "broker", port=plaintext, overrides=overrides):
        yield Secured(f"127.0.0.1:{sasl}", config)


def kafka_acls(secured: Secured, *args: str) -> list[str]:
    common = ("--bootstrap-server", secured.bootstrap)
    config = ("--command-config", str(secured.command_config))
    run = run_tool("kafka-acls", *common, *config, *args, timeout=WAIT).check()
    return run.stdout.splitlines()


def minikafka_acls(secured: Secured, *args: str) -> list[str]:
    command = [sys.executable, "-m", "minikafka.tools", "acls"]
    common = ["--bootstrap-server", secured.bootstrap]
    config = ["--command-config", str(secured.command_config)]
    result = subprocess.run(
        [*command, *common, *config, *args],
        capture_output=True, text=True, timeout=WAIT, check=True,
    )  # fmt: skip
    return result.stdout.splitlines()


def blocks(lines: list[str]) -> dict[str, frozenset[str]]:
    """Each heading line (ending in ``:`` or ``: ``) and the set of entry lines under it
    (their leading space and tab dropped: Kafka puts a space before the first)."""
    found: dict[str, set[str]] = {}
    heading = ""
    for line in lines:
        if line.startswith(("Adding ACLs", "Current ACLs")):
            heading = line
            found[heading] = set()
        elif line.strip() and heading:
            found[heading].add(line.strip())
    return {k: frozenset(v) for k, v in found.items()}


@pytest.mark.kafka_tool("kafka-acls", "--add")
@pytest.mark.kafka_tool("kafka-acls", "--list")
@pytest.mark.kafka_tool("kafka-acls", "--remove")
def test_add_list_and_remove_print_what_minikafka_acls_prints(
    secured: Secured,
) -> None:
    topic = f"acls-{uuid.uuid4().hex[:8]}"
    ours_topic = topic + "-ours"
    add = ("--add", "--allow-principal", "User:alice", "--operation", "Read",
           "--operation", "Write", "--deny-principal", "User:bob", "--topic")  # fmt: skip
    theirs = kafka_acls(secured, *add, topic)
    ours = minikafka_acls(secured, *add, ours_topic)
    assert blocks([line.replace(topic, "T") for line in theirs]) == blocks(
        [line.replace(ours_topic, "T") for line in ours]
    )
    assert len(theirs) == len(ours)
    assert theirs[0].endswith(": ")
    assert theirs[1].startswith(" \t(principal=")
    for name in (topic, ours_topic):
        listed_theirs = kafka_acls(secured, "--list", "--topic", name)
        listed_ours = minikafka_acls(secured, "--list", "--topic", name)
        assert blocks(listed_theirs) == blocks(listed_ours)
        assert len(blocks(listed_ours)) == 1
        assert (
            len(next(iter(blocks(listed_ours).values()))) == 4
        )  # two principals, two operations
    kafka_acls(secured, "--remove", "--force", "--topic", topic)
    minikafka_acls(secured, "--remove", "--force", "--topic", ours_topic)
    for name in (topic, ours_topic):
        assert kafka_acls(secured, "--list", "--topic", name) == []
        assert minikafka_acls(secured, "--list", "--topic", name) == []


@pytest.mark.kafka_tool("kafka-acls", "--add --producer --consumer")
def test_producer_and_consumer_shorthands_create_the_same_acls(
    secured: Secured,
) -> None:
    topic, group = f"roles-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    roles = ("--add", "--allow-principal", "User:carol", "--producer", "--consumer",
             "--topic")  # fmt: skip
    theirs = kafka_acls(secured, *roles, topic, "--group", group)
    ours = minikafka_acls(secured, *roles, topic + "-ours", "--group", group + "-ours")
    assert blocks(
        [line.replace(topic, "T").replace(group, "G") for line in theirs]
    ) == (
        blocks(
            [
                line.replace(topic + "-ours", "T").replace(group + "-ours", "G")
                for line in ours
            ]
        )
    )
