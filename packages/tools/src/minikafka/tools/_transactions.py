"""``minikafka transactions``: Kafka's kafka-transactions.sh, ``list`` and ``describe
--transactional-id`` (KIP-664; ``list --duration-filter`` is KIP-994,
``--transactional-id-pattern`` KIP-1152).

``list`` asks every broker for the transactions it coordinates (the admin client's
``list_transactions``) and prints one row per transactional id with the broker that
answered for it; ``describe`` asks the id's coordinator (``describe_transactions``) and
prints its one row, with how long the open transaction has run by this machine's clock
(``None`` for both when none is open). The tables are Kafka's ``prettyPrintTable``:
each column as wide as its widest cell, every cell followed by a tab. A failure is
Kafka's one line on stderr ("Failed to ...: <why>. Enable debug logging for additional
detail.") and exit status 1.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated

import typer
from kio.schema.errors import ErrorCode

from minikafka.client import (
    AsyncAdminClient,
    KafkaError,
    KafkaException,
    TransactionDescription,
)

from ._cli_common import BootstrapServer, CommandConfig, run_tool
from ._connection import describe_failure

CLIENT_ID = "minikafka-transactions"
LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
_DEBUG_HINT = " Enable debug logging for additional detail."


class TransactionsToolError(Exception):
    """What kafka-transactions.sh prints on stderr before it exits 1 (its own line, not
    the other tools' ``Error: ...``)."""


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's ``ToolsUtils.prettyPrintTable``: cells left-aligned to their column's
    widest, each followed by a tab, one line per row after the headers."""
    widths = [
        max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)
    ]
    return "\n".join(
        "".join(
            f"{cell.ljust(width)}\t" for cell, width in zip(row, widths, strict=True)
        )
        for row in (headers, *rows)
    )


# --- the work ----------------------------------------------------------------------------


async def list_table(
    cluster: AsyncAdminClient, duration_ms: int | None, id_pattern: str | None = None
) -> str:
    """What ``list`` prints: every broker's transactions, by broker id."""
    try:
        by_broker = await cluster.list_transactions(
            duration_ms=-1 if duration_ms is None else duration_ms,
            transactional_id_pattern=id_pattern,
        )
    except KafkaException as e:
        raise TransactionsToolError(
            _failed("Failed to list transactions", e.args[0])
        ) from None
    rows = [
        (t.transactional_id, str(broker), str(t.producer_id), t.state)
        for broker, listings in sorted(by_broker.items())
        for t in listings
    ]
    return pretty_table(LIST_HEADERS, rows)


async def describe_table(
    cluster: AsyncAdminClient,
    transactional_id: str,
    now: Callable[[], float] = time.time,
) -> str:
    """What ``describe --transactional-id`` prints: the id's one row."""
    found = (await cluster.describe_transactions([transactional_id]))[transactional_id]
    if isinstance(found, KafkaError):
        raise TransactionsToolError(
            _failed(
                "Failed to describe transaction state of transactional-id "
                f"`{transactional_id}`",
                found,
                transactional_id,
            )
        )
    return pretty_table(DESCRIBE_HEADERS, [describe_row(transactional_id, found, now)])


def describe_row(
    transactional_id: str,
    found: TransactionDescription,
    now: Callable[[], float] = time.time,
) -> tuple[str, ...]:
    start = found.transaction_start_time_ms
    return (
        str(found.coordinator_id),
        transactional_id,
        str(found.producer_id),
        str(found.producer_epoch),
        found.state,
        str(found.transaction_timeout_ms),
        "None" if start is None else str(start),
        "None" if start is None else str(int(now() * 1000) - start),
        ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(found.topic_partitions)),
    )


def _failed(what: str, error: KafkaError, transactional_id: str = "") -> str:
    """Kafka's line: ``what``, the exception's message its Admin raises, the hint."""
    if error.code() == ErrorCode.transactional_id_not_found:
        reason = (
            f"DescribeTransactions request for transactionalId `{transactional_id}` "
            "failed because the ID could not be found"
        )
    else:
        reason = describe_failure(error)
    return f"{what}: {reason}.{_DEBUG_HINT}"


# --- the command -------------------------------------------------------------------------

transactions_app = typer.Typer(
    name="transactions",
    help="List transactions and describe a transactional id's state "
    "(kafka-transactions.sh).",
    no_args_is_help=True,
)


@transactions_app.callback()
def _transactions_group(
    ctx: typer.Context,
    bootstrap_server: BootstrapServer,
    command_config: CommandConfig = None,
) -> None:
    """List transactions and describe a transactional id's state
    (kafka-transactions.sh)."""
    ctx.obj = (bootstrap_server, command_config)


@transactions_app.command("list")
def list_command(
    ctx: typer.Context,
    duration_filter: Annotated[
        int | None,
        typer.Option(
            "--duration-filter",
            help="Duration (in millis) to filter by: if < 0, all transactions will be "
            "returned; otherwise, only transactions running longer than this duration "
            "will be returned",
        ),
    ] = None,
    transactional_id_pattern: Annotated[
        str | None,
        typer.Option(
            "--transactional-id-pattern",
            help="Transactional id regular expression pattern to filter by",
        ),
    ] = None,
) -> None:
    """list transactions"""

    async def run(cluster: AsyncAdminClient) -> str:
        return await list_table(cluster, duration_filter, transactional_id_pattern)

    _print_or_fail(lambda: _run(ctx, run))


@transactions_app.command("describe")
def describe_command(
    ctx: typer.Context,
    transactional_id: Annotated[
        str, typer.Option("--transactional-id", help="transactional id")
    ],
) -> None:
    """Describe the state of an active transactional-id."""

    async def run(cluster: AsyncAdminClient) -> str:
        return await describe_table(cluster, transactional_id)

    _print_or_fail(lambda: _run(ctx, run))


def _run(
    ctx: typer.Context, table: Callable[[AsyncAdminClient], Awaitable[str]]
) -> str:
    """``table`` against the cluster the group's options name, connecting as its
    ``--command-config`` says."""
    bootstrap_server, command_config = ctx.obj
    return run_tool(table, bootstrap_server, CLIENT_ID, command_config)


def _print_or_fail(table: Callable[[], str]) -> None:
    try:
        print(table())
    except TransactionsToolError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
