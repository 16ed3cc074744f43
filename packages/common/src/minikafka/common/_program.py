"""Start-up of a minikafka program: leave out the test-data library kio would load.

kio, the protocol codec every layer uses, imports hypothesis whenever it is installed, to
register test-data strategies for its types. In the workspace's environment it is
installed (the tests use it), and importing it, with the plugins it loads in turn (trio's
testing module, which imports pytest), costs every broker process about a second of
start-up and 16 MiB of memory: paid again by each broker a cluster test starts or
restarts and by each ``minikafka`` command (measured with ``python -X importtime -m
minikafka.broker --help``: 3.0 s with it, 2.0 s without, on the 2-core machine).

A program never draws test data, so when this process was started as one (``python -m
minikafka.<package>`` or the ``minikafka`` command) hypothesis is marked absent before
kio is first imported, and kio takes the branch it has for an environment without it. A
test process has imported hypothesis already, or was not started as a minikafka program,
and is left alone.
"""

from __future__ import annotations

import os
import sys


def started_as_program(argv: list[str]) -> bool:
    """Whether ``argv`` (``sys.argv`` while packages are being imported) is a program's."""
    first = argv[0] if argv else ""
    # While ``python -m X`` imports X's parent packages, sys.argv[0] is "-m" (Python's
    # documentation of -m); a console script's is its path.
    return first == "-m" or os.path.basename(first) == "minikafka"


def leave_out_hypothesis() -> None:
    if "hypothesis" not in sys.modules and started_as_program(sys.argv):
        # None in sys.modules makes ``import hypothesis`` raise ImportError.
        sys.modules["hypothesis"] = None  # type: ignore[assignment]


leave_out_hypothesis()  # on import: minikafka.common's __init__ imports this module first
