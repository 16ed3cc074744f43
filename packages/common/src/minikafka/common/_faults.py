"""Faults the process cannot go on after: Kafka's fault handlers (KIP-859).

Kafka names two ways to meet an exception nobody expected. A *non-fatal* fault (an event
of the controller that failed, a snapshot that could not be written) is logged, and the
component goes on: Kafka's ``LoggingFaultHandler``. A *fatal* one (a committed record that
cannot be replayed, a snapshot that cannot be applied, the Raft client's thread dying)
leaves a node whose state nobody can vouch for; Kafka's ``ProcessTerminatingFaultHandler``
logs one line and ends the process, and the other nodes take over.

Ending a trio program from deep inside it is an exception: :class:`FatalFaultError`
travels up through the nurseries (every ``finally`` still runs: logs are closed, waiters
answered) to the top of the process, which logs its one line at ERROR and exits with 1.
It is made where the fault struck with :meth:`FatalFaultError.caused_by`, Kafka's
``throw fatalFaultHandler.handleFault(message, cause)``: the message says in one line
what failed and why; the cause's traceback goes to the log at DEBUG, not to the terminal.
"""

from __future__ import annotations

import logging


class FatalFaultError(Exception):
    """A fault this process must not go on after; ``str()`` is one line saying what failed.

    Not an :class:`~minikafka.common.ApiError`: no request is answered with it. Whoever
    catches exceptions to keep a task alive lets this one through.
    """

    def __init__(self, message: str) -> None:
        # One line, whatever the cause's text held: it is the process's last word.
        super().__init__(" ".join(message.split()))

    @classmethod
    def caused_by(
        cls, what: str, cause: BaseException, logger: logging.Logger
    ) -> FatalFaultError:
        """The fault ``what`` (``"replaying the record at offset 57"``) failed with
        ``cause``: ``raise FatalFaultError.caused_by(what, exc, _logger) from exc``. The
        message names the cause's type and text; ``logger`` gets its traceback at DEBUG."""
        fault = cls(f"{what} failed: {type(cause).__name__}: {cause}")
        logger.debug("fatal fault: %s", fault, exc_info=cause)
        return fault


__all__ = ["FatalFaultError"]
