"""A rebalance under each group protocol, from the group simulator (virtual time).

``python -m minikafka.coordination simulate`` runs the real GroupCoordinator and the
client's member cores on a virtual clock; here it runs groups of 3, 10 and 50 members
(twice as many partitions) through two events, a member's arrival and then a member's
death (a crash right after a heartbeat), under the classic protocol (eager ``range``
and cooperative ``cooperative-sticky``) and the consumer protocol (KIP-848, the
``uniform`` server assignor), with Kafka's defaults (``session.timeout.ms`` 45 s,
heartbeat every 3 s). For each event: the time from it to a stable assignment (every
live member owns its partitions of the settled assignment), and the partition-
unavailability seconds (the sum over partitions of the time each had no owner). Virtual
time: the figures depend only on the seeds, not on the machine or its load; the median
over the seeds is reported (a seed draws the members' poll times, 100-1000 ms).
"""

from __future__ import annotations

import statistics
import time

import attrs

from minikafka.coordination.simulate._simulate import simulate
from minikafka.coordination.simulate._simulate_values import (
    SimulationConfig,
    parse_events,
)
from minikafka.trace import NullTracer

from ._common import Report, bar_chart_svg, command_line, markdown_table, now_utc

NAME = "group_rebalance"
SIZES = (3, 10, 50)
QUICK_SIZES = (3, 10)
SEEDS = 5
VARIANTS = (
    ("classic, eager (range)", "classic", "range"),
    ("classic, cooperative-sticky", "classic", "cooperative-sticky"),
    ("consumer (KIP-848, uniform)", "consumer", "range"),
)


@attrs.frozen
class Outcome:
    protocol: str
    members: int
    event: str  # "arrival" or "death"
    to_stable_s: float  # median over the seeds
    unavailable_partition_s: float  # median over the seeds


def _measure(
    label: str, protocol: str, assignor: str, members: int, seeds: int
) -> list[Outcome]:
    stable: dict[str, list[float]] = {"arrival": [], "death": []}
    unavailable: dict[str, list[float]] = {"arrival": [], "death": []}
    for seed in range(seeds):
        config = SimulationConfig(
            members=members,
            partitions=2 * members,
            assignor=assignor,
            protocol=protocol,
            events=parse_events(f"join:{members + 1},crash:1"),
            seed=seed,
        )
        result = simulate(config, NullTracer())
        arrival, death = result.rebalances[-2:]
        for event, r in (("arrival", arrival), ("death", death)):
            stable[event].append((r.end_ms - r.trigger_ms) / 1000)
            unavailable[event].append(
                sum(ms for _, ms in r.paused_partitions_ms) / 1000
            )
    return [
        Outcome(
            label,
            members,
            event,
            round(statistics.median(stable[event]), 3),
            round(statistics.median(unavailable[event]), 3),
        )
        for event in ("arrival", "death")
    ]


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    sizes, seeds = (QUICK_SIZES, 1) if quick else (SIZES, SEEDS)
    outcomes = [
        outcome
        for members in sizes
        for label, protocol, assignor in VARIANTS
        for outcome in _measure(label, protocol, assignor, members, seeds)
    ]
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": {"sizes": list(sizes), "seeds": seeds, "partitions": "2 x members"},
        "started_at": started,
        "duration_s": round(time.perf_counter() - clock, 2),
        "units": {
            "to_stable_s": "virtual seconds from the event to a stable assignment",
            "unavailable_partition_s": "virtual partition-seconds without an owner",
        },
        "results": [attrs.asdict(o) for o in outcomes],
    }
    return Report(NAME, document, _table(outcomes), _chart(outcomes))


def _table(outcomes: list[Outcome]) -> str:
    rows = [
        [
            o.protocol,
            str(o.members),
            o.event,
            f"{o.to_stable_s:,.2f}",
            f"{o.unavailable_partition_s:,.2f}",
        ]
        for o in outcomes
    ]
    header = ["protocol", "members", "event", "to stable s", "unavailable partition·s"]
    return markdown_table(header, rows)


def _chart(outcomes: list[Outcome]) -> str:
    groups = [
        (
            f"{members} members, arrival",
            [
                (o.protocol, o.unavailable_partition_s)
                for o in outcomes
                if o.members == members and o.event == "arrival"
            ],
        )
        for members in dict.fromkeys(o.members for o in outcomes)
    ]
    title = "Partition-seconds without an owner after a member arrives (virtual time)"
    return bar_chart_svg(title, "partition·s", groups)
