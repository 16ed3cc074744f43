"""Message bodies of the four ZooKeeper-era inter-broker APIs, which kio does not model.

kio generates its classes from the JSON schemas Apache Kafka ships today, and Kafka 4.0
dropped the APIs a ZooKeeper-mode controller speaks: LeaderAndIsr (api key 4),
StopReplica (5), UpdateMetadata (6) and ControlledShutdown (7). This package writes the
missing classes by hand, in kio's own form, from Kafka 2.8's schemas
(``clients/src/main/resources/common/message/*.json`` at tag 2.8.2, identical to 2.8.0):
frozen keyword-only dataclasses with ``__api_key__``, ``__version__``, ``__flexible__``
and ``__header_schema__``, one ``kafka_type`` per primitive field, a nested class per
struct, so that kio's generic ``entity_reader`` and ``entity_writer`` read and write
them with no code of their own, and the bounds check in ``_bounds.py`` walks them.

Only the versions a Kafka 2.8 controller sends to a 2.8 broker (inter.broker.protocol
2.8) are here, the highest of each API: LeaderAndIsr v5, StopReplica v3,
UpdateMetadata v7 (controller to broker) and ControlledShutdown v3 (broker to
controller). All four are flexible versions (KIP-482): compact strings and arrays and
a tagged-field section after every struct; none of these schemas declares a tagged
field, so each section is empty on the wire.

``_codec.py`` falls back to :data:`REQUESTS` and :data:`RESPONSES` when kio has no class
for an (api key, version), and names the APIs with :data:`API_NAMES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kio.static.protocol import RequestPayload, ResponsePayload

from . import (
    controlled_shutdown_v3,
    leader_and_isr_v5,
    stop_replica_v3,
    update_metadata_v7,
)

API_NAMES: Final[Mapping[int, str]] = MappingProxyType(
    {
        4: "leader_and_isr",
        5: "stop_replica",
        6: "update_metadata",
        7: "controlled_shutdown",
    }
)
"""kio's spelling of each API's name (as in ``kio.schema.index.api_key_map``)."""

REQUESTS: Final[Mapping[tuple[int, int], type[RequestPayload]]] = MappingProxyType(
    {
        (4, 5): leader_and_isr_v5.LeaderAndIsrRequest,
        (5, 3): stop_replica_v3.StopReplicaRequest,
        (6, 7): update_metadata_v7.UpdateMetadataRequest,
        (7, 3): controlled_shutdown_v3.ControlledShutdownRequest,
    }
)
"""The request class of each (api key, version) modelled here."""

RESPONSES: Final[Mapping[tuple[int, int], type[ResponsePayload]]] = MappingProxyType(
    {
        (4, 5): leader_and_isr_v5.LeaderAndIsrResponse,
        (5, 3): stop_replica_v3.StopReplicaResponse,
        (6, 7): update_metadata_v7.UpdateMetadataResponse,
        (7, 3): controlled_shutdown_v3.ControlledShutdownResponse,
    }
)
"""The response class of each (api key, version) modelled here."""
