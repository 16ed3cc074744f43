"""The replication chapter's figure, from a run of ``LocalCluster``: the partition's log
end offsets, high watermark and ISR after every step, as ``diagrams.offsets_over_time``
draws them.

A :class:`History` watches one partition of a cluster: it stands in for the cluster
(every attribute is the cluster's), and samples after each ``step`` (and so each step of
``run``), produce, kill and restart, noting kills and restarts as events. The chapter's
cells then run the cluster through it exactly as they would without it.
"""

from __future__ import annotations

from typing import Any

from diagrams import SVG, offsets_over_time

__all__ = ["History"]


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
