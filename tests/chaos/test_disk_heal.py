"""What a ``disk-full`` heal says of a broker it finds not running: the line it halted
with when the full disk halted it, else its log's last line, never an empty reason.

Chaos seed 303: node 0's start-up gave up at 17:07:25 ("no ZooKeeper answered at
zookeeper.connect", ZooKeeper's server killed) before a ``disk-full`` on it began at
214.6 s; the heal said "the broker had halted (), started again", as if the disk had
halted it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.disk import FILLER, Disks

REFUSED = (
    "minikafka broker: stopped by an I/O error: no ZooKeeper answered at "
    "zookeeper.connect=10.211.0.254:12639 within 6 s"
)
HALTED = (
    "2026-12-05 17:07:25,040 ERROR minikafka.broker: Encountered fatal fault: the "
    "metadata log dir /x/node-0 has failed"
)


class Stopped:
    """One broker, not running, whose log ends with ``tail``."""

    def __init__(self, tail: str) -> None:
        self.text = tail
        self.started: list[int] = []

    def pid(self, node: int) -> int | None:
        return None

    def tail(self, node: int, lines: int = 40) -> str:
        return self.text

    def start(self, node: int, *, wait: bool = True) -> None:
        self.started.append(node)


def _freed(tmp_path: Path, tail: str) -> tuple[str, list[int]]:
    cluster: Any = Stopped(tail)
    disks = Disks(cluster)
    disks.mounted[0] = tmp_path
    (tmp_path / FILLER).write_bytes(b"\0" * 10)
    said = disks.free(0)
    assert not (tmp_path / FILLER).exists()
    return said, cluster.started


def test_a_broker_down_for_another_reason_is_said_so(tmp_path: Path) -> None:
    tail = "2026-12-05 17:07:25,040 INFO kazoo.client: Zookeeper session closed\n"
    said, started = _freed(tmp_path, tail + REFUSED + "\n")
    assert started == [0]
    assert "()" not in said
    assert said == (
        "filler deleted; the broker was not running, not halted by the disk "
        f"(its log ends: {REFUSED}), started again"
    )


def test_a_broker_the_disk_halted_is_said_so(tmp_path: Path) -> None:
    said, started = _freed(tmp_path, HALTED + "\n")
    assert started == [0]
    assert said == f"filler deleted; the broker had halted ({HALTED}), started again"
