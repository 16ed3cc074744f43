"""``python -m minikafka.trace summary DIR``: what a trace directory holds, or the newest
run of a folder of runs (``traces/`` as ``make run`` writes it; ``--all`` for each)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._summary import summary_report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minikafka.trace",
        description="Inspect minikafka trace files (JSON Lines).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    summary = commands.add_parser(
        "summary",
        help="count events per component and event, with time range and nodes",
    )
    summary.add_argument(
        "directory",
        type=Path,
        help="a trace directory (MINIKAFKA_TRACE_DIR), or a folder of them, one per run "
        "(make run's traces/): its newest run",
    )
    summary.add_argument(
        "--all", action="store_true", help="in a folder of runs, summarize each run"
    )
    args = parser.parse_args(argv)

    directory: Path = args.directory
    if not directory.is_dir():
        print(f"{directory}: not a directory", file=sys.stderr)
        return 2
    try:
        print(summary_report(directory, every_run=args.all))
    except ValueError as e:  # a line that is not JSON names its file and line
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
