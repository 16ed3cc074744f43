"""An added broker's heal shuts it down only once its replicas are moved back: a move
back the controller never completed (it was moving, chaos seeds 133 and 135) is sent
again, and if it still does not complete the broker is left running, as an operator
would, rather than leave its partitions short of a replica for good."""

from __future__ import annotations

from typing import Any

import pytest

from chaos import membership, operations


class Cluster:
    def __init__(self) -> None:
        self.stopped: list[int] = []
        self.zookeeper_mode = True

    def stop(self, node: int, timeout: float = 60.0) -> None:
        self.stopped.append(node)


def _answers(monkeypatch: pytest.MonkeyPatch, *said: str) -> list[dict[int, list[int]]]:
    sent: list[dict[int, list[int]]] = []
    replies = iter(said)

    def moved(
        servers: str, topic: str, target: dict[int, list[int]], *, wait: bool
    ) -> tuple[str, bool]:
        assert wait
        sent.append(target)
        return next(replies), True

    monkeypatch.setattr(membership, "_moved", moved)
    return sent


HOME = {0: [0, 1, 2], 1: [1, 2, 0]}


def test_a_move_back_that_completes_shuts_the_broker_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _answers(monkeypatch, "started; completed")
    cluster: Any = Cluster()
    said = membership.retire_broker(cluster, 5, "s", "chaos", HOME)
    assert sent == [HOME]
    assert cluster.stopped == [5]
    assert "broker 5 shut down" in said


def test_a_move_back_not_completed_is_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _answers(
        monkeypatch, "refused: NOT_CONTROLLER", "started; completed", "unused"
    )
    cluster: Any = Cluster()
    membership.retire_broker(cluster, 5, "s", "chaos", HOME)
    assert sent == [HOME, HOME]
    assert cluster.stopped == [5]


def test_a_broker_whose_replicas_never_moved_back_is_left_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _answers(monkeypatch, *["started; not completed within 30s"] * 2)
    cluster: Any = Cluster()
    said = membership.retire_broker(cluster, 5, "s", "chaos", HOME)
    assert len(sent) == membership.RETIRE_TRIES
    assert cluster.stopped == []
    assert said.endswith("broker 5 left running, its replicas not moved back")


def test_nothing_moved_onto_it_shuts_it_down_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _answers(monkeypatch)
    cluster: Any = Cluster()
    said = membership.retire_broker(cluster, 5, "s", "chaos", {})
    assert sent == []
    assert cluster.stopped == [5]
    assert said.startswith("nothing to move back; broker 5 shut down")


@pytest.mark.parametrize(("per_partition", "moved"), [(True, True), (False, False)])
def test_a_move_refused_for_some_partitions_counts_as_moved(
    monkeypatch: pytest.MonkeyPatch, per_partition: bool, moved: bool
) -> None:
    """A refusal before anything was sent (a broker not registered, by Kafka's tool)
    moved nothing; one the controller gave per partition may have moved the others,
    which the heal then moves back (chaos seed 141: one partition of four moved onto
    an added broker the heal then shut down)."""

    def reassign(servers: str, topic: str, target: dict[int, list[int]]) -> str:
        raise operations.RefusedError(
            "reassign-partitions exited 1: chaos-3: refused",
            per_partition=per_partition,
        )

    monkeypatch.setattr(operations, "reassign", reassign)
    said, done = membership._moved("s", "chaos", HOME, wait=False)
    assert said.startswith("refused: ")
    assert done is moved
