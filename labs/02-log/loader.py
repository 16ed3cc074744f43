"""Lab 2, exercise ``recovery`` (second half): which segments a broker rescans after a
crash, and what it drops (the Log chapter, "Recovery after a crash"; Kafka's
``LogLoader.recoverLog``).

:func:`recover_log` is ``minikafka.log._loader._recover``, switched in by
``make lab 2 EX=recovery``. The loader calls it when a log directory has no
clean-shutdown marker, with the log's segments in offset order and its recovery point
(every offset below it was fsynced). Each segment's own rescan is your ``recover``
(``segment.py``): ``segment.recover()`` returns the bytes it cut. A segment that is
dropped is first closed and then removed: ``segment.close_handlers()``,
``segment.delete_files()``.
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.log._segment import LogSegment

FILE = "labs/02-log/loader.py"

__all__ = ["recover_log"]


def recover_log(segments: list[LogSegment], recovery_point: int) -> tuple[int, int]:
    """Rescan the segments from the one holding ``recovery_point`` (the last whose base
    offset is at or below it; the first segment if none is), in order, and stop at the
    first one whose rescan cut bytes, or that the next segment does not continue (its
    base offset is not this one's ``next_offset``): every later segment is dropped,
    from ``segments`` too. Returns ``(segments rescanned, bytes cut)``, the dropped
    segments' sizes counted as cut.

    Segments before the recovery point's are not read at all: they were fsynced, and a
    restart after a crash must not read the whole disk.
    """
    raise ExerciseNotDone("recover_log", "from the recovery point's segment on", FILE)
