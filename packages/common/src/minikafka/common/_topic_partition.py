"""TopicPartition: the name of one partition, as every layer says it.

The log names its directories after it (``orders-3``), replication and the group
coordinator key their state by it, the broker's handlers build it from each request:
one frozen, ordered value type for all of them (Kafka's ``org.apache.kafka.common.
TopicPartition``).
"""

from __future__ import annotations

import attrs


# The hash is cached, as Kafka's TopicPartition caches it: every layer keys dicts by it,
# several times per request, and a frozen value's hash never changes.
@attrs.frozen(order=True, cache_hash=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, name: str) -> TopicPartition:
        """``orders-3`` -> TopicPartition("orders", 3); topics may contain dashes."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
        return cls(topic, int(partition))
