"""``minikafka acls``: kafka-acls.sh's command (the work is in :mod:`._acls`).

As AclCommand does, a flag combination it refuses prints the reason on stderr and exits
1, and a failed Admin call prints ``Error while executing ACL command: <reason>`` on
stdout and exits 1. ``--remove`` asks before it deletes (``y`` on stdin) unless
``--force`` is given.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated

import trio
import typer

from minikafka.client import AsyncAdminClient, KafkaException
from minikafka.security import ResourcePatternFilter

from ._acls import (
    AclCommandUsage,
    AclFlags,
    add,
    check_args,
    list_acls,
    removal_prompts,
    remove,
)
from ._cli_common import BootstrapServer, CommandConfig
from ._connection import (
    ToolError,
    connect,
    describe_failure,
    load_properties,
    lone_errors,
)


def acls(
    bootstrap_server: BootstrapServer,
    command_config: CommandConfig = None,
    add_: Annotated[bool, typer.Option("--add", help="add ACLs")] = False,
    remove_: Annotated[bool, typer.Option("--remove", help="remove ACLs")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list ACLs")] = False,
    topic: Annotated[
        list[str] | None, typer.Option("--topic", help="a topic ('*': all)")
    ] = None,
    group: Annotated[
        list[str] | None, typer.Option("--group", help="a consumer group ('*': all)")
    ] = None,
    transactional_id: Annotated[
        list[str] | None,
        typer.Option("--transactional-id", help="a transactional id ('*': all)"),
    ] = None,
    cluster: Annotated[bool, typer.Option("--cluster", help="the cluster")] = False,
    resource_pattern_type: Annotated[
        str,
        typer.Option(
            "--resource-pattern-type",
            metavar="literal|prefixed|match|any",
            help="how resource names match (add: literal or prefixed)",
        ),
    ] = "literal",
    operation: Annotated[
        list[str] | None,
        typer.Option("--operation", help="Read, Write, Describe, ... (default All)"),
    ] = None,
    allow_principal: Annotated[
        list[str] | None,
        typer.Option("--allow-principal", metavar="TYPE:NAME", help="allowed"),
    ] = None,
    deny_principal: Annotated[
        list[str] | None,
        typer.Option("--deny-principal", metavar="TYPE:NAME", help="denied"),
    ] = None,
    principal: Annotated[
        list[str] | None,
        typer.Option("--principal", metavar="TYPE:NAME", help="--list: only these"),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="hosts of --allow-principal (default *)"),
    ] = None,
    deny_host: Annotated[
        list[str] | None,
        typer.Option("--deny-host", help="hosts of --deny-principal (default *)"),
    ] = None,
    producer: Annotated[
        bool, typer.Option("--producer", help="WRITE, DESCRIBE, CREATE on topics")
    ] = False,
    consumer: Annotated[
        bool,
        typer.Option("--consumer", help="READ, DESCRIBE on topics, READ on groups"),
    ] = False,
    idempotent: Annotated[
        bool,
        typer.Option(
            "--idempotent", help="--producer: IDEMPOTENT_WRITE on the cluster"
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="do not ask before removing")
    ] = False,
) -> None:
    """Add, remove or list ACLs (kafka-acls.sh)."""
    flags = AclFlags(
        pattern_type=resource_pattern_type,
        topics=tuple(topic or ()),
        groups=tuple(group or ()),
        transactional_ids=tuple(transactional_id or ()),
        cluster=cluster,
        operations=tuple(operation or ("All",)),
        allow_principals=tuple(allow_principal or ()),
        deny_principals=tuple(deny_principal or ()),
        allow_hosts=tuple(allow_host or ()),
        deny_hosts=tuple(deny_host or ()),
        list_principals=tuple(principal or ()),
        producer=producer,
        consumer=consumer,
        idempotent=idempotent,
    )
    try:
        named = {
            "add": add_, "remove": remove_, "list": list_, "producer": producer,
            "consumer": consumer, "idempotent": idempotent, "cluster": cluster,
            "topic": bool(topic), "group": bool(group),
            "transactional-id": bool(transactional_id), "operation": bool(operation),
            "allow-principal": bool(allow_principal), "deny-principal": bool(deny_principal),
            "allow-host": bool(allow_host), "deny-host": bool(deny_host),
            "principal": bool(principal),
        }  # fmt: skip
        check_args({name for name, on in named.items() if on})
        properties = {} if command_config is None else load_properties(command_config)
        if add_:
            lines = _run(bootstrap_server, properties, lambda a: add(a, flags))
        elif list_:
            lines = _run(bootstrap_server, properties, lambda a: list_acls(a, flags))
        else:
            confirmed = [
                f for f, question in removal_prompts(flags) if force or _ask(question)
            ]
            _run(bootstrap_server, properties, lambda a: _remove(a, flags, confirmed))
            lines = []
    except (AclCommandUsage, ToolError) as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    except KafkaException as e:
        print(f"Error while executing ACL command: {describe_failure(e.args[0])}")
        raise typer.Exit(1) from None
    for line in lines:
        print(line)
    sys.stdout.flush()


async def _remove(
    admin: AsyncAdminClient,
    flags: AclFlags,
    confirmed: Sequence[ResourcePatternFilter],
) -> list[str]:
    await remove(admin, flags, confirmed)
    return []


def _ask(question: str) -> bool:
    print(question)
    sys.stdout.flush()
    return sys.stdin.readline().strip().lower() == "y"


def _run(
    bootstrap: str,
    properties: dict[str, str],
    work: Callable[[AsyncAdminClient], Awaitable[list[str]]],
) -> list[str]:
    async def main() -> list[str]:
        async with connect(
            bootstrap, client_id="minikafka-acls", command_config=properties
        ) as admin:
            return await work(admin)

    with lone_errors():
        return trio.run(main)
