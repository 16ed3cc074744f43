"""The client tools: ``minikafka topics``, ``produce`` and ``consume``.

Each test runs a broker in this trio loop (``running_broker``) and calls the tools' async
functions with an :class:`AsyncAdminClient`; the command itself is run as a
subprocess (``python -m minikafka.tools``) for the smoke tests, and through typer's
CliRunner in a worker thread (the command calls ``trio.run`` itself) for its output.
The broker uses real threads, so the tests keep real time with deadlines.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from rich.console import Console
from typer.testing import CliRunner

from minikafka.broker.testing import (
    bootstrap,
    replica_batches,
    single_node_config,
    tool_cluster,
)
from minikafka.client import Message, TopicPartition, partition_for_key
from minikafka.log import CompressionType, Record
from minikafka.tools._cli import app
from minikafka.tools._connection import (
    AsyncAdminClient,
    BrokerError,
    ToolError,
    parse_bootstrap,
)
from minikafka.tools._consume import (
    ConsumeOptions,
    console_consumer,
    consume,
    format_record,
    parse_offset,
)
from minikafka.tools._consume import check_config as check_consumer_config
from minikafka.tools._produce import (
    ProduceOptions,
    ProduceResult,
    check_config,
    parse_acks,
    parse_compression,
    produce,
    producer_config,
)
from minikafka.tools._topics import (
    PartitionDescription,
    TopicDescription,
    create_partitions,
    create_topic,
    delete_topic,
    describe_table,
    describe_topics,
    list_topics,
    parse_config,
    parse_replica_assignment,
)

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
IDLE_MS = 2000  # --timeout-ms where a read ends idle: it counts from the first poll


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def cluster(data_dir: Path) -> AsyncIterator[AsyncAdminClient]:
    # No initial rebalance delay: the --group tests' one member need not wait 3 s for more.
    overrides = {"num.partitions": "2", "group.initial.rebalance.delay.ms": "0"}
    async with tool_cluster(single_node_config(data_dir, overrides)) as cluster:
        yield cluster


async def lines_of(lines: Sequence[bytes]) -> AsyncIterator[bytes]:
    for line in lines:
        yield line


async def send(
    cluster: AsyncAdminClient, options: ProduceOptions, lines: Sequence[bytes]
) -> tuple[ProduceResult, list[str]]:
    reported: list[str] = []
    result = await produce(
        bootstrap(cluster), options, lines_of(lines), reported.append
    )
    return result, reported


def batch_counts(partition_dir: Path) -> list[int]:
    """How many records each stored batch of a partition holds: the batches the producer
    made (the broker appends a produced batch as it is)."""
    return [b.last_offset - b.base_offset + 1 for b in replica_batches(partition_dir)]


async def read_all(
    cluster: AsyncAdminClient, topic: str, **settings: object
) -> list[bytes]:
    out = io.BytesIO()
    options = ConsumeOptions(topic, **settings)  # type: ignore[arg-type]
    await consume(bootstrap(cluster), options, out)
    return out.getvalue().splitlines()


# --- topics -------------------------------------------------------------------------------


async def test_create_list_describe_delete(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        assert await create_topic(
            cluster,
            "orders",
            partitions=3,
            replication_factor=1,
            configs={"retention.ms": "60000", "cleanup.policy": "compact"},
        )
        assert await create_topic(cluster, "payments", partitions=1)
        assert await list_topics(cluster) == ["orders", "payments"]

        (orders,) = await describe_topics(cluster, ["orders"])
        assert orders.name == "orders"
        assert not orders.internal
        assert [
            (p.partition, p.leader, p.replicas, p.isr) for p in orders.partitions
        ] == [
            (0, 1, (1,), (1,)),
            (1, 1, (1,), (1,)),
            (2, 1, (1,), (1,)),
        ]
        assert orders.replication_factor == 1
        # Only what differs from the defaults, as kafka-topics.sh --describe shows.
        assert orders.configs == (
            ("cleanup.policy", "compact"),
            ("retention.ms", "60000"),
        )

        everything = await describe_topics(cluster)
        assert [t.name for t in everything] == ["orders", "payments"]
        assert everything[1].configs == ()

        assert await delete_topic(cluster, "orders")
        assert await list_topics(cluster) == ["payments"]


async def test_create_without_partitions_takes_the_broker_defaults(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "defaults")  # -1 and -1: KIP-464
        (topic,) = await describe_topics(cluster, ["defaults"])
        assert len(topic.partitions) == 2  # num.partitions=2 in the fixture
        assert topic.replication_factor == 1


async def test_a_replica_assignment_places_each_partition_by_hand(
    cluster: AsyncAdminClient,
) -> None:
    # kafka-topics.sh's format: partitions by commas, each one's replicas by colons.
    assert parse_replica_assignment("1:2,2:3,3:1") == [[1, 2], [2, 3], [3, 1]]
    with pytest.raises(ToolError, match="invalid --replica-assignment"):
        parse_replica_assignment("1:2,x")
    with trio.fail_after(DEADLINE):
        assert await create_topic(cluster, "by-hand", replica_assignment=[[1], [1]])
        (topic,) = await describe_topics(cluster, ["by-hand"])
        assert [(p.partition, p.replicas) for p in topic.partitions] == [
            (0, (1,)),
            (1, (1,)),
        ]
        # The controller checks the brokers (Kafka's INVALID_REPLICA_ASSIGNMENT).
        with pytest.raises(BrokerError, match=r"^INVALID_REPLICA_ASSIGNMENT"):
            await create_topic(cluster, "nowhere", replica_assignment=[[2]])


def test_a_replica_assignment_excludes_a_count_and_a_factor() -> None:
    create = ["topics", "--bootstrap-server", "127.0.0.1:1", "--create", "--topic", "t"]
    for extra in (["--partitions", "2"], ["--replication-factor", "1"]):
        result = CliRunner().invoke(
            app,
            [*create, "--replica-assignment", "1", *extra],
            env={"COLUMNS": "200"},
        )
        assert result.exit_code == 2, extra
        assert "cannot be used with --partitions" in " ".join(result.output.split())


async def test_broker_errors_carry_kafka_error_names(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "t", partitions=1)
        with pytest.raises(BrokerError, match=r"^TOPIC_ALREADY_EXISTS"):
            await create_topic(cluster, "t", partitions=1)
        assert not await create_topic(cluster, "t", partitions=1, if_not_exists=True)
        with pytest.raises(BrokerError, match=r"^INVALID_PARTITIONS"):
            await create_topic(cluster, "zero", partitions=0)
        with pytest.raises(BrokerError, match=r"^INVALID_REPLICATION_FACTOR"):
            await create_topic(cluster, "three", partitions=1, replication_factor=3)
        with pytest.raises(BrokerError, match=r"^INVALID_CONFIG"):
            await create_topic(cluster, "bad", configs={"no.such.config": "1"})
        with pytest.raises(BrokerError, match=r"^UNKNOWN_TOPIC_OR_PARTITION"):
            await delete_topic(cluster, "missing")
        assert not await delete_topic(cluster, "missing", if_exists=True)
        with pytest.raises(BrokerError, match=r"^UNKNOWN_TOPIC_OR_PARTITION") as caught:
            await describe_topics(cluster, ["missing"])
        assert caught.value.code == 3
        assert await list_topics(cluster) == ["t"]


async def test_alter_adds_partitions(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "grow", partitions=1)
        assert await create_partitions(cluster, "grow", 4)
        (topic,) = await describe_topics(cluster, ["grow"])
        assert [p.partition for p in topic.partitions] == [0, 1, 2, 3]
        with pytest.raises(BrokerError, match=r"^INVALID_PARTITIONS"):
            await create_partitions(cluster, "grow", 2)
        assert not await create_partitions(cluster, "missing", 2, if_exists=True)


def test_describe_table_shows_partitions_and_configs() -> None:
    topic = TopicDescription(
        "orders",
        False,
        (
            PartitionDescription(0, 1, (1, 2), (1, 2)),
            PartitionDescription(1, -1, (2,), ()),
        ),
        (("retention.ms", "60000"),),
    )
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(describe_table([topic]))
    text = buffer.getvalue()
    for heading in ("Topic", "Partition", "Leader", "Replicas", "ISR", "Configs"):
        assert heading in text
    assert "retention.ms=60000" in text
    assert "PartitionCount: 2" in text
    rows = [line for line in text.splitlines() if "orders" in line]
    assert len(rows) == 2
    assert "1,2" in rows[0]
    assert "none" in rows[1]  # partition 1 has no leader


def test_argument_parsers() -> None:
    assert parse_config("retention.ms=1000") == ("retention.ms", "1000")
    assert parse_config("a=b=c") == ("a", "b=c")
    with pytest.raises(ToolError):
        parse_config("novalue")
    assert parse_bootstrap("localhost:9092, [::1]:9093") == "localhost:9092,[::1]:9093"
    for bad in ("localhost", "host:port", ":9092", "h:0"):
        with pytest.raises(ToolError):
            parse_bootstrap(bad)
    assert parse_acks("all") == -1
    assert parse_acks("0") == 0
    with pytest.raises(ToolError):
        parse_acks("2")
    assert parse_compression("ZSTD") is CompressionType.ZSTD
    with pytest.raises(ToolError):
        parse_compression("brotli")
    assert parse_offset("earliest") == "earliest"
    assert parse_offset("42") == 42
    with pytest.raises(ToolError):
        parse_offset("-1")


# --- produce ------------------------------------------------------------------------------


def test_the_flags_become_the_producers_configuration() -> None:
    """The console producer is configured as Kafka's is, and --producer-property wins."""
    options = ProduceOptions(
        "t",
        acks=1,
        compression=CompressionType.ZSTD,
        batch_size=100,
        linger_ms=5,
        timeout_ms=2000,
        properties={"linger.ms": "7", "enable.idempotence": "false"},
    )
    config = producer_config("h:1", options)
    assert config == {
        "bootstrap.servers": "h:1",
        "client.id": "minikafka-console-producer",
        "acks": "1",
        "compression.type": "zstd",
        "batch.size": 100,
        "linger.ms": "7",
        "request.timeout.ms": 2000,
        "enable.idempotence": "false",
    }
    with pytest.raises(ToolError, match=r"batch\.sizes"):
        check_config(attrs.evolve(options, properties={"batch.sizes": "1"}), "h:1")
    # Kafka: acks=1 conflicts
    with pytest.raises(ToolError, match=r"enable\.idempotence"):
        check_config(
            attrs.evolve(options, properties={"enable.idempotence": "true"}), "h:1"
        )


