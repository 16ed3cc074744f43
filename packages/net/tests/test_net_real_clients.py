"""The real kcat and kafka-python reach ``python -m minikafka.net`` and list an empty cluster."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

LISTENING = re.compile(r"listening on (?P<host>[\d.]+):(?P<port>\d+)")


@pytest.fixture
def demo_server() -> Iterator[tuple[subprocess.Popen[str], int]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "minikafka.net", "--port", "0", "--node-id", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        port = None
        while port is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            match = LISTENING.search(line)
            if match:
                port = int(match["port"])
        assert port is not None, "the demo server did not start"
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is installed by `make test`"
)
def test_kcat_lists_one_broker_and_no_topics(
    demo_server: tuple[subprocess.Popen[str], int],
) -> None:
    _, port = demo_server
    result = subprocess.run(
        ["kcat", "-L", "-b", f"127.0.0.1:{port}", "-m", "20"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "1 brokers:" in result.stdout
    assert f"broker 3 at 127.0.0.1:{port} (controller)" in result.stdout
    assert "0 topics:" in result.stdout


def test_kafka_python_admin_lists_an_empty_cluster(
    demo_server: tuple[subprocess.Popen[str], int],
) -> None:
    from kafka import KafkaAdminClient

    _, port = demo_server
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=20000
    )
    try:
        assert admin.list_topics() == []
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 3
        assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == [(3, port)]
    finally:
        admin.close()


def test_sigint_stops_the_server_cleanly(
    demo_server: tuple[subprocess.Popen[str], int],
) -> None:
    process, _ = demo_server
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "SIGINT: shutting down" in out
