"""The followers' shell: fetcher tasks that copy the leaders' logs (seed 000; Kafka's
``ReplicaFetcherManager`` and ``ReplicaFetcherThread``).

A broker follows each partition the metadata makes it a follower of. Partitions are
grouped by their leader broker, and by ``num.replica.fetchers`` within a leader (Kafka's
hash of topic and partition), into fetchers; each fetcher is a
:class:`~minikafka.replication.ReplicaFetcher` core driven by one task with its own
connection to the leader. The task's loop is the whole of ``ReplicaFetcherThread``:

1. partitions in a new leader epoch truncate first: OffsetForLeaderEpoch v3 for the
   epoch of their last record, and the core truncates where the leader says (KIP-101);
2. one Fetch v11 with this broker's id as ``replica_id`` and each partition's current
   leader epoch (KIP-320), long-polling up to ``replica.fetch.wait.max.ms`` for
   ``replica.fetch.min.bytes``; the core appends what comes back, with the leader's
   offsets, epochs, high watermark and log start offset. The fetch is in a fetch session
   (KIP-227, :mod:`._fetch_session_handler`): after the first, full request it names only
   the partitions whose fetch offset (or epoch, log start, size) changed, and the answer
   only the partitions with something new; a session the leader refuses or lost is
   logged at INFO and the next request is a full one, opening a new session;
3. a failed request (the leader gone, the connection cut) waits
   ``replica.fetch.backoff.ms`` and tries again, until the metadata names a new leader.

Nothing that goes wrong in a fetcher ends the broker. A partition whose append or
truncation fails is marked failed by the core and retried after the backoff (Kafka's
``partitionsWithError``): logged at ERROR once, when it starts failing, and at INFO when
it recovers; a storage error also takes its log dir offline, as any failed write does.
An unexpected error of a whole round (an answer that does not decode) is logged at ERROR
once and the round is tried again after the backoff. What each followed partition's
fetching stands at is written to ``replica-fetcher-state.json`` in the first log dir
(what Kafka shows as its fetcher metrics), which ``minikafka cluster status`` shows.

:meth:`ReplicaFetcherManager.remove_partitions` is called with every metadata change
before the ReplicaManager stops or deletes a partition, so a fetcher never touches a log
it no longer owns; :meth:`~ReplicaFetcherManager.add_partitions` after it has made them
followers.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import zlib
from collections.abc import Callable, Iterable, Mapping

import attrs
import trio
from kio.schema.fetch.v11 import request as fetch_v11
from kio.schema.fetch.v11.response import FetchResponse
from kio.schema.offset_for_leader_epoch.v3 import request as epoch_v3
from kio.schema.offset_for_leader_epoch.v3.response import OffsetForLeaderEpochResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from minikafka.common import ApiError, TopicPartition
from minikafka.net import ClientError, ClientSecurity, NetworkClient, Node
from minikafka.replication import (
    EpochAnswer,
    EpochRequest,
    FetchedPartition,
    FetchPartition,
    FetchRound,
    FollowerAppended,
    ReplicaFetcher,
    ReplicaManagerShell,
)

from ._fetch_session_handler import (
    FetchSessionHandler,
    SessionFetchRequest,
    SessionFetchResponse,
)

_logger = logging.getLogger("minikafka.broker")

FETCHER_STATE_FILE = "replica-fetcher-state.json"
"""Where each followed partition's fetching stands, in the broker's first log dir."""


@attrs.frozen
class ReplicaFetchConfig:
    """The ``replica.fetch.*`` keys, with Kafka's defaults."""

    num_replica_fetchers: int = 1
    max_bytes: int = 1024 * 1024
    """``replica.fetch.max.bytes``: per partition."""
    response_max_bytes: int = 10 * 1024 * 1024
    """``replica.fetch.response.max.bytes``: per request."""
    wait_max_ms: int = 500
    min_bytes: int = 1
    backoff_ms: int = 1000


