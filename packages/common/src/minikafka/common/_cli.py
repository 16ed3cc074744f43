"""How every ``python -m minikafka.<package>`` runs: one typer app, called with its argv.

Each package declares its program as a typer app, as the ``minikafka`` command does (its
commands, flags and help in one place, which ``minikafka`` can mount as they are);
:func:`run_app` runs it the way a program's ``main(argv) -> int`` does, so the package's
``__main__`` and its tests call the same function:

- what a command ends with (``typer.Exit(status)``, or 0 when it returns) is returned;
- bad usage is shown and exits 2 (``SystemExit``), as argparse did and click does;
  :func:`usage_error` is how a command refuses values that typer's own checks let
  through (argparse's ``parser.error``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, Protocol


class _Context(Protocol):
    def get_usage(self) -> str: ...


def run_app(
    app: Callable[..., object], argv: Sequence[str] | None, prog_name: str
) -> int:
    """Run a typer ``app`` on ``argv`` (``None``: the process's) and return its exit status.

    Typer ends every run with ``SystemExit``; the command's own status is the one raised
    while handling the ``typer.Exit`` its run ended with (a command that returns ends
    with ``Exit(0)``). Any other (a usage error shown, an abort) goes on exiting.
    """
    import typer  # here: importing minikafka.common must not load the CLI's libraries

    try:
        app(args=None if argv is None else list(argv), prog_name=prog_name)
    except SystemExit as exc:
        if isinstance(exc.__context__, typer.Exit) and isinstance(exc.code, int):
            return exc.code
        raise
    return 0


def usage_error(ctx: _Context, message: str) -> NoReturn:
    """Refuse the command line as argparse's ``parser.error`` did: the usage line and
    ``message`` on stderr, exit status 2 (``ctx``: the command's ``typer.Context``)."""
    print(ctx.get_usage(), file=sys.stderr)
    print(f"Error: {message}", file=sys.stderr)
    raise SystemExit(2)
