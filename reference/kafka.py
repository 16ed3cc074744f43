"""Apache Kafka's broker and tools, run from the jars that ``reference/pom.xml`` pins.

:func:`run_tool` runs one of Kafka's command-line tools (``kafka-topics``,
``kafka-consumer-groups``, ...; :data:`TOOLS` maps the names of the ``kafka-*.sh``
scripts to the classes they run) with ``java -cp``, as the script would, and returns what
it printed. :class:`KafkaNode` is a real Kafka broker in KRaft combined mode (broker and
controller in one process, ``process.roles=broker,controller``) on free loopback ports:
``kafka-storage format --standalone``, then ``kafka.Kafka server.properties``, waiting for
its "started" log line with a deadline. Its heap is 768 MiB (``-Xms512m -Xmx768m``), enough
for the tests' and benchmarks' loads and small beside the machine's 24 GiB. A node can also
take one role only (``roles``): :mod:`reference.cluster` builds a controller and three
brokers of them.

Nothing here is imported by minikafka's packages: the tests and ``bench/`` use it.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from minikafka.common.testing import free_ports

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
LIBS = HERE / ".cache" / "libs"
# A class-data-sharing archive of the classes a tool loads (Kafka's admin client, its
# parsers): the first tool run of a machine writes it at exit, and every later one maps it
# instead of loading and verifying those classes again, which halves a tool's start (0.6 s
# to 0.3 s for kafka-consumer-groups --list on the 2-core machine). It lives beside the
# jars, so a new pin (a new libs/) starts without one.
TOOLS_ARCHIVE = LIBS / "tools.jsa"

# The names of Kafka's scripts (bin/kafka-*.sh) and the classes they run, in this release.
TOOLS: Mapping[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
}

# A tool logs warnings and errors to stderr, as Kafka's tools-log4j2.yaml has it; the
# broker logs INFO to server.log in its directory (log4j 2's properties format needs no
# YAML parser on the class path).
TOOLS_LOG = """\
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
"""
_SERVER_LOG = """\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
"""
_STARTED = "Kafka Server started"


class ReferenceMissing(RuntimeError):
    """Apache Kafka's jars, or the Java that runs them, are not on this machine."""


class ToolFailed(RuntimeError):
    """A tool exited with another status than the caller expected; carries its output."""


