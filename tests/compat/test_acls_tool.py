"""``minikafka acls`` (kafka-acls.sh) against a broker with KRaft's StandardAuthorizer.

The tool connects as a super user over SASL_PLAINTEXT/PLAIN through ``--command-config``
(minikafka's own client speaking SASL), adds ACLs and prints them as AclCommand does
(``Adding ACLs for resource `ResourcePattern(...)`:`` then one ``(principal=...,
host=..., operation=..., permissionType=...)`` line per entry), lists them (a prefixed
ACL found by ``--resource-pattern-type match`` for a name it covers), expands
``--producer``/``--consumer`` into Kafka's operations, refuses what AclCommand refuses,
and removes them with ``--force``; an ACL added twice is reported as existing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess, free_ports
from tests.compat.test_acls import USERS, sasl_overrides, unique_name

pytestmark = pytest.mark.external

TIMEOUT = 60.0


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """``minikafka acls --bootstrap-server ... --command-config admin.properties``."""
    plaintext, sasl = free_ports(2)
    directory = tmp_path_factory.mktemp("acls-tool")
    properties = directory / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n"
        f'  required username="admin" password="{USERS["admin"]}";\n'
    )
    with BrokerProcess(
        directory / "broker", port=plaintext, overrides=sasl_overrides(plaintext, sasl)
    ) as process:
        yield [
            sys.executable,
            "-m",
            "minikafka.tools",
            "acls",
            "--bootstrap-server",
            f"127.0.0.1:{sasl}",
            "--command-config",
            str(properties),
        ]
        assert "Traceback" not in "\n".join(process.output)


def run(tool: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tool, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def pattern(kind: str, name: str, pattern_type: str = "LITERAL") -> str:
    return (
        f"ResourcePattern(resourceType={kind}, name={name}, patternType={pattern_type})"
    )


def entry(principal: str, operation: str, permission: str = "ALLOW") -> str:
    return (
        f"\t(principal={principal}, host=*, operation={operation}, "
        f"permissionType={permission})"
    )


def test_add_prints_the_new_entries_and_list_finds_them(tool: list[str]) -> None:
    topic = unique_name("acl-tool")
    added = run(
        tool,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Write",
        "--topic",
        topic,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines() == [
        f"Adding ACLs for resource `{pattern('TOPIC', topic)}`: ",
        " " + entry("User:alice", "READ"),
        entry("User:alice", "WRITE"),
        "",
    ]
    listed = run(tool, "--list", "--topic", topic)
    assert listed.stdout.splitlines() == [
        f"Current ACLs for resource `{pattern('TOPIC', topic)}`:",
        entry("User:alice", "READ"),
        entry("User:alice", "WRITE"),
        "",
    ]
    again = run(
        tool, "--add", "--allow-principal", "User:alice", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    assert again.returncode == 0
    assert again.stdout.strip() == (
        f"Acl (pattern={pattern('TOPIC', topic)}, "
        f"entry={entry('User:alice', 'READ').strip()}) already exists."
    )


def test_a_prefixed_acl_is_listed_by_match_for_a_name_it_covers(
    tool: list[str],
) -> None:
    prefix = unique_name("family") + "-"
    added = run(
        tool, "--add", "--deny-principal", "User:bob", "--operation", "Describe",
        "--topic", prefix, "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = run(
        tool, "--list", "--topic", prefix + "orders", "--resource-pattern-type", "match"
    )
    assert f"Current ACLs for resource `{pattern('TOPIC', prefix, 'PREFIXED')}`:" in (
        listed.stdout.splitlines()
    )
    assert entry("User:bob", "DESCRIBE", "DENY") in listed.stdout.splitlines()


def test_producer_and_consumer_expand_to_kafkas_operations(tool: list[str]) -> None:
    topic, group = unique_name("roles"), unique_name("roles-group")
    result = run(
        tool, "--add", "--allow-principal", "User:carol", "--producer", "--consumer",
        "--topic", topic, "--group", group,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    listed = run(tool, "--list", "--topic", topic, "--group", group)
    lines = listed.stdout.splitlines()
    topic_at = lines.index(f"Current ACLs for resource `{pattern('TOPIC', topic)}`:")
    operations = {
        line.split("operation=")[1].split(",")[0]
        for line in lines[topic_at + 1 : topic_at + 6]
        if line
    }
    assert operations == {"CREATE", "DESCRIBE", "READ", "WRITE"}
    group_at = lines.index(f"Current ACLs for resource `{pattern('GROUP', group)}`:")
    assert lines[group_at + 1] == entry("User:carol", "READ")


def test_remove_with_force_deletes_and_list_is_then_empty(tool: list[str]) -> None:
    topic = unique_name("removed")
    run(tool, "--add", "--allow-principal", "User:dave", "--topic", topic)
    removed = run(
        tool, "--remove", "--force", "--allow-principal", "User:dave", "--topic", topic
    )
    assert removed.returncode == 0, removed.stderr
    assert run(tool, "--list", "--topic", topic).stdout.strip() == ""


def test_remove_without_force_asks_and_keeps_the_acls_on_no(tool: list[str]) -> None:
    topic = unique_name("kept")
    run(tool, "--add", "--allow-principal", "User:erin", "--topic", topic)
    asked = subprocess.run(
        [*tool, "--remove", "--topic", topic],
        input="n\n", capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert (
        "Are you sure you want to delete all ACLs for resource filter" in asked.stdout
    )
    assert entry("User:erin", "ALL") in run(tool, "--list", "--topic", topic).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--add", "--allow-principal", "User:x", "--topic", "t",
             "--resource-pattern-type", "match"],
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (
            ["--add", "--topic", "t"],
            "You must specify one of: --allow-principal, --deny-principal when "
            "trying to add ACLs.",
        ),
        (
            ["--add", "--allow-principal", "User:x", "--group", "g", "--operation",
             "Write"],
            "ResourceType GROUP only supports operations",
        ),
        (["--add", "--allow-principal", "User:x"], "You must provide at least one resource"),
        (["--list", "--allow-principal", "User:x"],
         'Option "[list]" can\'t be used with option "[allow-principal]"'),
        (["--add", "--allow-principal", "User:x", "--consumer", "--topic", "t"],
         "With --consumer you must specify a --topic and a --group"),
        (["--topic", "t"], "Command must include exactly one action"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "principalType:principalName"),
    ],
)  # fmt: skip
def test_refused_flag_combinations_exit_1_with_aclcommands_message(
    tool: list[str], args: list[str], message: str
) -> None:
    result = run(tool, *args)
    assert result.returncode == 1
    assert message in result.stderr


def test_a_wrong_password_in_command_config_fails_with_kafkas_error(
    tool: list[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=admin\nsasl.password=wrong\n"
    )
    command = [*tool[:-1], str(bad)]
    result = run(command, "--list")
    assert result.returncode == 1
    assert "SASL_AUTHENTICATION_FAILED" in result.stdout
