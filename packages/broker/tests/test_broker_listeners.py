"""The broker process and its listeners under abuse.

- ``minikafka broker`` refuses a listener that promises TLS or SASL without the settings
  it needs: one line naming the key, the configuration error's exit status, no
  traceback.
- A broker out of file descriptors keeps serving the connections it has, says so once,
  and accepts again once descriptors are free.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from minikafka.broker import KafkaConfig
from minikafka.common import ConfigError
from minikafka.net import Listener
from minikafka.net.testing import request_frame

_BROKER = [sys.executable, "-m", "minikafka.broker", "broker"]


def _run_broker_command(
    *overrides: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    command = list(_BROKER)
    for item in overrides:
        command += ["--override", item]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize(
    ("protocol", "key", "words"),
    [
        ("SSL", "ssl.keystore.location", "needs its certificate and key"),
        ("SASL_SSL", "ssl.keystore.location", "needs its certificate and key"),
        ("SASL_PLAINTEXT", "sasl.enabled.mechanisms", "GSSAPI"),
    ],
)
def test_the_broker_refuses_a_secure_listener_it_cannot_serve_naming_the_key(
    protocol: str, key: str, words: str, tmp_path: Path
) -> None:
    """``--override listeners=SSL://127.0.0.1:0`` without a key store, and the SASL
    ones: start-up stops with one line naming the key; status 2, the CLI's status for a
    configuration error; no traceback."""
    result = _run_broker_command(
        f"listeners={protocol}://127.0.0.1:0", f"log.dirs={tmp_path}"
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"configuration error: {key}:" in lines[0]
    assert words in lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_the_broker_refuses_a_map_that_makes_a_listener_secure(tmp_path: Path) -> None:
    """Mapped to SASL_SSL, the listener reads its own keys: none set, the key store is
    named first."""
    result = _run_broker_command(
        "listeners=CLIENT://127.0.0.1:0",
        "listener.security.protocol.map=CLIENT:SASL_SSL",
        f"log.dirs={tmp_path}",
    )
    assert result.returncode == 2, result.stderr
    assert "configuration error: ssl.keystore.location:" in result.stderr
    assert "Traceback" not in result.stderr


def test_advertised_listeners_go_through_the_same_map() -> None:
    """One parser for listener lists: advertised names must be mapped and be listeners."""
    base = {"log.dirs": "/tmp/minikafka-unused", "listeners": "CLIENT://127.0.0.1:9092"}
    mapped = {
        **base,
        "listener.security.protocol.map": "CLIENT:PLAINTEXT",
        # Kafka's default inter-broker listener is PLAINTEXT, which this broker lacks.
        "inter.broker.listener.name": "CLIENT",
    }
    config = KafkaConfig.from_properties(
        {**mapped, "advertised.listeners": "CLIENT://kafka:9092"}
    )
    assert config.advertised_listeners == (
        Listener("CLIENT", "kafka", 9092, "PLAINTEXT"),
    )
    with pytest.raises(ConfigError) as unmapped:
        KafkaConfig.from_properties(
            {**base, "advertised.listeners": "CLIENT://kafka:9092"}
        )
    assert unmapped.value.key == "advertised.listeners"
    with pytest.raises(ConfigError) as foreign:
        KafkaConfig.from_properties(
            {**mapped, "advertised.listeners": "PLAINTEXT://kafka:9092"}
        )
    assert foreign.value.key == "advertised.listeners"


def test_the_limits_are_broker_keys() -> None:
    """The new keys are known to KafkaConfig (not "unknown configuration key") and reach
    the network layer; a bad value names its key."""
    base = {"log.dirs": "/tmp/minikafka-unused", "listeners": "PLAINTEXT://127.0.0.1:0"}
    config = KafkaConfig.from_properties(
        {
            **base,
            "max.connections": "1000",
            "max.connections.per.ip": "100",
            "max.connections.per.ip.overrides": "127.0.0.1:500",
            "queued.max.request.bytes": str(200 * 1024 * 1024),
        }
    )
    assert config.net.max_connections == 1000
    assert config.net.max_connections_per_ip == 100
    assert config.net.max_connections_per_ip_overrides == (("127.0.0.1", 500),)
    assert config.net.memory_pool_bytes == 200 * 1024 * 1024
    with pytest.raises(ConfigError) as err:
        KafkaConfig.from_properties({**base, "max.connections.per.ip": "0"})
    assert err.value.key == "max.connections.per.ip"


# --- out of descriptors -------------------------------------------------------------------

_READY = re.compile(r"minikafka broker ready on [^\s]+:(?P<port>\d+)")
_FD_LIMIT = 128  # the idle broker holds ~15 descriptors, so ~110 connections fill it


@contextmanager
def _broker_with_fd_limit(
    data_dir: Path, limit: int
) -> Iterator[tuple[int, list[str]]]:
    """A broker process whose RLIMIT_NOFILE is ``limit``: (port, its output)."""

    def lower_limit() -> None:
        # Soft and hard: the broker raises its soft limit to the hard one, as the JVM does.
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        # Nothing but the connections should want descriptors while the test runs.
        "replica.high.watermark.checkpoint.interval.ms": "3600000",
        "log.flush.offset.checkpoint.interval.ms": "3600000",
        "log.flush.start.offset.checkpoint.interval.ms": "3600000",
        "log.retention.check.interval.ms": "3600000",
    }
    command = list(_BROKER)
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lower_limit,  # only setrlimit, between fork and exec
    )
    output: list[str] = []
    ready = threading.Event()
    port: list[int] = []

    def read() -> None:
        assert process.stdout is not None
        for raw in iter(process.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            output.append(line)
            match = _READY.search(line)
            if match:
                port.append(int(match["port"]))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(60):
            raise AssertionError("broker not ready:\n" + "\n".join(output[-40:]))
        yield port[0], output
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, "\n".join(output[-40:])
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _wait_for(condition: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _api_versions_answered(sock: socket.socket, correlation_id: int) -> bool:
    """Send ApiVersions v3; True once the response with that correlation id is read."""
    body = ApiVersionsRequest(client_software_name="test", client_software_version="1")
    sock.sendall(request_frame(body, correlation_id))
    size = struct.unpack(">i", _read_exactly(sock, 4))[0]
    payload = _read_exactly(sock, size)
    return bool(struct.unpack_from(">i", payload)[0] == correlation_id)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return data


def test_a_broker_out_of_descriptors_keeps_serving(tmp_path: Path) -> None:
    """accept() failing with EMFILE kills neither the Acceptor nor the broker: one
    warning, the open connections are still answered, and once descriptors are freed
    a new connection is served."""
    with (
        _broker_with_fd_limit(tmp_path, _FD_LIMIT) as (port, output),
        ExitStack() as stack,
    ):
        address = ("127.0.0.1", port)
        existing = stack.enter_context(socket.create_connection(address, timeout=30))
        assert _api_versions_answered(existing, 1)
        # More connections than the broker has descriptors: the kernel completes every
        # handshake (the listen backlog), the broker's accept() starts failing.
        flood = [
            stack.enter_context(socket.create_connection(address, timeout=30))
            for _ in range(_FD_LIMIT + 16)
        ]

        def warned() -> bool:
            return any("Too many open files" in line for line in output)

        _wait_for(warned, "the broker's EMFILE warning:\n" + "\n".join(output[-30:]))
        # Still serving what it holds, for a while: long enough for the Acceptor to
        # retry many times (and, unless rate-limited, to log each one).
        correlation_id = 2
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            assert _api_versions_answered(existing, correlation_id)
            correlation_id += 1
        for sock in flood:
            sock.close()
        late = stack.enter_context(socket.create_connection(address, timeout=30))
        # accepted again: served within the timeout
        assert _api_versions_answered(late, 1)
        assert _api_versions_answered(existing, correlation_id)
        warnings = [line for line in output if "Too many open files" in line]
        assert len(warnings) == 1, warnings  # rate-limited, not one per retry
        assert not [line for line in output if "Traceback" in line]
