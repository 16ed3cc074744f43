"""Kafka's own command-line tools against minikafka, their output read, not only their
exit status.

The tools are Apache Kafka's (the jars ``reference/pom.xml`` pins, run as the
``kafka-*.sh`` scripts run them); the broker is minikafka: one broker process for the
single-node tools, and a cluster of processes with a Raft quorum of three controllers
(nodes 0-2) and three brokers (nodes 3-5) for the quorum, reassignment and election tools.
Where it helps, the same command runs against the real Kafka node of the session
(``kafka_reference``) and the two outputs are compared: same lines, same columns, and
the differences a user would see pinned down, so that a change to either shows here.

Every test carries ``@pytest.mark.kafka_tool(tool, action)`` for each row of COMPAT.md's
tools table it proves; ``needs=API`` when what it proves is today's failure, a clear
error naming the API minikafka does not serve yet, and ``notes=...`` for a difference a
user sees. ``scripts/tools_table.py`` builds the table from these marks.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker._node_exits import tracebacks
from minikafka.broker.testing import BrokerProcess, ProcessCluster, free_ports
from reference.kafka import TOOLS, KafkaNode, ToolRun, java_command, run_tool
from tests.cluster._cluster import FAST, WAIT, check_crashes, wait_for
from tests.reference import _tools as out

pytestmark = [pytest.mark.external, pytest.mark.timeout(180)]

T = TypeVar("T")

# A short initial rebalance delay: Kafka's 3 s would only slow the group tools down.
GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
}
TOPICS_DESCRIBE_NOTES = (
    "`Elr: N/A` `LastKnownElr: N/A` where Kafka prints them empty: minikafka does not "
    "serve DescribeTopicPartitions, so the tool falls back to Metadata (v13 here, with "
    "topic ids but no eligible leader replicas)"
)
QUORUM_NOTES = (
    "the voters are static (`controller.quorum.voters`), so, as from Kafka with static "
    "voters, `CurrentVoters` has no `directoryId` and `DirectoryId` is all zeros "
    "(`AAAAAAAAAAAAAAAAAAAAAA`); the reference node's quorum is dynamic (KIP-853)"
)


def tool(
    name: str, *args: str, input: str | None = None, returncode: int = 0
) -> ToolRun:
    """A Kafka tool's run, which must exit with ``returncode``."""
    return run_tool(name, *args, input=input, timeout=WAIT).check(returncode)


def at_once(*runs: Sequence[str]) -> list[ToolRun]:
    """Each ``(tool, *args)`` at the same time, each to exit 0: runs that only read,
    whose order does not matter (a JVM's start is most of each)."""
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = [pool.submit(tool, *run) for run in runs]
        return [future.result() for future in futures]


def on_both(run: Callable[[str], T], broker: str, kafka: str) -> tuple[T, T]:
    """``run(bootstrap)`` against minikafka and against Kafka, at the same time (each
    run is mostly a JVM starting)."""
    with ThreadPoolExecutor(2) as pool:
        ours, theirs = pool.submit(run, broker), pool.submit(run, kafka)
        return ours.result(), theirs.result()


# --- the brokers, and their crash check ----------------------------------------------

_WATCHED: list[BrokerProcess | ProcessCluster] = []
_REPORTED: set[str] = set()


@pytest.fixture(autouse=True)
def _no_node_crashed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a passing test after which a minikafka process of this module wrote a
    traceback or ended untold."""
    yield
    found = []
    for node in _WATCHED:
        if isinstance(node, ProcessCluster):
            crashes = [str(crash) for crash in node.crashes()]
        else:
            crashes = [
                f"broker {node.data_dir} wrote a traceback (line {line}):\n{text}"
                for line, text in tracebacks("\n".join(node.output))
            ]
            if node.process is not None and node.process.poll() is not None:
                crashes.append(f"broker {node.data_dir} ended untold")
        for crash in crashes:
            if crash not in _REPORTED:
                _REPORTED.add(crash)
                found.append(crash)
    check_crashes(request.node, found)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One minikafka broker (node 1, a combined node) for the module's single-node tools."""
    process = BrokerProcess(
        tmp_path_factory.mktemp("tools-broker"), overrides=GROUP_OVERRIDES
    )
    with process:
        _WATCHED.append(process)
        yield process
    _WATCHED.remove(process)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Three controllers (a Raft quorum, nodes 0-2) and three brokers (nodes 3-5)."""
    ports = free_ports(6)
    made = ProcessCluster.create(
        tmp_path_factory.mktemp("tools-cluster"),
        3,
        controllers=3,
        controller_ports=ports[:3],
        broker_ports=ports[3:],
        overrides=FAST,
    )
    _WATCHED.append(made)
    try:
        made.up()
        yield made
    finally:
        made.kill_all()
        _WATCHED.remove(made)


def bootstrap(node: BrokerProcess | ProcessCluster | KafkaNode) -> list[str]:
    return ["--bootstrap-server", node.bootstrap]


def new_topic(
    where: str, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    """A topic made through confluent-kafka's admin, for a test about another tool (a
    JVM's start saved; kafka-topics --create has tests of its own)."""
    client = AdminClient({"bootstrap.servers": where, "log_level": 0})
    futures = client.create_topics(
        [NewTopic(topic, partitions, 1, config=config or {})]
    )
    futures[topic].result(timeout=WAIT)


def create_topic(where: str, topic: str, *args: str) -> None:
    run = tool(
        "kafka-topics", "--bootstrap-server", where, "--create", "--topic", topic, *args
    )
    assert run.stdout.strip() == f"Created topic {topic}.", run.stdout


# --- kafka-topics ----------------------------------------------------------------------


