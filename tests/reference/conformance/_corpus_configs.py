"""Scenarios of configs changed on a live cluster: IncrementalAlterConfigs (KIP-339) and
the legacy AlterConfigs (KIP-133), at every version minikafka advertises.

Topic resources: each scenario creates a topic of its own (``conf-ialter-vN-case``,
``conf-alter-vN-case``), changes it, and where the change is accepted describes the keys
it touched, so both the answer and the state it left are compared: SET, DELETE, APPEND
and SUBTRACT of the list-valued ``cleanup.policy``, validate-only, and the refusals (an
unknown key, a bad value, an unknown topic, a key or a resource named twice, a null
value, APPEND to a key that is not a list).

Broker resources: a key that only a restart changes (``log.dirs``) is refused; a key
that changes at run time (``log.retention.ms``) is accepted on the cluster-wide default
``""`` and on broker 1, then DELETEd, so no other scenario nor any other test on the
shared Kafka node sees it. The value set is the key's default (7 days), so even while
it is set nothing behaves differently. The legacy AlterConfigs replaces a resource's
whole set of dynamic configs: on the cluster default it would erase the defaults a new
Kafka 4.1 cluster sets (``min.insync.replicas``, KIP-966), so there it runs validate-only;
on broker 1 it applies (the session's tests run one at a time on the shared node, and a
new node has no per-broker dynamic configs to lose).

Left out on purpose: a legacy AlterConfigs naming one resource twice. Kafka 4.1.1 never
answers it: its refusal (INVALID_REQUEST for both, as IncrementalAlterConfigs answers)
is built, but counting the response's errors for its metrics puts the two results in a
map keyed by resource, which throws on the duplicate, and the connection waits forever.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_admin import BROKER, TOPIC, create_body
from ._corpus_data import Case, each_version
from ._fixtures import MISSING
from ._scenario import Scenario, Session

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
WEEK_MS = "604800000"
"""``log.retention.ms``'s default (``log.retention.hours`` 168)."""

Entry = tuple[str, int, str | None]
"""An incremental change: key, operation, value."""


def _topic(s: Session, name: str, configs: dict[str, str]) -> None:
    s.call(
        create_body(
            4,
            [
                {
                    "name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
        )
    )
    s.wait_topics([name])


def _describe(s: Session, name: str, keys: list[str]) -> None:
    """The topic's ``keys`` as this broker describes them once it has the change: a
    broker answers DescribeConfigs from its copy of the metadata, which the change
    reaches a moment after the controller answered; a topic created after the change
    and seen by this broker shows that its copy holds the change too."""
    barrier = f"{name}-after"
    s.call(create_body(4, [{"name": barrier}]))
    s.wait_topics([barrier])
    s.check(
        make(
            ApiKey.DESCRIBE_CONFIGS,
            3,
            resources=[
                {
                    "resource_type": TOPIC,
                    "resource_name": name,
                    "configuration_keys": keys,
                }
            ],
            include_synonyms=False,
            include_documentation=False,
        ),
        "described",
    )


# --- IncrementalAlterConfigs ------------------------------------------------------------


def incremental_body(
    v: int, resources: list[tuple[int, str, list[Entry]]], validate_only: bool = False
) -> Any:
    return make(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        v,
        resources=[
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [
                    {"name": k, "config_operation": op, "value": value}
                    for k, op, value in entries
                ],
            }
            for kind, name, entries in resources
        ],
        validate_only=validate_only,
    )


def _incremental(
    case: str,
    entries: list[Entry],
    *,
    created: dict[str, str] | None = None,
    validate_only: bool = False,
    twice: bool = False,
) -> Case:
    """Creates ``conf-ialter-vN-case`` (with ``created``), changes it, describes the keys
    changed."""

    def run(s: Session, v: int) -> None:
        name = f"conf-ialter-v{v}-{case}"
        _topic(s, name, created or {})
        resources = [(TOPIC, name, entries)] * (2 if twice else 1)
        s.check(incremental_body(v, resources, validate_only), "altered")
        _describe(s, name, sorted({k for k, _, _ in entries}))

    return run


def _incremental_unknown_topic(s: Session, v: int) -> None:
    s.check(incremental_body(v, [(TOPIC, MISSING, [("retention.ms", SET, "60000")])]))


def _incremental_broker(name: str) -> Case:
    """A run-time key set on broker ``name`` (``""``: every broker's default), then
    deleted again."""

    def run(s: Session, v: int) -> None:
        set_it: list[Entry] = [("log.retention.ms", SET, WEEK_MS)]
        s.check(incremental_body(v, [(BROKER, name, set_it)]), "set")
        delete: list[Entry] = [("log.retention.ms", DELETE, None)]
        s.check(incremental_body(v, [(BROKER, name, delete)]), "deleted")

    return run


def _incremental_static(s: Session, v: int) -> None:
    s.check(incremental_body(v, [(BROKER, "1", [("log.dirs", SET, "/tmp/x")])]))


# Resources a broker refuses before its controller sees them: another broker, a broker
# id that is no number, the default topic, a type neither broker knows.
ODD_RESOURCES: dict[str, tuple[int, str]] = {
    "other-broker": (BROKER, "7"),
    "broker-name-not-a-number": (BROKER, "one"),
    "default-topic": (TOPIC, ""),
    "unknown-resource-type": (99, "x"),
}


def _odd(*, incremental: bool, resource: tuple[int, str]) -> Case:
    kind, name = resource

    def run(s: Session, v: int) -> None:
        if incremental:
            s.check(
                incremental_body(
                    v, [(kind, name, [("log.retention.ms", SET, WEEK_MS)])]
                )
            )
        else:
            s.check(legacy_body(v, [(kind, name, [("log.retention.ms", WEEK_MS)])]))

    return run


INCREMENTAL_CASES: dict[str, Case] = {
    "set": _incremental("set", [("retention.ms", SET, "60000")]),
    "delete": _incremental(
        "delete", [("retention.ms", DELETE, None)], created={"retention.ms": "60000"}
    ),
    "append": _incremental(
        "append",
        [("cleanup.policy", APPEND, "compact")],
        created={"cleanup.policy": "delete"},
    ),
    "subtract": _incremental(
        "subtract",
        [("cleanup.policy", SUBTRACT, "compact")],
        created={"cleanup.policy": "compact,delete"},
    ),
    "append-not-a-list": _incremental(
        "append-scalar", [("retention.ms", APPEND, "60000")]
    ),
    "validate-only": _incremental(
        "validate", [("retention.ms", SET, "60000")], validate_only=True
    ),
    "unknown-key": _incremental("unknown-key", [("conf.no.such.key", SET, "1")]),
    "bad-value": _incremental("bad-value", [("retention.ms", SET, "soon")]),
    "key-twice": _incremental(
        "key-twice",
        [("retention.ms", SET, "60000"), ("retention.ms", SET, "70000")],
    ),
    "resource-twice": _incremental(
        "resource-twice", [("retention.ms", SET, "60000")], twice=True
    ),
    "null-value": _incremental("null-value", [("retention.ms", SET, None)]),
    "unknown-topic": _incremental_unknown_topic,
    "broker-static-key": _incremental_static,
    "broker-default-dynamic-key": _incremental_broker(""),
    "broker-dynamic-key": _incremental_broker("1"),
    **{case: _odd(incremental=True, resource=r) for case, r in ODD_RESOURCES.items()},
}


# --- AlterConfigs (legacy: the resource's whole set) --------------------------------------


def legacy_body(
    v: int,
    resources: list[tuple[int, str, list[tuple[str, str | None]]]],
    validate_only: bool = False,
) -> Any:
    return make(
        ApiKey.ALTER_CONFIGS,
        v,
        resources=[
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": k, "value": value} for k, value in entries],
            }
            for kind, name, entries in resources
        ],
        validate_only=validate_only,
    )