async def test_produce_with_each_compression_and_read_back(
    cluster: AsyncAdminClient, data_dir: Path
) -> None:
    with trio.fail_after(DEADLINE):
        for codec in CompressionType:
            topic = f"codec-{codec.name.lower()}"
            await create_topic(cluster, topic, partitions=1)
            lines = [f"{codec.name} line {i} ".encode() * 20 for i in range(50)]
            # --sync: each record alone in its batch, acknowledged before the next line.
            options = ProduceOptions(
                topic, compression=codec, sync=codec.value % 2 == 1
            )
            result, errors = await send(cluster, options, lines)
            assert errors == []
            assert (result.sent, result.failed) == (50, 0)
            assert result.delivered == [(0, i) for i in range(50)]  # in order, no gaps
            got = await read_all(cluster, topic, offset="earliest", max_messages=50)
            assert got == lines
            counts = batch_counts(data_dir / f"{topic}-0")
            assert sum(counts) == 50
            assert counts == [1] * 50 if options.sync else len(counts) < 50


async def test_keys_are_split_and_partitioned_like_kafka(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "keyed", partitions=3)
        keys = [f"user-{i}".encode() for i in range(12)]
        lines = [k + b":value of " + k + b":with:colons" for k in keys]
        options = ProduceOptions(
            "keyed", key_separator=":", compression=CompressionType.GZIP
        )
        result, _ = await send(cluster, options, lines)
        assert result.sent == 12
        out = io.BytesIO()
        reading = ConsumeOptions(
            "keyed",
            offset="earliest",
            max_messages=12,
            print_key=True,
            print_partition=True,
        )
        await consume(bootstrap(cluster), reading, out)
        seen = {}
        for line in out.getvalue().splitlines():
            partition, key, value = line.split(b"\t")
            assert value == b"value of " + key + b":with:colons"
            seen[key] = int(partition.removeprefix(b"Partition:"))
        assert seen == {k: partition_for_key(k, 3) for k in keys}
        assert len(set(seen.values())) > 1