def kafka_version() -> str:
    """The release ``reference/pom.xml`` pins (its ``kafka.version`` property)."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise ReferenceMissing(f"{POM} names no <kafka.version>")
    return match.group(1)


def classpath() -> str:
    """The class path of every jar, once ``scripts/bootstrap.sh reference`` copied them."""
    if not (LIBS / f"kafka-clients-{kafka_version()}.jar").is_file():
        raise ReferenceMissing(
            f"Apache Kafka {kafka_version()}'s jars are not in {LIBS}: run "
            "scripts/bootstrap.sh reference (make test and make bench do it themselves)"
        )
    return f"{LIBS}/*"


def java() -> str:
    """The ``java`` command; Kafka 4.x runs on Java 17 or newer."""
    path = shutil.which("java")
    if path is None:
        raise ReferenceMissing("no java on PATH: run scripts/bootstrap.sh reference")
    return path


def _log_config(name: str, text: str) -> Path:
    path = LIBS.parent / name
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def java_command(
    main_class: str,
    args: Sequence[str] = (),
    *,
    heap: str = "256m",
    quick_start: bool = True,
    extra_classpath: Sequence[Path] = (),
    log_config: Path | None = None,
) -> list[str]:
    """The command line that runs ``main_class`` on Kafka's class path.

    ``quick_start`` stops the JIT at its first tier and uses the serial collector: a tool
    that runs for a second starts about twice as fast. A benchmark turns it off.
    """
    config = log_config or _log_config("tools-log4j2.properties", TOOLS_LOG)
    command = [java(), f"-Xmx{heap}"]
    if quick_start:
        command += ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        if TOOLS_ARCHIVE.is_file() and not extra_classpath:
            # An archive the JVM cannot use (another class path) is skipped: silently, so
            # that a tool's stdout stays what the tool printed.
            command += [
                f"-XX:SharedArchiveFile={TOOLS_ARCHIVE}",
                "-Xlog:cds=off",
                "-Xlog:cds+dynamic=off",
            ]
    command += [
        f"-Dlog4j2.configurationFile={config}",
        "-cp",
        os.pathsep.join([*(str(p) for p in extra_classpath), classpath()]),
        main_class,
        *args,
    ]
    return command


@attrs.frozen
class ToolRun:
    """What one tool printed, and how it exited."""

    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def check(self, returncode: int = 0) -> ToolRun:
        """This run, if it exited with ``returncode``; else :class:`ToolFailed`."""
        if self.returncode != returncode:
            raise ToolFailed(
                f"{' '.join(self.command[-12:])} exited {self.returncode} "
                f"(expected {returncode})\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
            )
        return self


def tool_class(tool: str) -> str:
    """The class a tool name runs: a ``kafka-*`` name of :data:`TOOLS`, or a class name."""
    if tool in TOOLS:
        return TOOLS[tool]
    if "." in tool and not tool.startswith("kafka-"):
        return tool
    raise ValueError(
        f"unknown tool {tool!r}: one of {', '.join(TOOLS)} or a class name"
    )


def run_tool(
    tool: str,
    *args: str,
    input: str | None = None,
    timeout: float = 120.0,
    heap: str = "256m",
    quick_start: bool = True,
) -> ToolRun:
    """Runs ``tool`` (``kafka-topics`` or a class name) with ``args`` and waits for it."""
    command = java_command(tool_class(tool), args, heap=heap, quick_start=quick_start)
    archive = None
    if quick_start and tool != "kafka-storage" and not TOOLS_ARCHIVE.is_file():
        archive = TOOLS_ARCHIVE.with_name(f"tools.{os.getpid()}.jsa")
        command[1:1] = [
            f"-XX:ArchiveClassesAtExit={archive}",
            "-Xlog:cds=off",
            "-Xlog:cds+dynamic=off",
        ]
    result = subprocess.run(
        command,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    if archive is not None and archive.is_file():
        # Another process may have written one meanwhile: either is as good.
        os.replace(archive, TOOLS_ARCHIVE)
    return ToolRun(tuple(command), result.returncode, result.stdout, result.stderr)


def new_cluster_id() -> str:
    """A new cluster id, as ``kafka-storage random-uuid`` prints it (a random UUID in
    Kafka's URL-safe base64 without padding), made here instead of in a JVM. Like Kafka's
    ``Uuid.randomUuid`` it never starts with ``-``, which a command line would take for
    an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaFailed(RuntimeError):
    """The Kafka node exited, or did not start in time; carries the end of its log."""


COMBINED = "broker,controller"
BROKER = "broker"
CONTROLLER = "controller"


@attrs.define(eq=False)
class KafkaNode:
    """A real Kafka node, its files in ``directory``: broker and controller in one process
    by default (``roles``, Kafka's ``process.roles``), or one of them.

    The defaults are a single node's (replication factor 1 for the internal topics);
    ``overrides`` sets any other key of ``server.properties``. A broker-only node finds
    its controllers at ``quorum`` (their ``host:port``s) and is formatted with
    ``--no-initial-controllers``, as Kafka's operations guide formats a broker joining a
    dynamic quorum (KIP-853); a node with the controller role starts its quorum alone
    (``--standalone``). ``cluster_id``: the id to format with (a new random one if
    empty); every node of a cluster must share it.
    """

    directory: Path
    overrides: Mapping[str, str] = attrs.field(factory=dict)
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port, chosen at the first start and kept
    controller_port: int = 0
    node_id: int = 1
    heap: str = "768m"
    min_heap: str = "512m"
    roles: str = COMBINED
    quorum: str = ""
    cluster_id: str = ""
    process: subprocess.Popen[bytes] | None = attrs.field(init=False, default=None)
    _started_before: int = attrs.field(init=False, default=0)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def controller_bootstrap(self) -> str:
        return f"{self.host}:{self.controller_port}"

    @property
    def log_dir(self) -> Path:
        return self.directory / "data"

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles.split(",")

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles.split(",")

    def properties(self) -> dict[str, str]:
        listeners = []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://{self.bootstrap}")
        if self.is_controller:
            listeners.append(f"CONTROLLER://{self.controller_bootstrap}")
        values = {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            "controller.quorum.bootstrap.servers": (
                self.controller_bootstrap if self.is_controller else self.quorum
            ),
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
        }
        if self.is_broker:
            # (a controller-only node advertises its listeners, the CONTROLLER one)
            values["advertised.listeners"] = f"PLAINTEXT://{self.bootstrap}"
        values.update(self.overrides)
        return values

    def _format(self) -> None:
        if (self.log_dir / "meta.properties").is_file():
            return
        if not self.cluster_id:
            self.cluster_id = new_cluster_id()
        run_tool(
            "kafka-storage",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(self.directory / "server.properties"),
            "--standalone" if self.is_controller else "--no-initial-controllers",
        ).check()

    def start(self, timeout: float = 90.0) -> None:
        self.launch()
        self.wait_started(time.monotonic() + timeout)

    def launch(self) -> None:
        """Writes the configuration, formats the log directory the first time and starts
        the JVM, without waiting for it (:meth:`wait_started`)."""
        if self.process is not None:
            raise RuntimeError("this Kafka node is running already")
        if not (self.is_controller or self.quorum):
            raise ValueError("a broker-only node needs its controllers' quorum")
        self.directory.mkdir(parents=True, exist_ok=True)
        if not (self.port and self.controller_port):
            port, controller_port = free_ports(2, self.host)
            self.port = self.port or port
            self.controller_port = self.controller_port or controller_port
        lines = [f"{key}={value}" for key, value in self.properties().items()]
        (self.directory / "server.properties").write_text("\n".join(lines) + "\n")
        log_config = self.directory / "log4j2.properties"
        log_config.write_text(_SERVER_LOG.format(path=self.server_log))
        self._format()
        started_before = self._started_lines()
        command = java_command(
            "kafka.Kafka",
            [str(self.directory / "server.properties")],
            heap=self.heap,
            quick_start=False,
            log_config=log_config,
        )
        command.insert(1, f"-Xms{self.min_heap}")
        self._started_before = started_before
        with open(self.directory / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def wait_started(self, deadline: float) -> None:
        """Returns once the launched JVM logged "started"; :class:`KafkaFailed` if it
        exits first or ``deadline`` (``time.monotonic()``) passes (it is killed)."""
        if self.process is None:
            raise RuntimeError("this Kafka node was not launched")
        while self._started_lines() <= self._started_before:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise KafkaFailed(
                    f"Kafka node {self.node_id} exited {code} while starting:\n"
                    f"{self._tail()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise KafkaFailed(
                    f"Kafka node {self.node_id} did not start in time:\n{self._tail()}"
                )
            time.sleep(0.1)  # polling its log, inside the deadline

    def _started_lines(self) -> int:
        if not self.server_log.is_file():
            return 0
        return self.server_log.read_text(errors="replace").count(_STARTED)

    def _tail(self, lines: int = 40) -> str:
        text = ""
        for name in ("stdout.log", "server.log"):
            path = self.directory / name
            if path.is_file():
                text += f"--- {name}\n" + "\n".join(
                    path.read_text(errors="replace").splitlines()[-lines:]
                )
        return text

    def stop(self, timeout: float = 60.0) -> int:
        """A clean shutdown (SIGTERM, as ``kafka-server-stop.sh``); its exit status."""
        process, self.process = self.process, None
        if process is None:
            return 0
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()

    def __enter__(self) -> KafkaNode:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
