"""Real network faults: a network namespace per node, joined by a bridge.

Each node gets a namespace of its own with one interface, ``eth0``, the end of a veth
pair whose other end is a port of a bridge in the host's namespace. The bridge has an
address too, so the harness's clients in the host reach every node whatever the
partition (Jepsen's clients sit beside their nodes; here they see the whole cluster,
and a partition is between the nodes).

A cut link ``(a, b)`` (``a``'s packets never reach ``b``: ``chaos.partitions``' links)
is a policy-routing rule in ``b``'s namespace: packets arriving on ``eth0`` from ``a``'s
address are routed to a blackhole, which drops them without a word, what a DROP rule in
``b``'s INPUT chain does. It needs only iproute2 (neither iptables nor nft is assumed):
the namespace's ``local`` table is looked up after the rules (preference 100 instead of
0), so a rule at preference 10 sees the packets first. A one-way cut is one rule; a
symmetric cut both.

A slow or lossy link is ``tc netem`` on a node's ``eth0``, where the kernel has the
netem qdisc (:func:`netem_available` says whether it does); where it lacks it,
:func:`slow` shapes the node's egress with ``tc tbf`` instead (a token bucket, in every
kernel: a slow link that delays by queueing, and drops what waited too long).

:func:`unavailable` says why namespaces cannot be made here (not root, no ``ip``, the
kernel refuses) or None; the runner then falls back to :mod:`chaos.proxies` (a TCP
fault proxy per link: stalled links for partitions, delayed ones for slow links) and
says so. The commands
are built by pure functions (:func:`setup_commands`, :func:`cut_commands`...) and run by
:class:`Network`, which removes everything it made when closed or at exit.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence

import attrs

Link = tuple[int, int]
_networks = itertools.count()  # this process's networks, so their names differ
CUT_PREFERENCE = 10
LOCAL_PREFERENCE = 100


@attrs.frozen
class Layout:
    """The names and addresses of one network: ``prefix`` keeps concurrent networks
    apart (interface names are at most 15 bytes), ``subnet`` is ``10.N.0.0/24``."""

    prefix: str
    subnet: int
    nodes: tuple[int, ...]

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    @property
    def host_address(self) -> str:
        return f"10.{self.subnet}.0.254"

    def namespace(self, node: int) -> str:
        return f"{self.prefix}n{node}"

    def host_veth(self, node: int) -> str:
        return f"{self.prefix}v{self.nodes.index(node)}"

    def address(self, node: int) -> str:
        return f"10.{self.subnet}.0.{self.nodes.index(node) + 1}"

    def __attrs_post_init__(self) -> None:
        if not 1 <= len(self.nodes) <= 250:
            raise ValueError("a network has 1 to 250 nodes")
        if len(self.host_veth(self.nodes[-1])) > 15 or len(self.bridge) > 15:
            raise ValueError(f"prefix {self.prefix!r} makes names over 15 bytes")


def setup_commands(layout: Layout) -> list[list[str]]:
    """The bridge, then per node its namespace, veth pair, address and rule order."""
    bridge = layout.bridge
    commands = [
        ["ip", "link", "add", bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{layout.host_address}/24", "dev", bridge],
        ["ip", "link", "set", bridge, "up"],
    ]
    for node in layout.nodes:
        ns, veth = layout.namespace(node), layout.host_veth(node)
        commands += [
            ["ip", "netns", "add", ns],
            [
                "ip",
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns,
            ],
            ["ip", "link", "set", veth, "master", bridge, "up"],
            [
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                f"{layout.address(node)}/24",
                "dev",
                "eth0",
            ],
            ["ip", "-n", ns, "link", "set", "eth0", "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            [
                "ip",
                "-n",
                ns,
                "rule",
                "add",
                "pref",
                str(LOCAL_PREFERENCE),
                "lookup",
                "local",
            ],
            ["ip", "-n", ns, "rule", "del", "pref", "0", "lookup", "local"],
        ]
    return commands


def teardown_commands(layout: Layout) -> list[list[str]]:
    """The namespaces (their veth ends go with them), then the bridge."""
    commands = [["ip", "netns", "del", layout.namespace(n)] for n in layout.nodes]
    return [*commands, ["ip", "link", "del", layout.bridge]]


def _rule(layout: Layout, link: Link, action: str) -> list[str]:
    source, destination = link
    return [
        "ip", "-n", layout.namespace(destination), "rule", action,
        "pref", str(CUT_PREFERENCE), "from", layout.address(source),
        "iif", "eth0", "blackhole",
    ]  # fmt: skip


def cut_commands(layout: Layout, links: Iterable[Link]) -> list[list[str]]:
    """A blackhole rule in each destination's namespace for its source's packets."""
    return [_rule(layout, link, "add") for link in sorted(set(links))]


def heal_commands(layout: Layout, links: Iterable[Link]) -> list[list[str]]:
    return [_rule(layout, link, "del") for link in sorted(set(links))]


def netem_commands(
    layout: Layout, node: int, delay_ms: float, jitter_ms: float, loss_percent: float
) -> list[list[str]]:
    """Delay, jitter and loss on everything ``node`` sends."""
    return [
        ["ip", "netns", "exec", layout.namespace(node), "tc", "qdisc", "replace",
         "dev", "eth0", "root", "netem", "delay", f"{delay_ms}ms", f"{jitter_ms}ms",
         "loss", f"{loss_percent}%"],
    ]  # fmt: skip


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None if they can (one is made
    and removed to find out)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    name = f"mkprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return None


def _free_subnet() -> int:
    """A ``10.N.0.0/24`` (N from 200 to 249) no interface of the host uses yet. The
    search starts at a place drawn from the pid, so processes making networks at the
    same moment (test workers) seldom look at the same subnet first."""
    shown = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True)
    used = shown.stdout
    first = os.getpid() % 50
    for step in range(50):
        subnet = 200 + (first + step) % 50
        if f" 10.{subnet}." not in used:
            return subnet
    raise RuntimeError("no free 10.N.0.0/24 between 10.200 and 10.249")


class Network:
    """One network of namespaces, made by :meth:`create` and removed by :meth:`close`
    (also on exiting a ``with`` block, and at interpreter exit if still open)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.cut_links: set[Link] = set()
        self._open = True
        atexit.register(self.close)

    @classmethod
    def create(cls, nodes: Sequence[int], prefix: str | None = None) -> Network:
        reason = unavailable()
        if reason is not None:
            raise NetworkUnavailableError(reason)
        prefix = prefix or f"mk{os.getpid() % 100_000}{next(_networks) % 10}"
        network = cls(Layout(prefix, _free_subnet(), tuple(nodes)))
        try:
            _run(setup_commands(network.layout))
        except BaseException:
            network.close()
            raise
        return network

    def command(self, node: int, argv: Sequence[str]) -> list[str]:
        """``argv`` to run inside ``node``'s namespace."""
        return ["ip", "netns", "exec", self.layout.namespace(node), *argv]

    def address(self, node: int) -> str:
        return self.layout.address(node)

    def cut(self, links: Iterable[Link]) -> None:
        new = set(links) - self.cut_links
        _run(cut_commands(self.layout, new))
        self.cut_links |= new

    def heal(self, links: Iterable[Link] | None = None) -> None:
        """Restore ``links`` (every cut link if None)."""
        healing = self.cut_links if links is None else set(links) & self.cut_links
        _run(heal_commands(self.layout, healing))
        self.cut_links -= healing

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        atexit.unregister(self.close)
        for argv in teardown_commands(self.layout):
            subprocess.run(argv, capture_output=True, check=False)  # what exists

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