@pytest.mark.kafka_tool("kafka-topics", "--create")
@pytest.mark.kafka_tool("kafka-topics", "--list")
@pytest.mark.kafka_tool("kafka-topics", "--describe")
@pytest.mark.kafka_tool("kafka-topics", "--alter --partitions")
@pytest.mark.kafka_tool("kafka-topics", "--delete")
def test_topics_create_describe_alter_and_delete(broker: BrokerProcess) -> None:
    # Guarantee: a topic kafka-topics creates (with a config) is listed, described with
    # its partitions, leader, replicas, ISR and config; --alter adds a partition the
    # next describe shows; --delete removes it from the list.
    at = bootstrap(broker)
    topic = "tools-topics"
    create_topic(
        broker.bootstrap,
        topic,
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=3600000",
    )
    listed, first = at_once(
        ("kafka-topics", *at, "--list"),
        ("kafka-topics", *at, "--describe", "--topic", topic),
    )
    assert topic in listed.stdout.split()
    described = out.describe_topic(first.stdout)
    assert described.header["Topic"] == topic
    assert described.header["PartitionCount"] == "2"
    assert described.header["ReplicationFactor"] == "1"
    assert described.header["Configs"] == "retention.ms=3600000"
    for p in (0, 1):
        assert described.partitions[p]["Partition"] == str(p)
        assert (described.leader(p), described.replicas(p), described.isr(p)) == (
            1,
            [1],
            [1],
        )

    assert (
        tool(
            "kafka-topics", *at, "--alter", "--topic", topic, "--partitions", "3"
        ).stdout
        == ""
    )
    described = out.describe_topic(
        tool("kafka-topics", *at, "--describe", "--topic", topic).stdout
    )
    assert described.header["PartitionCount"] == "3"
    assert [p["Partition"] for p in described.partitions] == ["0", "1", "2"]
    assert described.leader(2) == 1

    assert tool("kafka-topics", *at, "--delete", "--topic", topic).stdout == ""
    wait_for(
        lambda: topic not in tool("kafka-topics", *at, "--list").stdout.split(),
        f"{topic} gone from --list",
    )


