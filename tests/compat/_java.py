"""Kafka's Java client (kafka-clients 4.1.1, what ``reference/pom.xml`` pins) for the tests.

``java/JavaClient.java`` is compiled once per content (:func:`reference.java.compile_sources`,
cached under ``reference/.cache/java``) and runs a whole scenario per JVM: :func:`scenario`
runs a list of steps against a bootstrap and returns what each printed.
:class:`JavaNumberedProducer` is the Java producer of the leader-kill failover test: a JVM
that writes numbered records to its partitions until told to stop, reporting each
acknowledgement as it comes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reference.java import ScenarioRun, compile_sources, run_scenario, scenario_command

SOURCES = (Path(__file__).resolve().parent / "java" / "JavaClient.java",)
MAIN = "JavaClient"
STEP_TIMEOUT = 120.0  # seconds a whole scenario may take on a loaded machine

Step = Mapping[str, Any]


@functools.cache
def classes() -> Path:
    """The compiled driver (javac runs at most once per session, and once per content)."""
    return compile_sources(SOURCES)


def scenario(
    bootstrap: str,
    steps: Sequence[Step],
    *,
    request_log: Path | None = None,
    timeout: float = STEP_TIMEOUT,
) -> ScenarioRun:
    """Runs ``steps`` in one JVM; fails if the JVM itself failed (a step's error is
    in its line, for the test to expect or refuse)."""
    return run_scenario(
        MAIN,
        classes(),
        {"bootstrap": bootstrap, "steps": list(steps)},
        timeout=timeout,
        request_log=request_log,
    ).check()


def records(prefix: str, count: int, keyed: bool = True) -> list[dict[str, Any]]:
    """``count`` records: key ``<prefix>-k<i>`` (or none), value ``<prefix>-v<i>``."""
    return [
        {"key": f"{prefix}-k{i}" if keyed else None, "value": f"{prefix}-v{i}"}
        for i in range(count)
    ]


class JavaNumberedProducer:
    """The Java client's idempotent ``acks=all`` producer writing 0, 1, 2, ... to each
    of ``partitions`` until ``stop`` is set; keeps what was acknowledged, per partition,
    in acknowledgement order, and the errors the callbacks reported."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int]) -> None:
        self.partitions = tuple(partitions)
        self.acked: dict[int, list[int]] = {p: [] for p in self.partitions}
        self.errors: list[object] = []
        self.stop = threading.Event()
        self._directory = Path(tempfile.mkdtemp(prefix="java-producer-"))
        self._steps = [
            {
                "op": "produce_numbers",
                "topic": topic,
                "partitions": list(self.partitions),
                "stop_file": str(self._directory / "stop"),
                "config": {
                    "enable.idempotence": "true",  # acks=all, retries, in order
                    "acks": "all",
                    "linger.ms": "5",
                    "delivery.timeout.ms": "120000",
                    "metadata.max.age.ms": "1000",
                },
            }
        ]
        self._bootstrap = bootstrap
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        command = scenario_command(MAIN, classes())
        with subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as child:
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.write(
                json.dumps({"bootstrap": self._bootstrap, "steps": self._steps})
            )
            child.stdin.close()
            stopper = threading.Thread(target=self._stop_when_told, daemon=True)
            stopper.start()
            for line in child.stdout:
                self._read(line)
            if child.wait() != 0:
                self.errors.append(f"the Java producer exited {child.returncode}")
        shutil.rmtree(self._directory, ignore_errors=True)

    def _stop_when_told(self) -> None:
        self.stop.wait()
        # The JVM may have ended already (and its directory gone): nothing to stop then.
        with contextlib.suppress(FileNotFoundError):
            (self._directory / "stop").touch()

    def _read(self, line: str) -> None:
        if not line.startswith("{"):
            return
        message = json.loads(line)
        if "acked" in message:
            for partition, number in message["acked"]:
                self.acked[partition].append(number)
        elif "error" in message:
            self.errors.append(message["error"])
        elif "result" in message:
            self.errors.extend(message["result"]["errors"])

    def count(self) -> int:
        return sum(len(v) for v in self.acked.values())
