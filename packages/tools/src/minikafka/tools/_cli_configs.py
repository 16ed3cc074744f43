"""``minikafka configs``: the command of Kafka's kafka-configs.sh for topics, brokers and
users' SCRAM credentials (the work is in :mod:`._configs` and :mod:`._configs_users`).

Its refusals are ConfigCommand's: the message alone on stderr and exit status 1, both
for flags that do not fit together and for a failed Admin call (printed as the Java tool
prints the exception, :func:`~._configs.failure_lines`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import trio
import typer

from minikafka.client import KafkaException

from ._cli_common import CommandConfig, OptionalBootstrapServer
from ._configs import (
    AdminCallFailed,
    ConfigCommandError,
    Entity,
    Flags,
    alter,
    check_flags,
    describe,
    failure_lines,
    parse_add_config,
    parse_delete_config,
    parse_properties,
)
from ._configs_users import USERS, alter_user, describe_users
from ._connection import ToolError, connect, load_properties, lone_errors


def configs(
    bootstrap_server: OptionalBootstrapServer = None,
    describe_: Annotated[
        bool, typer.Option("--describe", help="list the entity's configs")
    ] = False,
    alter_: Annotated[
        bool, typer.Option("--alter", help="change the entity's configs")
    ] = False,
    all_: Annotated[
        bool,
        typer.Option("--all", help="--describe: every config, not only dynamic ones"),
    ] = False,
    entity_type: Annotated[
        list[str] | None,
        typer.Option(
            "--entity-type", metavar="topics|brokers|users", help="the entity type"
        ),
    ] = None,
    entity_name: Annotated[
        list[str] | None,
        typer.Option(
            "--entity-name",
            metavar="NAME",
            help="the topic's name or the broker's id",
        ),
    ] = None,
    entity_default: Annotated[
        bool,
        typer.Option("--entity-default", help="brokers: the cluster-wide default"),
    ] = False,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic", metavar="TOPIC", help="--entity-type topics --entity-name"
        ),
    ] = None,
    broker: Annotated[
        str | None,
        typer.Option(
            "--broker", metavar="ID", help="--entity-type brokers --entity-name"
        ),
    ] = None,
    broker_defaults: Annotated[
        bool,
        typer.Option(
            "--broker-defaults", help="--entity-type brokers --entity-default"
        ),
    ] = False,
    add_config: Annotated[
        str | None,
        typer.Option(
            "--add-config",
            metavar="K1=V1,K2=[V1,V2]",
            help="configs to set; brackets group a value holding commas",
        ),
    ] = None,
    add_config_file: Annotated[
        Path | None,
        typer.Option(
            "--add-config-file",
            exists=True,
            dir_okay=False,
            help="a properties file of configs to set",
        ),
    ] = None,
    delete_config: Annotated[
        list[str] | None,
        typer.Option("--delete-config", metavar="K1,K2", help="overrides to remove"),
    ] = None,
    command_config: CommandConfig = None,
) -> None:
    """Describe or change topic and broker configs (kafka-configs.sh)."""
    flags = Flags(
        describe=describe_,
        alter=alter_,
        entity_types=tuple(entity_type or ()),
        entity_names=tuple(entity_name or ()),
        entity_default=entity_default,
        topic=topic,
        broker=broker,
        broker_defaults=broker_defaults,
        add_config=add_config,
        add_config_file=None if add_config_file is None else str(add_config_file),
        delete_config=tuple(delete_config or ()),
    )
    args = command_args(bootstrap_server, flags, describe_all=all_)
    try:
        entity = check_flags(flags)
        if bootstrap_server is None:
            raise ConfigCommandError(
                "Either --bootstrap-server or --bootstrap-controller must be specified."
            )
        to_add = (
            parse_add_config(add_config)
            if add_config is not None
            else parse_properties(add_config_file.read_text())
            if add_config_file is not None
            else {}
        )
        to_delete = parse_delete_config(flags.delete_config)
        lines = run(
            bootstrap_server,
            entity,
            (to_add, to_delete) if alter_ else None,
            describe_all=all_,
            command_config=None
            if command_config is None
            else load_properties(command_config),
        )
    except ConfigCommandError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    except AdminCallFailed as e:
        typer.echo("\n".join(failure_lines(args, e.error)), err=True)
        raise typer.Exit(1) from None
    except KafkaException as e:
        typer.echo("\n".join(failure_lines(args, e.args[0])), err=True)
        raise typer.Exit(1) from None
    except ToolError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    for line in lines:
        print(line)
    sys.stdout.flush()


def run(
    bootstrap: str,
    entity: Entity,
    changes: tuple[dict[str, str], Sequence[str]] | None,
    *,
    describe_all: bool,
    command_config: dict[str, str] | None = None,
) -> list[str]:
    """The lines the command prints: ``--alter`` with ``changes`` (the keys to set, the
    keys to delete), else ``--describe``; users' SCRAM credentials through
    :mod:`._configs_users`."""

    async def main() -> list[str]:
        async with connect(
            bootstrap, client_id="minikafka-configs", command_config=command_config
        ) as cluster:
            if entity.entity_type == USERS:
                if changes is not None:
                    assert entity.name is not None
                    return [await alter_user(cluster, entity.name, *changes)]
                return await describe_users(cluster, entity.name)
            if changes is not None:
                return [await alter(cluster, entity, *changes)]
            return await describe(cluster, entity, describe_all=describe_all)

    with lone_errors():
        return trio.run(main)


def command_args(
    bootstrap: str | None, flags: Flags, *, describe_all: bool
) -> list[str]:
    """The command's flags in the order ConfigCommand's examples give them, for the
    line that names a failed command (typer keeps no copy of the raw arguments)."""
    args = [] if bootstrap is None else ["--bootstrap-server", bootstrap]
    args += ["--describe"] * flags.describe + ["--alter"] * flags.alter
    for kind in flags.entity_types:
        args += ["--entity-type", kind]
    for name in flags.entity_names:
        args += ["--entity-name", name]
    args += ["--entity-default"] * flags.entity_default
    if flags.topic is not None:
        args += ["--topic", flags.topic]
    if flags.broker is not None:
        args += ["--broker", flags.broker]
    args += ["--broker-defaults"] * flags.broker_defaults
    args += ["--all"] * describe_all
    if flags.add_config is not None:
        args += ["--add-config", flags.add_config]
    if flags.add_config_file is not None:
        args += ["--add-config-file", flags.add_config_file]
    for keys in flags.delete_config:
        args += ["--delete-config", keys]
    return args
