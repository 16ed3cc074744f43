"""Topic creation and deletion during a run: :class:`TopicChurn` creates a topic under a
name never used before, writes records to it with an idempotent ``acks=all`` producer,
and deletes it, over and over, every operation in the history (``create_topic``,
``send``, ``delete_topic``).

The checker leaves a deleted topic's partitions out of the rules that read the final log
(a deleted topic has none); each cycle's topic is deleted whatever its creation
answered (an ``unknown`` creation may have happened), and a cycle runs whole once begun,
so every topic it created is deleted before the run ends. Its sends still take part in
the rules the history alone decides (their values are unique among all the run's).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from concurrent.futures import Future

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from .workload import CLIENT, Recorder, _Worker

TIMEOUT = 60.0
"""Seconds a creation, the cycle's writes, or a deletion are given."""


class TopicChurn(_Worker):
    """Every ``every`` seconds: create ``{prefix}-{n}`` (``partitions`` partitions, RF
    3, ``min.insync.replicas=2``), write ``records`` values to it, delete it."""

    def __init__(
        self,
        process: int,
        bootstrap: str,
        prefix: str,
        recorder: Recorder,
        every: float = 10.0,
        partitions: int = 2,
        records: int = 20,
    ) -> None:
        super().__init__(f"chaos-churn-{process}")
        self.process, self.prefix, self.recorder = process, prefix, recorder
        self.every, self.partitions, self.records = every, partitions, records
        self._bootstrap = bootstrap
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self._names = (f"{prefix}-{n}" for n in itertools.count())

    def step(self) -> None:
        began = time.monotonic()
        topic = next(self._names)
        if self._create(topic) != "failed":
            self._write(topic)
        self._delete(topic)
        self._stopping.wait(max(0.0, began + self.every - time.monotonic()))

    def _admin_op(
        self, kind: str, topic: str, futures: Mapping[str, Future[None]], invoke: float
    ) -> str:
        """The admin call's answer for ``topic`` recorded as one operation."""
        outcome, error = "ok", ""
        try:
            futures[topic].result(timeout=TIMEOUT)
        except Exception as exc:  # answered with an error, or no answer: may be done
            outcome, error = "unknown", str(exc)
        self.recorder.record(
            process=self.process,
            kind=kind,
            outcome=outcome,
            invoke=invoke,
            complete=max(time.time(), invoke),
            client=CLIENT,
            topic=topic,
            partitions=self.partitions,
            error=error,
        )
        return outcome

    def _create(self, topic: str) -> str:
        new = NewTopic(topic, self.partitions, 3, config={"min.insync.replicas": "2"})
        invoke = time.time()
        futures = self._admin.create_topics([new], operation_timeout=TIMEOUT)
        return self._admin_op("create_topic", topic, futures, invoke)

    def _delete(self, topic: str) -> str:
        invoke = time.time()
        futures = self._admin.delete_topics([topic], operation_timeout=TIMEOUT)
        return self._admin_op("delete_topic", topic, futures, invoke)

    def _write(self, topic: str) -> None:
        producer = KafkaProducer(
            {
                "bootstrap.servers": self._bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "message.timeout.ms": int(TIMEOUT * 1000),
                "log_level": 0,
            }
        )
        for n in range(self.records):
            partition, value, invoke = (
                n % self.partitions,
                self.recorder.value(),
                time.time(),
            )

            def delivered(
                error: KafkaError | None,
                message: Message,
                partition: int = partition,
                value: int = value,
                invoke: float = invoke,
            ) -> None:
                extra: dict[str, object] = (
                    {"offset": message.offset()}
                    if error is None
                    else {"error": error.str()}
                )
                self.recorder.record(
                    process=self.process,
                    kind="send",
                    outcome="ok" if error is None else "unknown",
                    invoke=invoke,
                    complete=max(time.time(), invoke),
                    client=CLIENT,
                    topic=topic,
                    partition=partition,
                    value=value,
                    **extra,
                )

            producer.produce(
                topic, str(value).encode(), partition=partition, on_delivery=delivered
            )
        producer.flush(TIMEOUT + 5)

    def finish(self) -> None:
        """Nothing left: each cycle deleted its topic before it ended."""
