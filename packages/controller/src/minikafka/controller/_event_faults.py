"""EventFaults: what the controller does when an event fails (Kafka's handleEventException).

Kafka's ``QuorumController`` runs every event in a ``ControllerEvent`` and, when one
throws, hands the exception to ``handleEventException``, which sorts it:

- an ``ApiError`` (Kafka's ``ApiException``) is the request's answer, logged at INFO:
  the request was wrong, not the controller, which stays active;
- anything else answers UNKNOWN_SERVER_ERROR and, on the active controller, is a
  non-fatal fault after which it *renounces* (``renounce``): it reverts its timeline to
  the last committed offset, whoever waits on what it had appended hears NOT_CONTROLLER,
  and the quorum elects again. With several voters the Raft node resigns; one voter has
  nobody else to elect, so it stays a standby, replaying from the log what it had
  appended as it commits, and claims leadership again after ``reclaim_delay``
  (``RECLAIM_DELAY_S``, 0.2 s, as a resigned Raft voter waits out an election timeout);
- what leaves nothing to fall back on (a committed record that cannot be replayed, a
  snapshot that cannot be applied, a fault while renouncing) is fatal:
  :func:`fatal_fault` builds the one-line :class:`~minikafka.common.FatalFaultError`
  that ends the process, as Kafka's fatal fault handler does.

The metadata log's own failures are sorted here too. An append the disk refused, with
what it wrote undone, fails only the requests whose records it held, and the controller
stays active (:meth:`EventFaults.append_failed`; an append refused because the quorum
moved on to a new epoch fails them with NOT_CONTROLLER). A failed fsync, or an undo that failed,
leaves a log nobody can trust: the controller *resigns* (:meth:`EventFaults.resign`)
back to the last committed offset, and stays inactive until the process restarts. The
committer's unforeseen fault counts as a failed fsync
(:meth:`EventFaults.commit_failed`).

No trio here: ``ControllerServer`` owns one ``EventFaults``, passes it the event loop's
clock, and carries out the actions it returns.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, FatalFaultError

from ._controller import Action, AppendRecords, QuorumController, Reply
from ._quorum import MetadataLogError, NotLeaderError, SingleVoterQuorum
from ._raft_quorum import RaftQuorum

_logger = logging.getLogger("minikafka.controller")


def fatal_fault(node_id: int, what: str, exc: BaseException) -> FatalFaultError:
    """The fault that ends the process (Kafka's fatal fault handler), one line naming
    the node: ``raise fatal_fault(node_id, what, exc) from exc``."""
    return FatalFaultError.caused_by(f"controller {node_id}: {what}", exc, _logger)


@attrs.define(eq=False)
class EventFaults:
    """The fault policy of one ``ControllerServer``, and the state it leaves behind:
    renounced (one voter, until it claims again) or resigned until restart."""

    controller: QuorumController
    single: SingleVoterQuorum | None
    raft: RaftQuorum | None
    uncommitted: collections.deque[AppendRecords]
    """The server's appends not yet committed, forgotten on giving up leadership (one
    voter replays from its log what of them commits)."""
    catch_up: Callable[[], None]
    """The server's replay of what committed since, from its log (one voter)."""
    reclaim_delay: float
    failure: MetadataLogError | None = attrs.field(init=False, default=None)
    """Why the metadata log can no longer be trusted (this node resigned), or None."""
    # One voter after an unexpected fault: a standby until it claims again at reclaim_at.
    renounced: bool = attrs.field(init=False, default=False)
    reclaim_at: float | None = attrs.field(init=False, default=None)

    def fatal(self, what: str, exc: BaseException) -> FatalFaultError:
        """The fault that ends the process: ``raise self.fatal(what, exc) from exc``."""
        return fatal_fault(self.controller.config.node_id, what, exc)

    def event_failed(
        self, name: str, request_id: int | None, exc: Exception, now: float
    ) -> list[Action]:
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
    def _answer_failed(request_id: int | None, error_code: ErrorCode) -> list[Action]:
        if request_id is None:
            return []  # not a request (a commit, a tick): nobody to answer
        # Unless the event answered it before it failed: the first answer counts.
        return [Reply(request_id, None, error_code)]

    def renounce(self, now: float) -> list[Action]:
        """Kafka's ``renounce``: stop being the active controller after a fault, back to
        the last committed state, and let the quorum elect again. A fault while
        renouncing leaves nothing to fall back on: fatal."""
        controller = self.controller
        if not controller.active and not self.renounced:
            return []  # a standby, or resigned until restart: nothing to give up
        try:
            actions = controller.resign()
            self.uncommitted.clear()  # what commits is replayed from the log
            if self.raft is not None:
                self.raft.renounce()
        except Exception as exc:
            raise self.fatal("renouncing leadership", exc) from exc
        if self.raft is None:
            # One voter: nobody else to elect. It claims again once what it appended
            # has committed (replayed meanwhile, as a standby would).
            self.renounced = True
            self.reclaim_at = now + self.reclaim_delay
        _logger.warning(
            "controller %d renounced leadership: reverted to the last committed offset "
            "%d; requests get NOT_CONTROLLER until %s",
            controller.config.node_id,
            controller.last_committed_offset,
            "the quorum elects a leader"
            if self.raft is not None
            else f"it claims leadership again in {self.reclaim_delay} s",
        )
        return actions

    def tick(self, now: float) -> list[Action]:
        """The timer of a renounced single voter: claim again once the delay is over."""
        due = self.reclaim_at is not None and now >= self.reclaim_at
        return self.reclaim(now) if due else []

    def reclaim(self, now: float) -> list[Action]:
        """One voter: become the active controller again (or for the first time, at
        start) on top of everything in the log, once all of it has committed."""
        quorum = self.single
        assert quorum is not None  # only a single voter renounces into a standby
        if self.failure is not None:
            self.renounced, self.reclaim_at = False, None
            return []  # the log failed meanwhile: inactive until restart
        if quorum.high_watermark < quorum.appended_end:
            self.reclaim_at = now + self.reclaim_delay  # still on its way to disk
            return []
        self.catch_up()
        actions = self.controller.become_leader(quorum.epoch, now)
        if self.reclaim_at is not None:
            _logger.info(
                "controller %d is active again in epoch %d, from offset %d",
                self.controller.config.node_id,
                quorum.epoch,
                self.controller.last_committed_offset,
            )
        self.renounced, self.reclaim_at = False, None
        return actions

    def append_failed(
        self, action: AppendRecords, exc: NotLeaderError | MetadataLogError
    ) -> list[Action]:
        """The quorum refused ``action``'s records and holds none of them: the replies
        that fail. The server drops what was decided on top of them."""
        if isinstance(exc, NotLeaderError):
            # The quorum moved on (its RaftResigned is queued behind this event):
            # these records never reach the log; their requests hear NOT_CONTROLLER.
            return self.controller.append_failed(
                action.base_offset, ErrorCode.not_controller
            )
        # The requests whose records were refused hear why; after a fatal failure the
        # ones still waiting for earlier records hear NOT_CONTROLLER from the
        # resignation.
        failed = self.controller.append_failed(action.base_offset, exc.error_code)
        if exc.fatal:
            return failed + self.resign(exc)
        _logger.error(
            "%s; the request(s) writing offsets from %d on get %s, the controller "
            "stays active and reverts to offset %d",
            exc,
            action.base_offset,
            exc.error_code.name,
            action.base_offset - 1,
        )
        return failed

    @staticmethod
    def commit_failed(exc: Exception) -> MetadataLogError:
        """The committer's unforeseen fault: not the disk saying no, but the commit path
        broken all the same. Whether the log is durable is unknown, so it is the fsync
        that failed (its ``resign`` follows: inactive until restart)."""
        _logger.error(
            "Encountered non-fatal fault: committing the metadata log failed",
            exc_info=exc,
        )
        return MetadataLogError(
            f"committing the metadata log failed: {type(exc).__name__}: {exc}",
            error_code=ErrorCode.unknown_server_error,
            fatal=True,
        )

    def resign(self, exc: MetadataLogError) -> list[Action]:
        """The metadata log cannot be trusted: stop being the active controller."""
        if self.failure is not None:
            return []
        self.failure = exc
        _logger.error(
            "%s; this node is no longer the active controller (reverted to the last "
            "committed offset %d) until it is restarted: admin requests get "
            "NOT_CONTROLLER, data is still served",
            exc,
            self.controller.last_committed_offset,
        )
        self.uncommitted.clear()  # never published in this process
        self.renounced, self.reclaim_at = False, None
        return self.controller.resign()
