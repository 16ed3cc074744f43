"""The transaction coordinator's settings (Kafka's ``TransactionStateManagerConfig`` and
``TransactionLogConfig`` keys), declared in :data:`TXN_CONFIG` (a
:class:`minikafka.common.ConfigDef`)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import ConfigDef, ConfigKey, ConfigType, at_least

__all__ = ["TXN_CONFIG", "TxnConfig"]


@attrs.frozen
class TxnConfig:
    """The coordinator's settings, under Kafka's names and defaults (but two: see
    ``transaction_state_log_replication_factor``)."""

    transaction_max_timeout_ms: int = 900_000
    """``transaction.max.timeout.ms``: the longest ``transaction.timeout.ms`` allowed."""
    transactional_id_expiration_ms: int = 604_800_000
    """``transactional.id.expiration.ms``: an idle id is removed after this."""
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    """``transaction.abort.timed.out.transaction.cleanup.interval.ms``: how often the
    coordinator looks for transactions past their timeout."""
    remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    """``transaction.remove.expired.transaction.cleanup.interval.ms``: how often it
    looks for idle ids to expire."""
    retry_backoff_ms: int = 100
    """How long a completion whose record failed waits before it is written again
    (Kafka retries from its marker channel's loop)."""
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    # Kafka's defaults are 3 and 2, and its sample server.properties sets 1 and 1 for
    # one node; minikafka runs on one node unless told otherwise, as for the offsets
    # topic, so transactions work out of the box.
    transaction_state_log_replication_factor: int = 1
    transaction_state_log_min_isr: int = 1
    transaction_partition_verification_enable: bool = True
    """``transaction.partition.verification.enable`` (KIP-890 part 1): a partition
    leader asks the transaction coordinator before it appends a transactional
    producer's first batch to a partition."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TxnConfig:
        """Read the keys :data:`TXN_CONFIG` declares; other keys are left alone."""
        return TXN_CONFIG.apply(cls(), props)


_INT = ConfigType.INT
TXN_CONFIG = ConfigDef(
    (
        ConfigKey(
            "transaction.max.timeout.ms",
            _INT,
            "transaction_max_timeout_ms",
            at_least(1),
            "The longest transaction.timeout.ms a producer may ask for.",
        ),
        ConfigKey(
            "transactional.id.expiration.ms",
            _INT,
            "transactional_id_expiration_ms",
            at_least(1),
            "How long a transactional id may stay idle before it is removed.",
        ),
        ConfigKey(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _INT,
            "abort_timed_out_transaction_cleanup_interval_ms",
            at_least(1),
            "How often transactions past their timeout are looked for and aborted.",
        ),
        ConfigKey(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            _INT,
            "remove_expired_transaction_cleanup_interval_ms",
            at_least(1),
            "How often expired transactional ids are looked for.",
        ),
        ConfigKey(
            "transaction.state.log.num.partitions",
            _INT,
            "transaction_state_log_num_partitions",
            at_least(1),
            "Partitions of __transaction_state.",
        ),
        ConfigKey(
            "transaction.state.log.segment.bytes",
            _INT,
            "transaction_state_log_segment_bytes",
            at_least(1),
            "segment.bytes of __transaction_state.",
        ),
        ConfigKey(
            "transaction.state.log.replication.factor",
            ConfigType.SHORT,
            "transaction_state_log_replication_factor",
            at_least(1),
            "Replicas of __transaction_state.",
        ),
        ConfigKey(
            "transaction.state.log.min.isr",
            _INT,
            "transaction_state_log_min_isr",
            at_least(1),
            "min.insync.replicas of __transaction_state.",
        ),
        ConfigKey(
            "transaction.partition.verification.enable",
            ConfigType.BOOLEAN,
            "transaction_partition_verification_enable",
            None,
            "Whether a partition leader verifies with the transaction coordinator "
            "that a partition is in the producer's transaction before it appends "
            "the transaction's first batch there.",
        ),
    )
)
"""The transaction coordinator's keys."""
