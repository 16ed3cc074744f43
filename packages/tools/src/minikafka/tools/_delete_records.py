"""``minikafka delete-records``: kafka-delete-records.sh (KIP-107).

It reads Kafka's ``--offset-json-file``, ``{"partitions": [{"topic": "t", "partition":
0, "offset": 10}], "version": 1}``, asks each partition's leader to delete the records
below its offset (-1: below the high watermark) with the AdminClient's
``delete_records``, and prints what Kafka's tool prints: a line per partition with the
low watermark it reached, or the exception Kafka's Admin would have raised.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from kio.schema.errors import ErrorCode

from minikafka.client import AsyncAdminClient, DeletedRecords, KafkaError
from minikafka.common import TopicPartition

from ._cli_common import BootstrapServer, CommandConfig
from ._cli_common import run_tool as _run_tool
from ._configs import exception_name
from ._connection import ToolError

HIGH_WATERMARK = -1
"""The offset that means "everything committed" (Kafka's
``DeleteRecordsRequest.HIGH_WATERMARK``)."""

# DeleteRecords' answer carries no message: Kafka's Admin then raises the exception
# with its error's default message, and the tool prints that.
_MESSAGES: dict[int, str] = {
    ErrorCode.offset_out_of_range: "The requested offset is not within the range of "
    "offsets maintained by the server.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this "
    "topic-partition.",
    ErrorCode.policy_violation: "Request parameters do not satisfy the configured "
    "policy.",
    ErrorCode.invalid_topic_exception: "The request attempted to perform an operation "
    "on an invalid topic.",
    ErrorCode.request_timed_out: "The request timed out.",
    ErrorCode.kafka_storage_error: "Disk error when trying to access log file on the "
    "disk.",
}


def parse_offsets(text: str) -> dict[TopicPartition, int]:
    """An ``--offset-json-file``, in its order; ToolError naming what is wrong (a
    partition listed twice is refused, as Kafka's tool refuses it)."""
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"the offset JSON file is not JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ToolError('the offset JSON file has no "partitions" list')
    offsets: dict[TopicPartition, int] = {}
    duplicates: list[str] = []
    for entry in entries:
        try:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            offset = int(entry["offset"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ToolError(
                f"a partition entry is not topic/partition/offset: {entry}"
            ) from exc
        if tp in offsets:
            duplicates.append(f"{tp.topic}-{tp.partition}")
        offsets[tp] = offset
    if duplicates:
        raise ToolError(
            "Offset json file contains duplicate topic partitions: "
            + ",".join(duplicates)
        )
    return offsets


def result_line(tp: TopicPartition, outcome: DeletedRecords | KafkaError) -> str:
    """Kafka's line for one partition: its low watermark, or the exception Kafka's
    Admin raises, with the error's default message where the answer gave none."""
    name = f"{tp.topic}-{tp.partition}"
    if isinstance(outcome, DeletedRecords):
        return f"partition: {name}\tlow_watermark: {outcome.low_watermark}"
    exception = f"org.apache.kafka.common.errors.{exception_name(outcome.code())}"
    text = outcome.str()
    if text == outcome.name():  # no message of its own: Kafka's default one
        text = _MESSAGES.get(outcome.code(), text)
    return f"partition: {name}\terror: {exception}: {text}"


def delete_records(
    bootstrap_server: BootstrapServer,
    offset_json_file: Annotated[
        Path,
        typer.Option(
            "--offset-json-file",
            exists=True,
            dir_okay=False,
            help='{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], '
            '"version": 1}; offset -1 means the high watermark',
        ),
    ],
    command_config: CommandConfig = None,
) -> None:
    """Delete each partition's records below an offset (kafka-delete-records.sh)."""
    try:
        offsets = parse_offsets(offset_json_file.read_text(encoding="utf-8"))
    except ToolError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None

    async def run(cluster: AsyncAdminClient) -> None:
        print("Executing records delete operation")
        outcomes = await cluster.delete_records(offsets)
        print("Records delete operation completed:")
        for tp in offsets:
            print(result_line(tp, outcomes[tp]))

    _run_tool(run, bootstrap_server, "minikafka-delete-records", command_config)
