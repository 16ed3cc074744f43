"""How both coordinators' shells run what calls their cores: an operation that raises
is answered with its error and the coordinator goes on (Kafka's
``CoordinatorRuntime``/``GroupCoordinatorShell.handleOperationException``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, FailureLog, FatalFaultError

from .group._results import store_group_error

__all__ = ["guard_operation"]

_T = TypeVar("_T")


def guard_operation(
    failures: FailureLog,
    operation: str,
    call: Callable[[], _T],
    failed: Callable[[ErrorCode], _T],
    then: str,
) -> _T:
    """``call()``; if it raises, ``failed(error)`` with the error the client is told
    (``then`` says what happens next in the log line; ``{error}`` is that error).

    The error is Kafka's mapping (the same as a failed write's, ``store_group_error``):
    an exception that carries an error code gives that code, anything else
    UNKNOWN_SERVER_ERROR. It is logged at ERROR with the traceback the first time, and
    only at DEBUG while the same operation keeps failing the same way (a bug hit by
    every heartbeat would bury everything else); ``trio.Cancelled`` is a BaseException
    and passes through, and so does a ``FatalFaultError``, which ends the process.
    """
    try:
        result = call()
    except FatalFaultError:
        raise  # the process cannot go on (minikafka.common): not ours to answer
    except Exception as exc:
        code = exc.error_code if isinstance(exc, ApiError) else None
        error = store_group_error(code or ErrorCode.unknown_server_error)
        outcome = then.format(error=error.name.upper())
        failures.failed(operation, operation, exc, outcome)
        return failed(error)
    failures.succeeded(operation, operation)
    return result
