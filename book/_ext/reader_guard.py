"""The reader build's guard, run as a hidden first cell of every executed page.

The reader build (``make book``) runs only cells that need nothing beyond the Python
workspace; book/_ext/reader.py leaves out the cells that need Java (Spark), ZooKeeper or
a cluster of broker processes. This guard makes a miss loud instead of silent: in the
kernel, a child process that would start Java, ZooKeeper or a minikafka broker or
controller raises, so a cell that needs one but was not left out fails the build, naming
the tag that leaves it out. The full build (``make book FULL=1``, ``make test``) never
runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from typing import Any

# What a command line starts, recognised in its words joined by spaces: (pattern, need).
_NEEDS = (
    (re.compile(r"(^|[\s/])(java|spark-submit|spark-class|pyspark)(\s|$)"), "java"),
    (re.compile(r"zookeeper|zkServer", re.IGNORECASE), "zookeeper"),
    # A broker or controller process (`python -m minikafka.broker broker|controller`,
    # `minikafka broker`, `minikafka cluster up`); the packages' tools are not servers.
    (
        re.compile(r"\bminikafka(\.broker)?\s+(broker|controller|cluster\s+up)\b"),
        "cluster",
    ),
)


def _needs(command: str | bytes | os.PathLike[str] | Sequence[Any]) -> str | None:
    words = [command] if isinstance(command, (str, bytes, os.PathLike)) else command
    line = " ".join(
        os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in words
    )
    for pattern, need in _NEEDS:
        if pattern.search(line):
            return need
    return None


_popen_init = subprocess.Popen.__init__


def _guarded_init(
    self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any
) -> None:
    need = _needs(args)
    if need is not None:
        raise RuntimeError(
            f"the reader build (make book) runs no cell that needs {need}: this one "
            f"starts {args!r}. Tag the cell `needs-{need}` (book/_ext/reader.py), or "
            "build with FULL=1."
        )
    _popen_init(self, args, *rest, **options)


subprocess.Popen.__init__ = _guarded_init  # type: ignore[method-assign]
