"""minikafka.client: the client's half of seed 000, the producer.

Sans-IO cores (the partitioner, the RecordAccumulator, the Sender, the client's
metadata) driven by a trio shell, under a synchronous ``Producer`` shaped like
confluent-kafka's. See the package README and the book's chapter "The producer".
"""

from __future__ import annotations

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._accumulator import BufferFull as BufferFull
from ._accumulator import PendingRecord as PendingRecord
from ._accumulator import ProducerBatch as ProducerBatch
from ._accumulator import ReadyCheck as ReadyCheck
from ._accumulator import RecordAccumulator as RecordAccumulator
from ._config import ConfigError as ConfigError
from ._config import ProducerConfig as ProducerConfig
from ._message import KafkaError as KafkaError
from ._message import KafkaException as KafkaException
from ._message import Message as Message
from ._metadata import ClientMetadata as ClientMetadata
from ._metadata import TopicInfo as TopicInfo
from ._partitioner import Partitioner as Partitioner
from ._partitioner import murmur2 as murmur2
from ._partitioner import partition_for_key as partition_for_key
from ._producer import Producer as Producer
from ._sender import Delivery as Delivery
from ._sender import PartitionResponse as PartitionResponse
from ._sender import ProducePlan as ProducePlan
from ._sender import Sender as Sender
from ._shell import ProducerShell as ProducerShell

__all__ = [
    "BufferFull",
    "ClientMetadata",
    "ConfigError",
    "Delivery",
    "KafkaError",
    "KafkaException",
    "Message",
    "PartitionResponse",
    "Partitioner",
    "PendingRecord",
    "ProducePlan",
    "Producer",
    "ProducerBatch",
    "ProducerConfig",
    "ProducerShell",
    "ReadyCheck",
    "RecordAccumulator",
    "Sender",
    "murmur2",
    "partition_for_key",
]
