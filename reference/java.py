"""Small Java programs of the tests, compiled against Kafka's class path and run.

:func:`compile_sources` runs ``javac`` once per content of the sources: the classes go to
``reference/.cache/java/<hash>``, a directory named by the hash of the sources (their
names and bytes) and of the Kafka release, so a test session compiles a program once and
later sessions not at all. Compiling into a fresh directory and renaming it into place
keeps two sessions that compile at once from seeing half a directory.

:func:`run_scenario` runs a compiled program's main class with
:func:`reference.kafka.java_command` and the classes on the class path, feeds it a JSON
scenario on stdin and returns the JSON lines it printed (tests/compat/java/JavaClient.java
speaks that way). ``request_log`` turns on the client's DEBUG log of the requests it sends
(``org.apache.kafka.clients.NetworkClient``) into a file: :func:`requests_sent` reads the
API and version of each request from it, and :func:`negotiated` the versions the client
and a broker agreed on (its "Recorded API versions" line), which is how a test finds out
what the client really asks for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from reference.kafka import (
    LIBS,
    TOOLS_LOG,
    ReferenceMissing,
    classpath,
    java_command,
    kafka_version,
)

CACHE = LIBS.parent / "java"

# The client's own log: warnings to stderr, as a tool's; with a request log,
# NetworkClient's DEBUG lines (one per request sent, one per broker's ApiVersions) to a
# file.
_LOG = TOOLS_LOG
_REQUEST_LOG = """\
appender.requests.type = File
appender.requests.name = REQUESTS
appender.requests.fileName = {path}
appender.requests.layout.type = PatternLayout
appender.requests.layout.pattern = %m%n
logger.network.name = org.apache.kafka.clients.NetworkClient
logger.network.level = DEBUG
logger.network.additivity = false
logger.network.appenderRef.requests.ref = REQUESTS
"""


class JavaFailed(RuntimeError):
    """javac, or a program, failed; carries what it printed."""


def javac() -> str:
    """The ``javac`` command (a JDK 17 or newer, as Kafka 4.x needs)."""
    path = shutil.which("javac")
    if path is None:
        raise ReferenceMissing(
            "no javac on PATH: install a JDK (openjdk-17-jdk-headless)"
        )
    return path


def sources_hash(sources: Sequence[Path]) -> str:
    """The hash that names the classes of ``sources``: their names, bytes and Kafka's
    release (a program compiled against another release is compiled again)."""
    digest = hashlib.sha256(kafka_version().encode())
    for source in sorted(sources, key=lambda p: p.name):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def compile_sources(sources: Sequence[Path], timeout: float = 180.0) -> Path:
    """The directory of the classes of ``sources``, compiled now unless cached."""
    if not sources:
        raise ValueError("compile_sources needs at least one .java file")
    for source in sources:
        if source.suffix != ".java" or not source.is_file():
            raise ValueError(f"{source} is not a .java file")
    target = CACHE / sources_hash(sources)
    if target.is_dir():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=CACHE))
    command = [
        javac(),
        "-nowarn",
        "-encoding",
        "UTF-8",
        "-cp",
        classpath(),
        "-d",
        str(building),
        *(str(s) for s in sources),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise JavaFailed(f"javac exited {result.returncode}:\n{result.stderr}")
    try:
        os.rename(building, target)
    except OSError:
        # Another session compiled the same sources first: theirs stand.
        shutil.rmtree(building, ignore_errors=True)
        if not target.is_dir():
            raise
    return target


def log_config(directory: Path, request_log: Path | None) -> Path:
    """A log4j 2 configuration in ``directory``: warnings to stderr, and with
    ``request_log`` every request the client sends into that file."""
    text = _LOG
    if request_log is not None:
        text += _REQUEST_LOG.format(path=request_log)
    name = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = directory / f"client-log4j2-{name}.properties"
    if not path.is_file():
        # Written aside and renamed: a session starting a JVM at the same moment reads
        # the whole file or none.
        partial = directory / f".{path.name}.{os.getpid()}"
        partial.write_text(text)
        os.replace(partial, path)
    return path


def scenario_command(
    main_class: str,
    classes: Path,
    *,
    request_log: Path | None = None,
    heap: str = "256m",
) -> list[str]:
    """The command line that runs ``main_class`` from ``classes`` on Kafka's class path."""
    directory = request_log.parent if request_log is not None else CACHE
    directory.mkdir(parents=True, exist_ok=True)
    return java_command(
        main_class,
        heap=heap,
        extra_classpath=[classes],
        log_config=log_config(directory, request_log),
    )


