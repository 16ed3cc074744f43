"""FailureLog: a step that runs again and again logs each failure once.

A background task runs every few seconds, a request handler for every heartbeat: the
same traceback each time would bury everything else in the log. Kafka's
``KafkaScheduler`` and ``ShutdownableThread`` log an uncaught exception and keep going;
every shell here does the same, and says it once: ERROR with the traceback for a new
failure, the same failure again only at DEBUG, INFO once the step succeeds again.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

import attrs


@attrs.define(eq=False)
class FailureLog:
    logger: logging.Logger
    _last: dict[Hashable, str] = attrs.field(init=False, factory=dict)
    """step -> the failure last logged for it."""

    def failed(self, step: Hashable, name: str, exc: BaseException, then: str) -> None:
        """``name failed; then`` with the traceback, unless it is the failure last
        logged for ``step``."""
        failure = f"{type(exc).__name__}: {exc}"
        if self._last.get(step) == failure:
            self.logger.debug("%s failed again: %s", name, failure)
            return
        self._last[step] = failure
        self.logger.error("%s failed; %s", name, then, exc_info=exc)

    def succeeded(self, step: Hashable, name: str) -> None:
        if self._last and self._last.pop(step, None) is not None:
            self.logger.info("%s succeeded again", name)

    def forget(self, step: Hashable) -> None:
        """``step`` is gone (a deleted partition's): a new one of its name starts afresh."""
        self._last.pop(step, None)

    def steps(self) -> list[Hashable]:
        return list(self._last)
