"""``python -m minikafka.trace summary DIR``: what a trace directory holds."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._files import read_trace, trace_files
from ._summary import format_summary, summarize


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
        "directory", type=Path, help="a trace directory (MINIKAFKA_TRACE_DIR)"
    )
    args = parser.parse_args(argv)

    directory: Path = args.directory
    if not directory.is_dir():
        print(f"{directory}: not a directory", file=sys.stderr)
        return 2
    files = trace_files(directory)
    if not files:
        print(f"{directory}: no trace files (*.jsonl)")
        return 0
    print(f"{directory}: {len(files)} trace file(s)")
    print(format_summary(summarize(read_trace(directory))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
