"""Wrong on purpose: which segments recovery rescans and drops, each function wrong in
one way.

Each is minikafka's ``_loader._recover`` with one knob of :func:`recover` turned;
mutants.toml switches one function in at a time.
"""

from __future__ import annotations

from minikafka.log._segment import LogSegment


def recover(
    segments: list[LogSegment],
    recovery_point: int,
    *,
    only_last: bool = False,
    every: bool = False,
    drop_after_cut: bool = True,
    drop_after_gap: bool = True,
) -> tuple[int, int]:
    """minikafka's rescan from the recovery point's segment, unless a knob says
    otherwise."""
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = i
    if only_last:
        first = len(segments) - 1
    if every:
        first = 0
    recovered = 0
    for i in range(first, len(segments)):
        truncated = segments[i].recover()
        recovered += 1
        gap = i + 1 < len(segments) and (
            segments[i + 1].base_offset != segments[i].next_offset
        )
        if (truncated and drop_after_cut) or (gap and drop_after_gap):
            for doomed in segments[i + 1 :]:
                truncated += doomed.size
                doomed.close_handlers()
                doomed.delete_files()
            del segments[i + 1 :]
            return recovered, truncated
    return recovered, 0


def only_the_last_segment(
    segments: list[LogSegment], recovery_point: int
) -> tuple[int, int]:
    """Rescans the active segment alone, whatever the recovery point."""
    return recover(segments, recovery_point, only_last=True)


def every_segment(segments: list[LogSegment], recovery_point: int) -> tuple[int, int]:
    """Rescans every segment, the fsynced ones before the recovery point too."""
    return recover(segments, recovery_point, every=True)


def keeps_later_segments(
    segments: list[LogSegment], recovery_point: int
) -> tuple[int, int]:
    """Goes on after a cut: the segments after it are kept."""
    return recover(segments, recovery_point, drop_after_cut=False)


def keeps_segment_after_gap(
    segments: list[LogSegment], recovery_point: int
) -> tuple[int, int]:
    """A segment that does not start where the one before it ends is kept."""
    return recover(segments, recovery_point, drop_after_gap=False)
