"""Lab 18's data: one membership change, under the classic protocol and under KIP-848,
as the group coordinator traced it (ARCHITECTURE.md, "Traces and labs").

``run(out, seed)`` writes ``out/traces`` (``group.member_assignment`` and the other group
events, node 1) and ``out/produced.jsonl`` (the topic's records: ``partition``,
``offset``, ``ts``), and ``out/truth.json``: the lab's own reference answers, computed
here in plain Python from the same events.

Two groups read the six partitions of ``orders``. Each starts with two members; a third
joins once they have settled; then the second one crashes (it stops, telling nobody,
and is removed when its session ends, Kafka's default 45 s).

- ``classic-group``: the classic protocol with the eager ``range`` assignor, run by the
  group simulator (``minikafka.coordination.simulate``): JoinGroup, SyncGroup, Heartbeat.
- ``consumer-group``: KIP-848's ConsumerGroupHeartbeat with the ``uniform`` server-side
  assignor, driven here: every member heartbeats every
  ``group.consumer.heartbeat.interval.ms``, takes the partitions it is given at once,
  and gives back the ones it must revoke once it has finished the batch in hand (a
  seeded 100-1000 ms, the simulator's range), saying so in a heartbeat at once.

Both run the coordinator's real code (``GroupCoordinator``, the core the broker runs)
on virtual time from 0, so a run takes a second and every run of a seed is the same.
A producer writes one record to each partition every 100 ms for the whole run.

``python scenario.py OUT [--seed N]`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path
from typing import Any

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination import SimulationConfig, parse_events, simulate
from minikafka.coordination.group._config import GroupConfig
from minikafka.coordination.group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from minikafka.coordination.group._coordinator import GroupCoordinator
from minikafka.coordination.testing import InMemoryOffsetsTopic, serving_coordinator
from minikafka.trace import JsonLinesTracer, Tracer, read_trace

TOPIC, PARTITIONS = "orders", 6
CLASSIC, CONSUMER = "classic-group", "consumer-group"
SESSION_MS = 45_000
"""Both protocols' default session: ``session.timeout.ms``, and
``group.consumer.session.timeout.ms``."""
JOIN_AT, CRASH_AT = 20.0, 50.0
"""When the third member joins the consumer group, and when the second one crashes."""
END = 130.0
"""The run's end, on the virtual clock: every change has settled well before."""
PRODUCE_EVERY = 0.1
PROCESSING = (0.1, 1.0)
STEP = 0.01
"""The consumer group's clock ticks in 10 ms."""


@attrs.define
class _Member:
    """A KIP-848 member as librdkafka plays it, reduced to what moves partitions."""

    name: str
    processing: float
    epoch: int = 0
    owned: frozenset[TopicPartition] = frozenset()
    revoking: frozenset[TopicPartition] = frozenset()
    revoked_at: float = 0.0
    next_beat: float = 0.0
    alive: bool = True


@attrs.define
class _ConsumerGroup:
    coordinator: GroupCoordinator
    log: InMemoryOffsetsTopic = attrs.field(factory=InMemoryOffsetsTopic)
    members: dict[str, _Member] = attrs.field(factory=dict)
    requests: int = 0

    def beat(self, member: _Member, now: float) -> None:
        self.requests += 1
        request = ConsumerGroupHeartbeatRequest(
            CONSUMER,
            member.name,
            member.epoch,
            rebalance_timeout_ms=300_000,
            subscribed_topic_names=(TOPIC,),
            server_assignor="uniform",
            owned=member.owned,
            topics={TOPIC: PARTITIONS},
            topic_ids={TOPIC: uuid.uuid5(uuid.NAMESPACE_URL, TOPIC)},
            client_id=member.name,
        )
        result = self.coordinator.consumer_group_heartbeat(self.requests, request, now)
        replies = self.log.take(result) + self.log.flush(self.coordinator, now)
        (reply,) = [r for r in replies if r.request_id == self.requests]
        response = reply.response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        assert not response.error, response
        member.epoch = response.member_epoch
        interval = response.heartbeat_interval_ms / 1000
        member.next_beat = now + interval
        if response.assignment is not None:
            member.owned |= response.assignment  # new partitions: taken at once
            going = member.owned - response.assignment
            if going and not member.revoking:
                # given back once the batch in hand is done, and said so at once
                member.revoking, member.revoked_at = going, now + member.processing

    def tick(self, now: float) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is not None and deadline <= now:
            result = self.coordinator.on_timer(now)
            self.log.take(result)
            self.log.flush(self.coordinator, now)
        for member in self.members.values():
            if not member.alive:
                continue
            if member.revoking and now >= member.revoked_at:
                member.owned -= member.revoking
                member.revoking = frozenset()
                self.beat(member, now)
            elif now >= member.next_beat:
                self.beat(member, now)


