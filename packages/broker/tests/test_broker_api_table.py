"""KafkaApis's table is the broker's protocol surface: every advertised version of every
API has the typed body its handler narrows to, and only the waiting requests park."""

from __future__ import annotations

import subprocess
import sys

from minikafka.broker import KafkaApis
from minikafka.broker._body import SERVED_BODIES
from minikafka.net import ApiKey, load_body_classes


def test_every_row_has_the_body_classes_of_exactly_its_versions() -> None:
    for spec in KafkaApis.TABLE:
        if spec.key == ApiKey.API_VERSIONS:
            continue  # answered by minikafka.net's handler, which types its own body
        classes = load_body_classes(SERVED_BODIES[spec.key])
        versions = [int(cls.__version__) for cls in classes]
        assert versions == list(range(spec.min_version, spec.max_version + 1)), (
            spec.key.name
        )
    assert set(SERVED_BODIES) == {s.key for s in KafkaApis.TABLE} - {
        ApiKey.API_VERSIONS
    }


def test_the_supported_ranges_and_parking_come_from_the_table() -> None:
    assert {
        s.key: (s.min_version, s.max_version) for s in KafkaApis.TABLE
    } == KafkaApis.SUPPORTED
    parks = {s.key for s in KafkaApis.TABLE if s.parks}
    # The group requests that wait for other members or a replicated write, and the
    # transaction requests, which wait for a replicated write to __transaction_state
    # or __consumer_offsets, or (WriteTxnMarkers) for the markers' acks=all appends.
    assert parks == {
        ApiKey.OFFSET_COMMIT,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.TXN_OFFSET_COMMIT,
    }


def test_every_body_alias_names_kio_classes_of_one_api_and_matches_them() -> None:
    """The modules of request bodies import kio's classes for mypy only; each tuple they
    hand to isinstance names classes that exist, of one API, and is true of an instance
    of each and of no other served version's class of the same name."""
    from minikafka.broker import _body, _group_body, _txn_body

    for module in (_body, _group_body, _txn_body):
        for name, value in vars(module).items():
            if not (name.isupper() and isinstance(value, tuple) and value):
                continue
            classes = load_body_classes(value)
            assert classes, name
            assert len({int(c.__api_key__) for c in classes}) == 1, name
            for cls in classes:
                instance = object.__new__(cls)  # no fields needed: matched by class
                assert isinstance(instance, value), (name, cls)
            others = {
                c
                for c in load_body_classes(
                    SERVED_BODIES[ApiKey(classes[0].__api_key__)]
                )
                if c.__name__ == classes[0].__name__ and c not in classes
            }
            for other in others:
                assert not isinstance(object.__new__(other), value), (name, other)


def test_starting_a_broker_program_imports_few_of_the_request_classes_it_serves() -> (
    None
):
    """The served versions are named, not imported: a ``minikafka`` program pays for the
    kio classes of the requests it receives (and of those its client tools send), not
    for every version of every API (153 classes, which all imported took about half a
    second of every broker's and tool's start)."""
    served = sum(len(load_body_classes(v)) for v in SERVED_BODIES.values())
    check = (
        "import sys, minikafka.broker._cli;"
        "print(sum(1 for m in sys.modules"
        " if m.startswith('kio.schema.') and m.endswith('.request')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", check], check=True, capture_output=True, text=True
    )
    assert int(out.stdout) < served / 2, (out.stdout, served)


def test_unregister_broker_is_kraft_only() -> None:
    """UnregisterBroker (KIP-631) is served by a KRaft broker and by the controller
    listener; a ZooKeeper-mode broker does not list it, as Kafka 3.x's does not (the
    API's listeners are ``broker`` and ``controller``, not ``zkBroker``)."""
    from minikafka.broker._controller_apis import SUPPORTED as CONTROLLER_SUPPORTED
    from minikafka.broker.zk import ZkKafkaApis

    assert KafkaApis.SUPPORTED[ApiKey.UNREGISTER_BROKER] == (0, 0)
    assert CONTROLLER_SUPPORTED[ApiKey.UNREGISTER_BROKER] == (0, 0)
    assert ApiKey.UNREGISTER_BROKER not in ZkKafkaApis.SUPPORTED
