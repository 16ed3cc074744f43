"""The ports tests name before anything listens: processes side by side never share one
(minikafka.common.testing)."""

from __future__ import annotations

import pytest

from minikafka.common.testing import PORTS_ENV, free_ports, split_ports, worker_ports


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
