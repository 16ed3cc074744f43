"""quorum-state on disk in Kafka's format, and the quorum.* configuration keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikafka.common import ConfigError
from minikafka.raft import ElectionState, FileStateStore, RaftConfig


def test_quorum_state_is_written_in_kafkas_format_and_read_back(tmp_path: Path) -> None:
    store = FileStateStore(tmp_path, voters=[1, 2, 3])
    assert store.read() is None  # a node that never wrote one
    store.write(ElectionState(epoch=7, leader_id=None, voted_id=2))
    body = json.loads((tmp_path / "quorum-state").read_text())
    assert body["leaderEpoch"] == 7
    assert body["leaderId"] == -1  # Kafka's "none"
    assert body["votedId"] == 2
    assert body["currentVoters"] == [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}]
    assert FileStateStore(tmp_path, voters=[1, 2, 3]).read() == ElectionState(
        7, None, 2
    )
    store.write(ElectionState(epoch=8, leader_id=3))
    assert store.read() == ElectionState(8, 3, None)
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, renamed


def test_the_quorum_keys_are_read_in_milliseconds_and_bad_values_name_the_key() -> None:
    config = RaftConfig.from_properties(
        {"quorum.election.timeout.ms": "1500", "quorum.fetch.timeout.ms": "3000"}
    )
    assert (config.election_timeout, config.fetch_timeout) == (1.5, 3.0)
    assert RaftConfig.from_properties({}) == RaftConfig()
    with pytest.raises(
        ConfigError, match=r"^quorum\.fetch\.timeout\.ms: must be a whole"
    ):
        RaftConfig.from_properties({"quorum.fetch.timeout.ms": "soon"})
    with pytest.raises(
        ConfigError, match=r"^quorum\.retry\.backoff\.ms: must be positive"
    ):
        RaftConfig.from_properties({"quorum.retry.backoff.ms": "0"})