def _legacy(
    case: str,
    entries: list[tuple[str, str | None]],
    *,
    created: dict[str, str] | None = None,
    validate_only: bool = False,
    twice: bool = False,
) -> Case:
    """Creates ``conf-alter-vN-case`` (with ``created``), replaces its configs, describes
    the keys it had and the keys given."""

    def run(s: Session, v: int) -> None:
        name = f"conf-alter-v{v}-{case}"
        _topic(s, name, created or {})
        resources = [(TOPIC, name, entries)] * (2 if twice else 1)
        s.check(legacy_body(v, resources, validate_only), "altered")
        _describe(s, name, sorted({k for k, _ in entries} | set(created or {})))

    return run


def _legacy_broker(name: str, validate_only: bool) -> Case:
    def run(s: Session, v: int) -> None:
        body = legacy_body(
            v, [(BROKER, name, [("log.retention.ms", WEEK_MS)])], validate_only
        )
        s.check(body, "set")
        if not validate_only:  # deleted alone: the resource's other keys stay
            delete: list[Entry] = [("log.retention.ms", DELETE, None)]
            s.call(incremental_body(1, [(BROKER, name, delete)]))

    return run


LEGACY_CASES: dict[str, Case] = {
    "replace": _legacy(
        "replace",
        [("retention.ms", "60000")],
        created={"cleanup.policy": "compact"},
    ),
    "empty-set": _legacy("empty-set", [], created={"retention.ms": "60000"}),
    "list-value": _legacy("list-value", [("cleanup.policy", "compact,delete")]),
    "validate-only": _legacy(
        "validate", [("retention.ms", "60000")], validate_only=True
    ),
    "unknown-key": _legacy("unknown-key", [("conf.no.such.key", "1")]),
    "bad-value": _legacy("bad-value", [("retention.ms", "soon")]),
    "key-twice": _legacy(
        "key-twice", [("retention.ms", "60000"), ("retention.ms", "70000")]
    ),
    "null-value": _legacy("null-value", [("retention.ms", None)]),
    "unknown-topic": lambda s, v: s.check(
        legacy_body(v, [(TOPIC, MISSING, [("retention.ms", "60000")])])
    ),
    "broker-static-key": lambda s, v: s.check(
        legacy_body(v, [(BROKER, "1", [("log.dirs", "/tmp/x")])])
    ),
    "broker-default-dynamic-key": _legacy_broker("", validate_only=True),
    # The whole set Kafka 4.1 keeps there: its min.insync.replicas default, and the key.
    "broker-default-whole-set": lambda s, v: s.check(
        legacy_body(
            v,
            [
                (
                    BROKER,
                    "",
                    [("log.retention.ms", WEEK_MS), ("min.insync.replicas", "1")],
                )
            ],
            validate_only=True,
        )
    ),
    "broker-dynamic-key": _legacy_broker("1", validate_only=False),
    **{case: _odd(incremental=False, resource=r) for case, r in ODD_RESOURCES.items()},
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(
        ApiKey.INCREMENTAL_ALTER_CONFIGS, "incremental-alter-configs", INCREMENTAL_CASES
    )
    yield from each_version(ApiKey.ALTER_CONFIGS, "alter-configs", LEGACY_CASES)
