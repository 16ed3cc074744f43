"""``python -m minikafka.log``: Kafka's ``kafka-dump-log.sh`` for minikafka's log files.

    dump PATH [--deep] [--index]   batches of a segment or partition directory, or index entries
    verify PATH                    check every batch (length, magic, CRC-32C, offsets)
    demo [--dir DIR] [--keep]      write a small log that rolls segments, and walk through it

Exit status: 0 fine, 1 a corrupt batch or index, 2 a missing or unrecognised PATH.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from minikafka.common import subcommand_parser

from ._demo import demo
from ._tool import PathError, dump, verify


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = subcommand_parser(
        "python -m minikafka.log",
        "Dump and verify minikafka log segments and indexes (kafka-dump-log.sh).",
        {
            "dump": "print each batch (or index entry), like kafka-dump-log.sh --files",
            "verify": "check every batch's structure, CRC-32C and offsets",
            "demo": "write a small log and walk through it",
        },
    )
    commands["dump"].add_argument(
        "path",
        type=Path,
        help="a .log, .index or .timeindex file, or a partition directory",
    )
    commands["dump"].add_argument(
        "--deep", action="store_true", help="also print every record (--deep-iteration)"
    )
    commands["dump"].add_argument(
        "--index", action="store_true", help="also print each segment's index entries"
    )
    commands["verify"].add_argument(
        "path", type=Path, help="a .log file or a partition directory"
    )
    commands["demo"].add_argument(
        "--dir", type=Path, help="write it here (default: a temp dir)"
    )
    commands["demo"].add_argument(
        "--keep", action="store_true", help="keep the temp dir"
    )
    args = parser.parse_args(argv)

    try:
        if args.command == "dump":
            return dump(args.path, sys.stdout, deep=args.deep, index=args.index)
        if args.command == "verify":
            return verify(args.path, sys.stdout)
        return demo(sys.stdout, args.dir, keep=args.keep)
    except PathError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `dump DIR | head`: the reader has seen enough. Point stdout at /dev/null so
        # the interpreter's final flush does not fail a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