async def test_a_line_without_the_key_separator_stops_the_producer(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "strict", partitions=1)
        options = ProduceOptions("strict", key_separator="=")
        with pytest.raises(ToolError, match="No key separator found on line number 3"):
            await send(cluster, options, [b"a=1", b"b=2", b"oops", b"c=3"])
        # What came before the bad line was still sent, as Kafka's producer flushes on close
        # (and nothing after it: a third record would be read within the idle timeout,
        # which is long enough for the first fetch on a loaded machine).
        assert await read_all(
            cluster,
            "strict",
            offset="earliest",
            max_messages=3,
            timeout_ms=IDLE_MS,
            print_key=True,
        ) == [b"a\t1", b"b\t2"]


async def test_acks_and_partition_choice(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "acks", partitions=2)
        result, _ = await send(
            cluster, ProduceOptions("acks", partition=1, acks=0), [b"zero"]
        )
        assert (result.sent, result.delivered) == (
            1,
            [(1, -1)],
        )  # no response to acks=0
        result, _ = await send(
            cluster, ProduceOptions("acks", partition=1, acks=1), [b"one"]
        )
        assert result.delivered == [(1, 1)]
        result, _ = await send(
            cluster, ProduceOptions("acks", partition=1, acks=-1), [b"all"]
        )
        assert result.delivered == [(1, 2)]
        assert await read_all(
            cluster, "acks", partition=1, offset="earliest", max_messages=3
        ) == [
            b"zero",
            b"one",
            b"all",
        ]