@attrs.frozen
class ScenarioRun:
    """What a program printed: its JSON lines (``lines``), the rest of stdout, stderr."""

    command: tuple[str, ...]
    returncode: int
    lines: tuple[Mapping[str, Any], ...]
    stderr: str

    def check(self) -> ScenarioRun:
        """This run, if the program exited 0; else :class:`JavaFailed`."""
        if self.returncode != 0:
            raise JavaFailed(
                f"{self.command[-1]} exited {self.returncode}\n--- stderr\n{self.stderr}"
            )
        return self

    def step(self, number: int) -> Mapping[str, Any]:
        """The line of step ``number``."""
        for line in self.lines:
            if line.get("step") == number:
                return line
        raise JavaFailed(
            f"no line for step {number} in the output; stderr:\n{self.stderr[-3000:]}"
        )

    def result(self, number: int) -> Any:
        """Step ``number``'s result; :class:`JavaFailed` if it threw instead."""
        line = self.step(number)
        if "error" in line:
            raise JavaFailed(f"step {number} ({line['op']}) threw {line['error']}")
        return line["result"]

    def error(self, number: int) -> Mapping[str, str]:
        """Step ``number``'s error (type and message); :class:`JavaFailed` if it had none."""
        line = self.step(number)
        if "error" not in line:
            raise JavaFailed(f"step {number} ({line['op']}) did not fail: {line}")
        error: Mapping[str, str] = line["error"]
        return error


def parse_lines(stdout: str) -> tuple[Mapping[str, Any], ...]:
    """The JSON objects of ``stdout``, one a line (other lines are not the program's)."""
    lines = []
    for text in stdout.splitlines():
        if text.startswith("{"):
            lines.append(json.loads(text))
    return tuple(lines)


def run_scenario(
    main_class: str,
    classes: Path,
    scenario: Mapping[str, Any],
    *,
    timeout: float = 120.0,
    request_log: Path | None = None,
    heap: str = "256m",
) -> ScenarioRun:
    """Runs ``main_class`` with ``scenario`` (JSON) on stdin and waits for it."""
    command = scenario_command(main_class, classes, request_log=request_log, heap=heap)
    result = subprocess.run(
        command,
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return ScenarioRun(
        tuple(command), result.returncode, parse_lines(result.stdout), result.stderr
    )


_SENT = re.compile(r"RequestHeader\(apiKey=(\w+), apiVersion=(\d+)")
# NetworkClient's line on a broker's ApiVersions answer ends "API versions: (Produce(0): 3
# to 8 [usable: 8], Fetch(1): ..., SaslHandshake(17): UNSUPPORTED, ...)."; a single
# version reads "0 [usable: 0]", one the client cannot use "[unusable: node too old]".
_RECORDED = re.compile(r"API versions: \((.*)\)", re.MULTILINE)
_VERSIONS = re.compile(
    r"(\w+)\((\d+)\): (UNSUPPORTED|(\d+)(?: to (\d+))? \[(?:usable: (\d+)|unusable[^\]]*)\])"
)


def requests_sent(request_log: Path) -> set[tuple[str, int]]:
    """(API, version) of every request the client sent, in Kafka's enum names
    (``PRODUCE``, ``METADATA``)."""
    text = request_log.read_text(errors="replace") if request_log.is_file() else ""
    return {(api, int(version)) for api, version in _SENT.findall(text)}


_REFUSED = re.compile(r"UnsupportedVersionException: The node does not support (\w+)")


def refused(request_log: Path) -> set[str]:
    """The APIs (Kafka's enum names, ``DESCRIBE_CLUSTER``) the client wanted to send and
    did not, because the broker's ApiVersions does not offer them (it logs each one)."""
    text = request_log.read_text(errors="replace") if request_log.is_file() else ""
    return set(_REFUSED.findall(text))


@attrs.frozen
class Negotiated:
    """What the client made of one API in a broker's ApiVersions answer: ``usable`` is
    the version it will send, None if the broker offers none the client speaks."""

    api: str
    key: int
    broker: tuple[int, int] | None
    usable: int | None


def negotiated(request_log: Path) -> dict[str, Negotiated]:
    """Per API name (``Produce``), the last ApiVersions outcome the client recorded."""
    text = request_log.read_text(errors="replace") if request_log.is_file() else ""
    found: dict[str, Negotiated] = {}
    for listing in _RECORDED.findall(text):
        for api, key, what, low, high, usable in _VERSIONS.findall(listing):
            if what == "UNSUPPORTED":
                found[api] = Negotiated(api, int(key), None, None)
            else:
                found[api] = Negotiated(
                    api,
                    int(key),
                    (int(low), int(high or low)),
                    int(usable) if usable else None,
                )
    return found