TBF_RATE = "512kbit"
"""A slow link's rate where the kernel lacks netem: below what a node's replication
and client traffic in a chaos run needs, so its queue fills and packets wait."""


def tbf_commands(layout: Layout, node: int, delay_ms: float) -> list[list[str]]:
    """``node``'s egress shaped by a token bucket (``tc tbf``, in every kernel), the
    fallback for a slow link without netem: :data:`TBF_RATE`, and packets queued up to
    ``delay_ms`` (at least 50 ms) before the queue drops them. It delays by queueing
    (more when the node sends more), not by a fixed latency as netem would."""
    latency = max(delay_ms, 50.0)
    return [
        ["ip", "netns", "exec", layout.namespace(node), "tc", "qdisc", "replace",
         "dev", "eth0", "root", "tbf", "rate", TBF_RATE, "burst", "16kbit",
         "latency", f"{latency:.0f}ms"],
    ]  # fmt: skip


def unshape_commands(layout: Layout, node: int) -> list[list[str]]:
    """``node``'s egress back to the default qdisc."""
    return [
        ["ip", "netns", "exec", layout.namespace(node), "tc", "qdisc", "del", "dev",
         "eth0", "root"],
    ]  # fmt: skip


def slow(
    network: Network, node: int, delay_ms: float, jitter_ms: float, loss_percent: float
) -> str:
    """Slow ``node``'s link: ``tc netem`` where the kernel has it, else ``tc tbf``;
    returns which (``"netem"`` or ``"tbf"``), for the run's notes."""
    layout = network.layout
    if netem_available(network, node):
        _run(netem_commands(layout, node, delay_ms, jitter_ms, loss_percent))
        return "netem"
    _run(tbf_commands(layout, node, delay_ms))
    return "tbf"


def unslow(network: Network, node: int) -> None:
    _run(unshape_commands(network.layout, node))


def netem_available(network: Network, node: int) -> bool:
    """Whether ``tc netem`` works in ``node``'s namespace (the kernel's sch_netem)."""
    argv = netem_commands(network.layout, node, 0.0, 0.0, 0.0)[0]
    tried = subprocess.run(argv, capture_output=True, check=False)
    if tried.returncode != 0:
        return False
    clear = network.command(node, ["tc", "qdisc", "del", "dev", "eth0", "root"])
    subprocess.run(clear, capture_output=True, check=False)
    return True


class NetworkUnavailableError(RuntimeError):
    """Network namespaces cannot be made here; the message says why."""


def _run(commands: Iterable[list[str]]) -> None:
    for argv in commands:
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
