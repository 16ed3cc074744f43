"""The trace command, ``python -m minikafka.trace`` and ``minikafka trace``: ``summary``.

``summary DIR`` says what a trace directory holds, or the newest run of a folder of runs
(``traces/`` as ``make run`` writes it; ``--all`` for each). :data:`trace_app` is one typer
app: this package runs it alone, and the broker's ``minikafka`` command mounts it as
``trace``. A public module that ``minikafka.trace`` does not import: every component
imports the tracer, and none of them should load the command line's libraries.

Exit status: 0 fine, 1 a line that is not a trace event, 2 bad usage or not a directory.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from ._summary import summary_report

trace_app = typer.Typer(
    name="trace",
    help="Inspect trace directories (what --trace-dir and MINIKAFKA_TRACE_DIR write).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@trace_app.callback()
def _trace_group() -> None:
    """Inspect trace directories (what --trace-dir and MINIKAFKA_TRACE_DIR write)."""


@trace_app.command("summary")
def summary(
    directory: Annotated[
        Path,
        typer.Argument(
            help="a trace directory (MINIKAFKA_TRACE_DIR), or a folder of them, one per "
            "run (make run's traces/): its newest run"
        ),
    ],
    every_run: Annotated[
        bool, typer.Option("--all", help="in a folder of runs, summarize each run")
    ] = False,
) -> None:
    """Count events per component and event, with time range and nodes."""
    if not directory.is_dir():
        print(f"{directory}: not a directory", file=sys.stderr)
        raise typer.Exit(2)
    try:
        report = summary_report(directory, every_run=every_run)
    except ValueError as e:  # a line that is not JSON names its file and line
        print(f"Error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    print(report)


def run(argv: Sequence[str] | None = None) -> int:
    """Run :data:`trace_app` as ``python -m minikafka.trace``; return its exit status.

    What ``minikafka.common.run_app`` does (this package sits below that one): the status
    the command ended with is returned, and bad usage, shown, exits 2.
    """
    try:
        trace_app(
            args=None if argv is None else list(argv),
            prog_name="python -m minikafka.trace",
        )
    except SystemExit as exc:
        if isinstance(exc.__context__, typer.Exit) and isinstance(exc.code, int):
            return exc.code
        raise
    return 0
