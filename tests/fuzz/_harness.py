"""The fuzz harness: send cases to one broker process and check what the broker promises.

ARCHITECTURE.md's ("Wire protocol") promise about bad input is what is checked, per case and per
batch of cases:

- per case: every response is for a request that is still waiting for one, in the
  order sent (never a wrong correlation id), and decodes as that API and version's
  response; a request the broker reads is answered or its connection is closed (only a
  Produce with ``acks=0`` may go unanswered); a probe ApiVersions sent right behind the
  case is answered unless the connection was closed; the broker logs no traceback.
- per batch: the process is alive; a bystander connection opened at the start still
  gets ApiVersions and Metadata answers within a deadline; its resident set (VmRSS)
  stays under a bound.
- at the end: the broker stops cleanly, ``python -m minikafka.log verify`` finds every
  log clean, and the broker starts again on the same data.

Failures are collected, not raised one by one, so one run reports every class of bug
it finds; each names its case (``SEED:INDEX``) and the request's bytes.
"""

from __future__ import annotations

import collections
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs
import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.create_topics.v4.request import CreatableTopic, CreateTopicsRequest
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.broker.testing import BrokerFailed, BrokerProcess
from minikafka.net import (
    ApiKey,
    decode_request_body,
    decode_response_body,
    encode_entity,
    encode_request_header,
    parse_request_header,
    response_header_version,
)
from minikafka.net import InvalidRequest as NetInvalidRequest
from minikafka.net._codec import BodyDecodeError
from tests.fuzz._corpus import PARTITIONS, SUPPORTED, TOPIC, corpus, ms
from tests.fuzz._mutate import Case, frame

CASE_DEADLINE = 30.0
"""Seconds a request the broker read may take to be answered. A loaded 2-core machine
answers any of the corpus's requests in well under a second, except while the broker
applies a metadata change of a thousand new partitions (a case's auto-created topics,
committed by the metadata quorum a moment after that case was answered): creating their
logs holds the event loop for seconds, and a request read meanwhile waits (a Metadata
case of `make test`'s parallel run waited over 10 s)."""
PARKING_DEADLINE = 3.0
"""Requests Kafka parks by design (Fetch up to max.wait, JoinGroup and SyncGroup until
the rebalance, Produce acks=all until the HW) may stay unanswered this long; after that
the case counts as parked, not failed (a mutated max.wait can be 24 days)."""
PARKING_APIS = frozenset(
    {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP}
)
HEALTH_DEADLINE = 20.0
RSS_HEADROOM = 256 << 20
"""How far VmRSS may grow over its level after the warm-up: requests are sent one at a
time and each is at most socket.request.max.bytes (100 MiB), which the broker may hold
twice (the frame and a decoded copy); the rest covers the topics and groups cases
create. A broker that allocates per claimed length or per claimed partition count
blows through it."""
PROBE_ID = 0x50524F42  # "PROB"
TRACEBACK = "Traceback (most recent call last)"
_RAISED = re.compile(
    r"^[\s|]*((?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\b.*)$"
)
_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d ")
_LOG_ERROR = re.compile(r"^\S+ \S+ (?:ERROR|CRITICAL) (\S+):")
BROKER_OVERRIDES = {
    # JoinGroup parks until every member rejoins or the rebalance timeout: the corpus's
    # groups use 500 ms timeouts, which Kafka's 6 s minimum would refuse.
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
}
MAX_BROKER_RESTARTS = 3


REPORTS: list[str] = []
"""Every run's report, printed in pytest's terminal summary (conftest.py)."""


@attrs.frozen
class FuzzOptions:
    cases: int | None
    seed: int
    replay: tuple[str, int, int] | None
    """``(family, seed, index)``: run that one case only."""


@attrs.frozen
class Failure:
    signature: str
    """What went wrong, without the case specifics: failures are grouped by it."""
    case: Case
    message: str


class ConnectionGone(Exception):
    pass


