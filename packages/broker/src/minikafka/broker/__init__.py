"""minikafka.broker: the assembled broker (all seeds).

KafkaApis (one handler per API), the MetadataCache built from the KRaft metadata image,
the broker's configuration under Kafka's names, the BrokerServer that assembles the
network layer, the log, the controller's quorum and the ReplicaManager, and the
``minikafka`` command.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._apis import KafkaApis as KafkaApis
from ._config import BrokerSettings as BrokerSettings
from ._config import KafkaConfig as KafkaConfig
from ._config import parse_override as parse_override
from ._config import read_properties as read_properties
from ._fetch import encode_fetch_response as encode_fetch_response
from ._metadata_cache import MetadataCache as MetadataCache
from ._producer_ids import ProducerIdManager as ProducerIdManager
from ._server import BrokerServer as BrokerServer
from .zk import ZkBrokerServer as ZkBrokerServer

__all__ = [
    "BrokerServer",
    "BrokerSettings",
    "KafkaApis",
    "KafkaConfig",
    "MetadataCache",
    "ProducerIdManager",
    "ZkBrokerServer",
    "encode_fetch_response",
    "parse_override",
    "read_properties",
]
