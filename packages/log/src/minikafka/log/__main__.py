"""``python -m minikafka.log``: Kafka's ``kafka-dump-log.sh`` for minikafka's log files.

    dump PATH [--deep] [--index]   batches of a segment or partition directory, or index,
                                   .txnindex or .snapshot entries
    verify PATH                    check every batch (length, magic, CRC-32C, offsets)
    demo [--dir DIR] [--keep]      write a small log that rolls segments, and walk through it

Exit status: 0 fine, 1 a corrupt batch or index, 2 a missing or unrecognised PATH.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import run_app

from ._demo import demo
from ._tool import PathError, dump, verify

app = typer.Typer(
    name="python -m minikafka.log",
    help="Dump and verify minikafka log segments and indexes (kafka-dump-log.sh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """Dump and verify minikafka log segments and indexes (kafka-dump-log.sh)."""


def _run(tool: Callable[[], int]) -> None:
    """Run a tool, exit with its status; a bad PATH exits 2, as usage errors do."""
    try:
        status = tool()
    except PathError as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(2) from None
    except BrokenPipeError:
        # `dump DIR | head`: the reader has seen enough. Point stdout at /dev/null so
        # the interpreter's final flush does not fail a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    raise typer.Exit(status)


@app.command("dump")
def dump_command(
    path: Annotated[
        Path,
        typer.Argument(
            help=(
                "a .log, .index, .timeindex, .txnindex or .snapshot file, or a "
                "partition directory"
            )
        ),
    ],
    deep: Annotated[
        bool, typer.Option("--deep", help="also print every record (--deep-iteration)")
    ] = False,
    index: Annotated[
        bool, typer.Option("--index", help="also print each segment's index entries")
    ] = False,
) -> None:
    """Print each batch (or index entry), like kafka-dump-log.sh --files."""
    _run(lambda: dump(path, sys.stdout, deep=deep, index=index))


@app.command("verify")
def verify_command(
    path: Annotated[Path, typer.Argument(help="a .log file or a partition directory")],
) -> None:
    """Check every batch's structure, CRC-32C and offsets."""
    _run(lambda: verify(path, sys.stdout))


@app.command("demo")
def demo_command(
    dir: Annotated[
        Path | None,
        typer.Option("--dir", help="write it here (default: a temp dir)"),
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="keep the temp dir")] = False,
) -> None:
    """Write a small log and walk through it."""
    _run(lambda: demo(sys.stdout, dir, keep=keep))


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.log")


if __name__ == "__main__":
    sys.exit(main())
