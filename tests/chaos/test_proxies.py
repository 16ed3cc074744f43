"""The link proxies, the fallback for link faults without network namespaces: each
connection is told its source node by the kernel's socket tables, and a cut link
``(source, destination)`` holds what that source sends while another source's link
to the same destination passes; nothing is closed, and healing delivers what was held.

No cluster: the destination is an echo server in this process, the two sources are
child processes (their pids stand for two nodes'), and a connection from this process,
a "client", is served unfaulted.
"""

from __future__ import annotations

import os
import select
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from chaos.proxies import LinkProxies, links_line, proxy_reason, source_of

DEADLINE = 10.0
DESTINATION, LEFT, RIGHT = 1, 2, 3

# A source node: connects to the port it is given when told, then echoes each line of its stdin
# through the connection and prints what came back.
SOURCE = """
import socket, sys
sys.stdin.readline()  # told to connect once its pid is known
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
for line in sys.stdin:
    s.sendall(line.encode())
    got = b""
    while not got.endswith(b"\\n"):
        got += s.recv(1024)
    print(got.decode().strip(), flush=True)
"""


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(1024):
            self.request.sendall(data)


class _Source:
    def __init__(self, port: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SOURCE, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def connect(self) -> None:
        self.send("connect")
        assert self.read(DEADLINE) == "connected"

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read(self, timeout: float) -> str | None:
        """The next line the source printed, or None if none came within ``timeout``."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return self.process.stdout.readline().strip() if ready else None

    def close(self) -> None:
        self.process.kill()
        self.process.wait(DEADLINE)


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling the proxies' counters, inside the deadline


def test_a_cut_link_holds_its_sources_bytes_while_another_sources_link_passes(
    echo_port: int,
) -> None:
    pids: dict[int, int] = {}
    # The destination node is the echo server; the two sources are known by pid only.
    proxies = LinkProxies(
        {DESTINATION: echo_port, LEFT: 1, RIGHT: 1}, lambda node: pids.get(node)
    )
    sources: list[_Source] = []
    try:
        port = proxies.port(DESTINATION)
        left, right = _Source(port), _Source(port)
        sources += [left, right]
        pids[LEFT], pids[RIGHT] = left.process.pid, right.process.pid
        left.connect()
        right.connect()
        _wait(lambda: proxies.identified[LEFT, DESTINATION] == 1, "left identified")
        _wait(lambda: proxies.identified[RIGHT, DESTINATION] == 1, "right identified")
        # A client of this process goes through unfaulted.
        with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as client:
            client.sendall(b"hello\n")
            assert client.recv(1024) == b"hello\n"
        assert proxies.unidentified[DESTINATION] == 1

        proxies.cut([(LEFT, DESTINATION)])  # one way: left's bytes never reach 1
        left.send("held")
        right.send("passes")
        assert right.read(DEADLINE) == "passes"
        assert left.read(0.5) is None  # held, and the connection still open
        assert left.process.poll() is None
        proxies.heal()
        assert left.read(DEADLINE) == "held"

        # The other way: the destination's bytes to the left source are held.
        proxies.cut([(DESTINATION, LEFT)])
        left.send("answer held")
        right.send("still passes")
        assert right.read(DEADLINE) == "still passes"
        assert left.read(0.5) is None
        proxies.heal([(DESTINATION, LEFT)])
        assert left.read(DEADLINE) == "answer held"

        # A slow source: its bytes are delayed, the other's not.
        proxies.slow(LEFT, {"delay_ms": 300.0})
        began = time.monotonic()
        left.send("slow")
        assert left.read(DEADLINE) == "slow"
        assert time.monotonic() - began >= 0.3
        proxies.unslow(LEFT)
    finally:
        for source in sources:
            source.close()
        proxies.close()


def test_no_source_is_found_for_a_connection_no_known_process_holds(
    echo_port: int,
) -> None:
    with socket.create_connection(("127.0.0.1", echo_port)) as connection:
        here = connection.getsockname()
        there = connection.getpeername()
        # This process holds it: found when its pid is known, not otherwise.
        assert source_of(here, there, {os.getpid(): 7}) == 7
        assert source_of(here, there, {}) is None


def test_the_proxies_are_used_where_namespaces_cannot_be_made_or_when_asked() -> None:
    assert proxy_reason("auto", None) is None
    assert proxy_reason("namespaces", None) is None
    why = proxy_reason("auto", "network namespaces need root")
    assert why == "network namespaces cannot be made here: network namespaces need root"
    assert proxy_reason("proxies", None) == "asked for (--links proxies)"
    line = links_line(None, why)
    assert line.startswith(
        "link faults: partitions and slow links on TCP fault proxies"
    )
    assert line.endswith(f"(no network namespaces: {why})")
