"""The client tools of the ``minikafka`` command (typer), Kafka's scripts on minikafka's client.

``topics`` is ``kafka-topics.sh`` (its work is in :mod:`._topics`), ``produce`` and
``consume`` are ``kafka-console-producer.sh`` and ``kafka-console-consumer.sh``
(:mod:`._produce`, :mod:`._consume`), ``groups`` is ``kafka-consumer-groups.sh``
(:mod:`._cli_groups`, its work in :mod:`._groups` and :mod:`._reset_offsets`),
``reassign-partitions`` and ``leader-election`` are ``kafka-reassign-partitions.sh``
and ``kafka-leader-election.sh`` (:mod:`._cli_reassign`), ``metadata-quorum`` is
``kafka-metadata-quorum.sh`` (:mod:`._quorum`), ``configs`` is ``kafka-configs.sh``
(:mod:`._cli_configs`), ``delete-records`` is ``kafka-delete-records.sh``
(:mod:`._delete_records`), ``transactions`` is ``kafka-transactions.sh``'s ``list`` and
``describe`` (:mod:`._transactions`), ``acls`` is ``kafka-acls.sh`` (:mod:`._cli_acls`,
its work in :mod:`._acls`); ``kafka-cluster.sh unregister`` is :mod:`._cluster`'s
command, which the broker package mounts beside its own ``cluster`` commands. A
broker's error is printed under Kafka's
name and the tool exits 1; a bad argument exits 2 (``configs`` prints both as
ConfigCommand does, and exits 1).

Like Kafka's, these tools are clients and nothing more: this package imports
``minikafka.client`` and the packages below it, never the broker (the import-linter layers
contract). The broker package adds them to its server commands to make the one
``minikafka`` command; ``python -m minikafka.tools`` runs them alone.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich.console import Console

from minikafka.client import AsyncAdminClient

from ._cli_acls import acls
from ._cli_common import BootstrapServer, CommandConfig, run_client_tool
from ._cli_common import run_tool as _run_tool
from ._cli_common import usage as _usage
from ._cli_configs import configs
from ._cli_groups import groups
from ._cli_reassign import leader_election, reassign_partitions
from ._connection import ToolError, load_properties
from ._consume import ConsumeOptions, console_consumer, parse_offset
from ._consume import check_config as consumer_config_check
from ._delete_records import delete_records
from ._produce import ProduceOptions, parse_acks, parse_compression, read_lines
from ._produce import check_config as producer_config_check
from ._produce import produce as produce_lines
from ._quorum import quorum_app
from ._topics import (
    create_partitions,
    create_topic,
    delete_topic,
    describe_table,
    describe_topics,
    list_topics,
    parse_config,
    parse_replica_assignment,
)
from ._transactions import transactions_app

app = typer.Typer(
    name="minikafka-tools",
    help="minikafka's client tools: Kafka's scripts on minikafka.client.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """minikafka's client tools: Kafka's scripts on minikafka.client."""


app.command("reassign-partitions")(reassign_partitions)
app.command("leader-election")(leader_election)
app.command("configs")(configs)
app.command("acls")(acls)
app.command("delete-records")(delete_records)


@app.command()
def topics(
    bootstrap_server: BootstrapServer,
    command_config: CommandConfig = None,
    create: Annotated[bool, typer.Option("--create", help="create --topic")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list the topics")] = False,
    describe: Annotated[
        bool, typer.Option("--describe", help="describe --topic, or every topic")
    ] = False,
    alter: Annotated[
        bool, typer.Option("--alter", help="grow --topic to --partitions partitions")
    ] = False,
    delete: Annotated[bool, typer.Option("--delete", help="delete --topic")] = False,
    topic: Annotated[str | None, typer.Option("--topic", help="the topic")] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            "--partitions",
            help="partition count (default: the broker's num.partitions)",
        ),
    ] = None,
    replication_factor: Annotated[
        int | None,
        typer.Option(
            "--replication-factor",
            help="replicas per partition (default.replication.factor)",
        ),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config", metavar="KEY=VALUE", help="a topic config (repeatable)"
        ),
    ] = None,
    replica_assignment: Annotated[
        str | None,
        typer.Option(
            "--replica-assignment",
            metavar="B1:B2,B3:B4",
            help="--create: each partition's replicas by hand, the first leading",
        ),
    ] = None,
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="--create: no error if it exists")
    ] = False,
    if_exists: Annotated[
        bool,
        typer.Option("--if-exists", help="--alter/--delete: no error if it is missing"),
    ] = False,
    exclude_internal: Annotated[
        bool,
        typer.Option(
            "--exclude-internal", help="--list/--describe: hide internal topics"
        ),
    ] = False,
) -> None:
    """Create, list, describe, alter or delete topics (kafka-topics.sh)."""
    actions = {"--create": create, "--list": list_, "--describe": describe}
    actions |= {"--alter": alter, "--delete": delete}
    chosen = [name for name, on in actions.items() if on]
    if len(chosen) != 1:
        raise _usage("give exactly one of " + ", ".join(actions))
    action = chosen[0]
    if action in ("--create", "--alter", "--delete") and topic is None:
        raise _usage(f"{action} needs --topic")
    if action == "--alter" and partitions is None:
        raise _usage("--alter needs --partitions")
    try:
        configs = dict(parse_config(item) for item in config or ())
        assignment = (
            []
            if replica_assignment is None
            else parse_replica_assignment(replica_assignment)
        )
    except ToolError as e:
        raise _usage(str(e)) from None
    if assignment and (partitions is not None or replication_factor is not None):
        raise _usage(
            "--replica-assignment gives the partitions and their replicas: "
            "it cannot be used with --partitions or --replication-factor"
        )

    async def run(cluster: AsyncAdminClient) -> None:
        if action == "--create":
            assert topic is not None
            created = await create_topic(
                cluster,
                topic,
                partitions=-1 if partitions is None else partitions,
                replication_factor=-1
                if replication_factor is None
                else replication_factor,
                configs=configs,
                if_not_exists=if_not_exists,
                replica_assignment=assignment,
            )
            if created:
                print(f"Created topic {topic}.")
        elif action == "--list":
            for name in await list_topics(cluster, exclude_internal=exclude_internal):
                print(name)
        elif action == "--describe":
            found = await describe_topics(
                cluster,
                None if topic is None else [topic],
                exclude_internal=exclude_internal,
            )
            if found:
                Console().print(describe_table(found))
        elif action == "--alter":
            assert topic is not None
            assert partitions is not None
            if await create_partitions(cluster, topic, partitions, if_exists=if_exists):
                print(f"Topic {topic} now has {partitions} partitions.")
        else:
            assert topic is not None
            if await delete_topic(cluster, topic, if_exists=if_exists):
                print(f"Deleted topic {topic}.")

    _run_tool(run, bootstrap_server, "minikafka-topics", command_config)


@app.command()
def produce(
    bootstrap_server: BootstrapServer,
    topic: Annotated[str, typer.Option("--topic", help="the topic to produce to")],
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition", help="send every record here (default: by key, or sticky)"
        ),
    ] = None,
    acks: Annotated[
        str, typer.Option("--acks", metavar="0|1|all", help="acks")
    ] = "all",
    compression: Annotated[
        str,
        typer.Option(
            "--compression",
            metavar="none|gzip|snappy|lz4|zstd",
            help="compression.type",
        ),
    ] = "none",
    key_separator: Annotated[
        str | None,
        typer.Option(
            "--key-separator",
            metavar="SEP",
            help="split each line into key SEP value (parse.key=true, key.separator)",
        ),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size", min=1, help="batch.size: bytes per partition's batch"
        ),
    ] = 16384,
    linger_ms: Annotated[
        int,
        typer.Option(
            "--linger-ms", min=0, help="linger.ms: how long a batch waits to fill"
        ),
    ] = 1000,
    request_timeout_ms: Annotated[
        int, typer.Option("--request-timeout-ms", min=1, help="request.timeout.ms")
    ] = 30_000,
    sync: Annotated[
        bool, typer.Option("--sync", help="wait for each record's acknowledgement")
    ] = False,
    producer_property: Annotated[
        list[str] | None,
        typer.Option(
            "--producer-property",
            metavar="KEY=VALUE",
            help="any producer configuration key (repeatable), e.g. enable.idempotence=false",
        ),
    ] = None,
    producer_config_file: Annotated[
        str | None,
        typer.Option(
            "--producer.config",
            metavar="FILE",
            help="a properties file of producer keys (security.protocol, ssl.*, sasl.*...)",
        ),
    ] = None,
) -> None:
    """Send each line of stdin as a record (kafka-console-producer.sh)."""
    try:
        options = ProduceOptions(
            topic=topic,
            partition=partition,
            acks=parse_acks(acks),
            compression=parse_compression(compression),
            key_separator=unescape(key_separator) if key_separator else None,
            batch_size=batch_size,
            linger_ms=linger_ms,
            timeout_ms=request_timeout_ms,
            sync=sync,
            properties={
                **(
                    {}
                    if producer_config_file is None
                    else load_properties(producer_config_file)
                ),
                **dict(parse_config(item) for item in producer_property or ()),
            },
        )
        # The client's configuration names a bad key before anything connects.
        producer_config_check(options, bootstrap_server)
    except ToolError as e:
        raise _usage(str(e)) from None
    fd = sys.stdin.fileno()

    async def run() -> int:
        return (await produce_lines(bootstrap_server, options, read_lines(fd))).failed

    failed = run_client_tool(run)
    raise typer.Exit(1 if failed else 0)


@app.command()
def consume(
    bootstrap_server: BootstrapServer,
    topic: Annotated[str, typer.Option("--topic", help="the topic to consume")],
    group: Annotated[
        str | None,
        typer.Option(
            "--group", help="consume as a member of this group (subscribe, commit)"
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option("--partition", help="only this partition (default: all)"),
    ] = None,
    offset: Annotated[
        str,
        typer.Option("--offset", metavar="earliest|latest|N", help="where to start"),
    ] = "latest",
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="the same as --offset earliest")
    ] = False,
    max_messages: Annotated[
        int | None,
        typer.Option("--max-messages", min=1, help="exit after this many records"),
    ] = None,
    timeout_ms: Annotated[
        int | None,
        typer.Option(
            "--timeout-ms", min=0, help="exit after this long with no new record"
        ),
    ] = None,
    print_key: Annotated[
        bool, typer.Option("--print-key", help="print the key")
    ] = False,
    print_offset: Annotated[
        bool, typer.Option("--print-offset", help="print the offset")
    ] = False,
    print_partition: Annotated[
        bool, typer.Option("--print-partition", help="print the partition")
    ] = False,
    key_separator: Annotated[
        str,
        typer.Option("--key-separator", metavar="SEP", help="between printed columns"),
    ] = "\\t",
    consumer_property: Annotated[
        list[str] | None,
        typer.Option(
            "--consumer-property",
            metavar="KEY=VALUE",
            help="any consumer configuration key (repeatable), e.g. isolation.level=read_committed",
        ),
    ] = None,
    consumer_config_file: Annotated[
        str | None,
        typer.Option(
            "--consumer.config",
            metavar="FILE",
            help="a properties file of consumer keys (security.protocol, ssl.*, sasl.*...)",
        ),
    ] = None,
) -> None:
    """Print the records of a topic's partitions (kafka-console-consumer.sh)."""
    try:
        start = "earliest" if from_beginning else parse_offset(offset)
        if group is not None and (partition is not None or isinstance(start, int)):
            raise ToolError(
                "--group takes the group's partitions and offsets: "
                "no --partition or --offset N with it"
            )
        options = ConsumeOptions(
            topic=topic,
            partition=partition,
            offset=start,
            max_messages=max_messages,
            timeout_ms=timeout_ms,
            print_key=print_key,
            print_offset=print_offset,
            print_partition=print_partition,
            separator=unescape(key_separator),
            group=group,
            properties={
                **(
                    {}
                    if consumer_config_file is None
                    else load_properties(consumer_config_file)
                ),
                **dict(parse_config(item) for item in consumer_property or ()),
            },
        )
        consumer_config_check(options, bootstrap_server)
    except ToolError as e:
        raise _usage(str(e)) from None

    async def run() -> None:
        count = 0
        try:
            async with console_consumer(bootstrap_server, options) as console:
                try:
                    await console.run(sys.stdout.buffer)
                finally:
                    count = console.consumed
        finally:
            # ConsoleConsumer prints this on the way out, Ctrl-C included.
            print(f"Processed a total of {count} messages", file=sys.stderr)

    try:
        run_client_tool(run)
    except BrokenPipeError:
        stdout_to_devnull()


app.command("groups")(groups)
app.add_typer(quorum_app)
app.add_typer(transactions_app)


def unescape(separator: str) -> str:
    """``\\t`` and ``\\n`` as typed on a command line: a tab and a newline."""
    return separator.replace("\\t", "\t").replace("\\n", "\n")


def stdout_to_devnull() -> None:
    """After ``| head`` closed the pipe: keep the interpreter's final flush from failing."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main() -> None:
    app(prog_name="python -m minikafka.tools")
    sys.exit(0)
