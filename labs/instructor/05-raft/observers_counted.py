"""The Raft chapter's challenge 3, worked: a leader that counts the observers' fetch
offsets toward the high watermark, caught by the simulator and shrunk to one fault.

Its code is lab 5's leader commitment with one rule broken, so it lives with the
instructors' copy; the book's instructor edition shows it (``book/answers.md``). Run it
from ``book/``: ``uv run --all-packages python ../labs/instructor/05-raft/observers_counted.py``.
"""

# ruff: noqa
from minikafka.raft import RaftNode
from minikafka.raft._events import HighWatermarkAdvanced
from minikafka.raft.simulation import describe, random_scenario
from minikafka.raft.simulation import Simulation, shrink
from minikafka.raft.simulation import format_timeline
from minikafka.trace.testing import RecordingTracer


class CountsObservers(RaftNode):
    """Broken: the observers' fetch offsets count toward the high watermark."""

    def _maybe_advance_leader_hw(self, now):
        leader = self._leader
        offsets = [
            self.log.flushed_end_offset if v == self.node_id else p.end_offset
            for v, p in leader.voters.items()
        ]
        offsets += [p.end_offset for p in leader.observers.values()]
        majority_has = sorted(offsets, reverse=True)[len(offsets) // 2]
        if self._may_commit(majority_has, leader):
            if self._advance_hw(majority_has, now):
                self._wake_parked(now)


broken = [
    Simulation(random_scenario(s, 3, 2), s, node_factory=CountsObservers).run()
    for s in range(120)
]
failed = [r for r in broken if not r.ok]
first = failed[0]
print(
    f"3 voters, 2 observers: {len(failed)} of 120 seeds fail;",
    f"the first is seed {first.seed}",
)
print("  ", first.violation)
seed = first.seed


def fails(candidate):
    return not Simulation(candidate, seed, node_factory=CountsObservers).run().ok


smallest = shrink(first.scenario, seed, fails)
print(describe(smallest))
print("the real rule on this schedule:", Simulation(smallest, seed).run().ok)

tracers = {}
run = Simulation(
    smallest,
    seed,
    node_factory=CountsObservers,
    tracer_for=lambda n: tracers.setdefault(n, RecordingTracer(node=n)),
)
print("broken:", run.run().violation)
cut = smallest.faults[0].at
records = [r for t in tracers.values() for r in t.records]
for node in smallest.voter_ids:
    hws = [
        (t, e.new)
        for t, e in records
        if isinstance(e, HighWatermarkAdvanced) and e.node_id == node
    ]
    before = max((hw for t, hw in hws if t <= cut), default=0)
    print(
        f"voter {node}: high watermark {before} at the cut, "
        f"{max(hw for _, hw in hws)} at most"
    )
lines = format_timeline(records).splitlines()
print("\n".join(line for line in lines if float(line.split("s")[0]) > cut))

alone = Simulation(random_scenario(0, 1, 1), 0, node_factory=CountsObservers).run()
print("1 voter, 1 observer:", alone.violation)