@attrs.define(eq=False)
class FrameReader:
    """Whole response frames from a blocking socket, each read with a deadline."""

    sock: socket.socket
    buffer: bytearray = attrs.field(factory=bytearray)

    def next_frame(self, deadline: float) -> bytes | None:
        """The next frame; ``None`` at the deadline. Raises ConnectionGone on EOF/reset."""
        while True:
            if len(self.buffer) >= 4:
                (size,) = struct.unpack_from(">i", self.buffer)
                if size < 0:
                    raise AssertionError(f"response frame with size {size}")
                if len(self.buffer) >= 4 + size:
                    data = bytes(self.buffer[4 : 4 + size])
                    del self.buffer[: 4 + size]
                    return data
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return None
            except OSError as e:
                raise ConnectionGone(repr(e)) from e
            if not chunk:
                raise ConnectionGone("EOF")
            self.buffer.extend(chunk)


def request_bytes(body: RequestPayload, correlation_id: int) -> bytes:
    header = encode_request_header(
        int(body.__api_key__), int(body.__version__), correlation_id, "fuzz-harness"
    )
    return frame(header + encode_entity(body))


def decode_response(api_key: int, version: int, data: bytes) -> ResponsePayload:
    offset = 4 if response_header_version(api_key, version) == 0 else 5
    return decode_response_body(api_key, version, data, offset)


@attrs.frozen
class Expected:
    """A request as the broker will read it out of the case's bytes."""

    api_key: int
    version: int
    correlation_id: int
    may_go_unanswered: bool


def expected_requests(data: bytes) -> list[Expected]:
    """The frames of ``data`` with a readable fixed header, in order."""
    out: list[Expected] = []
    position = 0
    while position + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, position)
        payload = data[position + 4 : position + 4 + size]
        if size < 8 or len(payload) < size:
            break
        api_key, version, correlation = struct.unpack_from(">hhi", payload)
        out.append(Expected(api_key, version, correlation, _acks_zero(payload)))
        position += 4 + size
    return out


