"""How a node of a :class:`~._process_cluster.ProcessCluster` ended: the tracebacks in
its log, the words for its exit status, and :class:`NodeCrash`, a node that ended
without being told to or wrote a traceback (what the tests fail a test on)."""

from __future__ import annotations

import re
import signal

import attrs

TRACEBACK = "Traceback (most recent call last)"
"""What Python prints first of an exception it did not expect (an exception group's too)."""
ENDING_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT})
"""Signals that tell a node to end: its exit after one is no crash."""

# The gutter of an exception group's traceback ("  | ", "    +-+---- 1 ----").
_GUTTER = re.compile(r"^(?:[ ]*[|+][ ]?)*")
# What ends a traceback: the exception, "ValueError: ..." or "pkg.mod.Error" (no indent).
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
_CHAINING = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


def tracebacks(text: str) -> list[tuple[int, str]]:
    """Every complete Python traceback in ``text`` (a process's output), with the number
    of its first line (from 1): from its ``Traceback (most recent call last):`` line,
    through chained and grouped ones, to its last exception line. A traceback cut short
    before any exception line (its process killed while printing it) is not one: what
    the process was about to say is unknown."""
    if TRACEBACK not in text:
        return []
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        if TRACEBACK not in lines[i]:
            i += 1
            continue
        start, last_exception = i, -1
        i += 1
        while i < len(lines):
            line = _GUTTER.sub("", lines[i], count=1)
            if TRACEBACK in line:
                pass  # a chained or grouped one: the same traceback goes on
            elif line.startswith(" ") or not line.strip() or line in _CHAINING:
                pass  # a frame, its code, a blank line
            elif line.startswith(("-", "...")):
                pass  # an exception group's separator, or "... (N more exceptions)"
            elif _EXCEPTION_LINE.match(line):
                last_exception = i
            else:
                break  # a log line, or the next run's first: the traceback is over
            i += 1
        if last_exception >= 0:
            found.append((start + 1, "\n".join(lines[start : last_exception + 1])))
    return found


def describe_exit(returncode: int) -> str:
    """``exited with status 1``, or ``died of SIGSEGV`` (a negative Popen returncode)."""
    if returncode < 0:
        try:
            return f"died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died of signal {-returncode}"
    return f"exited with status {returncode}"


@attrs.frozen
class NodeCrash:
    """A node's process that ended without being told to, or wrote a traceback."""

    node: int
    what: str
    """``(pid 123) exited with status 1 without being told to``, or ``wrote a traceback
    to .../node-1.log (line 40)``: a crash's identity (two are equal if these are)."""
    detail: str = attrs.field(default="", eq=False)
    """The traceback, or the end of the node's log when it was found."""

    def __str__(self) -> str:
        text = f"node {self.node} {self.what}"
        return f"{text}:\n{self.detail}" if self.detail else text
