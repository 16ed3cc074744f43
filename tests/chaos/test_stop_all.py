"""The workloads' end (``chaos.workload.stop_all``): every worker is told to stop at
once and waited for within one bound, so the producers' flushes overlap instead of
running one after another (chaos seed 126 spent 300 s in two 150 s flushes, one after
the other), and a worker whose end failed, or that is still running, is named."""

from __future__ import annotations

import threading

from chaos.workload import _Worker, stop_all


class Finisher(_Worker):
    """A worker whose ``finish`` runs ``end``."""

    def __init__(self, name: str, end: threading.Barrier | Exception | None) -> None:
        super().__init__(name)
        self._end = end
        self.finished = threading.Event()

    def step(self) -> None:
        self._stopping.wait(1.0)

    def finish(self) -> None:
        if isinstance(self._end, threading.Barrier):
            self._end.wait()  # BrokenBarrierError after its timeout
        elif isinstance(self._end, Exception):
            raise self._end
        self.finished.set()


def test_workers_finish_together_not_one_after_another() -> None:
    """Each worker's finish waits until all three are finishing: only a stop that tells
    every worker before waiting for any lets the three meet."""
    meeting = threading.Barrier(3, timeout=60.0)
    workers = [Finisher(f"w{n}", meeting) for n in range(3)]
    for worker in workers:
        worker.start()
    assert stop_all(workers, timeout=120.0) == []
    assert all(w.finished.is_set() for w in workers)


def test_an_end_that_failed_is_named() -> None:
    """A worker whose finish raised (kafka-python's flush timing out raised so) is
    reported, not lost with its thread."""
    worker = Finisher("chaos-producer-2", RuntimeError("flush timed out"))
    worker.start()
    assert stop_all([worker], timeout=60.0) == [
        "chaos-producer-2: RuntimeError('flush timed out')"
    ]


def test_a_worker_still_running_after_the_bound_is_named() -> None:
    """The wait is bounded: a worker that has not ended by then is named, and the run
    goes on."""
    never = threading.Barrier(2, timeout=None)  # nobody else comes
    worker = Finisher("chaos-consumer-100", never)
    worker.start()
    try:
        notes = stop_all([worker], timeout=0.5)
    finally:
        never.abort()  # lets the thread end
    assert notes == ["chaos-consumer-100: still running 0.5s after it was stopped"]
