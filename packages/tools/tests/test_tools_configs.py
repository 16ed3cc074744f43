"""``minikafka configs``, Kafka's kafka-configs.sh: its flags as ConfigCommand reads and
refuses them, and the command against a real single KRaft node.

The parsing tests need no broker. The end-to-end tests run the broker in this trio loop
(``tool_cluster``) and the command through typer's CliRunner in a worker thread (the
command calls ``trio.run`` itself); the messages and lines expected are the ones Kafka
4.1's tool prints (checked against it in ``tests/reference/test_tools.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio
from typer.testing import CliRunner

from minikafka.broker.testing import bootstrap, single_node_config, tool_cluster
from minikafka.client import (
    AsyncAdminClient,
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    KafkaError,
    NewTopic,
)
from minikafka.tools._cli import app
from minikafka.tools._configs import (
    BROKERS,
    TOPICS,
    ConfigCommandError,
    Entity,
    Flags,
    check_flags,
    check_topic_name,
    entry_line,
    exception_name,
    failure_lines,
    parse_add_config,
    parse_delete_config,
    parse_properties,
)

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
BAD_PAIR = (
    "requirement failed: Invalid entity config: all configs to be added must be in the "
    'format "key=val" or  "key=[val1,val2]" to group values which contain commas.'
)


# --- --add-config and --delete-config ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("retention.ms=1000", {"retention.ms": "1000"}),
        (
            "k1=v1,k2=[v1,v2,v3],k3=v3",
            {"k1": "v1", "k2": "v1,v2,v3", "k3": "v3"},
        ),
        ("cleanup.policy=[compact,delete]", {"cleanup.policy": "compact,delete"}),
        (
            " retention.ms = 100 , segment.ms=[200]",
            {"retention.ms": "100", "segment.ms": "200"},
        ),
        ("a=[x=y]", {"a": "x=y"}),  # an '=' inside brackets is the value's
        ("a=", {"a": ""}),  # an empty value
        ("a=1,", {"a": "1"}),  # a trailing comma, dropped as Java's split drops it
        ("a=1,a=2", {"a": "2"}),  # the later wins, as in a Properties
    ],
)
def test_add_config_is_read_with_kafkas_bracket_syntax(
    text: str, parsed: dict[str, str]
) -> None:
    # Guarantee: --add-config splits at commas and '=' outside square brackets, drops
    # the brackets and the spaces around keys and values, as ConfigCommand does.
    assert parse_add_config(text) == parsed


@pytest.mark.parametrize("text", ["a=b=c", "novalue", "", ",a=1", "a=1,,b=2"])
def test_add_config_without_key_equals_value_gets_kafkas_message(text: str) -> None:
    # Guarantee: an item that is not exactly key=value is refused with Kafka's message.
    with pytest.raises(ConfigCommandError) as refused:
        parse_add_config(text)
    assert str(refused.value) == BAD_PAIR


def test_add_config_key_with_another_character_is_refused() -> None:
    # Guarantee: a key outside [a-zA-Z0-9._-] is refused naming it.
    with pytest.raises(ConfigCommandError) as refused:
        parse_add_config("k@=1")
    assert str(refused.value) == "Invalid character found for config key: k@"


def test_add_config_file_is_read_as_java_properties() -> None:
    # Guarantee: --add-config-file reads key=value, key: value and key value lines,
    # skips # and ! comments and blank lines, joins a line ending in a backslash with
    # the next, and keeps a value's commas as they are (no bracket syntax there).
    text = (
        "# retention\n"
        "retention.ms = 1000\n"
        "! another comment\n"
        "\n"
        "cleanup.policy: compact,delete\n"
        "segment.ms 2000\n"
        "min.insync.replicas=\\\n"
        "    2\n"
    )
    assert parse_properties(text) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
        "segment.ms": "2000",
        "min.insync.replicas": "2",
    }
    with pytest.raises(ConfigCommandError) as refused:
        parse_properties("k@=1\n")
    assert str(refused.value) == "Invalid character found for config key: k@"


def test_delete_config_keys_are_split_and_trimmed() -> None:
    # Guarantee: --delete-config takes comma-separated keys, repeatable, trimmed.
    assert parse_delete_config([" a , b", "c"]) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "the empty string is not allowed"),
        ("..", "'..' is not allowed"),
        ("bad name", "'bad name' contains one or more characters other than ASCII "
         "alphanumerics, '.', '_' and '-'"),
        ("x" * 250, f"the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ],
)  # fmt: skip
def test_a_bad_topic_name_gets_kafkas_topic_validate_message(
    name: str, reason: str
) -> None:
    # Guarantee: a topic name Kafka's Topic.validate refuses is refused with its words.
    with pytest.raises(ConfigCommandError) as refused:
        check_topic_name(name)
    assert str(refused.value) == f"Topic name is invalid: {reason}"


# --- the flags -------------------------------------------------------------------------------

DESCRIBE = Flags(describe=True)
ALTER = Flags(alter=True, add_config="a=1")


@pytest.mark.parametrize(
    ("flags", "entity"),
    [
        (attrs.evolve(DESCRIBE, topic="t"), Entity(TOPICS, "t")),
        (attrs.evolve(DESCRIBE, entity_types=["topics"]), Entity(TOPICS, None)),
        (
            attrs.evolve(DESCRIBE, entity_types=["brokers"], entity_default=True),
            Entity(BROKERS, ""),
        ),
        (
            attrs.evolve(ALTER, entity_types=["brokers"], entity_names=["1"]),
            Entity(BROKERS, "1"),
        ),
        (attrs.evolve(ALTER, broker_defaults=True), Entity(BROKERS, "")),
        (Flags(alter=True, delete_config=["a"], topic="t"), Entity(TOPICS, "t")),
    ],
)
def test_the_entity_flags_name_one_entity(flags: Flags, entity: Entity) -> None:
    # Guarantee: --topic and --broker are --entity-type/--entity-name's shorthands, and
    # --entity-default (or --broker-defaults) names the brokers' default, "".
    assert check_flags(flags) == entity


ONE_ACTION = "Command must include exactly one action: --describe, --alter"
REFUSED_FLAGS = [
    (Flags(topic="t"), ONE_ACTION),
    (Flags(describe=True, alter=True, topic="t"), ONE_ACTION),
    (
        attrs.evolve(DESCRIBE, topic="t", add_config="a=1"),
        'Option "[describe]" can\'t be used with option "[add-config]"',
    ),
    (DESCRIBE, "At least one entity type must be specified"),
    (
        attrs.evolve(DESCRIBE, entity_types=["foo"]),
        "Invalid entity type foo, the entity type must be one of topics, clients, "
        "users, brokers, ips, client-metrics, groups, broker-loggers with a "
        "--bootstrap-server or --bootstrap-controller argument",
    ),
    (
        attrs.evolve(DESCRIBE, entity_types=["topics"], topic="t"),
        "Duplicate entity type(s) specified: topics",
    ),
    (
        attrs.evolve(DESCRIBE, entity_types=["topics", "brokers"]),
        "Only 'users' and 'clients' entity types may be specified together",
    ),
    (
        attrs.evolve(DESCRIBE, entity_names=["t"], topic="t"),
        "--entity-{type,name,default} should not be used in conjunction with "
        "specific entity flags",
    ),
    (
        attrs.evolve(DESCRIBE, entity_types=["brokers"], entity_names=["x"]),
        "The entity name for brokers must be a valid integer broker id, but it is: x",
    ),
    (
        attrs.evolve(DESCRIBE, entity_types=["topics"], entity_default=True),
        "--entity-default must not be specified with --describe of topics",
    ),
    (
        attrs.evolve(ALTER, entity_types=["topics"]),
        "An entity name must be specified with --alter of topics",
    ),
    (
        attrs.evolve(ALTER, entity_types=["brokers"]),
        "An entity-name or default entity must be specified with --alter of users, "
        "clients, brokers or ips",
    ),
    (
        Flags(alter=True, topic="t"),
        "At least one of --add-config, --add-config-file, or --delete-config must be "
        "specified with --alter",
    ),
    (
        attrs.evolve(ALTER, topic="t", add_config_file="f.properties"),
        "Only one of --add-config or --add-config-file must be specified",
    ),
    (
        attrs.evolve(DESCRIBE, topic="t", add_config_file="f.properties"),
        'Option "[describe]" can\'t be used with option "[add-config-file]"',
    ),
    (
        attrs.evolve(DESCRIBE, entity_types=["ips"]),
        "Invalid entity type ips: minikafka has configs for topics, brokers, users only",
    ),
    (
        attrs.evolve(ALTER, entity_types=["users"], entity_default=True),
        "--entity-default of users names client quotas, which minikafka does not keep",
    ),
    (
        attrs.evolve(ALTER, entity_types=["users"], add_config="SCRAM-SHA-256=[x=1]"),
        "An entity-name or default entity must be specified with --alter of users, "
        "clients, brokers or ips",
    ),
]


@pytest.mark.parametrize(("flags", "message"), REFUSED_FLAGS)
def test_bad_flags_are_refused_with_config_commands_messages(
    flags: Flags, message: str
) -> None:
    # Guarantee: each combination Kafka's ConfigCommand refuses is refused with its
    # message (the last, a type Kafka has and minikafka does not, with minikafka's).
    with pytest.raises(ConfigCommandError) as refused:
        check_flags(flags)
    assert str(refused.value) == message


def test_an_entry_is_printed_as_kafkas_describe_line() -> None:
    # Guarantee: the describe line is Kafka's: value, sensitive, the synonyms in order
    # as SOURCE:key=value; a withheld value is "null".
    entry = ConfigEntry(
        "retention.ms", "1000", False, False, False,
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        (
            ConfigSynonym("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            ConfigSynonym("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG),
        ),
    )  # fmt: skip
    assert entry_line(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "retention.ms=1000, DEFAULT_CONFIG:log.retention.ms=604800000}"
    )
    secret = ConfigEntry("ssl.key.password", None, False, False, True)
    assert entry_line(secret) == "  ssl.key.password=null sensitive=true synonyms={}"


def test_a_failed_call_is_printed_as_the_java_tool_prints_its_exception() -> None:
    # Guarantee: the command, then ExecutionException with Kafka's exception class for
    # the code and the broker's message; Kafka's class names, including the irregular.
    lines = failure_lines(["--alter", "--topic", "t"], KafkaError(40, "bad value"))
    assert lines == [
        "Error while executing config command with args '--alter --topic t'",
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "InvalidConfigurationException: bad value",
    ]
    assert exception_name(3) == "UnknownTopicOrPartitionException"
    assert exception_name(42) == "InvalidRequestException"
    assert exception_name(17) == "InvalidTopicException"
    assert exception_name(-1) == "UnknownServerException"
    assert exception_name(9999) == "UnknownServerException"
    assert failure_lines([], KafkaError(-195, "cannot connect")) == [
        "Error while executing config command with args ''",
        "cannot connect",
    ]


# --- against a broker ------------------------------------------------------------------------


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(single_node_config(tmp_path / "data")) as cluster:
        with trio.fail_after(DEADLINE):
            created = await cluster.create_topics([NewTopic("orders", 1, 1)])
        assert created == {"orders": None}
        yield cluster


@attrs.frozen
class Run:
    code: int
    stdout: str
    stderr: str


async def configs(cluster: AsyncAdminClient, *args: str) -> Run:
    """``minikafka configs --bootstrap-server <the broker> *args``, in a worker thread."""

    def invoke() -> Run:
        server = ["--bootstrap-server", bootstrap(cluster)]
        result = CliRunner().invoke(app, ["configs", *server, *args])
        return Run(result.exit_code, result.stdout, result.stderr)

    return await trio.to_thread.run_sync(invoke)


def described(run: Run, heading: str) -> dict[str, str]:
    """key -> the rest of its line, under ``heading``."""
    assert run.code == 0, run
    lines = run.stdout.splitlines()
    assert lines[0] == heading, run.stdout
    found = {}
    for line in lines[1:]:
        assert line.startswith("  "), line
        key, _, rest = line[2:].partition("=")
        found[key] = rest
    return found


async def test_alter_describe_and_delete_a_topics_configs(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: --add-config sets retention.ms and a bracketed list cleanup.policy;
    # --describe shows exactly those two as DYNAMIC_TOPIC_CONFIG; --delete-config
    # takes retention.ms back to the value --describe --all showed before.
    topic = ["--entity-type", "topics", "--entity-name", "orders"]
    with trio.fail_after(DEADLINE):
        before = described(
            await configs(cluster, "--describe", "--topic", "orders", "--all"),
            "All configs for topic orders are:",
        )
        done = await configs(
            cluster, "--alter", *topic,
            "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]",
        )  # fmt: skip
        assert done == Run(0, "Completed updating config for topic orders.\n", "")
        dynamic = described(
            await configs(cluster, "--describe", *topic),
            "Dynamic configs for topic orders are:",
        )
        assert list(dynamic) == ["cleanup.policy", "retention.ms"]
        assert dynamic["retention.ms"].startswith(
            "60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000, "
        )
        assert dynamic["cleanup.policy"].startswith(
            "compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
            "cleanup.policy=compact,delete, "
        )

        deleted = await configs(
            cluster, "--alter", "--topic", "orders", "--delete-config", "retention.ms"
        )
        assert deleted.code == 0, deleted
        after = described(
            await configs(cluster, "--describe", "--topic", "orders", "--all"),
            "All configs for topic orders are:",
        )
        assert after["retention.ms"] == before["retention.ms"]
        assert "DYNAMIC_TOPIC_CONFIG" not in after["retention.ms"]
        assert after["cleanup.policy"] == dynamic["cleanup.policy"]


async def test_refusals_print_kafkas_errors_and_change_nothing(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: an unknown key, a bad value, an unknown topic and a --delete-config of
    # a key with no override each exit 1 with Kafka's error on stderr, and the topic's
    # configs are as they were.
    header = "Error while executing config command with args '--bootstrap-server {}"
    errors = "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
    with trio.fail_after(DEADLINE):
        await configs(
            cluster, "--alter", "--topic", "orders", "--add-config", "segment.ms=5000"
        )
        before = await configs(cluster, "--describe", "--topic", "orders", "--all")
        invalid = "InvalidConfigurationException: "
        cases = [
            (["--topic", "orders", "--add-config", "no.such.key=1"], invalid),
            (["--topic", "orders", "--add-config", "retention.ms=soon"], invalid),
            (
                ["--topic", "missing", "--add-config", "retention.ms=1"],
                "UnknownTopicOrPartitionException",
            ),
        ]
        for args, exception in cases:
            run = await configs(cluster, "--alter", *args)
            assert run.code == 1, run
            first, second = run.stderr.splitlines()
            assert first.startswith(header.format(bootstrap(cluster))), first
            assert second.startswith(errors + exception), second
            assert run.stdout == ""
        missing = await configs(
            cluster, "--alter", "--topic", "orders", "--delete-config", "segment.ms,retention.ms"
        )  # fmt: skip
        assert missing == Run(1, "", "Invalid config(s): retention.ms\n")
        assert (
            await configs(cluster, "--describe", "--topic", "orders", "--all") == before
        )
        unknown = await configs(cluster, "--describe", "--topic", "missing")
        assert unknown == Run(
            0,
            "The topic 'missing' doesn't exist and doesn't have dynamic config.\n",
            "",
        )


async def test_a_broker_key_is_refused_naming_it(cluster: AsyncAdminClient) -> None:
    # Guarantee: changing a broker key that cannot change at run time (log.dirs, as in
    # Kafka) exits 1 with INVALID_REQUEST naming the key, for the broker and for the
    # default; the broker then still has no dynamic config.
    with trio.fail_after(DEADLINE):
        for target in (["--entity-name", "1"], ["--entity-default"]):
            run = await configs(
                cluster, "--alter", "--entity-type", "brokers", *target,
                "--add-config", "log.dirs=/elsewhere",
            )  # fmt: skip
            assert run.code == 1, run
            assert run.stderr.splitlines()[1].endswith(
                "InvalidRequestException: Cannot update these configs dynamically: "
                "Set(log.dirs)"
            ), run.stderr
        brokers = await configs(cluster, "--describe", "--entity-type", "brokers")
        assert brokers == Run(
            0,
            "Dynamic configs for broker 1 are:\n"
            "Default configs for brokers in the cluster are:\n",
            "",
        )
        everything = described(
            await configs(cluster, "--describe", "--broker", "1", "--all"),
            "All configs for broker 1 are:",
        )
        assert "STATIC_BROKER_CONFIG:log.dirs=" in everything["log.dirs"]


async def test_bad_flags_exit_1_with_the_message_alone(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: the command prints ConfigCommand's refusal of its flags alone on stderr
    # and exits 1, before it asks the cluster anything.
    with trio.fail_after(DEADLINE):
        run = await configs(
            cluster, "--alter", "--topic", "orders", "--add-config", "a=b=c"
        )
        assert run == Run(1, "", BAD_PAIR + "\n")
        run = await configs(cluster, "--describe")
        assert run == Run(1, "", "At least one entity type must be specified\n")
    no_server = CliRunner().invoke(app, ["configs", "--describe", "--topic", "t"])
    assert (no_server.exit_code, no_server.stderr) == (
        1,
        "Either --bootstrap-server or --bootstrap-controller must be specified.\n",
    )


async def test_add_config_file_sets_the_files_keys(
    cluster: AsyncAdminClient, tmp_path: Path
) -> None:
    # Guarantee: --alter --add-config-file sets every key of the properties file, a
    # list value's commas included, as one change.
    path = tmp_path / "orders.properties"
    path.write_text("retention.ms=120000\ncleanup.policy=compact,delete\n")
    with trio.fail_after(DEADLINE):
        done = await configs(
            cluster, "--alter", "--topic", "orders", "--add-config-file", str(path)
        )
        assert done == Run(0, "Completed updating config for topic orders.\n", "")
        dynamic = described(
            await configs(cluster, "--describe", "--topic", "orders"),
            "Dynamic configs for topic orders are:",
        )
    assert [(k, v.split(" ")[0]) for k, v in dynamic.items()] == [
        ("cleanup.policy", "compact,delete"),
        ("retention.ms", "120000"),
    ]
