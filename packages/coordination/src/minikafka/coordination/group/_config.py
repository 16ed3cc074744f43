"""The broker's group settings (Kafka's ``group.*`` and ``offsets.*`` configs)."""

from __future__ import annotations

import attrs

__all__ = ["MAX_PROTOCOL_STRING", "NEW_MEMBER_JOIN_TIMEOUT_MS", "GroupConfig"]

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a new member's JoinGroup may stay parked before the member is dropped
(Kafka's ``NewMemberJoinTimeoutMs``): its client may have given up and rejoined."""
MAX_PROTOCOL_STRING = 2**15 - 1
"""The longest string the protocol carries (int16 length): a member id must fit."""


@attrs.frozen
class GroupConfig:
    """The broker's group settings (Kafka's ``group.*`` configs)."""

    group_min_session_timeout_ms: int = attrs.field(default=6000, validator=attrs.validators.gt(0))
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = attrs.field(
        default=3000, validator=attrs.validators.ge(0)
    )
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = attrs.field(default=50, validator=attrs.validators.gt(0))
    offsets_retention_minutes: int = attrs.field(
        default=7 * 24 * 60, validator=attrs.validators.gt(0)
    )
    offsets_retention_check_interval_ms: int = attrs.field(
        default=600_000, validator=attrs.validators.gt(0)
    )
    offset_metadata_max_bytes: int = 4096
