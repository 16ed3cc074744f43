"""A preferred leader election left unanswered is what the cluster did, not a failed
step, however the wait ends: chaos seed 174's ``elect-leaders`` (its ElectLeaders sent
to brokers cut off from the active controller) answered librdkafka's ``_TIMED_OUT`` at
its start, and at its heal the 60 s wait on the future ran out first, a
``TimeoutError`` recorded as the step's error."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

from chaos import operations


class _Unanswering:
    """An admin client whose ElectLeaders is never answered."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def list_topics(self, topic: str, timeout: float) -> Any:
        partitions = {0: SimpleNamespace(replicas=[1, 2]), 1: SimpleNamespace()}
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=partitions)})

    def elect_leaders(self, election_type: Any, partitions: Any) -> Future[Any]:
        return Future()


def test_an_election_unanswered_within_the_wait_is_said_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(operations, "AdminClient", _Unanswering)
    monkeypatch.setattr(operations, "ELECT_WAIT", 0.05)
    said = operations.elect_preferred("127.0.0.1:9", "chaos")
    assert said == "elect-leaders PREFERRED unanswered within 0.05s"
