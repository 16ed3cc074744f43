"""``minikafka storage``: kafka-storage.sh's ``random-uuid`` and ``format`` (KIP-631).

A KRaft cluster's nodes share one cluster id, which the operator makes once
(``random-uuid``) and formats every node's directories with (``format -t ID -c
server.properties``): each of ``log.dirs`` and ``metadata.log.dir`` gets a
``meta.properties`` naming the cluster and the node. Only minikafka's single node skips
the step (:mod:`._meta_properties`). ``--add-scram`` (KIP-554) writes SCRAM users into
``bootstrap.checkpoint`` in ``metadata.log.dir``, which the first controller of the new
log writes into it, so that they can authenticate from the first start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import ConfigError
from minikafka.controller import (
    BootstrapError,
    UserScramCredentialRecord,
    parse_add_scram,
    write_bootstrap,
)

from ._config import KafkaConfig, parse_override
from ._meta_properties import StorageError, format_storage, new_cluster_id

Overrides = Annotated[
    list[str] | None,
    typer.Option("--override", help="key=value, applied over the file (repeatable)"),
]
"""``--override key=value``, as kafka-server-start.sh and kafka-storage.sh take it."""

storage_app = typer.Typer(
    name="storage",
    help="Format a node's log directories for a KRaft cluster (kafka-storage.sh).",
    no_args_is_help=True,
)


@storage_app.callback()
def _storage_group() -> None:
    """Format a node's log directories for a KRaft cluster (kafka-storage.sh)."""


@storage_app.command("random-uuid")
def random_uuid() -> None:
    """Print a new cluster id."""
    print(new_cluster_id())


@storage_app.command("format")
def format_(
    cluster_id: Annotated[
        str,
        typer.Option("--cluster-id", "-t", help="the cluster id (from random-uuid)"),
    ],
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="the node's server.properties",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    override: Overrides = None,
    ignore_formatted: Annotated[
        bool,
        typer.Option(
            "--ignore-formatted",
            "-g",
            help="leave formatted directories alone, format the rest",
        ),
    ] = False,
    add_scram: Annotated[
        list[str] | None,
        typer.Option(
            "--add-scram",
            "-S",
            help="a SCRAM user for the new cluster, as "
            "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)",
        ),
    ] = None,
) -> None:
    """Write meta.properties into every log directory of the node the config describes."""
    try:
        overrides = dict(parse_override(item) for item in override or ())
        config = KafkaConfig.load(config_file, overrides)
    except ConfigError as exc:
        typer.echo(f"minikafka storage: configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        scram: list[UserScramCredentialRecord] = [
            parse_add_scram(item) for item in add_scram or ()
        ]
    except BootstrapError as exc:
        typer.echo(f"minikafka storage: --add-scram: {exc}", err=True)
        raise typer.Exit(1) from None
    try:
        lines = format_storage(
            config.broker.log_dirs,
            config.metadata_log_dir,
            cluster_id,
            config.node_id,
            ignore_formatted=ignore_formatted,
        )
    except StorageError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"minikafka storage: cannot format: {exc}", err=True)
        raise typer.Exit(1) from None
    if scram:
        write_bootstrap(config.metadata_log_dir, scram)
    for line in lines:
        print(line)
