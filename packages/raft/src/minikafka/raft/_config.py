"""The quorum's timing, under Kafka's configuration keys and defaults (KIP-595), declared
in a ConfigDef like every package's keys (:data:`QUORUM_CONFIG`).

- ``quorum.election.timeout.ms`` (1000): how long a voter without a leader waits before
  standing; each wait is this plus a random part as long again, so that two voters
  rarely stand at once.
- ``quorum.fetch.timeout.ms`` (2000): a follower that has not heard from its leader for
  this long stands for election (after a pre-vote); a leader that has not been fetched
  from by a majority for 1.5 times this resigns (check-quorum).
- ``quorum.election.backoff.max.ms`` (1000): the ceiling of the random, doubling wait
  after a lost election.
- ``quorum.request.timeout.ms`` (2000) and ``quorum.retry.backoff.ms`` (20): a request not
  answered within the first is given up; a destination is asked again after the second.

The last three fields are internal in Kafka too: how long a leader holds a fetch that
found nothing new (``FETCH_MAX_WAIT_MS``, 500 ms), how many entries one fetch returns and
how many bytes one FetchSnapshot chunk carries.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import ConfigDef, ConfigError, ConfigKey


@attrs.frozen
class RaftConfig:
    """Times in seconds, as every core of minikafka takes ``now``."""

    election_timeout: float = 1.0
    fetch_timeout: float = 2.0
    election_backoff_max: float = 1.0
    request_timeout: float = 2.0
    retry_backoff: float = 0.02
    fetch_max_wait: float = 0.5
    fetch_max_entries: int = 100
    snapshot_chunk_bytes: int = 64 * 1024

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> RaftConfig:
        """The ``quorum.*`` keys of a server.properties; other keys are left alone."""
        return QUORUM_CONFIG.apply(cls(), properties)


def _positive_ms_as_seconds(key: str, raw: str) -> float:
    try:
        ms = int(raw)
    except ValueError:
        raise ConfigError(key, "must be a whole number of milliseconds") from None
    if ms <= 0:
        raise ConfigError(key, f"must be positive, not {ms}")
    return ms / 1000


def _key(name: str, field: str, doc: str) -> ConfigKey:
    return ConfigKey(name, _positive_ms_as_seconds, field, doc=doc)


QUORUM_CONFIG = ConfigDef(
    (
        _key("quorum.election.timeout.ms", "election_timeout", "Wait before standing."),
        _key(
            "quorum.fetch.timeout.ms",
            "fetch_timeout",
            "Silence before a follower stands.",
        ),
        _key(
            "quorum.election.backoff.max.ms",
            "election_backoff_max",
            "Ceiling of the wait after a lost election.",
        ),
        _key(
            "quorum.request.timeout.ms",
            "request_timeout",
            "A request is given up after.",
        ),
        _key("quorum.retry.backoff.ms", "retry_backoff", "Wait before asking again."),
    )
)
