"""The replication chapter's figures. The first, from a run of ``LocalCluster``: the
partition's log end offsets, high watermark and ISR after every step, as
``diagrams.offsets_over_time`` draws them. The second, :func:`waterfall`: one ``acks=all``
produce on three broker processes, hop by hop, from the last full run of
``python -m bench replication_waterfall`` (its JSON in ``bench/results``).

A :class:`History` watches one partition of a cluster: it stands in for the cluster
(every attribute is the cluster's), and samples after each ``step`` (and so each step of
``run``), produce, kill and restart, noting kills and restarts as events. The chapter's
cells then run the cluster through it exactly as they would without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from diagrams import SVG, offsets_over_time, swimlanes

__all__ = ["History", "waterfall"]

WATERFALL = (
    # (the benchmark's hop, the lane it runs on, what kind of time it is, a label)
    ("request queue (leader)", "leader", "queued", ""),
    ("leader append", "leader", "Python", "append"),
    ("follower fetch answered", "leader", "Python", "fetch answer"),
    ("wire to the follower", "follower", "wire, wake-up", "to follower"),
    ("follower append", "follower", "Python", ""),
    ("follower's next fetch", "follower", "wire, wake-up", "next fetch"),
    ("HW move", "leader", "Python", ""),
    ("DelayedProduce completion", "leader", "Python", "HW, done"),
    ("response (leader)", "leader", "Python", "answer"),
)
"""The hops of one produce at the leader, in order, as the benchmark names them."""

_KINDS = {"Python": "#3b5b92", "wire, wake-up": "#f9d27a", "queued": "#e0e0e0"}


class History:
    def __init__(self, cluster: Any, tp: Any) -> None:
        self.cluster, self.tp = cluster, tp
        self.times: list[float] = []
        self.leos: dict[str, list[int | None]] = {
            self._name(b): [] for b in sorted(cluster.brokers)
        }
        self.hw: list[int | None] = []
        self.isr: list[set[str]] = []
        self.leader: list[str | None] = []
        self.events: list[tuple[float, str]] = []
        self.sample()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    @staticmethod
    def _name(broker: int) -> str:
        return f"broker {broker}"

    def step(self, seconds: float = 0.5) -> None:
        self.cluster.step(seconds)
        self.sample()

    def run(self, seconds: float, step: float = 0.5) -> None:
        for _ in range(round(seconds / step)):
            self.step(step)

    def produce(self, *args: Any, **kwargs: Any) -> Any:
        request = self.cluster.produce(*args, **kwargs)
        self.sample()
        return request

    def kill(self, broker_id: int) -> None:
        self.sample()
        self.cluster.kill(broker_id)
        self.events.append((self.cluster.now, f"broker {broker_id} killed"))
        self.sample()

    def restart(self, broker_id: int) -> None:
        self.cluster.restart(broker_id)
        self.events.append((self.cluster.now, f"broker {broker_id} restarts"))
        self.sample()

    def sample(self) -> None:
        """The partition as it is now (several samples may share a time: a kill's
        shows the partition just before and just after)."""
        self.times.append(self.cluster.now)
        leader = self.cluster.leader_of(self.tp)
        for b, broker in sorted(self.cluster.brokers.items()):
            partition = broker.manager.partitions.get(self.tp) if broker.alive else None
            self.leos[self._name(b)].append(
                None if partition is None else partition.log.log_end_offset
            )
        led = self.cluster.brokers.get(leader)
        partition = (
            led.manager.partitions.get(self.tp)
            if led is not None and led.alive
            else None
        )
        self.hw.append(None if partition is None else partition.log.high_watermark)
        self.leader.append(None if partition is None else self._name(leader))
        # With no leader alive, the ISR is still what the metadata says: any replica's.
        known = [partition] if partition is not None else []
        known += [
            b.manager.partitions[self.tp]
            for b in self.cluster.brokers.values()
            if b.alive and self.tp in b.manager.partitions
        ]
        self.isr.append({self._name(b) for b in known[0].isr} if known else set())

    def figure(self, title: str = "") -> SVG:
        return offsets_over_time(
            self.times,
            self.leos,
            self.hw,
            self.isr,
            self.leader,
            events=self.events,
            title=title,
        )


def waterfall(results: Path, rate: int) -> SVG:
    """The hops of one ``acks=all`` produce at ``rate`` records/s, each bar its median
    laid end to end from the moment the leader read the request (so the bars add up to
    a little more or less than the median total: medians do not add)."""
    document = json.loads(results.read_text())
    run = next(r for r in document["runs"] if r["rate"] == rate)
    spans, t = [], 0.0
    for hop, lane, kind, label in WATERFALL:
        took = float(run["hops"][hop]["p50_ms"])
        spans.append((lane, t, t + took, kind, label))
        t += took
    marks = [
        ("leader", 0.0, "Produce read"),
        ("leader", t, "answer written"),
        ("follower", spans[3][1], "fetch answer sent"),
    ]
    return swimlanes(
        ["leader", "follower"],
        spans,
        end=t * 1.05,
        marks=marks,
        colours=_KINDS,
        unit="ms",
        title=f"One acks=all produce at {rate:,} records/s, median of each hop",
    )
