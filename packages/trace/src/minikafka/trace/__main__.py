"""``python -m minikafka.trace summary DIR``: what a trace directory holds, or the newest
run of a folder of runs (``traces/`` as ``make run`` writes it; ``--all`` for each). The
command is :mod:`.cli`'s, which ``minikafka trace`` mounts too."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .cli import run


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
