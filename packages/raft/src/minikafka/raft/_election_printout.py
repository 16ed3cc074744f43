"""The election printout: a run's elections as lines a reader can follow, from the nodes'
trace events (the simulator's and the book's view of a run)."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.trace import TraceEvent

from ._events import LogTruncated, SnapshotInstalled, StateChanged, VoteAnswered


def format_timeline(
    records: Sequence[tuple[float, TraceEvent]], *, votes: bool = True
) -> str:
    """A run's elections as lines a reader can follow: state changes, votes (real ones;
    ``votes=False`` leaves them out), truncations and snapshot installs, by time."""
    lines = []
    for ts, event in sorted(records, key=lambda r: r[0]):
        if isinstance(event, StateChanged):
            leader = "" if event.leader_id < 0 else f", leader {event.leader_id}"
            waited = (
                f" after {event.leaderless_for * 1000:.0f} ms without one"
                if event.leaderless_for >= 0
                else ""
            )
            change = f"{event.old} -> {event.new} (epoch {event.epoch}{leader})"
            text = f"{change}: {event.reason}{waited}"
        elif isinstance(event, VoteAnswered) and votes and not event.pre_vote:
            answer = "grants" if event.granted else "refuses"
            text = (
                f"{answer} its vote to {event.candidate_id} for epoch "
                f"{event.candidate_epoch}: {event.reason}"
            )
        elif isinstance(event, LogTruncated):
            text = f"truncates its log from {event.old_end_offset} to {event.new_end_offset}"
        elif isinstance(event, SnapshotInstalled):
            text = f"installs the leader's snapshot up to {event.end_offset}"
        else:
            continue
        node = getattr(event, "node_id", "?")
        lines.append(f"{ts:8.3f}s  node {node}  {text}")
    return "\n".join(lines)
