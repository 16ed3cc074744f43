"""The ports tests name before anything listens: processes side by side never share one
(minikafka.common.testing)."""

from __future__ import annotations

import pytest

from minikafka.common.testing import (
    PORTS_ENV,
    RUN_ENV,
    free_ports,
    split_ports,
    worker_ports,
)


def test_slices_of_a_range_do_not_overlap_and_stay_inside_it() -> None:
    ports = range(20000, 23001)
    slices = split_ports(ports, 3)
    assert len(slices) == 3
    taken = [p for s in slices for p in s]
    assert len(taken) == len(set(taken)), "two slices share a port"
    assert all(p in ports for p in taken)
    assert min(len(s) for s in slices) == len(ports) // 3


def test_a_process_given_a_slice_hands_out_ports_only_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PORTS_ENV, "41000-41100")
    assert worker_ports() == range(41000, 41100)
    for _ in range(30):  # round the slice more than once
        assert all(41000 <= p < 41100 for p in free_ports(7))


def test_runs_side_by_side_and_their_workers_never_share_a_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PORTS_ENV, raising=False)
    taken: list[range] = []
    for run in ("0/3", "1/3", "2/3"):
        monkeypatch.setenv(RUN_ENV, run)
        for worker in range(4):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
            monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
            taken.append(worker_ports())
    ports = [p for each in taken for p in each]
    assert len(ports) == len(set(ports)), "two workers of the runs share a port"
    assert min(len(each) for each in taken) >= 1000
