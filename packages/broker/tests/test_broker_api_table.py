"""KafkaApis's table is the broker's protocol surface: every advertised version of every
API has the typed body its handler narrows to, and only the waiting requests park."""

from __future__ import annotations

from minikafka.broker import KafkaApis
from minikafka.broker._body import SERVED_BODIES
from minikafka.net import ApiKey


def test_every_row_has_the_body_classes_of_exactly_its_versions() -> None:
    for spec in KafkaApis.TABLE:
        if spec.key == ApiKey.API_VERSIONS:
            continue  # answered by minikafka.net's handler, which types its own body
        versions = [int(cls.__version__) for cls in SERVED_BODIES[spec.key]]  # type: ignore[attr-defined]
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
    assert parks == {ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP}
