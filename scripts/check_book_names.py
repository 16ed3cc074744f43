"""Every module, name and configuration key the book's prose names must exist.

A chapter explains code that changes. A listing cannot go stale (it is pulled from the
source by ``literalinclude``), but a sentence can: it names ``minikafka.log.LogSegment``
or ``log.segment.bytes`` and keeps naming it after a rename. This script reads the
inline code spans of the book's prose (``book/**/*.md``, outside code blocks and cells)
and checks two kinds of name:

- a dotted name starting with ``minikafka.``: the longest prefix that imports must be a
  module, and the rest attributes of it (``minikafka.client.Producer.flush``);
- a name shaped like a configuration key (lowercase words joined by dots, such as
  ``linger.ms``): a key some part of minikafka declares (a package's ``ConfigDef``, the
  client's configuration), a trace event (``net.request``: component and event), or, if
  it is a key of Kafka's (or librdkafka's) that minikafka does not have, one listed in
  :data:`KAFKA_ONLY`; the chapters that name those say that minikafka lacks them. File
  names (``truth.json``), Java packages (``org.apache.kafka...``) and Python modules
  are not keys.

    uv run python scripts/check_book_names.py          # exit 1, naming each unknown name

``make book`` runs it first, so a stale name fails the build.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The book names the repository's own top-level modules too (``chaos.checker``,
# ``bench``), which import from its root as the book's cells import them.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BOOK = ROOT / "book"

_FENCE = re.compile(r"^(```+|~~~+|:::+)")
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_MINIKAFKA = re.compile(r"^minikafka(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_KEY = re.compile(r"^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+$")

# Kafka's keys the book names although minikafka does not implement them (each says so
# where it appears), and the keys of Kafka's tools and clients the book quotes.
KAFKA_ONLY = frozenset(
    {
        "group.protocol",
        "group.consumer.assignors",
        "transactional.id",
        "transaction.state.log.replication.factor",
        "fetch.max.bytes",
        "client.rack",
        "replica.selector.class",
        "log.message.format.version",
        "inter.broker.protocol.version",
        "zookeeper.session.timeout.ms",
        "zookeeper.connection.timeout.ms",
        "controlled.shutdown.enable",
        "parse.key",
        "key.separator",
        "print.key",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "num.io.threads",
        "num.network.threads",
        "queued.max.requests",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "unclean.leader.election.enable",
        "metadata.version",
        "kraft.version",  # a feature's name (KIP-584), like metadata.version
        "controller.quorum.append.linger.ms",
        "controller.quorum.bootstrap.servers",
        "metadata.log.max.snapshot.interval.ms",
        "log.cleaner.dedupe.buffer.size",
        "partitioner.adaptive.partitioning.enable",
        "fetch.wait.max.ms",  # librdkafka's (and kcat's) name of fetch.max.wait.ms
        # The security chapter's keys: minikafka.security's cores take these settings,
        # but no listener or broker reads them yet (the chapter says so).
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
        "connections.max.reauth.ms",
        "connection.failed.authentication.delay.ms",
        "super.users",
        "allow.everyone.if.no.acl.found",
    }
)
_FILE = re.compile(
    r"\.(py|json|jsonl|md|log|index|timeindex|properties|cfg|txt|yml|yaml|toml|svg|ipynb|sh|jar)$"
)


def prose_spans(text: str) -> Iterator[tuple[int, str]]:
    """(line number, inline code) of the prose: code blocks and cells are skipped."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        match = _FENCE.match(stripped)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker[0] * len(marker)
                continue
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = None
                continue
        if fence is None:
            for span in _SPAN.finditer(line):
                yield number, span.group(1).strip()


def resolves(name: str) -> bool:
    """``minikafka.a.b.C.d``: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def declared_keys() -> frozenset[str]:
    """Every configuration key minikafka declares, with its synonyms."""
    from minikafka.broker._config import known_keys
    from minikafka.client import _config as client_config
    from minikafka.client._async_admin import ADMIN_KEYS
    from minikafka.controller._config import REPLICATION_TOPIC_CONFIG
    from minikafka.log._config import LOG_CONFIG
    from minikafka.net import CLIENT_SECURITY_KEYS

    # What server.properties may set, a topic's own names, and the clients' keys.
    keys = set(known_keys()) | LOG_CONFIG.names() | REPLICATION_TOPIC_CONFIG.names()
    keys |= set(client_config._KEYS) | set(client_config._CONSUMER_KEYS) | ADMIN_KEYS
    keys |= set(CLIENT_SECURITY_KEYS)  # every client's security keys
    return frozenset(keys)


def trace_events() -> frozenset[str]:
    """``component.event`` of every trace event the packages register (the broker
    imports them all)."""
    import minikafka.broker  # noqa: F401  (registers the events of every package)
    from minikafka.trace import event_types

    return frozenset(f"{component}.{event}" for component, event in event_types())


def unknown_names(files: Iterable[Path]) -> list[str]:
    keys, events = declared_keys(), trace_events()
    problems = []
    for path in files:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for number, span in prose_spans(path.read_text(encoding="utf-8")):
            where = f"{shown}:{number}"
            if _MINIKAFKA.match(span):
                if not resolves(span):
                    problems.append(f"{where}: `{span}` does not exist")
            elif (
                _KEY.match(span) and span not in keys | events and not _not_a_key(span)
            ):
                problems.append(
                    f"{where}: `{span}` is no configuration key minikafka has"
                )
    return problems


def _not_a_key(name: str) -> bool:
    """A Kafka-only key, a file, a Java package, or a Python module the environment has
    (``kio.schema``; but ``log.*`` and the like are keys, whatever modules exist)."""
    if name in KAFKA_ONLY or _FILE.search(name) or name.startswith(("org.", "kafka.")):
        return True
    head = name.split(".")[0]
    if head in (
        "log",
        "group",
        "offsets",
        "transaction",
        "fetch",
        "socket",
        "controller",
    ):
        return False
    try:
        importlib.import_module(head)
    except ImportError:
        return False
    return True


def main() -> int:
    files = sorted(BOOK.glob("*.md")) + sorted((BOOK / "labs").glob("*.md"))
    problems = unknown_names(files)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_book_names: {len(problems)} unknown names", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