@pytest.mark.kafka_tool("kafka-topics", "--describe", notes=TOPICS_DESCRIBE_NOTES)
@pytest.mark.kafka_tool("kafka-topics", "--alter --partitions")
def test_topics_describe_and_refusals_print_kafkas_lines(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: kafka-topics --describe prints, for minikafka, the lines and keys it
    # prints for Kafka, but for the listed differences (pinned: either side changing
    # shows here); --alter to as many partitions, or fewer, is refused in Kafka's words.
    topic = "tools-describe"

    def describe(where: str) -> tuple[out.TopicDescription, list[str]]:
        create_topic(where, topic, "--partitions", "2", "--replication-factor", "1")
        at = ["--bootstrap-server", where, "--topic", topic]
        run = tool("kafka-topics", *at, "--describe")
        refusals = [
            tool("kafka-topics", *at, "--alter", "--partitions", n, returncode=1).stdout
            for n in ("2", "1")
        ]
        return out.describe_topic(run.stdout), refusals

    (ours, our_refusals), (theirs, their_refusals) = on_both(
        describe, broker.bootstrap, kafka_reference.bootstrap
    )
    assert len(ours.partitions) == len(theirs.partitions) == 2
    assert [list(p) for p in ours.partitions] == [list(p) for p in theirs.partitions]
    assert list(theirs.header) == list(ours.header)  # TopicId too (Metadata v10+)
    for ours_p, theirs_p in zip(ours.partitions, theirs.partitions, strict=True):
        assert (ours_p["Elr"], ours_p["LastKnownElr"]) == ("N/A", "N/A")
        assert (theirs_p["Elr"], theirs_p["LastKnownElr"]) == ("", "")
        for key in ("Topic", "Partition", "Leader", "Replicas", "Isr"):
            assert ours_p[key] == theirs_p[key]  # both are node 1
    assert their_refusals == [
        "Error while executing topic command : Topic already has 2 partition(s).\n",
        f"Error while executing topic command : The topic {topic} currently has 2"
        " partition(s); 1 would not be an increase.\n",
    ]
    assert our_refusals == their_refusals


# --- kafka-configs ---------------------------------------------------------------------

_CONFIG_ENTRY = re.compile(r"  (\S+?)=(.*) sensitive=(true|false) synonyms=\{(.*)\}")


def config_entries(text: str, heading: str) -> dict[str, tuple[str, str]]:
    """``kafka-configs --describe``: key -> (value, synonyms), under its heading line."""
    lines = text.splitlines()
    assert lines, text
    assert lines[0] == heading, text
    entries = {}
    for line in lines[1:]:
        match = _CONFIG_ENTRY.fullmatch(line)
        assert match is not None, f"{line!r} is not a config entry:\n{text}"
        entries[match[1]] = (match[2], match[4])
    return entries


@pytest.mark.kafka_tool("kafka-configs", "--describe --entity-type topics")
@pytest.mark.kafka_tool(
    "kafka-configs",
    "--describe --entity-type brokers",
    notes="with `--all`, only the keys the broker was given (STATIC_BROKER_CONFIG); "
    "Kafka lists every key, defaults included",
)
def test_configs_describe_a_topic_and_a_broker(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: a topic's dynamic config is described with its value and its synonyms
    # (the topic's, then the broker default's); a broker has no dynamic configs, and
    # --all lists what it was started with, under Kafka's names of them.
    at = bootstrap(broker)
    topic = "tools-configs"
    new_topic(broker.bootstrap, topic, 1, {"retention.ms": "3600000"})
    broker_args = ["--describe", "--entity-type", "brokers", "--entity-name", "1"]
    topic_args = ["--describe", "--entity-type", "topics", "--entity-name", topic]
    described, dynamic, everything, everything_there = at_once(
        ("kafka-configs", *at, *topic_args),
        ("kafka-configs", *at, *broker_args),
        ("kafka-configs", *at, *broker_args, "--all"),
        ("kafka-configs", *bootstrap(kafka_reference), *broker_args, "--all"),
    )
    entries = config_entries(
        described.stdout, f"Dynamic configs for topic {topic} are:"
    )
    value, synonyms = entries["retention.ms"]
    assert value == "3600000"
    assert synonyms.startswith("DYNAMIC_TOPIC_CONFIG:retention.ms=3600000"), synonyms
    assert list(entries) == ["retention.ms"]
    assert config_entries(dynamic.stdout, "Dynamic configs for broker 1 are:") == {}

    heading = "All configs for broker 1 are:"
    ours = config_entries(everything.stdout, heading)
    theirs = config_entries(everything_there.stdout, heading)
    log_dirs = str(broker.data_dir)
    assert ours["log.dirs"] == (log_dirs, f"STATIC_BROKER_CONFIG:log.dirs={log_dirs}")
    assert ours["group.initial.rebalance.delay.ms"][0] == "200"
    assert set(ours) <= set(theirs), set(ours) - set(theirs)  # Kafka's names
    assert len(ours) < len(theirs) // 10  # the difference noted in the table


@pytest.mark.kafka_tool("kafka-configs", "--alter --entity-type topics --add-config")
@pytest.mark.kafka_tool("kafka-configs", "--alter --entity-type topics --delete-config")
def test_configs_alter_a_topic(broker: BrokerProcess) -> None:
    # Guarantee: Kafka's own kafka-configs changes a topic's configs on minikafka
    # (IncrementalAlterConfigs): --add-config, a bracketed list value included, and
    # --delete-config complete with Kafka's line; --describe then shows the overrides as
    # DYNAMIC_TOPIC_CONFIG, and after the delete only the one left; a --delete-config of
    # a key with no override is refused. minikafka's own `configs --describe` prints
    # what Kafka's tool prints.
    at = bootstrap(broker)
    topic = "tools-configs-alter"
    new_topic(broker.bootstrap, topic, 1)
    entity = ["--entity-type", "topics", "--entity-name", topic]
    done = f"Completed updating config for topic {topic}.\n"
    heading = f"Dynamic configs for topic {topic} are:"
    added = tool(
        "kafka-configs", *at, "--alter", *entity,
        "--add-config", "retention.ms=7200000,cleanup.policy=[compact,delete]",
    )  # fmt: skip
    assert added.stdout == done
    described = tool("kafka-configs", *at, "--describe", *entity)
    entries = config_entries(described.stdout, heading)
    assert list(entries) == ["cleanup.policy", "retention.ms"]
    value, synonyms = entries["retention.ms"]
    assert value == "7200000"
    assert synonyms.startswith("DYNAMIC_TOPIC_CONFIG:retention.ms=7200000"), synonyms
    assert entries["cleanup.policy"][0] == "compact,delete"
    ours = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikafka.tools",
            "configs",
            *at,
            "--describe",
            *entity,
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    assert ours.stdout == described.stdout

    deleted = tool(
        "kafka-configs", *at, "--alter", *entity, "--delete-config", "retention.ms"
    )
    assert deleted.stdout == done
    after = tool("kafka-configs", *at, "--describe", *entity)
    assert list(config_entries(after.stdout, heading)) == ["cleanup.policy"]
    again = tool(
        "kafka-configs", *at, "--alter", *entity, "--delete-config", "retention.ms",
        returncode=1,
    )  # fmt: skip
    assert again.stderr.splitlines()[-1] == "Invalid config(s): retention.ms"


@pytest.mark.kafka_tool(
    "kafka-configs",
    "--alter --entity-type brokers --add-config",
    notes="the topic configs' broker-level defaults change (`log.retention.ms`, "
    "`message.max.bytes`...); any other key is refused with INVALID_REQUEST "
    "`Cannot update these configs dynamically: Set(KEY)`, where Kafka also lets thread "
    "pools, listeners and quotas change",
)
def test_configs_alter_a_broker_is_refused_naming_the_key(
    broker: BrokerProcess,
) -> None:
    # Guarantee: Kafka's own kafka-configs asked to change a broker key that cannot
    # change at run time (log.dirs, static in Kafka too) exits 1 with
    # InvalidRequestException naming the key as Kafka does, and the broker then still
    # describes no dynamic config.
    at = bootstrap(broker)
    entity = ["--entity-type", "brokers", "--entity-name", "1"]
    refused = tool(
        "kafka-configs", *at, "--alter", *entity,
        "--add-config", "log.dirs=/elsewhere",
        returncode=1,
    )  # fmt: skip
    assert (
        "org.apache.kafka.common.errors.InvalidRequestException: Cannot update these "
        "configs dynamically: Set(log.dirs)"
    ) in refused.stderr, refused.stderr
    described = tool("kafka-configs", *at, "--describe", *entity)
    assert config_entries(described.stdout, "Dynamic configs for broker 1 are:") == {}


# --- console producer and consumer, get-offsets, consumer groups ---------------------

KEYED_TOPIC = "tools-keyed"
KEYED = [(f"k{i % 5}", f"v{i}") for i in range(30)]
"""30 keyed records, five keys, each key's values in the order they were produced."""
CONSOLE_GROUP = "tools-console"


@pytest.fixture(scope="module")
def consumed(broker: BrokerProcess) -> list[tuple[int, int, str, str]]:
    """KEYED produced by kafka-console-producer (``parse.key``) into three partitions,
    then read back by kafka-console-consumer in group CONSOLE_GROUP: (partition, offset,
    key, value) in the order it printed them."""
    at = bootstrap(broker)
    new_topic(broker.bootstrap, KEYED_TOPIC, 3)
    lines = "".join(f"{key}:{value}\n" for key, value in KEYED)
    produced = tool(
        "kafka-console-producer",
        *at,
        "--topic",
        KEYED_TOPIC,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        input=lines,
    )
    assert produced.stdout.strip() == "", produced.stdout
    read = tool(
        "kafka-console-consumer",
        *at,
        "--topic",
        KEYED_TOPIC,
        "--from-beginning",
        "--group",
        CONSOLE_GROUP,
        "--max-messages",
        str(len(KEYED)),
        "--timeout-ms",
        str(int(WAIT * 1000)),
        "--property",
        "print.key=true",
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
    )
    assert f"Processed a total of {len(KEYED)} messages" in read.stderr, read.stderr
    records = []
    for line in read.stdout.splitlines():
        # The formatter puts its key.separator (a tab) after each field it prints.
        partition, offset, key, value = line.split("\t")
        records.append(
            (
                int(partition.removeprefix("Partition:")),
                int(offset.removeprefix("Offset:")),
                key,
                value,
            )
        )
    return records


@pytest.mark.kafka_tool("kafka-console-producer", "--property parse.key=true")
@pytest.mark.kafka_tool(
    "kafka-console-consumer", "--from-beginning --group --property print.key=true"
)
def test_console_producer_and_consumer_round_trip_keyed_records(
    consumed: list[tuple[int, int, str, str]],
) -> None:
    # Guarantee: every keyed line the console producer sends is read back by the console
    # consumer once, with its key; a key's records share a partition, in the order sent,
    # at consecutive offsets from 0 in each partition.
    assert sorted((k, v) for _, _, k, v in consumed) == sorted(KEYED)
    for key in {k for k, _ in KEYED}:
        assert len({p for p, _, k, _ in consumed if k == key}) == 1, key
        assert [v for _, _, k, v in consumed if k == key] == [
            v for k2, v in KEYED if k2 == key
        ]
    for partition in {p for p, _, _, _ in consumed}:
        offsets = [o for p, o, _, _ in consumed if p == partition]
        assert offsets == list(range(len(offsets))), (partition, offsets)


@pytest.mark.kafka_tool("kafka-get-offsets", "--topic, --time -2")
def test_get_offsets_gives_each_partitions_end_and_start(
    broker: BrokerProcess, consumed: list[tuple[int, int, str, str]]
) -> None:
    # Guarantee: kafka-get-offsets prints topic:partition:offset for every partition, the
    # log end offset by default (the records each partition got) and 0 for --time -2.
    counts = dict.fromkeys(range(3), 0)
    for partition, _, _, _ in consumed:
        counts[partition] += 1
    at = [*bootstrap(broker), "--topic", KEYED_TOPIC]
    latest, earliest = at_once(
        ("kafka-get-offsets", *at), ("kafka-get-offsets", *at, "--time", "-2")
    )
    assert out.offsets(latest.stdout) == {
        (KEYED_TOPIC, p): n for p, n in counts.items()
    }
    assert out.offsets(earliest.stdout) == {(KEYED_TOPIC, p): 0 for p in range(3)}


GROUP_COLUMNS = [
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
]
RESET_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]


@pytest.mark.kafka_tool("kafka-consumer-groups", "--list")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--reset-offsets --dry-run")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--reset-offsets --execute")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--delete")
def test_consumer_groups_list_describe_reset_and_delete(
    broker: BrokerProcess, consumed: list[tuple[int, int, str, str]]
) -> None:
    # Guarantee: the console consumer's group is listed and described with its committed
    # offsets (no lag after reading everything); a dry-run reset prints the new offsets
    # and changes nothing, an executed one moves them (the lag is then the whole log);
    # --delete removes the group.
    at = [*bootstrap(broker), "--group", CONSOLE_GROUP]
    listed, described = at_once(
        ("kafka-consumer-groups", *bootstrap(broker), "--list"),
        ("kafka-consumer-groups", *at, "--describe"),
    )
    assert CONSOLE_GROUP in listed.stdout.split()

    def positions(run: ToolRun | None = None) -> dict[int, tuple[str, str, str]]:
        """CURRENT-OFFSET, LOG-END-OFFSET and LAG a partition, as --describe says."""
        run = run or tool("kafka-consumer-groups", *at, "--describe")
        assert f"Consumer group '{CONSOLE_GROUP}' has no active members." in run.stderr
        assert out.columns(run.stdout) == GROUP_COLUMNS
        rows = out.table(run.stdout)
        assert {(r["GROUP"], r["TOPIC"]) for r in rows} == {
            (CONSOLE_GROUP, KEYED_TOPIC)
        }
        assert {(r["CONSUMER-ID"], r["HOST"], r["CLIENT-ID"]) for r in rows} == {
            ("-", "-", "-")
        }
        return {
            int(r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"])
            for r in rows
        }

    ends = {p: str(sum(1 for q, *_ in consumed if q == p)) for p in range(3)}
    read_all = {p: (end, end, "0") for p, end in ends.items()}
    assert positions(described) == read_all

    reset = [*at, "--reset-offsets", "--topic", KEYED_TOPIC, "--to-earliest"]
    for mode in ("--dry-run", "--execute"):
        run = tool("kafka-consumer-groups", *reset, mode)
        assert out.columns(run.stdout) == RESET_COLUMNS
        new = {int(r["PARTITION"]): r["NEW-OFFSET"] for r in out.table(run.stdout)}
        assert new == dict.fromkeys(range(3), "0"), mode
        if mode == "--dry-run":
            assert positions() == read_all  # nothing changed
    assert positions() == {p: ("0", end, end) for p, end in ends.items()}

    deleted = tool("kafka-consumer-groups", *at, "--delete")
    assert deleted.stdout.strip() == (
        f"Deletion of requested consumer groups ('{CONSOLE_GROUP}') was successful."
    )
    assert (
        CONSOLE_GROUP
        not in tool(
            "kafka-consumer-groups", *bootstrap(broker), "--list"
        ).stdout.split()
    )


@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--reset-offsets --execute")
def test_consumer_groups_print_kafkas_columns(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: for the same group (offsets committed by an executed reset), the group
    # tool prints the same columns and rows for minikafka as for Kafka. A group that
    # does not exist is not found by both (DescribeGroups v6, KIP-1043), in Kafka's
    # words.
    topic, group = "tools-columns", "tools-columns-group"

    def describe(where: str) -> tuple[str, str, str]:
        new_topic(where, topic, 2)
        at = ["--bootstrap-server", where, "--group", group]
        reset = [*at, "--reset-offsets", "--topic", topic, "--to-earliest", "--execute"]
        reset_run = tool("kafka-consumer-groups", *reset)
        described, unknown = at_once(
            ("kafka-consumer-groups", *at, "--describe"),
            (
                "kafka-consumer-groups",
                "--bootstrap-server",
                where,
                "--describe",
                "--group",
                "tools-no-such-group",
            ),
        )
        return reset_run.stdout, described.stdout, unknown.stdout.strip()

    (our_reset, ours, our_unknown), (their_reset, theirs, their_unknown) = on_both(
        describe, broker.bootstrap, kafka_reference.bootstrap
    )
    assert out.columns(ours) == out.columns(theirs) == GROUP_COLUMNS
    assert out.table(ours) == out.table(theirs)
    assert out.table(our_reset) == out.table(their_reset)
    not_found = (
        "Error: Executing consumer group command failed due to org.apache.kafka.common"
        ".errors.GroupIdNotFoundException: Group tools-no-such-group not found."
    )
    assert our_unknown == their_unknown == not_found


@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe --members")
@pytest.mark.kafka_tool("kafka-consumer-groups", "--describe --state")
def test_consumer_groups_describe_an_active_group(broker: BrokerProcess) -> None:
    # Guarantee: while a console consumer is in a group, --describe --members names it
    # (its member id, host and client id, its two partitions), and --state the
    # coordinator (this broker), the range assignor, Stable, one member.
    topic, group = "tools-active", "tools-active-group"
    new_topic(broker.bootstrap, topic, 2)
    args = [*bootstrap(broker), "--topic", topic, "--group", group]
    consumer = subprocess.Popen(
        java_command(TOOLS["kafka-console-consumer"], args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        at = [*bootstrap(broker), "--group", group, "--describe"]
        members: list[dict[str, str]] = []

        def joined() -> bool:
            run = tool("kafka-consumer-groups", *at, "--members")
            if f"Consumer group '{group}' does not exist." in run.stdout:
                return False  # the consumer has not joined yet
            members[:] = out.table(run.stdout)
            return len(members) == 1 and members[0]["#PARTITIONS"] == "2"

        wait_for(joined, f"the console consumer in {group}")
        [member] = members
        assert member["CONSUMER-ID"].startswith("console-consumer-"), member
        assert (member["HOST"], member["CLIENT-ID"]) == (
            "/127.0.0.1",
            "console-consumer",
        )
        state = tool("kafka-consumer-groups", *at, "--state").stdout
        assert out.columns(state) == [
            "GROUP",
            "COORDINATOR",
            "(ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "#MEMBERS",
        ]
        [row] = state.strip().splitlines()[1:]
        assert row.split() == [group, broker.bootstrap, "(1)", "range", "Stable", "1"]
    finally:
        consumer.terminate()
        consumer.wait(WAIT)


# --- the verifiable clients and the perf tests ----------------------------------------


@pytest.mark.kafka_tool("kafka-verifiable-producer", "--max-messages")
@pytest.mark.kafka_tool(
    "kafka-verifiable-consumer", "--verbose --reset-policy earliest"
)
def test_verifiable_consumer_reads_every_record_the_producer_had_acked(
    broker: BrokerProcess,
) -> None:
    # Guarantee: every record the verifiable producer reports acked (its partition,
    # offset and value) the verifiable consumer reads, once and no other; the consumer
    # commits each partition's next offset.
    topic, count = "tools-verifiable", 200
    new_topic(broker.bootstrap, topic, 2)
    produced = out.json_events(
        tool(
            "kafka-verifiable-producer",
            *bootstrap(broker),
            "--topic",
            topic,
            "--max-messages",
            str(count),
        ).stdout
    )
    names = [e["name"] for e in produced]
    assert names[0] == "startup_complete"
    assert "producer_send_error" not in names
    [summary] = [e for e in produced if e["name"] == "tool_data"]
    assert (summary["sent"], summary["acked"]) == (count, count)
    acked = {
        (e["partition"], e["offset"]): e["value"]
        for e in produced
        if e["name"] == "producer_send_success"
    }
    assert sorted(acked.values(), key=int) == [str(i) for i in range(count)]

    read = out.json_events(
        tool(
            "kafka-verifiable-consumer",
            *bootstrap(broker),
            "--topic",
            topic,
            "--group-id",
            "tools-verifiable",
            "--max-messages",
            str(count),
            "--reset-policy",
            "earliest",
            "--verbose",
        ).stdout
    )
    records = [e for e in read if e["name"] == "record_data"]
    assert len(records) == count
    assert {(e["partition"], e["offset"]): e["value"] for e in records} == acked
    committed = {
        (o["partition"], o["offset"])
        for e in read
        if e["name"] == "offsets_committed"
        for o in e["offsets"]
        if e["success"]
    }
    for partition in {p for p, _ in acked}:
        end = max(o for p, o in acked if p == partition) + 1
        assert (partition, end) in committed, (partition, end, committed)


@pytest.mark.kafka_tool("kafka-producer-perf-test", "--num-records --record-size")
@pytest.mark.kafka_tool("kafka-consumer-perf-test", "--messages")
def test_perf_tests_summarise_what_they_sent_and_read(broker: BrokerProcess) -> None:
    # Guarantee: the producer perf test's summary counts every record sent, with
    # positive rates and ordered latency percentiles; the consumer perf test reads them
    # all back: as many records and bytes as were sent.
    topic, count, size = "tools-perf", 1000, 100
    new_topic(broker.bootstrap, topic, 1)
    sent = out.producer_perf(
        tool(
            "kafka-producer-perf-test",
            "--topic",
            topic,
            "--num-records",
            str(count),
            "--record-size",
            str(size),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={broker.bootstrap}",
        ).stdout
    )
    assert sent.records == count
    assert sent.records_per_sec > 0
    assert sent.mb_per_sec > 0
    assert sent.p50_ms <= sent.p95_ms <= sent.p99_ms <= sent.p999_ms <= sent.max_ms
    read = out.consumer_perf(
        tool(
            "kafka-consumer-perf-test",
            *bootstrap(broker),
            "--topic",
            topic,
            "--messages",
            str(count),
            "--timeout",
            str(int(WAIT * 1000)),
        ).stdout
    )
    assert int(read["data.consumed.in.nMsg"]) == count
    assert read["data.consumed.in.MB"] == f"{count * size / 2**20:.4f}"
    assert float(read["nMsg.sec"]) > 0


# --- kafka-leader-election of every partition -----------------------------------------


@pytest.mark.kafka_tool(
    "kafka-leader-election", "--election-type PREFERRED --all-topic-partitions"
)
def test_leader_election_of_every_partition_prints_what_kafka_prints(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: asked to elect every partition's preferred leader where each leads
    # already, minikafka answers as Kafka's KRaft controller does, leaving those
    # partitions out: the tool prints nothing, and exits 0.
    topic = "tools-elect-all"

    def elect_all(where: str) -> ToolRun:
        new_topic(where, topic, 2)
        return tool(
            "kafka-leader-election",
            "--bootstrap-server",
            where,
            "--election-type",
            "PREFERRED",
            "--all-topic-partitions",
        )

    ours, theirs = on_both(elect_all, broker.bootstrap, kafka_reference.bootstrap)
    assert theirs.stdout == ""
    assert ours.stdout == theirs.stdout


# --- kafka-log-dirs ----------------------------------------------------------------------


@pytest.mark.kafka_tool("kafka-log-dirs", "--describe")
def test_log_dirs_describes_the_log_dir_and_its_partitions(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: kafka-log-dirs prints the broker's one log dir with the topic's
    # partitions, each with its size on disk (the bytes of its segments: what was
    # produced to partition 0, nothing to partition 1) and no offset lag; an unknown
    # topic asked for is absent, as from Kafka, which prints its own dir the same way.
    topic = "tools-log-dirs"
    new_topic(broker.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    for i in range(20):
        producer.produce(topic, f"record-{i}".encode(), partition=0)
    assert producer.flush(WAIT) == 0

    def describe(where: str, broker_id: str) -> ToolRun:
        return tool(
            "kafka-log-dirs",
            "--bootstrap-server",
            where,
            "--describe",
            "--broker-list",
            broker_id,
            "--topic-list",
            f"{topic},no-such-topic",
        )

    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(describe, broker.bootstrap, "1")
        theirs = pool.submit(describe, kafka_reference.bootstrap, "1").result()
        ours = running.result()
    answer = json.loads(ours.stdout.strip().splitlines()[-1])
    assert answer["version"] == 1
    [described] = answer["brokers"]
    assert described["broker"] == 1
    [log_dir] = described["logDirs"]
    assert log_dir["error"] is None
    assert Path(log_dir["logDir"]) == broker.data_dir
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    on_disk = {
        name: sum(f.stat().st_size for f in (broker.data_dir / name).glob("*.log"))
        for name in (f"{topic}-0", f"{topic}-1")
    }
    assert sizes == on_disk
    assert sizes[f"{topic}-0"] > 0 == sizes[f"{topic}-1"]
    assert {p["offsetLag"] for p in log_dir["partitions"]} == {0}
    assert {p["isFuture"] for p in log_dir["partitions"]} == {False}
    # Kafka's answer has the same shape: its own dir, nothing of topics it lacks.
    kafka_answer = json.loads(theirs.stdout.strip().splitlines()[-1])
    [kafka_dir] = kafka_answer["brokers"][0]["logDirs"]
    assert Path(kafka_dir["logDir"]) == kafka_reference.log_dir
    assert kafka_dir["partitions"] == []
    assert set(kafka_dir) == set(log_dir)


# --- kafka-delete-records ----------------------------------------------------------------


@pytest.mark.kafka_tool("kafka-delete-records", "--offset-json-file")
def test_delete_records_prints_each_partitions_low_watermark(
    broker: BrokerProcess, kafka_reference: KafkaNode, tmp_path: Path
) -> None:
    # Guarantee: kafka-delete-records (Kafka's Admin.deleteRecords, DeleteRecords v2)
    # deletes partition 0's records below 6 and all of partition 1's (-1: the high
    # watermark) on minikafka, printing the same lines as against Kafka itself set up
    # the same way; an offset past the high watermark fails that partition with the
    # same exception on both, and leaves it whole.
    topic = "tools-delete-records"
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": topic, "partition": 0, "offset": 6},
                    {"topic": topic, "partition": 1, "offset": -1},
                    {"topic": topic, "partition": 2, "offset": 99},
                ],
                "version": 1,
            }
        )
    )

    def delete(where: str) -> list[str]:
        new_topic(where, topic, 3)
        producer = Producer({"bootstrap.servers": where, "log_level": 0})
        for i in range(30):
            producer.produce(topic, f"record-{i}".encode(), partition=i % 3)
        assert producer.flush(WAIT) == 0
        run = tool(
            "kafka-delete-records",
            "--bootstrap-server",
            where,
            "--offset-json-file",
            str(offsets),
        )
        lines = run.stdout.strip().splitlines()
        # Kafka's tool prints the partitions in its HashMap's order.
        return lines[:2] + sorted(lines[2:])

    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(delete, broker.bootstrap)
        theirs = pool.submit(delete, kafka_reference.bootstrap).result()
        ours = running.result()
    assert ours[:4] == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 6",
        f"partition: {topic}-1\tlow_watermark: 10",
    ]
    assert ours[4].startswith(
        f"partition: {topic}-2\terror: "
        "org.apache.kafka.common.errors.OffsetOutOfRangeException:"
    )
    assert ours == theirs


# --- kafka-features ----------------------------------------------------------------------

Features = dict[str, dict[str, str]]
"""kafka-features describe's lines: each feature's name -> its columns."""

FEATURES_NOTES = (
    "`metadata.version` is level 1 (`3.0-IV1`, the records minikafka writes), which "
    "Kafka 4's tools, knowing 3.3-IV3 and later only, print as `UNKNOWN 1`; no other "
    "feature is supported (no KIP-848 groups, no transaction version 2, static voters only)"
)


@pytest.mark.kafka_tool(
    "kafka-features", "--bootstrap-server describe", notes=FEATURES_NOTES
)
@pytest.mark.kafka_tool(
    "kafka-features", "--bootstrap-controller describe", notes=FEATURES_NOTES
)
def test_features_describe_the_levels_the_broker_runs(
    broker: BrokerProcess, cluster: ProcessCluster, kafka_reference: KafkaNode
) -> None:
    # Guarantee: kafka-features reads ApiVersions' features (KIP-584): from minikafka a
    # line for metadata.version finalized at the level the metadata log's first record
    # set, and kraft.version supported at 0 only, each in Kafka's format with the same
    # epoch; Kafka prints the same columns for its own features. A controller asked on
    # its listener (KIP-919) says the same of what the metadata log has committed.
    def describe(where: str, flag: str = "--bootstrap-server") -> Features:
        run = tool("kafka-features", flag, where, "describe")
        lines = [line for line in run.stdout.splitlines() if line.startswith("Feature")]
        rows = [
            dict(cell.split(": ", 1) for cell in line.split("\t")) for line in lines
        ]
        return {row["Feature"]: row for row in rows}

    ours, theirs = on_both(describe, broker.bootstrap, kafka_reference.bootstrap)
    assert sorted(ours) == ["kraft.version", "metadata.version"]
    assert ours["metadata.version"]["FinalizedVersionLevel"] == "UNKNOWN 1"
    assert ours["metadata.version"]["SupportedMaxVersion"] == "UNKNOWN 1"
    assert ours["kraft.version"]["SupportedMaxVersion"] == "0"
    assert ours["kraft.version"]["FinalizedVersionLevel"] == "0"
    assert len({row["Epoch"] for row in ours.values()}) == 1
    assert int(ours["metadata.version"]["Epoch"]) >= 0
    assert list(ours["metadata.version"]) == list(theirs["metadata.version"])
    controller = f"127.0.0.1:{cluster.listen_port(CONTROLLERS[0])}"
    on_controller = describe(controller, "--bootstrap-controller")
    assert sorted(on_controller) == ["kraft.version", "metadata.version"]
    assert on_controller["metadata.version"]["FinalizedVersionLevel"] == "UNKNOWN 1"
    assert int(on_controller["metadata.version"]["Epoch"]) >= 0


# --- a cluster of three controllers and three brokers ---------------------------------

CONTROLLERS, BROKERS = [0, 1, 2], [3, 4, 5]


@pytest.mark.kafka_tool(
    "kafka-metadata-quorum", "--bootstrap-server describe --status", notes=QUORUM_NOTES
)
@pytest.mark.kafka_tool(
    "kafka-metadata-quorum",
    "--bootstrap-server describe --replication",
    notes=QUORUM_NOTES,
)
def test_metadata_quorum_describes_the_three_controllers(
    cluster: ProcessCluster, kafka_reference: KafkaNode
) -> None:
    # Guarantee: through a broker, kafka-metadata-quorum describes the Raft quorum:
    # a leader among the three voters, in an epoch >= 1, a high watermark, the brokers
    # as observers; --replication one row a node, the leader's Lag 0 and each row's
    # Lag its distance from the leader's end. Kafka prints the same keys and columns.
    def describe(where: str) -> tuple[dict[str, str], str]:
        at = ["--bootstrap-server", where, "describe"]
        status = out.quorum_status(
            tool("kafka-metadata-quorum", *at, "--status").stdout
        )
        return status, tool("kafka-metadata-quorum", *at, "--replication").stdout

    (status, replication), (their_status, their_replication) = on_both(
        describe, cluster.bootstrap, kafka_reference.bootstrap
    )
    assert list(status) == list(their_status)
    assert status["ClusterId"] == cluster.cluster_id
    leader = int(status["LeaderId"])
    assert leader in CONTROLLERS
    assert int(status["LeaderEpoch"]) >= 1
    assert int(status["HighWatermark"]) > 0
    assert out.voter_ids(status["CurrentVoters"]) == CONTROLLERS
    assert out.voter_ids(status["CurrentObservers"]) == BROKERS
    # DescribeQuorum v2 (KIP-853): each voter with its controller listener's endpoint,
    # and no directory id (the noted difference: static voters have none).
    voters = json.loads(status["CurrentVoters"])
    ports = {c: cluster.listen_port(c) for c in CONTROLLERS}
    assert sorted(voters, key=lambda v: int(v["id"])) == [
        {"id": c, "endpoints": [f"CONTROLLER://127.0.0.1:{ports[c]}"]}
        for c in CONTROLLERS
    ], voters
    assert {"id", "directoryId", "endpoints"} <= set(
        json.loads(their_status["CurrentVoters"])[0]
    )

    assert out.columns(replication) == out.columns(their_replication)
    rows = {int(r["NodeId"]): r for r in out.table(replication)}
    assert sorted(rows) == CONTROLLERS + BROKERS
    expected = {n: "Observer" if n in BROKERS else "Follower" for n in rows}
    expected[leader] = "Leader"
    assert {n: r["Status"] for n, r in rows.items()} == expected
    end = int(rows[leader]["LogEndOffset"])
    assert end >= int(status["HighWatermark"])
    for row in rows.values():
        assert int(row["Lag"]) == end - int(row["LogEndOffset"]) >= 0
        assert row["DirectoryId"] == "AAAAAAAAAAAAAAAAAAAAAA"  # the noted difference


@pytest.mark.kafka_tool(
    "kafka-metadata-quorum",
    "--bootstrap-controller describe --status",
    notes=QUORUM_NOTES,
)
@pytest.mark.kafka_tool(
    "kafka-metadata-quorum",
    "--bootstrap-controller describe --replication",
    notes=QUORUM_NOTES,
)
def test_metadata_quorum_through_the_controllers(
    cluster: ProcessCluster, kafka_reference: KafkaNode
) -> None:
    # Guarantee: asked through the controllers' listener (KIP-919), the tool finds the
    # quorum's leader by DescribeCluster and describes the same quorum as through a
    # broker: the three controllers as voters, the brokers as observers, the cluster's
    # id; Kafka's controller answers the same keys.
    voters = ",".join(f"127.0.0.1:{cluster.listen_port(c)}" for c in CONTROLLERS)
    at = ["--bootstrap-controller", voters, "describe"]
    status_run, replication_run, theirs = at_once(
        ("kafka-metadata-quorum", *at, "--status"),
        ("kafka-metadata-quorum", *at, "--replication"),
        (
            "kafka-metadata-quorum",
            "--bootstrap-controller",
            kafka_reference.controller_bootstrap,
            "describe",
            "--status",
        ),
    )
    status = out.quorum_status(status_run.stdout)
    assert int(status["LeaderId"]) in CONTROLLERS
    assert status["ClusterId"] == cluster.cluster_id
    assert out.voter_ids(status["CurrentVoters"]) == CONTROLLERS
    assert out.voter_ids(status["CurrentObservers"]) == BROKERS
    rows = {int(r["NodeId"]): r for r in out.table(replication_run.stdout)}
    assert sorted(rows) == CONTROLLERS + BROKERS
    assert rows[int(status["LeaderId"])]["Status"] == "Leader"
    kafka_status = out.quorum_status(theirs.stdout)
    assert kafka_status["LeaderId"] == "1"
    assert list(kafka_status) == list(status)


def plan_file(path: Path, moves: dict[tuple[str, int], list[int]]) -> str:
    partitions = [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
        for (t, p), r in moves.items()
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return str(path)


@pytest.mark.kafka_tool("kafka-reassign-partitions", "--generate")
@pytest.mark.kafka_tool("kafka-reassign-partitions", "--execute")
@pytest.mark.kafka_tool(
    "kafka-reassign-partitions", "--execute --disallow-replication-factor-change"
)
@pytest.mark.kafka_tool("kafka-reassign-partitions", "--verify --preserve-throttles")
@pytest.mark.kafka_tool("kafka-reassign-partitions", "--verify")
@pytest.mark.kafka_tool("kafka-leader-election", "--election-type PREFERRED")
def test_reassignment_moves_replicas_and_election_restores_the_preferred_leader(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    # Guarantee: --generate proposes replicas on the brokers named only, --execute starts
    # the move of a plan (printing the assignment to roll back to), --verify reports it
    # complete and clears the throttles, and kafka-topics then shows partition 0 on its
    # new brokers, its records all there, and partition 1's replicas reordered with the
    # old leader kept;
    # kafka-leader-election then makes the new first replica (the preferred) lead.
    # Before that, --disallow-replication-factor-change (AlterPartitionReassignments v1,
    # KIP-860) refuses a plan that adds a replica, naming the partition, and moves nothing;
    # minikafka's own tool prints the same.
    at = bootstrap(cluster)
    topic = "tools-moved"
    create_topic(cluster.bootstrap, topic, "--replica-assignment", "3:4,4:5")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    for i in range(20):
        producer.produce(topic, f"r{i}".encode(), partition=i % 2)
    assert producer.flush(WAIT) == 0
    before = out.offsets(tool("kafka-get-offsets", *at, "--topic", topic).stdout)
    assert sum(before.values()) == 20

    (tmp_path / "topics.json").write_text(
        json.dumps({"version": 1, "topics": [{"topic": topic}]})
    )
    generated = tool(
        "kafka-reassign-partitions",
        *at,
        "--generate",
        "--broker-list",
        "4,5",
        "--topics-to-move-json-file",
        str(tmp_path / "topics.json"),
    ).stdout
    current = out.json_after(generated, "Current partition replica assignment")
    assert [(p["partition"], p["replicas"]) for p in current["partitions"]] == [
        (0, [3, 4]),
        (1, [4, 5]),
    ]
    proposed = out.json_after(
        generated, "Proposed partition reassignment configuration"
    )
    for partition in proposed["partitions"]:
        assert sorted(partition["replicas"]) == [4, 5], proposed

    grow = plan_file(tmp_path / "grow.json", {(topic, 0): [3, 4, 5]})
    forbid = ["--disallow-replication-factor-change", "--reassignment-json-file", grow]
    refused = tool("kafka-reassign-partitions", *at, "--execute", *forbid, returncode=1)
    command = [sys.executable, "-m", "minikafka.tools", "reassign-partitions"]
    ours = subprocess.run(
        [*command, *at, "--execute", *forbid],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    said = f"{topic}-0: The replication factor is changed from 2 to 3"
    for run in (refused, ours):
        assert said in (run.stdout + run.stderr).splitlines(), run
    assert ours.returncode == 1

    plan = plan_file(tmp_path / "plan.json", {(topic, 0): [5, 4], (topic, 1): [5, 4]})
    executed = tool(
        "kafka-reassign-partitions", *at, "--execute", "--reassignment-json-file", plan
    ).stdout
    assert out.json_after(executed, "Current partition replica assignment") == current
    assert (
        f"Successfully started partition reassignments for {topic}-0,{topic}-1"
        in executed
    )

    verify = ["--verify", "--reassignment-json-file", plan]
    complete = [f"Reassignment of partition {topic}-{p} is completed." for p in (0, 1)]

    def verified() -> bool:
        run = tool("kafka-reassign-partitions", *at, *verify, "--preserve-throttles")
        return all(line in run.stdout.splitlines() for line in complete)

    wait_for(verified, f"{topic}'s reassignment verified complete")

    def described() -> out.TopicDescription:
        run = tool("kafka-topics", *at, "--describe", "--topic", topic)
        return out.describe_topic(run.stdout)

    # Runs that read only, at once: a JVM's start is most of each.
    with ThreadPoolExecutor(2) as pool:
        clearing_run = pool.submit(
            run_tool, "kafka-reassign-partitions", *at, *verify, timeout=WAIT
        )
        offsets_run = pool.submit(tool, "kafka-get-offsets", *at, "--topic", topic)
        moved: list[out.TopicDescription] = []

        def as_planned() -> bool:
            # The broker that answers may replay the last change a moment after the
            # controller has it: ask again until it has.
            moved[:] = [described()]
            return moved[0].replicas(0) == moved[0].replicas(1) == [5, 4]

        wait_for(as_planned, f"{topic} described on brokers 5 and 4")
    assert sorted(moved[0].isr(0)) == sorted(moved[0].isr(1)) == [4, 5]
    # A reorder keeps the leader: 5 is the preferred replica now, and does not lead.
    assert moved[0].leader(1) == 4
    clearing = clearing_run.result()
    # Without --preserve-throttles the tool then deletes the replication throttles, of
    # the brokers and of the topic (IncrementalAlterConfigs DELETEs: none was set).
    assert clearing.returncode == 0, clearing.stdout + clearing.stderr
    assert all(line in clearing.stdout.splitlines() for line in complete)
    assert "Clearing broker-level throttles on brokers" in clearing.stdout
    assert f"Clearing topic-level throttles on topic {topic}" in clearing.stdout
    assert out.offsets(offsets_run.result().stdout) == before

    elect = ["--election-type", "PREFERRED", "--topic", topic, "--partition", "1"]
    elected = tool("kafka-leader-election", *at, *elect).stdout.strip()
    assert elected == (
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-1"
    )
    wait_for(lambda: described().leader(1) == 5, f"{topic}-1 led by its preferred 5")
    again = tool("kafka-leader-election", *at, *elect).stdout
    assert again.strip() == f"Valid replica already elected for partitions {topic}-1"
