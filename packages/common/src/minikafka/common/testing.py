"""Helpers every package's tests reuse (and the labs', the reference Kafka node's, the
benchmarks'): :func:`free_ports`, the ports a test names before anything listens on
them (a cluster's nodes name each other, so they need their ports before they start).

Each process hands them out from a range of its own below the OS's ephemeral range: a
port bound to 0 (a proxy, a client's connection, a server a test starts on any port) is
never one of them, and each pytest-xdist worker (``PYTEST_XDIST_WORKER``, "gwN" of
``PYTEST_XDIST_WORKER_COUNT``) has a slice of that range no other worker hands out, so
tests running side by side are never given the same port. A test that runs pytest
again in processes of its own, side by side (a lab's wrong solutions, a few at a time),
gives each a slice of its own slice in :data:`PORTS_ENV`.

:data:`GROUP_POLL_MS` is how long a test's kafka-python consumer in a group waits in one
``poll()``.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading

_FIRST_PORT = 10000
_EPHEMERAL = "/proc/sys/net/ipv4/ip_local_port_range"
_lock = threading.Lock()
_cursor: int | None = None

GROUP_POLL_MS = 1000
"""The timeout of each ``poll()`` of a kafka-python consumer in a group. kafka-python
3.0.12 runs a JoinGroup-SyncGroup round as a task of its own; when a poll's timeout runs
out before the round ends and the round then succeeds, its answer can be set aside, and
the member stays REBALANCING for good (its commits fail with RebalanceInProgressError).
A leader rejoins once when its metadata of its topics arrives after its first JoinGroup,
and on a loaded machine that round can outlast a 100 ms poll. A poll returns as soon as
records arrive, so the longer timeout costs a test nothing while records flow."""

PORTS_ENV = "MINIKAFKA_TEST_PORTS"
"""``FIRST-STOP``: the ports this process hands out, set by whoever started it."""


def _ephemeral_low() -> int:
    try:
        with open(_EPHEMERAL) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def worker_ports() -> range:
    """The ports :func:`free_ports` hands out in this process: those :data:`PORTS_ENV`
    names if it is set, else an xdist worker's slice of those below the ephemeral
    range (the whole of it outside xdist), or of 61000-65535 (above Linux's default
    ephemeral range) on a machine whose ephemeral range starts too low to leave
    enough below it."""
    given = os.environ.get(PORTS_ENV)
    if given:
        first_port, stop = (int(p) for p in given.split("-"))
        return range(first_port, stop)
    low = _ephemeral_low()
    if low - _FIRST_PORT < 4000:
        low, first = 65536, 61000
    else:
        first = _FIRST_PORT
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    slot = int(worker.removeprefix("gw")) + 1 if worker.startswith("gw") else 0
    span = (low - first) // (workers + 1)
    return range(first + slot * span, first + (slot + 1) * span)


def split_ports(ports: range, parts: int) -> list[range]:
    """``ports`` in ``parts`` slices that do not overlap, one per process run side by
    side (each goes in its :data:`PORTS_ENV`)."""
    span = len(ports) // parts
    return [
        range(ports.start + i * span, ports.start + (i + 1) * span)
        for i in range(parts)
    ]


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` consecutive ports free on ``host`` just now, from this process's
    :func:`worker_ports` (a cluster's nodes need their ports before they start, to name
    each other). Successive calls go on where the last one ended, so a process does not
    hand out a port again until it has gone round its whole range; the first call
    starts at random, so that two pytest runs side by side rarely meet."""
    global _cursor
    ports = worker_ports()
    with _lock:
        if _cursor is None:
            _cursor = secrets.randbelow(len(ports))
        for _ in range(len(ports)):
            first = ports.start + _cursor % len(ports)
            if first + count > ports.stop:
                _cursor = 0
                continue
            run = range(first, first + count)
            taken = next((p for p in run if not _bindable(host, p)), None)
            if taken is None:
                _cursor = run.stop - ports.start
                return list(run)
            _cursor = taken + 1 - ports.start
    raise RuntimeError(f"no {count} consecutive free ports in {ports} on {host}")