async def test_a_missing_partition_is_refused_and_a_new_topic_auto_created(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "two", partitions=2)
        with pytest.raises(BrokerError, match=r"^UNKNOWN_TOPIC_OR_PARTITION"):
            await send(cluster, ProduceOptions("two", partition=5), [b"x"])
        # The producer's Metadata allows auto-creation (auto.create.topics.enable=true),
        # and, as in Kafka, it asks at the first send: no input, no topic.
        result, _ = await send(cluster, ProduceOptions("created-by-producer"), [])
        assert result.sent == 0
        assert "created-by-producer" not in await list_topics(cluster)
        result, _ = await send(cluster, ProduceOptions("created-by-producer"), [b"x"])
        assert result.sent == 1
        assert "created-by-producer" in await list_topics(cluster)


async def test_batches_close_at_batch_size_and_at_linger(
    cluster: AsyncAdminClient, data_dir: Path
) -> None:
    """--batch-size and --linger-ms reach the producer's accumulator: the stored batches
    show where it closed them."""
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "flush", partitions=1)
        # 10 records of 100 bytes at batch.size 350: two to a batch, because the
        # accumulator counts a batch's 61-byte header and each record's 21 bytes of
        # framing (61 + 2 x 121 = 303 fits, a third would make 424); linger is long
        # enough that only the size closes a batch before the end of input.
        options = ProduceOptions("flush", batch_size=350, linger_ms=5_000)
        result, _ = await send(cluster, options, [b"x" * 100] * 10)
        assert result.sent == 10
        assert batch_counts(data_dir / "flush-0") == [2, 2, 2, 2, 2]

        async def slow_lines() -> AsyncIterator[bytes]:
            yield b"first"
            # Not a wait for something: the input stays idle for ten lingers, so the
            # first line goes alone.
            await trio.sleep(0.5)
            yield b"second"

        options = ProduceOptions("flush", linger_ms=50)
        result = await produce(
            bootstrap(cluster), options, slow_lines(), lambda _: None
        )
        assert result.sent == 2
        assert batch_counts(data_dir / "flush-0")[-2:] == [1, 1]


# --- consume ------------------------------------------------------------------------------


