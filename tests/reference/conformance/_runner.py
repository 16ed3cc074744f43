"""Differential conformance: the same requests to Apache Kafka and to minikafka.

The method, for a learner: a protocol has many correct answers only where it says so
(an id the broker picks, a timestamp, a port); everywhere else two correct brokers
answer alike. So we send the same *scenarios* (short request sequences, each with a
stable id such as ``produce.v8.bad-crc``) to a real Kafka node and to a minikafka node
set up the same way, turn both answers into plain trees (kio's response classes,
field by field), replace in both only what may legitimately differ (``_normalise``),
and diff what is left (``_diff``). Each difference is either a minikafka bug to fix,
or a deliberate gap recorded with its reason in COMPAT.md's "Known differences" table,
which the test reads: an unlisted difference fails, and so does a row that no longer
matches anything.

Scenarios run in the same order on both brokers over one connection each, so that
state one scenario leaves (records appended, a topic created) is the same on both when
the next one runs; a scenario the broker parks (a JoinGroup waiting for the group's
initial rebalance delay) runs on a connection and thread of its own, concurrently.
"""

from __future__ import annotations

import concurrent.futures
import traceback
from collections.abc import Callable, Sequence

import attrs

from ._diff import Difference, differences
from ._normalise import Tree
from ._scenario import Scenario, Session
from ._wire import Connection


@attrs.frozen
class Outcome:
    scenario: str
    kafka: Tree
    minikafka: Tree
    differences: tuple[Difference, ...]


BROKEN = "scenario broke"


def run_one(scenario: Scenario, connection: Connection) -> Tree:
    session = Session(connection)
    try:
        scenario.run(session)
    except Exception as exc:
        # A scenario that cannot run (a set-up answer it did not expect) is a failure
        # of the test on its own, whatever the other broker did.
        session.record(BROKEN, "".join(traceback.format_exception(exc))[-1500:])
    finally:
        session.close_extra()
    return session.result()


def run_on(
    address: str, prepare: Callable[[Session], None], scenarios: Sequence[Scenario]
) -> dict[str, Tree]:
    """Every scenario against the broker at ``address``: the parked ones in threads of
    their own, the others one after another on one connection."""
    results: dict[str, Tree] = {}
    main = Connection(address)
    prepare(Session(main))
    parked = [s for s in scenarios if s.parks]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(parked))) as pool:
        futures = {s.id: pool.submit(_own_connection, s, address) for s in parked}
        for scenario in scenarios:
            if not scenario.parks:
                results[scenario.id] = run_one(scenario, main)
        for sid, future in futures.items():
            results[sid] = future.result()
    main.close()
    return results


def _own_connection(scenario: Scenario, address: str) -> Tree:
    connection = Connection(address)
    try:
        return run_one(scenario, connection)
    finally:
        connection.close()


def compare(
    kafka: str,
    minikafka: str,
    prepare: Callable[[Session], None],
    scenarios: Sequence[Scenario],
) -> list[Outcome]:
    """Runs the corpus against both brokers at once (a thread each) and diffs."""
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"scenario ids listed twice: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        on_kafka = pool.submit(run_on, kafka, prepare, scenarios)
        on_mini = pool.submit(run_on, minikafka, prepare, scenarios)
        a, b = on_kafka.result(), on_mini.result()
    return [
        Outcome(sid, a[sid], b[sid], tuple(differences(sid, a[sid], b[sid])))
        for sid in ids
    ]
