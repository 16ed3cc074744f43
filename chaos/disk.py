"""A full disk on one broker (``disk-full``): its log dir on a small tmpfs of its own,
filled to the brim by a filler file for the fault's duration, then freed.

Before the cluster starts, each broker a schedule's ``disk-full`` faults name gets a
tmpfs (:data:`SIZE`) mounted over its directory (``node-N/``: its ``log.dirs``, and in
KRaft mode its metadata log too, as ``metadata.log.dir`` defaults to the first log dir);
what the layout wrote there (``meta.properties``) is copied onto it. The fault writes
a filler file until the kernel answers ENOSPC, then tops it off a page and a byte at a
time, so not one more byte fits. Its heal deletes the filler; a broker that halted
meanwhile (a broker whose metadata log cannot be written ends, as Kafka's does) is
started again on its data. The mounts are removed when the run ends, what they held
copied back to the run's directory.

What the broker does on a full disk (the log chapter's "When the disk refuses"): a
write the disk refuses with ENOSPC is undone (the log left byte for byte as it was),
the produce is answered KAFKA_STORAGE_ERROR and nothing is acknowledged; a follower's
append likewise, so it stops catching up and leaves the ISR after
``replica.lag.time.max.ms``; a KRaft broker's metadata log refused a write halts the
broker (KIP-858: its metadata log dir has failed).

Mounting needs root; :func:`unavailable` says why it cannot be done here, and the
runner then refuses ``disk-full`` rather than pretend.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from minikafka.broker.testing import ProcessCluster

SIZE = "64m"
"""Each broker's tmpfs: room for a run's records (a few MB), its metadata log and its
index files, and a filler that is written in well under a second."""
FILLER = "chaos-filler"
HALTED = "has failed"
"""What the line a broker halted with says (``FatalFaultError``: "the metadata log dir
... has failed")."""


def unavailable() -> str | None:
    """Why a tmpfs cannot be mounted here, or None if it can."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount(8) here"
    return None


class Disks:
    """The small disks of a run's brokers: mounted by :meth:`mount`, filled, freed,
    and unmounted by :meth:`close`."""

    def __init__(self, cluster: ProcessCluster) -> None:
        self.cluster = cluster
        self.mounted: dict[int, Path] = {}

    @classmethod
    def mount(cls, cluster: ProcessCluster, nodes: Iterable[int]) -> Disks:
        """A tmpfs over each of ``nodes``' directories, holding what was there (before
        the nodes start)."""
        disks = cls(cluster)
        try:
            for node in sorted(set(nodes)):
                disks._mount(node)
        except BaseException:
            disks.close()
            raise
        return disks

    def _mount(self, node: int) -> None:
        where = self.cluster.node_dir(node)
        where.mkdir(exist_ok=True)  # ZooKeeper mode's brokers make theirs at start
        aside = where.with_name(f"{where.name}.before-tmpfs")
        where.rename(aside)
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            where.rmdir()
            aside.rename(where)
            raise RuntimeError(f"mount -t tmpfs on {where}: {done.stderr.strip()}")
        self.mounted[node] = where
        shutil.copytree(aside, where, dirs_exist_ok=True)
        shutil.rmtree(aside)

    def fill(self, node: int) -> str:
        """``node``'s disk filled until not one more byte fits; what was done."""
        where = self.mounted[node]
        filler = where / FILLER
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
                chunk = b"\0" * size
                with contextlib.suppress(OSError):  # ENOSPC: the next, smaller size
                    while os.write(fd, chunk):
                        pass
        finally:
            os.close(fd)
        free = shutil.disk_usage(where).free
        size_mib = filler.stat().st_size / (1 << 20)
        return (
            f"{where} ({SIZE} tmpfs) filled: {size_mib:.1f} MiB filler, {free} B free"
        )

    def free(self, node: int) -> str:
        """The filler deleted; ``node`` started again if it is not running, and the
        line it halted with (or, when it ended for another reason, its log's last
        line: a ZooKeeper-mode broker whose start-up gave up for want of ZooKeeper
        was down before the disk filled, chaos seed 303)."""
        (self.mounted[node] / FILLER).unlink(missing_ok=True)
        if self.cluster.pid(node) is not None:
            return "filler deleted; the broker stayed up"
        said = halted_line(self.cluster, node)
        ended = "" if said else last_line(self.cluster, node)
        self.cluster.start(node, wait=False)
        if said:
            return f"filler deleted; the broker had halted ({said}), started again"
        return (
            f"filler deleted; the broker was not running, not halted by the disk "
            f"(its log ends: {ended or 'nothing'}), started again"
        )

    def close(self) -> None:
        """Every mount removed once its nodes have stopped, what it held (less the
        filler) copied back to the directory underneath, so the run keeps each node's
        logs for the checks that read them."""
        for where in self.mounted.values():
            (where / FILLER).unlink(missing_ok=True)
            kept = where.with_name(f"{where.name}.from-tmpfs")
            shutil.copytree(where, kept, dirs_exist_ok=True)
            subprocess.run(["umount", "-l", str(where)], capture_output=True)
            shutil.copytree(kept, where, dirs_exist_ok=True)
            shutil.rmtree(kept)
        self.mounted.clear()


def halted_line(cluster: ProcessCluster, node: int) -> str:
    """The last line of ``node``'s log saying its disk failed it, or ``""``."""
    lines = [line for line in cluster.tail(node, 40).splitlines() if HALTED in line]
    return lines[-1].strip() if lines else ""


def last_line(cluster: ProcessCluster, node: int) -> str:
    """The last line of ``node``'s log that says something, or ``""``."""
    lines = [line.strip() for line in cluster.tail(node, 40).splitlines()]
    said = [line for line in lines if line]
    return said[-1] if said else ""