async def test_consume_from_earliest_latest_and_an_offset(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "c", partitions=1)
        await send(cluster, ProduceOptions("c"), [b"m%d" % i for i in range(5)])

        assert await read_all(cluster, "c", offset="earliest", max_messages=3) == [
            b"m0",
            b"m1",
            b"m2",
        ]
        assert await read_all(
            cluster, "c", offset=3, max_messages=5, timeout_ms=IDLE_MS
        ) == [
            b"m3",
            b"m4",
        ]
        assert await read_all(
            cluster, "c", offset=2, max_messages=1, print_offset=True
        ) == [b"Offset:2\tm2"]

        # latest: only what is produced after the consumer found its position.
        options = ConsumeOptions("c", offset="latest", max_messages=2)
        async with console_consumer(bootstrap(cluster), options) as latest:
            assert await latest.consumer.position([TopicPartition("c", 0)]) == [
                TopicPartition("c", 0, 5)
            ]
            await send(cluster, ProduceOptions("c"), [b"new1", b"new2"])
            out = io.BytesIO()
            assert await latest.run(out) == 2
        assert out.getvalue() == b"new1\nnew2\n"


async def test_consume_waits_for_new_records(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "live", partitions=2)
        options = ConsumeOptions("live", offset="latest", max_messages=3)
        async with console_consumer(bootstrap(cluster), options) as console:
            assigned = [TopicPartition("live", 0), TopicPartition("live", 1)]
            assert [p.offset for p in await console.consumer.position(assigned)] == [
                0,
                0,
            ]
            out = io.BytesIO()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(console.run, out)
                await send(cluster, ProduceOptions("live", partition=1), [b"a", b"b"])
                await send(cluster, ProduceOptions("live", partition=0), [b"c", b"d"])
        # three of the four (order per partition), then --max-messages stops it
        assert console.consumed == 3
        got = out.getvalue().splitlines()
        assert len(got) == 3
        assert set(got) <= {b"a", b"b", b"c", b"d"}
        for earlier, later in ((b"a", b"b"), (b"c", b"d")):  # order per partition
            if later in got:
                assert got.index(earlier) < got.index(later)


async def test_consume_timeout_and_out_of_range_reset(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "idle", partitions=1)
        await send(cluster, ProduceOptions("idle"), [b"a", b"b", b"c"])
        idle = TopicPartition("idle", 0)
        options = ConsumeOptions("idle", offset=100, timeout_ms=400)
        async with console_consumer(bootstrap(cluster), options) as console:
            start = trio.current_time()
            assert await console.run(io.BytesIO()) == 0
            assert trio.current_time() - start >= 0.4
            # OFFSET_OUT_OF_RANGE: reset to latest (auto.offset.reset's default here)
            assert await console.consumer.position([idle]) == [
                TopicPartition("idle", 0, 3)
            ]

        # The same, with --consumer-property auto.offset.reset=earliest: everything.
        # --max-messages ends it; the timeout only bounds a failure (on a loaded machine
        # the reset's round trips alone can outlast a few hundred milliseconds, and
        # --timeout-ms counts from the first poll, as in Kafka's console consumer).
        options = ConsumeOptions(
            "idle",
            offset=100,
            max_messages=3,
            timeout_ms=20_000,
            properties={"auto.offset.reset": "earliest"},
        )
        out = io.BytesIO()
        assert await consume(bootstrap(cluster), options, out) == 3
        assert out.getvalue() == b"a\nb\nc\n"


async def test_consume_as_a_group_member_commits_and_resumes(
    cluster: AsyncAdminClient,
) -> None:
    """--group: the coordinator assigns the partitions, and the committed offsets are
    where the next member of the group starts (no record read twice, none skipped)."""
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "g", partitions=2)
        lines = [b"r%d" % i for i in range(10)]
        await send(cluster, ProduceOptions("g"), lines)
        first = await read_all(
            cluster, "g", offset="earliest", group="readers", max_messages=6
        )
        rest = await read_all(
            cluster,
            "g",
            offset="earliest",
            group="readers",
            max_messages=4,
            timeout_ms=10_000,
        )
        assert sorted(first + rest) == sorted(lines)
        assert len(first) == 6
        assert len(rest) == 4


