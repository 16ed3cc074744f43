"""EventFaults: what the controller does when an event fails (Kafka's handleEventException).

Kafka's ``QuorumController`` runs every event in a ``ControllerEvent`` and, when one
throws, hands the exception to ``handleEventException``, which sorts it:

- an ``ApiError`` (Kafka's ``ApiException``) is the request's answer, logged at INFO:
  the request was wrong, not the controller, which stays active;
- anything else answers UNKNOWN_SERVER_ERROR and, on the active controller, is a
  non-fatal fault after which it *renounces* (``renounce``): it reverts its timeline to
  the last committed offset, whoever waits on what it had appended hears NOT_CONTROLLER,
  and the Raft node resigns, so the quorum elects again (a lone voter itself, in a new
  epoch, after an election timeout), and what it had appended and sees committed meanwhile
  it replays as a standby;
- what leaves nothing to fall back on (a committed record that cannot be replayed, a
  snapshot that cannot be applied, a fault while renouncing) is fatal:
  :func:`fatal_fault` builds the one-line :class:`~minikafka.common.FatalFaultError`
  that ends the process, as Kafka's fatal fault handler does.

An append the quorum refused because it moved on to a new epoch fails the requests whose
records it held with NOT_CONTROLLER, and one too large for a batch of the log with
RECORD_LIST_TOO_LARGE (:meth:`EventFaults.append_failed`). A metadata log
that refused a write or an fsync is the Raft node's fault, fatal as in Kafka (the
quorum raises the ``FatalFaultError`` itself).

No trio here: ``QuorumControllerShell`` owns one ``EventFaults``, passes it the event loop's
clock, and carries out what it returns: a ``QuorumControllerResult``, like every call
into the controller.
"""

from __future__ import annotations

import collections
import logging

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, CoreResult, FatalFaultError

from ._controller import (
    AppendRecords,
    QuorumController,
    QuorumControllerResult,
    Reply,
)
from ._metadata_log import NotLeaderError, RecordBatchTooLargeError
from ._raft_shell import RaftNodeShell

_logger = logging.getLogger("minikafka.controller")


def fatal_fault(node_id: int, what: str, exc: BaseException) -> FatalFaultError:
    """The fault that ends the process (Kafka's fatal fault handler), one line naming
    the node: ``raise fatal_fault(node_id, what, exc) from exc``."""
    return FatalFaultError.caused_by(f"controller {node_id}: {what}", exc, _logger)


@attrs.define(eq=False)
class EventFaults:
    """The fault policy of one ``QuorumControllerShell``."""

    controller: QuorumController
    quorum: RaftNodeShell
    uncommitted: collections.deque[AppendRecords]
    """The server's appends not yet committed, forgotten on giving up leadership (what
    of them commits is replayed as a standby replays the leader's records)."""

    def fatal(self, what: str, exc: BaseException) -> FatalFaultError:
        """The fault that ends the process: ``raise self.fatal(what, exc) from exc``."""
        return fatal_fault(self.controller.config.node_id, what, exc)

    def event_failed(
        self, name: str, request_id: int | None, exc: Exception, now: float
    ) -> QuorumControllerResult:
        """Kafka's ``handleEventException``: an ApiError is the request's answer;
        anything else answers it UNKNOWN_SERVER_ERROR and makes the active controller
        renounce. ``request_id`` is the failed event's request, if it was one."""
        node_id = self.controller.config.node_id
        if isinstance(exc, ApiError):
            _logger.info(
                "controller %d: %s failed with %s: %s",
                node_id,
                name,
                exc.error_code.name.upper(),
                exc,
            )
            return self._answer_failed(request_id, exc.error_code)
        _logger.error(
            "Encountered non-fatal fault: controller %d: %s failed with %s: %s",
            node_id,
            name,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )
        failed = self._answer_failed(request_id, ErrorCode.unknown_server_error)
        return failed + self.renounce(now)

    @staticmethod
    def _answer_failed(
        request_id: int | None, error_code: ErrorCode
    ) -> QuorumControllerResult:
        if request_id is None:
            return CoreResult()  # not a request (a commit, a tick): nobody to answer
        # Unless the event answered it before it failed: the first answer counts.
        return CoreResult(replies=(Reply(request_id, None, error_code),))

    def renounce(self, now: float) -> QuorumControllerResult:
        """Kafka's ``renounce``: stop being the active controller after a fault, back to
        the last committed state, and let the quorum elect again. A fault while
        renouncing leaves nothing to fall back on: fatal."""
        controller = self.controller
        if not controller.active:
            return CoreResult()  # a standby: nothing to give up
        try:
            failed = controller.resign()
            self.uncommitted.clear()  # what commits is replayed as a standby's
            self.quorum.renounce()
        except Exception as exc:
            raise self.fatal("renouncing leadership", exc) from exc
        _logger.warning(
            "controller %d renounced leadership: reverted to the last committed offset "
            "%d; requests get NOT_CONTROLLER until the quorum elects a leader",
            controller.config.node_id,
            controller.last_committed_offset,
        )
        return failed

    def append_failed(
        self, action: AppendRecords, exc: NotLeaderError | RecordBatchTooLargeError
    ) -> QuorumControllerResult:
        """The quorum refused ``action``'s records and holds none of them: because it
        moved on to a new epoch (its RaftResigned is queued behind this event; the
        requests hear NOT_CONTROLLER), or because they would not fit one batch of the
        log (RECORD_LIST_TOO_LARGE, the controller stays active). The server drops what
        was decided on top of them."""
        if isinstance(exc, NotLeaderError):
            return self.controller.append_failed(
                action.base_offset, ErrorCode.not_controller
            )
        _logger.info(
            "controller %d: %s; the request(s) writing offsets from %d on get %s",
            self.controller.config.node_id,
            exc,
            action.base_offset,
            exc.error_code.name.upper(),
        )
        return self.controller.append_failed(action.base_offset, exc.error_code)
