"""Produce's ``acks``: when the leader may answer a producer.

The wire carries an int16 and Kafka's producer documents three values; anything else
is answered with INVALID_REQUIRED_ACKS. Naming them lets the produce path say
``Acks.ALL`` where it used to compare with -1.
"""

from __future__ import annotations

import enum


class Acks(enum.IntEnum):
    ALL = -1
    """Once every in-sync replica has the batch (the high watermark passed it)."""
    NONE = 0
    """Never: no response at all (an error closes the connection instead)."""
    LEADER = 1
    """Once the leader has appended the batch to its own log."""

    @classmethod
    def parse(cls, value: int) -> Acks | None:
        """The Acks for a wire value; None for one Kafka refuses."""
        # A table, not the enum's constructor: this runs on every Produce request.
        return _BY_VALUE.get(value)


_BY_VALUE = {acks.value: acks for acks in Acks}