@attrs.define(eq=False)
class _Fetcher:
    """One fetcher: its core, where its leader is, and the task running it."""

    core: ReplicaFetcher
    node: Node
    session: FetchSessionHandler
    """The fetch session with the leader (KIP-227)."""
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    wake: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class ReplicaFetcherManager:
    broker_id: int
    replica_manager: ReplicaManagerShell
    config: ReplicaFetchConfig = ReplicaFetchConfig()
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the leaders (:mod:`._security_channels`)."""
    fetchers: dict[tuple[int, int], _Fetcher] = attrs.field(init=False, factory=dict)
    """(leader broker id, fetcher id) -> its fetcher."""
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _reported: str = attrs.field(init=False, default="")

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await self._report_states()
            finally:
                self._nursery = None

    def fetcher_id(self, tp: TopicPartition) -> int:
        """Which of a leader's ``num.replica.fetchers`` fetches ``tp`` (stable across runs)."""
        key = f"{tp.topic}-{tp.partition}".encode()
        return zlib.crc32(key) % self.config.num_replica_fetchers

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching ``tps`` (a new epoch, a new role, or gone); idle fetchers stop."""
        tps = set(tps)
        for key, fetcher in list(self.fetchers.items()):
            fetcher.core.remove_partitions(tps)
            if not fetcher.core.states:
                fetcher.scope.cancel()  # idle: Kafka shuts such fetcher threads down
                del self.fetchers[key]

    def add_partitions(self, followed: Mapping[TopicPartition, Node]) -> None:
        """Fetch each of ``followed`` (already a follower in the ReplicaManager) from the
        leader at its node, truncating first."""
        for tp, node in followed.items():
            key = (node.node_id, self.fetcher_id(tp))
            fetcher = self.fetchers.get(key)
            if fetcher is not None and fetcher.node != node:
                fetcher.scope.cancel()  # the leader came back on another address
                fetcher = None
            if fetcher is None:
                fetcher = self._start(key, node)
            fetcher.core.add_partitions([tp])
            fetcher.wake.set()

    def shutdown(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.scope.cancel()
        self.fetchers.clear()

    def _start(self, key: tuple[int, int], node: Node) -> _Fetcher:
        core = ReplicaFetcher(
            self.broker_id,
            node.node_id,
            self.replica_manager.core.partitions,
            fetch_max_bytes=self.config.max_bytes,
            backoff=self.config.backoff_ms / 1000,
        )
        fetcher = _Fetcher(core, node, FetchSessionHandler(node.node_id))
        self.fetchers[key] = fetcher
        if self._nursery is not None:
            self._nursery.start_soon(self._run_fetcher, fetcher)
        return fetcher

    async def _run_fetcher(self, fetcher: _Fetcher) -> None:
        node = fetcher.node
        name = f"ReplicaFetcherThread-{self.broker_id}-{node.node_id}"
        last_error = ""
        with fetcher.scope:
            async with NetworkClient.open(
                client_id=name, security=self.security
            ) as client:
                while True:
                    try:
                        busy = await self._round(client, fetcher)
                        last_error = ""
                    except ClientError as exc:
                        _logger.info("%s: %s; retrying", name, exc)
                        client.disconnect(node)
                        fetcher.session.handle_error()  # a new connection, a new session
                        busy = False
                    except Exception as exc:
                        # A round that fails for a reason of its own (an answer that
                        # does not decode, a bug): this fetcher's partitions wait and
                        # ask again, the broker and its other fetchers go on. Logged
                        # once while it keeps failing the same way.
                        error = f"{type(exc).__name__}: {exc}"
                        if error != last_error:
                            _logger.error(
                                "%s: unexpected error; retrying", name, exc_info=exc
                            )
                        last_error = error
                        client.disconnect(node)
                        fetcher.session.handle_error()
                        busy = False
                    if not busy:
                        fetcher.wake = trio.Event()
                        with trio.move_on_after(self.config.backoff_ms / 1000):
                            await fetcher.wake.wait()

    async def _round(self, client: NetworkClient, fetcher: _Fetcher) -> bool:
        """One truncation step and one fetch; False if there was nothing to send."""
        core = fetcher.core
        now = self.replica_manager.now  # the replication cores' one clock
        asked = list(core.epoch_requests(now()).messages)
        if asked:
            answers = await self._offsets_for_leader_epoch(client, fetcher.node, asked)
            # As for fetches below: an answer about an epoch the partition has left (it
            # was re-added in a newer one meanwhile) must not decide its truncation.
            epochs = {r.topic_partition: r.current_leader_epoch for r in asked}
            still = [
                a
                for a in answers
                if (s := core.states.get(a.topic_partition)) is not None
                and s.current_leader_epoch == epochs.get(a.topic_partition)
            ]
            # traced by each Partition
            self._report(fetcher, lambda: core.on_epoch_answers(still, now()))
        fetches = list(core.fetch_request(now()).messages)
        if not fetches:
            return bool(asked)
        request = fetcher.session.build(fetches)
        sent_at = now()
        response = await self._fetch(client, fetcher.node, request)
        answered = now()
        if self._session_lost(fetcher, response):
            # Nothing of the answer is used. The full fetch goes at once after an
            # incremental one (it cannot be refused so), after the backoff if it failed.
            return not request.full
        # Only answers to what is still asked: a partition that moved on (a new epoch, a
        # truncation) while the fetch was in flight must not take the old answer. A
        # partition the answer leaves out has nothing new (a session's answer names
        # only what changed): it stays where it is, and is asked again as it was.
        fresh = _still_asked(core, fetches, response.partitions)
        done = self._report(fetcher, lambda: core.on_fetch_answers(fresh, answered))
        self._trace_appends(fetcher, done, sent_at, answered)
        return True

    def _session_lost(self, fetcher: _Fetcher, response: SessionFetchResponse) -> bool:
        """Move the fetch session on with the answer; True if the answer cannot be used
        (the session was refused, or the answer does not fit it): logged at INFO, and
        the next fetch is a full one that opens a new session."""
        problem = fetcher.session.handle_response(response)
        if problem is not None:
            _logger.info(
                "ReplicaFetcherThread-%d-%d: %s; the next fetch is a full one",
                self.broker_id,
                fetcher.node.node_id,
                problem,
            )
        return problem is not None

    def _trace_appends(
        self, fetcher: _Fetcher, done: FetchRound, sent_at: float, answered: float
    ) -> None:
        """The follower's side of the round, one ``follower_append`` per partition it
        moved: the wait for the answer and the appends (the replication waterfall's
        hops)."""
        tracer = self.replica_manager.core.tracer
        if not done.appended or not tracer.enabled:
            return
        appended = self.replica_manager.now()
        for tp, fetch_offset, end, size in done.appended:
            event = FollowerAppended(
                tp.topic,
                tp.partition,
                fetcher.node.node_id,
                fetch_offset,
                end,
                size,
                (answered - sent_at) * 1000,
                (appended - answered) * 1000,
            )
            tracer.emit(event, appended)

    def _report(self, fetcher: _Fetcher, step: Callable[[], FetchRound]) -> FetchRound:
        """Take a step of the core and report what it marked failed or recovered: ERROR
        on a partition's first failure, INFO when it fetches again, and a disk that
        refused the write takes its log dir offline (Kafka's LogDirFailureChannel)."""
        failing = set(fetcher.core.failed_partitions())
        done = step()
        failures = done.failures
        for tp in failing - set(fetcher.core.failed_partitions()):
            if tp in fetcher.core.states:
                _logger.info(
                    "%s: fetching again from broker %d", tp, fetcher.node.node_id
                )
        for failure in failures:
            tp, exc = failure.topic_partition, failure.error
            if isinstance(exc, OSError):
                self.replica_manager.core.storage_failed(tp, exc)
            if failure.first:
                # A fault of the data or the disk is its message; anything else is a
                # bug, whose traceback is what a reader of the log needs.
                expected = isinstance(exc, OSError | ApiError)
                _logger.error(
                    "%s: fetching from broker %d at offset %d failed (%s: %s); retrying "
                    "every %d ms",
                    tp,
                    fetcher.node.node_id,
                    failure.fetch_offset,
                    type(exc).__name__,
                    exc,
                    self.config.backoff_ms,
                    exc_info=None if expected else exc,
                )
        return done

    # --- what the fetchers are doing, for ``minikafka cluster status`` --------------------

    def fetch_states(self) -> list[dict[str, object]]:
        """Each followed partition: its leader, fetch offset, state and last error."""
        rows: list[dict[str, object]] = []
        for (leader, _), fetcher in sorted(self.fetchers.items()):
            for tp, state in fetcher.core.states.items():
                rows.append(
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "leader": leader,
                        "fetch_offset": state.fetch_offset,
                        "state": state.state,
                        "error": state.error,
                        "failures": state.failures,
                    }
                )
        return sorted(rows, key=lambda r: (str(r["topic"]), int(str(r["partition"]))))

    async def _report_states(self) -> None:
        while True:
            self.report_states()
            await trio.sleep(self.config.backoff_ms / 1000)

    def report_states(self) -> None:
        """Write down the failed partitions and a count per state, if they changed."""
        rows = self.fetch_states()
        counts: dict[str, int] = {}
        for row in rows:
            counts[str(row["state"])] = counts.get(str(row["state"]), 0) + 1
        failed = [row for row in rows if row["state"] == "failed"]
        text = json.dumps(
            {"broker": self.broker_id, "states": counts, "failed": failed},
            sort_keys=True,
        )
        if text != self._reported:
            self._reported = text if self._write_states(text) else ""

    def _write_states(self, text: str) -> bool:
        log_manager = self.replica_manager.core.log_manager
        online = [d for d in log_manager.log_dirs if d not in log_manager.offline_dirs]
        if not online:
            return False
        path = online[0] / FETCHER_STATE_FILE
        try:
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_text(text + "\n")
            os.replace(temporary, path)
        except OSError as exc:  # a report, not the log: it must not stop the fetchers
            _logger.warning("cannot write %s: %s", path, exc)
            return False
        return True

    async def _offsets_for_leader_epoch(
        self, client: NetworkClient, node: Node, asked: list[EpochRequest]
    ) -> list[EpochAnswer]:
        topics: dict[str, list[epoch_v3.OffsetForLeaderPartition]] = {}
        for r in asked:
            topics.setdefault(r.topic_partition.topic, []).append(
                epoch_v3.OffsetForLeaderPartition(
                    partition=i32(r.topic_partition.partition),
                    current_leader_epoch=i32(r.current_leader_epoch),
                    leader_epoch=i32(r.leader_epoch),
                )
            )
        request = epoch_v3.OffsetForLeaderEpochRequest(
            replica_id=BrokerId(self.broker_id),
            topics=tuple(
                epoch_v3.OffsetForLeaderTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in topics.items()
            ),
        )
        response = await client.send(node, request)
        assert isinstance(response, OffsetForLeaderEpochResponse)
        return [
            EpochAnswer(
                TopicPartition(t.topic, int(p.partition)),
                p.error_code,
                int(p.leader_epoch),
                int(p.end_offset),
            )
            for t in response.topics
            for p in t.partitions
        ]

    async def _fetch(
        self, client: NetworkClient, node: Node, fetch: SessionFetchRequest
    ) -> SessionFetchResponse:
        topics: dict[str, list[fetch_v11.FetchPartition]] = {}
        for f in fetch.partitions:
            topics.setdefault(f.topic_partition.topic, []).append(
                fetch_v11.FetchPartition(
                    partition=i32(f.topic_partition.partition),
                    current_leader_epoch=i32(f.current_leader_epoch),
                    fetch_offset=i64(f.fetch_offset),
                    log_start_offset=i64(f.log_start_offset),
                    partition_max_bytes=i32(f.max_bytes),
                )
            )
        forgotten: dict[str, list[int]] = {}
        for tp in fetch.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        request = fetch_v11.FetchRequest(
            replica_id=BrokerId(self.broker_id),
            max_wait=i32Timedelta.parse(
                datetime.timedelta(milliseconds=self.config.wait_max_ms)
            ),
            min_bytes=i32(self.config.min_bytes),
            max_bytes=i32(self.config.response_max_bytes),
            session_id=i32(fetch.session_id),
            session_epoch=i32(fetch.epoch),
            topics=tuple(
                fetch_v11.FetchTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in topics.items()
            ),
            forgotten_topics_data=tuple(
                fetch_v11.ForgottenTopic(
                    topic=TopicName(t), partitions=tuple(i32(p) for p in ps)
                )
                for t, ps in forgotten.items()
            ),
        )
        response = await client.send(node, request)
        assert isinstance(response, FetchResponse)
        return SessionFetchResponse(
            response.error_code,
            int(response.session_id),
            [
                FetchedPartition(
                    TopicPartition(t.topic, int(p.partition_index)),
                    p.error_code,
                    int(p.high_watermark),
                    int(p.log_start_offset),
                    bytes(p.records or b""),
                )
                for t in response.responses
                for p in t.partitions
            ],
        )


def _still_asked(
    core: ReplicaFetcher,
    fetches: Iterable[FetchPartition],
    fetched: Iterable[FetchedPartition],
) -> list[FetchedPartition]:
    """The answers to partitions still at the offset and epoch they were fetched at."""
    current = {
        tp: (s.fetch_offset, s.current_leader_epoch) for tp, s in core.states.items()
    }
    sent = {
        f.topic_partition: (f.fetch_offset, f.current_leader_epoch) for f in fetches
    }
    return [
        f
        for f in fetched
        if (asked := sent.get(f.topic_partition)) is not None
        and current.get(f.topic_partition) == asked
    ]
