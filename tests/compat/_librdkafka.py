"""What the confluent-kafka and kcat group adapters both ask of librdkafka's clients:
their consumers' settings, creating topics, end offsets and a group's committed offsets
(kcat can do none of the last three itself, so confluent-kafka's AdminClient does them
for it)."""

from __future__ import annotations

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

# confluent_kafka.admin re-exports these without listing them in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.compat._groups import WAIT, consumer_config

# librdkafka's name where it differs from the Java client's.
RENAMED = {"fetch.max.wait.ms": "fetch.wait.max.ms"}


def librdkafka_config(
    bootstrap: str,
    group: str,
    client_id: str,
    session_ms: int | None = None,
    **extra: object,
) -> dict[str, object]:
    """The group consumers' settings (:func:`_groups.consumer_config`) in librdkafka's
    names, and ``extra``."""
    config = consumer_config(bootstrap, group, client_id, session_ms)
    return {**{RENAMED.get(key, key): value for key, value in config.items()}, **extra}


class LibrdkafkaAdmin:
    """The admin half of a group adapter, for the broker at ``bootstrap``."""

    bootstrap: str

    def admin(self) -> AdminClient:
        # The caller keeps it until its futures are answered: a client that is collected
        # fails them with _DESTROY.
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, topic: str, partitions: int) -> None:
        admin = self.admin()
        futures = admin.create_topics(
            [NewTopic(topic, partitions, 1)], operation_timeout=WAIT
        )
        futures[topic].result(timeout=WAIT)

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "watermarks"}
        )
        try:
            return {
                p: consumer.get_watermark_offsets(
                    TopicPartition(topic, p), WAIT, cached=False
                )[1]
                for p in range(partitions)
            }
        finally:
            consumer.close()

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets, as the AdminClient reads them (OffsetFetch)."""
        admin = self.admin()
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)]
        )
        result = futures[group].result(timeout=WAIT)
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}
