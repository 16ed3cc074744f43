"""``minikafka reassign-partitions`` and ``minikafka leader-election``: the commands of
Kafka's kafka-reassign-partitions.sh and kafka-leader-election.sh (the work is in
:mod:`._reassign`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from minikafka.client import AsyncAdminClient, ElectionType

from ._cli_common import BootstrapServer, CommandConfig
from ._cli_common import run_tool as _run_tool
from ._cli_common import usage as _usage
from ._connection import ToolError
from ._reassign import (
    assignment_json,
    current_assignment,
    elect_leaders,
    parse_assignment,
    parse_topics_to_move,
)
from ._reassign import execute as execute_reassignment
from ._reassign import generate as generate_assignment
from ._reassign import ongoing as ongoing_reassignments
from ._reassign import verify as verify_reassignment


def reassign_partitions(
    bootstrap_server: BootstrapServer,
    generate: Annotated[
        bool,
        typer.Option("--generate", help="propose an assignment over --broker-list"),
    ] = False,
    execute: Annotated[
        bool, typer.Option("--execute", help="start the reassignment in the JSON file")
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="say which reassignments have finished")
    ] = False,
    cancel: Annotated[
        bool, typer.Option("--cancel", help="cancel those still in progress")
    ] = False,
    topics_to_move_json_file: Annotated[
        Path | None,
        typer.Option("--topics-to-move-json-file", exists=True, dir_okay=False),
    ] = None,
    broker_list: Annotated[
        str | None, typer.Option("--broker-list", help="--generate: e.g. 1,2,3")
    ] = None,
    reassignment_json_file: Annotated[
        Path | None,
        typer.Option("--reassignment-json-file", exists=True, dir_okay=False),
    ] = None,
    disallow_replication_factor_change: Annotated[
        bool,
        typer.Option(
            "--disallow-replication-factor-change",
            help="--execute: refuse a move that changes a partition's number of "
            "replicas (KIP-860)",
        ),
    ] = False,
    command_config: CommandConfig = None,
) -> None:
    """Move partitions' replicas between brokers (kafka-reassign-partitions.sh)."""
    actions = {"--generate": generate, "--execute": execute, "--verify": verify}
    actions["--cancel"] = cancel
    chosen = [name for name, on in actions.items() if on]
    if len(chosen) != 1:
        raise _usage("give exactly one of " + ", ".join(actions))
    action = chosen[0]
    try:
        if action == "--generate":
            if topics_to_move_json_file is None or broker_list is None:
                raise _usage(
                    "--generate needs --topics-to-move-json-file and --broker-list"
                )
            moving = parse_topics_to_move(topics_to_move_json_file.read_text())
            brokers = [int(b) for b in broker_list.split(",") if b.strip()]
        else:
            if reassignment_json_file is None:
                raise _usage(f"{action} needs --reassignment-json-file")
            target = parse_assignment(reassignment_json_file.read_text())
    except (ToolError, ValueError) as e:
        raise _usage(str(e)) from None

    async def run(cluster: AsyncAdminClient) -> None:
        if action == "--generate":
            current, proposed = await generate_assignment(cluster, moving, brokers)
            print(f"Current partition replica assignment\n{assignment_json(current)}\n")
            print(
                f"Proposed partition reassignment configuration\n{assignment_json(proposed)}"
            )
        elif action == "--execute":
            current = await current_assignment(cluster, {t for t, _ in target})
            print(
                f"Current partition replica assignment\n\n{assignment_json(current)}\n"
            )
            print(
                "Save this to use as the --reassignment-json-file option during rollback"
            )
            await execute_reassignment(
                cluster,
                dict(target),
                allow_replication_factor_change=not disallow_replication_factor_change,
            )
            names = ",".join(f"{t}-{p}" for t, p in sorted(target))
            print(f"Successfully started partition reassignments for {names}")
        elif action == "--verify":
            print("Status of partition reassignment:")
            for line in await verify_reassignment(cluster, target):
                print(line)
        else:
            moving_now = await ongoing_reassignments(cluster)
            cancelled = sorted(key for key in target if key in moving_now)
            if cancelled:
                await execute_reassignment(cluster, dict.fromkeys(cancelled))
            names = ",".join(f"{t}-{p}" for t, p in cancelled)
            print(f"Successfully cancelled partition reassignments for: {names}")

    _run_tool(run, bootstrap_server, "minikafka-reassign-partitions", command_config)


def leader_election(
    bootstrap_server: BootstrapServer,
    election_type: Annotated[
        str,
        typer.Option(
            "--election-type",
            help="PREFERRED, or UNCLEAN (a leader for a partition that has none, "
            "from outside the ISR if need be)",
        ),
    ],
    all_topic_partitions: Annotated[
        bool, typer.Option("--all-topic-partitions", help="every partition")
    ] = False,
    topic: Annotated[str | None, typer.Option("--topic")] = None,
    partition: Annotated[int | None, typer.Option("--partition")] = None,
    command_config: CommandConfig = None,
) -> None:
    """Move leadership back to each partition's preferred replica, or give a leaderless
    partition a leader (kafka-leader-election.sh)."""
    kind = election_type.upper()
    if kind not in ElectionType.__members__:
        raise _usage(f"--election-type: {election_type} is not PREFERRED or UNCLEAN")
    if all_topic_partitions == (topic is not None):
        raise _usage("give --all-topic-partitions, or --topic with --partition")
    if topic is not None and partition is None:
        raise _usage("--topic needs --partition")
    asked = None if topic is None or partition is None else [(topic, partition)]

    async def run(cluster: AsyncAdminClient) -> bool:
        elected, not_needed, failed = await elect_leaders(
            cluster, asked, ElectionType[kind]
        )
        if elected:
            print(
                f"Successfully completed leader election ({kind}) for partitions "
                + ", ".join(elected)
            )
        if not_needed:
            print(
                "Valid replica already elected for partitions " + ", ".join(not_needed)
            )
        for line in failed:
            print(f"Error completing leader election ({kind}) for partition: {line}")
        return not failed

    if not _run_tool(
        run, bootstrap_server, "minikafka-leader-election", command_config
    ):
        raise typer.Exit(1)