def _acks_zero(payload: bytes) -> bool:
    """A Produce with acks=0 is never answered (Kafka's rule); read it as the broker would."""
    try:
        header, offset = parse_request_header(payload)
        if header.api_key != ApiKey.PRODUCE:
            return False
        body = decode_request_body(header.api_key, header.api_version, payload, offset)
    except (NetInvalidRequest, BodyDecodeError):
        return False
    return int(getattr(body, "acks", 1)) == 0


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@attrs.define(eq=False)
class FuzzSession:
    """One broker process and the cases sent to it; see the module docstring."""

    root: Path
    label: str
    broker: BrokerProcess = attrs.field(init=False)
    generation: int = attrs.field(init=False, default=0)
    failures: list[Failure] = attrs.field(init=False, factory=list)
    outcomes: collections.Counter[str] = attrs.field(
        init=False, factory=collections.Counter
    )
    cases_run: int = attrs.field(init=False, default=0)
    rss_baseline: int = attrs.field(init=False, default=0)
    rss_peak: int = attrs.field(init=False, default=0)
    restarts: int = attrs.field(init=False, default=0)
    _bystander: socket.socket | None = attrs.field(init=False, default=None)
    _seen_output: int = attrs.field(init=False, default=0)
    _ports: dict[int, Case] = attrs.field(init=False, factory=dict)
    _last_case: Case | None = attrs.field(init=False, default=None)
    _probe_count: int = attrs.field(init=False, default=0)
    _reported_cases: int = attrs.field(init=False, default=0)
    _in_traceback: bool = attrs.field(init=False, default=False)

    # --- life cycle -----------------------------------------------------------------

    def start(self) -> None:
        data_dir = self.root / f"{self.label}-data-{self.generation}"
        self.broker = BrokerProcess(data_dir, overrides=BROKER_OVERRIDES)
        self.broker.start()
        self._seen_output = 0
        self._open_bystander()
        self._create_topic()
        self.warm_up()

    @property
    def data_dir(self) -> Path:
        return self.broker.data_dir

    def _open_bystander(self) -> None:
        if self._bystander is not None:
            self._bystander.close()
        self._bystander = socket.create_connection(
            ("127.0.0.1", self.broker.port), timeout=10
        )

    def _create_topic(self) -> None:
        body = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(TOPIC),
                    num_partitions=i32(PARTITIONS),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=i32Timedelta.parse(ms(10_000)),
            validate_only=False,
        )
        self._ask(body, ApiKey.CREATE_TOPICS, 4)

    def warm_up(self) -> None:
        """Every corpus request once, then the RSS baseline: the corpus must be answered."""
        for number, seed in enumerate(corpus()):
            case = Case(
                "corpus",
                0,
                number,
                "corpus",
                seed.name,
                "unmutated",
                frame(seed.payload(7)),
            )
            before = len(self.failures)
            outcome = self.run(case)
            if (
                outcome not in ("answered", "unanswered acks=0")
                and len(self.failures) == before
            ):
                self._fail(case, f"corpus: {outcome}", f"a valid request was {outcome}")
        self.check_health(None)
        self.rss_baseline = rss_bytes(self._pid())
        self.rss_peak = self.rss_baseline

    def finish(self) -> None:
        """Stop, verify every log, start again on the same data, answer, stop."""
        self._scan_output()
        # A broker that died (and was given up on) has no process to stop: its logs
        # are still verified and it must still start again.
        alive = self.broker.process is not None and self.broker.process.poll() is None
        status = self.broker.stop() if alive else 0
        self._wait_output_drained()
        self._scan_output()
        if status != 0:
            self._fail(
                None, "unclean stop", f"broker exited with status {status} on SIGTERM"
            )
        self._verify_logs()
        seen = len(self.broker.output)
        try:
            # The corpus leaves a thousand or more partitions, each of whose leader epoch
            # caches is written and fsynced as it loads and leads: on a loaded 2-core
            # machine that start-up alone has taken over a minute.
            self.broker.start(timeout=300)
        except BrokerFailed:
            startup = self.broker.output[seen:]
            problems = [line for line in startup if " INFO " not in line]
            self._fail(
                None,
                "restart failed",
                f"the broker does not start again on {self.data_dir}:\n"
                + "\n".join([*problems[:20], "...", *startup[-5:]]),
            )
            return
        self._open_bystander()
        self._bystander_round()
        self.broker.stop()
        self._wait_output_drained()
        self._scan_output()

    def close(self) -> None:
        if self._bystander is not None:
            self._bystander.close()
        if self.broker.process is not None:
            self.broker.kill()

    def _verify_logs(self) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "minikafka.log", "verify", str(self.data_dir)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            self._fail(
                None,
                "log verify",
                f"minikafka.log verify {self.data_dir} exited {result.returncode}:\n"
                f"{result.stdout[-2000:]}{result.stderr[-2000:]}",
            )
        else:
            self.outcomes["verify: " + result.stdout.strip()] += 1

    def _pid(self) -> int:
        assert self.broker.process is not None
        return self.broker.process.pid

    def _wait_output_drained(self) -> None:
        # The drain thread reads the dead process's pipe to EOF: wait (bounded) until
        # the output stops growing, so a last traceback is not missed.
        deadline = time.monotonic() + 5
        size = -1
        while size != len(self.broker.output) and time.monotonic() < deadline:
            size = len(self.broker.output)
            time.sleep(0.2)

    # --- cases ------------------------------------------------------------------------

    def run_all(self, cases: Iterable[Case], health_every: int = 100) -> None:
        for number, case in enumerate(cases, start=1):
            outcome = self.run(case)
            self.cases_run += 1
            # A refused connection means the broker is gone: find out now, not at the
            # end of the batch (every case until then would fail the same way).
            due = number % health_every == 0 or outcome == "connect failed"
            healthy = not due or self.check_health(case)
            if not healthy and not self._replace_broker(case):
                return

    def run(self, case: Case) -> str:
        """Send one case on a fresh connection; the outcome's name."""
        self._last_case = case
        outcome = self._exchange(case)
        self.outcomes[outcome] += 1
        self._scan_output()
        return outcome

    def _exchange(self, case: Case) -> str:
        expected = expected_requests(case.data)
        probe_id = PROBE_ID
        while any(e.correlation_id == probe_id for e in expected):
            probe_id += 1
        data = case.data
        if case.framed:
            data += request_bytes(ApiVersionsRequest(), probe_id)
            expected.append(Expected(ApiKey.API_VERSIONS, 0, probe_id, False))
        try:
            sock = socket.create_connection(("127.0.0.1", self.broker.port), timeout=10)
        except OSError as e:
            self._fail(case, "connect refused", f"cannot connect: {e!r}")
            return "connect failed"
        self._ports[sock.getsockname()[1]] = case
        if len(self._ports) > 200:
            self._ports.pop(next(iter(self._ports)))
        try:
            return self._converse(case, sock, data, expected)
        finally:
            sock.close()

    def _converse(
        self, case: Case, sock: socket.socket, data: bytes, pending: list[Expected]
    ) -> str:
        try:
            sock.sendall(data)
            if case.eof:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # closed while we wrote: what the answers (none) will show
        reader = FrameReader(sock)
        start = time.monotonic()
        answered, skipped_acks0 = 0, 0
        while pending:
            waiting = pending[0]
            limit = (
                PARKING_DEADLINE if waiting.api_key in PARKING_APIS else CASE_DEADLINE
            )
            try:
                response = reader.next_frame(start + limit)
            except ConnectionGone:
                return "closed" if answered == 0 else "answered then closed"
            if response is None:
                if waiting.api_key in PARKING_APIS:
                    return "parked"
                self._fail(
                    case,
                    f"unanswered {_api(waiting.api_key)}",
                    f"no response to correlation id {waiting.correlation_id} within "
                    f"{limit:.0f}s and the connection is still open",
                )
                return "stalled"
            if len(response) < 4:
                self._fail(
                    case, "short response", f"response frame of {len(response)} bytes"
                )
                return "bad response"
            (correlation,) = struct.unpack_from(">i", response)
            match = next(
                (i for i, e in enumerate(pending) if e.correlation_id == correlation),
                None,
            )
            if match is None:
                self._fail(
                    case,
                    "wrong correlation id",
                    f"response with correlation id {correlation}; waiting for "
                    f"{[e.correlation_id for e in pending]}",
                )
                return "bad response"
            for skipped in pending[:match]:
                if skipped.may_go_unanswered:
                    skipped_acks0 += 1
                else:
                    self._fail(
                        case,
                        f"swallowed {_api(skipped.api_key)}",
                        f"no response to correlation id {skipped.correlation_id}, "
                        f"but the next request ({correlation}) was answered",
                    )
            self._check_body(case, pending[match], response)
            del pending[: match + 1]
            answered += 1
        if not case.framed:
            return self._wait_closed(case, reader, start + CASE_DEADLINE)
        return "unanswered acks=0" if skipped_acks0 and answered == 1 else "answered"

    def _wait_closed(self, case: Case, reader: FrameReader, deadline: float) -> str:
        """After a bad frame (or the client's EOF) the broker must close the connection."""
        try:
            extra = reader.next_frame(deadline)
        except ConnectionGone:
            return "closed"
        what = "a response to no request" if extra is not None else "nothing"
        self._fail(
            case,
            "bad frame left open",
            f"the connection stayed open {CASE_DEADLINE:.0f}s after a bad frame; got {what}",
        )
        return "left open"

    def _check_body(self, case: Case, got: Expected, response: bytes) -> None:
        api_key, version = got.api_key, got.version
        low, high = SUPPORTED.get(api_key, (0, -1))
        if not low <= version <= high:
            if api_key != ApiKey.API_VERSIONS:
                return  # an answer to what the broker does not speak: nothing to decode
            version = 0  # KIP-511: UNSUPPORTED_VERSION in a v0 body
        try:
            decode_response(api_key, version, response)
        except Exception as e:
            self._fail(
                case,
                f"malformed {_api(api_key)} response",
                f"v{version} response does not decode: {type(e).__name__}: {e}\n"
                f"  response: {response[:256].hex()}",
            )

    # --- health -----------------------------------------------------------------------

    def check_health(self, after: Case | None) -> bool:
        """Alive, the bystander answered, RSS under the bound; False if the broker is gone."""
        assert self.broker.process is not None
        if self.broker.process.poll() is not None:
            self._fail(after, "broker died", self._tail())
            return False
        try:
            self._bystander_round()
        except (ConnectionGone, OSError, AssertionError) as e:
            self._fail(after, "bystander unanswered", f"{e!r}\n{self._tail()}")
            return self.broker.process.poll() is None and self._bystander_recovers()
        rss = rss_bytes(self._pid())
        self.rss_peak = max(self.rss_peak, rss)
        if self.rss_baseline and rss > self.rss_baseline + RSS_HEADROOM:
            self._fail(
                after,
                "RSS bound",
                f"VmRSS {rss >> 20} MiB > baseline {self.rss_baseline >> 20} MiB + "
                f"{RSS_HEADROOM >> 20} MiB",
            )
            return False
        self._scan_output()
        return True

    def _bystander_recovers(self) -> bool:
        try:
            self._open_bystander()
            self._bystander_round()
        except (ConnectionGone, OSError, AssertionError):
            return False
        return True

    def _bystander_round(self) -> None:
        assert self._bystander is not None
        self._probe_count += 2
        versions_id, metadata_id = self._probe_count, self._probe_count + 1
        metadata = MetadataRequest(
            topics=(MetadataRequestTopic(name=TopicName(TOPIC)),),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        self._bystander.sendall(
            request_bytes(ApiVersionsRequest(), versions_id)
            + request_bytes(metadata, metadata_id)
        )
        reader = FrameReader(self._bystander)
        deadline = time.monotonic() + HEALTH_DEADLINE
        for want, api_key, version in (
            (versions_id, ApiKey.API_VERSIONS, 0),
            (metadata_id, ApiKey.METADATA, 8),
        ):
            response = reader.next_frame(deadline)
            assert response is not None, (
                f"bystander: no answer within {HEALTH_DEADLINE:.0f}s"
            )
            (correlation,) = struct.unpack_from(">i", response)
            assert correlation == want, (
                f"bystander: correlation id {correlation} != {want}"
            )
            body = decode_response(api_key, version, response)
            if isinstance(body, ApiVersionsResponse):
                assert int(body.error_code) == 0, body
            if isinstance(body, MetadataResponse):
                assert [t.name for t in body.topics] == [TOPIC], body

    def _ask(self, body: RequestPayload, api_key: int, version: int) -> ResponsePayload:
        with socket.create_connection(
            ("127.0.0.1", self.broker.port), timeout=10
        ) as sock:
            sock.sendall(request_bytes(body, 1))
            response = FrameReader(sock).next_frame(time.monotonic() + HEALTH_DEADLINE)
            assert response is not None
            return decode_response(api_key, version, response)

    def _replace_broker(self, case: Case) -> bool:
        """After a fatal failure: kill, verify its logs, and go on with a fresh broker."""
        self.broker.kill()
        self._wait_output_drained()
        self._scan_output()
        self._verify_logs()
        if self.restarts >= MAX_BROKER_RESTARTS:
            self._fail(case, "gave up", f"{self.restarts} broker restarts; run stopped")
            return False
        self.restarts += 1
        self.generation += 1
        baseline = self.rss_baseline
        self.start()
        self.rss_baseline = max(baseline, self.rss_baseline)
        return True

    # --- output -----------------------------------------------------------------------

    def _scan_output(self) -> None:
        lines = self.broker.output
        end = len(lines)
        for at in range(self._seen_output, end):
            if _LOG_RECORD.match(lines[at]):
                self._in_traceback = False
            if TRACEBACK in lines[at]:
                # A chained exception prints several tracebacks in one log record:
                # one failure per record.
                if not self._in_traceback:
                    self._traceback_at(lines, at, end)
                self._in_traceback = True
            elif (error := _LOG_ERROR.search(lines[at])) and TRACEBACK not in "".join(
                lines[at + 1 : at + 2]
            ):
                # An ERROR the broker logs is a broken promise too: bad client input is
                # answered with an error code, not logged as the broker's own failure.
                case = self._case_named_in(lines[at])
                self._fail(case, f"ERROR logged by {error[1]}", lines[at][:2000])
        self._seen_output = end

    def _traceback_at(self, lines: list[str], at: int, end: int) -> None:
        # The log record before the traceback names the connection ("local-remote"):
        # the remote port says which case's connection it was.
        context = lines[max(0, at - 1) : min(end, at + 40)]
        text = "\n".join(context)
        case = self._case_named_in(lines[at - 1] if at > 0 else "")
        # The exception's own line: "SomeError: message", possibly behind "|" of an
        # exception group; the innermost (last) one is the cause.
        raised = [m[1] for line in context[1:] if (m := _RAISED.match(line))]
        last = raised[-1] if raised else "?"
        self._fail(case, f"traceback: {last.strip()[:120]}", text)

    def _case_named_in(self, line: str) -> Case | None:
        """The case whose connection a log line names ("local-remote"), else the last."""
        case = self._last_case
        for port in re.findall(r"127\.0\.0\.1:(\d+)", line):
            case = self._ports.get(int(port), case)
        return case

    def _tail(self) -> str:
        return "broker output, last lines:\n" + "\n".join(self.broker.output[-30:])

    def _fail(self, case: Case | None, signature: str, message: str) -> None:
        placeholder = Case("none", 0, 0, "-", "-", "after the run", b"")
        self.failures.append(Failure(signature, case or placeholder, message))

    # --- the report -------------------------------------------------------------------

    def report(self, elapsed: float, family: str, since: int = 0) -> str:
        """The run's numbers and its failures (those after ``since``), grouped."""
        cases = self.cases_run - self._reported_cases
        self._reported_cases = self.cases_run
        lines = [
            f"{self.label} [{family}]: {cases} cases in {elapsed:.1f}s, "
            f"{len(self.failures) - since} failures, broker restarts {self.restarts}, "
            f"RSS baseline {self.rss_baseline >> 20} MiB peak {self.rss_peak >> 20} MiB",
            "  outcomes: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
        ]
        groups: dict[str, list[Failure]] = collections.defaultdict(list)
        for failure in self.failures[since:]:
            groups[failure.signature].append(failure)
        for signature, members in groups.items():
            first = members[0]
            refs = ", ".join(m.case.ref for m in members[:12])
            lines.append(f"- {signature}: {len(members)} cases ({refs})")
            lines.append("  " + first.case.describe().replace("\n", "\n  "))
            lines.append("  " + first.message[:3000].replace("\n", "\n  "))
        return "\n".join(lines)


def _api(api_key: int) -> str:
    from minikafka.net import api_name

    return api_name(api_key)


def run_family(
    session: FuzzSession,
    options: FuzzOptions,
    family: str,
    make_case: Callable[[int, int], Case],
    default_cases: int,
    *,
    last: bool = True,
) -> None:
    """Run ``family``'s cases (or the one being replayed), then fail with the report.

    ``last``: the module's last family also stops the broker, verifies the logs and
    restarts it (``FuzzSession.finish``)."""
    if options.replay is not None:
        replay_family, seed, index = options.replay
        if replay_family != family:
            pytest.skip(f"replaying a {replay_family} case")
        cases: Iterable[Case] = [make_case(seed, index)]
    else:
        count = default_cases if options.cases is None else options.cases
        cases = (make_case(options.seed, index) for index in range(count))
    start = time.monotonic()
    before = len(session.failures)
    try:
        session.run_all(cases)
        if last:
            session.finish()
    finally:
        report = session.report(time.monotonic() - start, family, since=before)
        REPORTS.append(report)
    if len(session.failures) > before:
        pytest.fail(report, pytrace=False)
