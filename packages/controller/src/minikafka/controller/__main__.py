"""``python -m minikafka.controller``: the controller's decisions, runnable alone.

    assign --brokers 1000-1004 --partitions 10 --replication-factor 3 [--start-index I]
           [--replica-shift S] [--racks a,a,b,b,c] [--json]
                                  replica placement as seed 001's tables show it
    replay DIR                    print the MetadataImage stored in a metadata log

Exit status: 0 fine, 1 a refused assignment or a log that ends in a torn batch, 2 bad usage
or a directory without a metadata log.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from minikafka.common import subcommand_parser

from ._assign_cmd import add_assign_arguments, run_assign
from ._tool import ReplayError, print_replay


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = subcommand_parser(
        "python -m minikafka.controller",
        "Replica placement and the KRaft metadata log of minikafka's controller.",
        {
            "assign": "place partitions' replicas on brokers, as AdminUtils does",
            "replay": "print the image a metadata log holds",
        },
    )
    add_assign_arguments(commands["assign"])
    commands["replay"].add_argument(
        "dir",
        type=Path,
        help="a metadata dir (holding __cluster_metadata-0) or that partition",
    )
    args = parser.parse_args(argv)
    if args.command == "assign":
        return run_assign(args, sys.stdout)
    try:
        return print_replay(args.dir, sys.stdout)
    except ReplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