def _consumer_group(tracer: Tracer, seed: int) -> None:
    rng = random.Random(seed)
    config = GroupConfig(group_consumer_session_timeout_ms=SESSION_MS)
    group = _ConsumerGroup(serving_coordinator(config, rng, tracer=tracer))

    def add(name: str) -> None:
        group.members[name] = _Member(name, rng.uniform(*PROCESSING))

    add("consumer-1")
    add("consumer-2")
    for step in range(round(END / STEP) + 1):
        now = round(step * STEP, 6)
        if now == JOIN_AT:
            add("consumer-3")
        if now == CRASH_AT:
            group.members["consumer-2"].alive = False  # wherever it was
        group.tick(now)


def _classic_group(tracer: Tracer, seed: int) -> None:
    config = SimulationConfig(
        members=2,
        partitions=PARTITIONS,
        assignor="range",
        events=parse_events("join:3,crash:2"),
        seed=seed,
        topic=TOPIC,
        session_timeout_ms=SESSION_MS,
        group_id=CLASSIC,
    )
    simulate(config, tracer)


def run(out: Path, seed: int = 0) -> Path:
    """Write the traces, the produced records and truth.json under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "traces"
    with JsonLinesTracer.open(traces, node=1, flush_interval=None) as tracer:
        _classic_group(tracer, seed)
        _consumer_group(tracer, seed)
    with (out / "produced.jsonl").open("w") as file:
        for n in range(round(END / PRODUCE_EVERY)):
            for partition in range(PARTITIONS):
                line = {"partition": partition, "offset": n, "ts": n * PRODUCE_EVERY}
                file.write(json.dumps(line) + "\n")
    events = [r for r in read_trace(traces) if r["event"] == "member_assignment"]
    produced = [json.loads(line) for line in (out / "produced.jsonl").open()]
    gaps = unowned(events)
    document = {"gaps": gaps, "delayed": delayed(gaps, produced)}
    (out / "truth.json").write_text(json.dumps(document, indent=1) + "\n")
    return out


# --- the reference, in plain Python ---------------------------------------------------------


def unowned(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stretch a partition had no owner, after its first owner: rows of the first
    exercise's columns, in its order."""
    gaps = []
    groups = sorted({str(e["group_type"]) for e in events})
    for group_type in groups:
        mine = sorted(
            (e for e in events if e["group_type"] == group_type),
            key=lambda e: float(e["ts"]),
        )
        owned: dict[str, set[str]] = {}
        since: dict[str, float | None] = {}  # partition -> unowned since (None: owned)
        for event in mine:
            owned[event["member_id"]] = {
                *event["assigned_partitions"],
                *event["partitions_pending_revocation"],
            }
            now = float(event["ts"])
            held = set().union(*owned.values())
            for partition in sorted(held | set(since)):
                was = since.get(partition)
                if partition in held and was is not None:
                    if now > was:  # let go and taken at the same moment: no gap
                        gaps.append(_gap(group_type, partition, was, now))
                    since[partition] = None
                elif partition not in held and partition in since and was is None:
                    since[partition] = now
                elif partition in held:
                    since[partition] = None
    return sorted(gaps, key=lambda g: (g["group_type"], g["partition"], g["start_ts"]))


def _gap(group_type: str, name: str, start: float, end: float) -> dict[str, Any]:
    partition = int(name.rpartition("-")[2])
    return {
        "group_type": group_type,
        "partition": partition,
        "start_ts": start,
        "end_ts": end,
    }


def delayed(
    gaps: list[dict[str, Any]], produced: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per group type and partition: the milliseconds unowned and the records produced
    meanwhile (rows of the second exercise's columns, in its order)."""
    rows = []
    for group_type in sorted({g["group_type"] for g in gaps}):
        for partition in range(PARTITIONS):
            mine = [
                g
                for g in gaps
                if g["group_type"] == group_type and g["partition"] == partition
            ]
            waiting = [
                r
                for r in produced
                if r["partition"] == partition
                and any(g["start_ts"] <= r["ts"] < g["end_ts"] for g in mine)
            ]
            unowned_ms = sum((g["end_ts"] - g["start_ts"]) * 1000 for g in mine)
            rows.append(
                {
                    "group_type": group_type,
                    "partition": partition,
                    "gaps": len(mine),
                    "unowned_ms": round(unowned_ms, 3),
                    "delayed_records": len(waiting),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(run(args.out, args.seed))


if __name__ == "__main__":
    main()
