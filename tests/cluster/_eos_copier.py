"""An exactly-once consume-transform-produce application, as a process a test can
SIGKILL: ``python -m tests.cluster._eos_copier BOOTSTRAP SOURCE SINK GROUP TXN_ID``.

It reads SOURCE (read_committed, in the group GROUP), writes each value prefixed with
``copy-`` to SINK and commits its consumed offsets in the same transaction
(``send_offsets_to_transaction``), with confluent-kafka's transactional producer. It
follows Kafka's rules for a transactional application:

- an abortable error (a send or commit that failed inside the transaction) aborts the
  transaction and rewinds the consumer to the group's committed offsets, then goes on;
- a fatal one (this producer was fenced) ends the process with exit code 3: the
  application's instance is a zombie, and a new one takes over;
- once its positions reach SOURCE's end offsets (read at start: the source is written
  before) and that transaction has committed, it prints ``done`` and exits 0.

Each commit prints ``committed <positions>`` so a test can wait for progress; each line
starts with the time.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

WAIT = 60.0
FATAL_EXIT = 3


def main(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            "log_level": 0,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 20_000,
            "log_level": 0,
        }
    )
    producer.init_transactions(WAIT)
    metadata = consumer.list_topics(source, timeout=WAIT)
    partitions = sorted(metadata.topics[source].partitions)
    ends = {
        p: consumer.get_watermark_offsets(KafkaTopicPartition(source, p), timeout=WAIT)[
            1
        ]
        for p in partitions
    }
    consumer.subscribe([source])
    try:
        while True:
            batch = [m for m in consumer.consume(50, timeout=0.5) if m.error() is None]
            positions = {
                tp.partition: tp.offset
                for tp in consumer.position(consumer.assignment())
            }
            if not batch:
                if _done(consumer, source, ends):
                    _say("done")
                    return 0
                continue
            try:
                producer.begin_transaction()
                for message in batch:
                    producer.produce(
                        sink, b"copy-" + (message.value() or b""), partition=0
                    )
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()),
                    consumer.consumer_group_metadata(),
                    WAIT,
                )
                producer.commit_transaction(WAIT)
            except KafkaException as exc:
                error = exc.args[0]
                if isinstance(error, KafkaError) and error.fatal():
                    _say(f"fatal {error}")
                    return FATAL_EXIT
                _say(f"aborting {error}")
                _abort_and_rewind(producer, consumer)
                continue
            _say(f"committed {sorted(positions.items())}")
    finally:
        consumer.close()


def _say(line: str) -> None:
    """One line of output, stamped with the wall clock: a test that times out shows when
    each step happened beside the brokers' logs."""
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def _abort_and_rewind(producer: Producer, consumer: Consumer) -> None:
    """Abort the transaction; read again from the offsets the group has committed."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            producer.abort_transaction(WAIT)
            break
        except KafkaException as exc:
            error = exc.args[0]
            if (
                isinstance(error, KafkaError) and error.fatal()
            ) or time.monotonic() > deadline:
                raise
    committed = consumer.committed(consumer.assignment(), timeout=WAIT)
    for tp in committed:
        consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def _done(consumer: Consumer, source: str, ends: dict[int, int]) -> bool:
    """Every partition's committed offset has reached the end of the source."""
    committed = consumer.committed(
        [KafkaTopicPartition(source, p) for p in ends], timeout=WAIT
    )
    return all(tp.offset >= ends[tp.partition] for tp in committed)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
