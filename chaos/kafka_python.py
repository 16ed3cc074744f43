"""kafka-python's idempotent producer behind the calls the chaos workload makes of a
producer (confluent-kafka's: ``produce`` with ``on_delivery``, ``poll``, ``flush``),
so :class:`chaos.workload.Producer` drives a third client the same way.

kafka-python completes a send's future on its own I/O thread; the outcome is queued
and its ``on_delivery`` called from :meth:`KafkaPythonProducer.poll` in the worker's
thread, as librdkafka serves delivery reports from ``poll``: the worker's own state
is then touched by one thread only.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError


class Delivered:
    """A delivered record as confluent-kafka's ``Message`` shows it: its offset."""

    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset


class DeliveryError:
    """A send's error as confluent-kafka's ``KafkaError`` shows it: ``str()``."""

    def __init__(self, exc: BaseException) -> None:
        self._text = f"{type(exc).__name__}: {exc}"

    def str(self) -> str:
        return self._text


Report = Callable[[DeliveryError | None, Delivered], None]


class KafkaPythonProducer:
    """kafka-python's ``KafkaProducer``, idempotent and ``acks=all`` (its defaults
    otherwise), with Kafka's ``delivery.timeout.ms``."""

    def __init__(self, bootstrap: str, delivery_timeout_ms: int) -> None:
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap.split(","),
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            request_timeout_ms=10_000,
            delivery_timeout_ms=delivery_timeout_ms,
        )
        self._reports: queue.SimpleQueue[tuple[Report, Any, Any]] = queue.SimpleQueue()
        self._unreported = 0  # sends whose report has not been served

    def produce(
        self, topic: str, value: bytes, partition: int, on_delivery: Report
    ) -> None:
        future = self._producer.send(topic, value=value, partition=partition)
        self._unreported += 1
        future.add_callback(
            lambda meta: self._reports.put((on_delivery, None, Delivered(meta.offset)))
        )
        future.add_errback(
            lambda exc: self._reports.put(
                (on_delivery, DeliveryError(exc), Delivered(-1))
            )
        )

    def poll(self, timeout: float) -> int:
        """Serve the delivery reports that arrived, waiting up to ``timeout`` for
        the first; how many were served."""
        served = 0
        try:
            report, error, message = self._reports.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return 0
        while True:
            report(error, message)
            served += 1
            self._unreported -= 1
            try:
                report, error, message = self._reports.get_nowait()
            except queue.Empty:
                return served

    def flush(self, timeout: float) -> int:
        """Every record sent, its report served, the producer closed; how many are
        still unreported. kafka-python's ``flush`` and ``close`` raise
        KafkaTimeoutError where librdkafka's return what is left: a producer whose
        records never complete (one wedged with no producer id, chaos/README.md,
        seed 126) is then closed without them."""
        with contextlib.suppress(KafkaTimeoutError):  # what is left is counted below
            self._producer.flush(timeout=timeout)
        self.poll(0.0)
        with contextlib.suppress(KafkaTimeoutError):  # close flushes first: the same
            self._producer.close(timeout=5)
        return self._unreported
