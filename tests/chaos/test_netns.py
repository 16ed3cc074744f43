"""Two namespaces on a bridge reach each other over TCP; a cut link drops their packets
(a connect times out, as behind a real partition, rather than failing fast), one way
only when cut one way; healing restores it; and closing removes every namespace."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from chaos.netns import (
    Layout,
    Network,
    cut_commands,
    netem_available,
    netem_commands,
    setup_commands,
    unavailable,
)

REASON = unavailable()
needs_namespaces = pytest.mark.skipif(REASON is not None, reason=f"{REASON}")

SERVE = """
import socket, sys
tcp = socket.create_server(("0.0.0.0", 9099))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("0.0.0.0", 9098))
print("ready", flush=True)
udp.settimeout(0.2)
tcp.settimeout(0.2)
while True:
    try:
        connection, _ = tcp.accept()
        connection.sendall(b"hi")
        connection.close()
    except TimeoutError:
        pass
    try:
        data, sender = udp.recvfrom(64)
        udp.sendto(data, sender)
        udp.sendto(data, (sys.argv[1], 9097))  # and tell the host it arrived
    except TimeoutError:
        pass
"""

CONNECT = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], 9099), timeout=1.5) as s:
        print(s.recv(2).decode())
except OSError as exc:
    print(type(exc).__name__)
"""

DATAGRAM = """
import socket, sys
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.settimeout(1.0)
udp.sendto(b"ping", (sys.argv[1], 9098))
try:
    print(udp.recvfrom(64)[0].decode())
except TimeoutError:
    print("TimeoutError")
"""


def test_a_cut_is_a_blackhole_rule_in_the_destinations_namespace() -> None:
    layout = Layout("mkx", 201, (1, 2, 3000))
    assert cut_commands(layout, [(3000, 1)]) == [
        ["ip", "-n", "mkxn1", "rule", "add", "pref", "10", "from", "10.201.0.3",
         "iif", "eth0", "blackhole"],
    ]  # fmt: skip
    commands = setup_commands(layout)
    assert ["ip", "netns", "add", "mkxn3000"] in commands
    # The local table moves behind the cut rules, or it would deliver the packets first.
    local = ["ip", "-n", "mkxn2", "rule", "add", "pref", "100", "lookup", "local"]
    assert commands.index(local) < commands.index(
        ["ip", "-n", "mkxn2", "rule", "del", "pref", "0", "lookup", "local"]
    )


def test_names_that_do_not_fit_an_interface_are_refused() -> None:
    with pytest.raises(ValueError, match="over 15 bytes"):
        Layout("a-very-long-prefix", 200, (1,))


@pytest.fixture
def network() -> Iterator[Network]:
    with Network.create([1, 2]) as made:
        server = subprocess.Popen(
            made.command(2, [sys.executable, "-c", SERVE, made.layout.host_address]),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            assert server.stdout.readline().strip() == "ready"
            yield made
        finally:
            server.kill()
            server.wait(timeout=10)


def run_in(network: Network, node: int, script: str, peer: int) -> str:
    argv = network.command(node, [sys.executable, "-c", script, network.address(peer)])
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=30
    ).stdout.strip()


@needs_namespaces
def test_a_partition_drops_packets_and_healing_restores_them(network: Network) -> None:
    assert run_in(network, 1, CONNECT, 2) == "hi"
    network.cut([(1, 2), (2, 1)])
    # Dropped in silence: the connect times out, it is not refused or rejected at once.
    assert run_in(network, 1, CONNECT, 2) == "TimeoutError"
    network.heal()
    assert run_in(network, 1, CONNECT, 2) == "hi"


@needs_namespaces
def test_a_one_way_cut_drops_one_direction_only(network: Network) -> None:
    network.cut([(2, 1)])  # node 2's packets never reach node 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as host:
        host.bind((network.layout.host_address, 9097))
        host.settimeout(10)
        # Node 1's datagram reaches node 2 (which tells the host), its echo is lost.
        assert run_in(network, 1, DATAGRAM, 2) == "TimeoutError"
        assert host.recvfrom(64)[0] == b"ping"
    network.heal([(2, 1)])
    assert run_in(network, 1, DATAGRAM, 2) == "ping"


@needs_namespaces
def test_closing_removes_the_namespaces_and_the_bridge() -> None:
    network = Network.create([7, 8])
    namespaces = [network.layout.namespace(n) for n in (7, 8)]
    network.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    assert not any(ns in listed.stdout for ns in namespaces)
    bridge = subprocess.run(
        ["ip", "link", "show", network.layout.bridge], capture_output=True, text=True
    )
    assert bridge.returncode != 0


@needs_namespaces
def test_a_slow_link_is_a_netem_qdisc_on_the_nodes_interface(network: Network) -> None:
    if not netem_available(network, 1):
        pytest.skip("this kernel has no netem qdisc (sch_netem): slow links fall back")
    for argv in netem_commands(network.layout, 1, 100.0, 10.0, 1.0):
        subprocess.run(argv, check=True)
    shown = subprocess.run(
        network.command(1, ["tc", "qdisc", "show", "dev", "eth0"]),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "netem" in shown
    assert "delay 100ms" in shown
