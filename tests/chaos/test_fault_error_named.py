"""A fault step that fails is recorded with what its exception says, and with the
exception's type when it says nothing: chaos seed 142's two ``elect-leaders`` steps,
most likely ElectLeaders unanswered within the 60 s a future was given, were recorded
as ``start: `` and nothing more, a future's ``TimeoutError`` having no text."""

from __future__ import annotations

from typing import cast

import pytest

from chaos import operations
from chaos.faults import Injector, said
from chaos.nemesis import Fault
from minikafka.broker.testing import ProcessCluster


def _unanswered(servers: str, topic: str) -> str:
    raise TimeoutError  # what concurrent.futures raises when result() times out


def test_a_step_whose_exception_has_no_text_is_named_by_its_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(operations, "elect_preferred", _unanswered)
    cluster = cast(ProcessCluster, object())  # an admin step touches no node
    injector = Injector(cluster, zookeeper=False, servers="127.0.0.1:9")
    injector.start(Fault(1.0, 2.0, "elect-leaders"), now=1.0)
    [record] = injector.done
    assert record.started is None
    assert record.error == "start: TimeoutError"


def test_an_exception_with_text_is_recorded_as_it_says() -> None:
    assert said(RuntimeError("AlterPartitionReassignments timed out")) == (
        "AlterPartitionReassignments timed out"
    )
    assert said(TimeoutError()) == "TimeoutError"
