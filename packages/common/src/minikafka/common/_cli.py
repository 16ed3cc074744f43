"""How every ``python -m minikafka.<package>`` runs: one typer app, called with its argv.

Each package declares its program as a typer app, as the ``minikafka`` command does (its
commands, flags and help in one place, which ``minikafka`` can mount as they are);
:func:`run_app` runs it the way a program's ``main(argv) -> int`` does: usage, ``--help``
and exit status 2 on bad usage are click's, and the exit status is returned rather than
raised, so the package's ``__main__`` and its tests call the same function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def run_app(
    app: Callable[..., object], argv: Sequence[str] | None, prog_name: str
) -> int:
    """Run a typer ``app`` on ``argv`` (``None``: the process's) and return its exit status."""
    try:
        app(args=None if argv is None else list(argv), prog_name=prog_name)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        raise
    return 0