async def test_consume_errors(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        with pytest.raises(BrokerError, match=r"^UNKNOWN_TOPIC_OR_PARTITION"):
            await read_all(cluster, "missing", max_messages=1)
        assert "missing" not in await list_topics(cluster)  # not created by reading it
        await create_topic(cluster, "one", partitions=1)
        with pytest.raises(BrokerError, match=r"^UNKNOWN_TOPIC_OR_PARTITION"):
            await read_all(cluster, "one", partition=3, max_messages=1)
        with pytest.raises(ToolError, match=r"fetch\.max\.wait"):
            check_consumer_config(
                ConsumeOptions("one", properties={"fetch.max.wait": "1"}), "h:1"
            )


def test_format_record_is_kafkas_default_formatter() -> None:
    record = Message("t", 2, Record(7, 0, None, b"v"))
    assert format_record(record, ConsumeOptions("t")) == b"v\n"
    everything = ConsumeOptions(
        "t", print_key=True, print_offset=True, print_partition=True
    )
    assert format_record(record, everything) == b"Partition:2\tOffset:7\tnull\tv\n"
    keyed = Message("t", 0, Record(1, 0, b"k", None))
    assert (
        format_record(keyed, ConsumeOptions("t", print_key=True, separator=":"))
        == b"k:null\n"
    )


# --- the command --------------------------------------------------------------------------


async def minikafka(
    *args: str, stdin: bytes = b"", check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "minikafka.tools", *args],
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=check,
        env={**os.environ, "COLUMNS": "200"},
    )


async def test_the_command_round_trip(cluster: AsyncAdminClient) -> None:
    server = ["--bootstrap-server", bootstrap(cluster)]
    with trio.fail_after(DEADLINE * 2):
        created = await minikafka(
            "topics", *server, "--create", "--topic", "cmd", "--partitions", "2"
        )
        assert created.stdout == b"Created topic cmd.\n"
        listed = await minikafka("topics", *server, "--list")
        assert listed.stdout == b"cmd\n"

        again = await minikafka(
            "topics",
            *server,
            "--create",
            "--topic",
            "cmd",
            "--partitions",
            "2",
            check=False,
        )
        assert again.returncode == 1
        assert b"Error: TOPIC_ALREADY_EXISTS" in again.stderr

        lines = b"".join(b"k%d:v%d\n" % (i, i) for i in range(10))
        produced = await minikafka(
            "produce", *server, "--topic", "cmd", "--key-separator", ":", "--compression", "lz4",
            stdin=lines,
        )  # fmt: skip
        assert produced.stdout == produced.stderr == b""
        consumed = await minikafka(
            "consume", *server, "--topic", "cmd", "--from-beginning", "--max-messages", "10",
            "--print-key",
        )  # fmt: skip
        assert sorted(consumed.stdout.splitlines()) == sorted(
            b"k%d\tv%d" % (i, i) for i in range(10)
        )
        assert consumed.stderr == b"Processed a total of 10 messages\n"

        missing = await minikafka(
            "consume", *server, "--topic", "nope", "--timeout-ms", "100", check=False
        )
        assert missing.returncode == 1
        assert b"UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr


async def test_the_topics_command_prints_a_table_and_checks_its_arguments(
    cluster: AsyncAdminClient,
) -> None:
    server = ["--bootstrap-server", bootstrap(cluster)]
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, ["topics", *server, *args], env={"COLUMNS": "200"})
        return result.exit_code, result.output

    with trio.fail_after(DEADLINE):
        # The command calls trio.run itself: give it a thread of its own.
        code, output = await trio.to_thread.run_sync(
            invoke, "--create", "--topic", "tbl", "--partitions", "2", "--config",
            "retention.ms=5000",
        )  # fmt: skip
        assert (code, output) == (0, "Created topic tbl.\n")
        code, output = await trio.to_thread.run_sync(
            invoke, "--describe", "--topic", "tbl"
        )
        assert code == 0
        assert "retention.ms=5000" in output
        assert sum("tbl" in line for line in output.splitlines()) == 2

        code, output = await trio.to_thread.run_sync(
            invoke, "--alter", "--topic", "tbl"
        )
        assert code == 2
        assert "--alter needs --partitions" in output
        code, output = await trio.to_thread.run_sync(invoke, "--list", "--delete")
        assert code == 2
        code, output = await trio.to_thread.run_sync(
            invoke, "--delete", "--topic", "tbl"
        )
        assert (code, output) == (0, "Deleted topic tbl.\n")
        code, output = await trio.to_thread.run_sync(
            invoke, "--delete", "--topic", "tbl"
        )
        assert code == 1
        assert "Error: UNKNOWN_TOPIC_OR_PARTITION" in output
