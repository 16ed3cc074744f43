"""A group member of Kafka's Java client (kafka-clients 4.1.1) in a JVM of its own.

``java/JavaGroupMember.java`` is one consumer subscribed to a topic that commits every
batch it reads, synchronously, before it polls again, and reports each rebalance
callback, batch and commit as a JSON line stamped with ``CLOCK_MONOTONIC`` (the clock of
:func:`time.monotonic`). :class:`JavaMember` runs it and keeps what it reported:
:meth:`JavaMember.kill` is a member lost as a machine is lost (SIGKILL: no leave, no
last heartbeat), :meth:`JavaMember.stop` one that leaves, and :meth:`JavaMember.describe`
asks the member's Admin client for the group (ConsumerGroupDescribe for a consumer
group) and its committed offsets.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reference.java import compile_sources, scenario_command

SOURCES = (Path(__file__).resolve().parent / "java" / "JavaGroupMember.java",)
MAIN = "JavaGroupMember"
WAIT = 60.0  # seconds: a session timeout and a rebalance, on a busy host
STARTED = 2 * WAIT  # and a JVM's start first: several JVMs at once on two busy cores

Record = tuple[int, int]  # partition, offset
Span = tuple[str, int, float, float]  # member, partition, from, to


@functools.cache
def classes() -> Path:
    """The compiled member (javac at most once per content)."""
    return compile_sources(SOURCES)


class JavaMember:
    """One member process and what it said, read by a thread as it comes.

    ``changed`` is shared by the members of a group so that a test can wait on all of
    them at once (:meth:`wait`)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        name: str,
        config: Mapping[str, str],
        changed: threading.Condition,
        log_dir: Path,
        request_log: Path | None = None,
    ) -> None:
        self.name = name
        self.changed = changed
        self.owned: set[int] = set()
        self.spans: list[tuple[int, float, float]] = []
        """(partition, from, to): each stretch the member owned a partition."""
        self.read: list[Record] = []
        self.uncommitted: set[Record] = set()
        """Records of batches whose commit failed or never came (a kill)."""
        self.outside: list[Record] = []
        """Records the client handed out from partitions the member did not own."""
        self.epochs: list[int] = []
        self.failed_commits: list[str] = []
        """What each failed commit threw."""
        self.errors: list[str] = []
        self.described: list[Mapping[str, Any]] = []
        self.ended_at: float | None = None
        self._since: dict[int, float] = {}
        self._pending: list[Record] = []
        self._warned_until: int | None = None
        self.stderr = log_dir / f"{name}.stderr"
        """The client's warnings and errors (its log4j WARN level and above)."""
        command = scenario_command(MAIN, classes(), request_log=request_log)
        with self.stderr.open("w") as stderr:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        setup = {"bootstrap": bootstrap, "topic": topic, "name": name}
        self._send(json.dumps({**setup, "config": dict(config)}))
        self._reader = threading.Thread(target=self._read, daemon=True, name=name)
        self._reader.start()

    def _send(self, line: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("{"):
                with self.changed:
                    self._take(json.loads(line))
                    self.changed.notify_all()
        code = self._process.wait()
        with self.changed:
            if code not in (0, -9) and not self.errors:
                self.errors.append(f"{self.name}: the JVM exited {code}")
            self._end(time.monotonic())
            self.changed.notify_all()

    def _take(self, event: Mapping[str, Any]) -> None:
        kind, at = event["event"], float(event["at"])
        if kind == "assigned":
            for p in event["partitions"]:
                self.owned.add(p)
                self._since[p] = at
            self.epochs.append(int(event["epoch"]))
        elif kind in ("revoked", "lost"):
            for p in event["partitions"]:
                self.owned.discard(p)
                self.spans.append((p, self._since.pop(p, at), at))
            self.epochs.append(int(event["epoch"]))
        elif kind == "read":
            self._pending = [(p, o) for p, o in event["records"]]
            self.read += self._pending
            self.outside += [(p, o) for p, o in event["outside"]]
        elif kind == "committed":
            if not event["ok"]:
                self.uncommitted.update(self._pending)
                self.failed_commits.append(event["error"])
            self._pending = []
        elif kind == "described":
            if "error" in event:
                self.errors.append(f"{self.name}: describe {event['error']}")
            self.described.append(event.get("group", {}))
        elif kind == "failed":
            self.errors.append(f"{self.name}: {event['error']}")

    def _end(self, at: float) -> None:
        """The process is gone: what it owned it owned until ``at``, and a batch it
        read and did not commit is anyone's to read again."""
        if self.ended_at is None:
            self.ended_at = at
            for p, since in self._since.items():
                self.spans.append((p, since, at))
            self._since.clear()
            self.owned.clear()
            self.uncommitted.update(self._pending)
            self._pending = []

    def describe(self) -> Mapping[str, Any]:
        """The group as the member's Admin client describes it, with its committed
        offsets (``{"type", "state", "members": [...], "committed": {...}}``)."""
        with self.changed:
            asked = len(self.described)
            self._send("describe")
            if not self.changed.wait_for(
                lambda: len(self.described) > asked or self.ended_at is not None, WAIT
            ):
                raise AssertionError(f"{self.name}: no answer to describe in {WAIT}s")
            if len(self.described) == asked:
                raise AssertionError(f"{self.name} ended: {self.errors}")
            return self.described[asked]

    def kill(self) -> None:
        """SIGKILL: the member is lost with no word to the coordinator."""
        self._process.kill()
        self._process.wait(WAIT)
        killed_at = time.monotonic()
        self._reader.join(WAIT)  # everything it printed has been taken
        with self.changed:
            self._end(killed_at)

    def stop(self) -> None:
        """Tells the consumer to close (it leaves the group; the JVM then ends)."""
        if self._process.poll() is None and self._warned_until is None:
            self._warned_until = self.stderr.stat().st_size
            with contextlib.suppress(BrokenPipeError):
                self._send("stop")

    def join(self) -> None:
        """Waits for the JVM to end (SIGKILL if it does not within :data:`WAIT`)."""
        try:
            self._process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(WAIT)
            self.errors.append(f"{self.name}: did not close within {WAIT}s")
        self._reader.join(WAIT)

    def warnings(self) -> list[str]:
        """What the client logged at WARN or above while it was a member (the close
        that :meth:`stop` asks for is left out: a member that closes while partitions
        are on their way to it logs that their callback could not run)."""
        text = self.stderr.read_bytes()
        if self._warned_until is not None:
            text = text[: self._warned_until]
        return [
            line
            for line in text.decode(errors="replace").splitlines()
            if " WARN " in line or " ERROR " in line
        ]

    def member_spans(self) -> list[Span]:
        with self.changed:
            return [(self.name, p, a, b) for p, a, b in self.spans]


def wait(
    members: list[JavaMember],
    condition: Callable[[], bool],
    what: str,
    timeout: float = WAIT,
) -> None:
    """Until ``condition`` holds (checked under the members' condition at each event
    they report); an AssertionError saying what each owned, read and met if not."""
    changed = members[0].changed
    deadline = time.monotonic() + timeout
    with changed:
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                seen = {
                    m.name: (sorted(m.owned), len(m.read), m.errors) for m in members
                }
                raise AssertionError(f"{what}: not within {timeout}s; {seen}")
            # woken by each event, and at least every half second for conditions that
            # depend on something else (a producer's count)
            changed.wait(min(left, 0.5))
