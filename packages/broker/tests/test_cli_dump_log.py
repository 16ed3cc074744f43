"""``minikafka dump-log`` (kafka-dump-log.sh) on a broker's partition directory, and the
``minikafka`` command holding the server's commands and the client tools together.

A broker runs in this trio loop (``tool_cluster``) to write the segment; the command runs
through typer's CliRunner.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from typer.testing import CliRunner

from minikafka.broker._cli import app
from minikafka.broker.testing import bootstrap, single_node_config, tool_cluster
from minikafka.log import CompressionType
from minikafka.tools._connection import AsyncAdminClient
from minikafka.tools._produce import ProduceOptions, produce
from minikafka.tools._topics import create_topic

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def cluster(data_dir: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(
        single_node_config(data_dir, {"num.partitions": "2"})
    ) as cluster:
        yield cluster


async def _lines(lines: list[bytes]) -> AsyncIterator[bytes]:
    for line in lines:
        yield line


def test_the_minikafka_command_has_the_servers_commands_and_the_client_tools() -> None:
    """One ``minikafka``, as Kafka's bin/ holds kafka-server-start.sh beside its clients."""
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for command in ("broker", "dump-log", "storage", "cluster", "zookeeper", "trace"):
        assert f" {command} " in result.output, command
    for command in ("topics", "produce", "consume", "groups", "reassign-partitions"):
        assert f" {command} " in result.output, command
    assert " leader-election " in result.output
    assert " metadata-quorum " in result.output


async def test_dump_log_of_a_partition_directory(
    cluster: AsyncAdminClient, data_dir: Path
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "dumped", partitions=1)
        options = ProduceOptions(
            "dumped", compression=CompressionType.GZIP, key_separator=":"
        )
        produced = await produce(
            bootstrap(cluster), options, _lines([b"k1:hello", b"k2:world"])
        )
        assert produced.sent == 2
        assert not produced.failed
    partition_dir = data_dir / "dumped-0"
    runner = CliRunner()

    result = runner.invoke(app, ["dump-log", str(partition_dir)])
    assert result.exit_code == 0, result.output
    assert "Dumping" in result.output
    assert "baseOffset: 0 lastOffset: 1 count: 2" in result.output
    assert "compresscodec: gzip" in result.output
    assert "payload" not in result.output

    result = runner.invoke(app, ["dump-log", str(partition_dir), "--deep"])
    assert result.exit_code == 0, result.output
    assert "| offset: 0" in result.output
    assert "key: k1 payload: hello" in result.output
    assert "key: k2 payload: world" in result.output

    result = runner.invoke(app, ["dump-log", str(partition_dir), "--verify"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK: 1 batches, 2 records")

    # A copy with one flipped byte: verify names the batch and fails.
    broken = data_dir.parent / "broken" / "dumped-0"
    shutil.copytree(partition_dir, broken)
    (segment,) = broken.glob("*.log")
    raw = bytearray(segment.read_bytes())
    raw[-3] ^= 0xFF
    segment.write_bytes(bytes(raw))
    result = runner.invoke(app, ["dump-log", str(broken), "--verify"])
    assert result.exit_code == 1
    assert "CORRUPT" in result.output
    result = runner.invoke(app, ["dump-log", str(broken)])
    assert result.exit_code == 1
    assert "isvalid: false" in result.output

    result = runner.invoke(app, ["dump-log", str(data_dir / "nowhere")])
    assert result.exit_code == 2
