"""``python -m minikafka.replication [--dir DIR]``: the purgatory at work, step by step.

One partition, ``orders-0``, has replicas on brokers 1, 2 and 3; this process is broker 1,
its leader, and ``min.insync.replicas`` is 2. The followers are simulated by calling what
their Fetch requests would call, and time is passed in by hand (``t=``), so every run
prints the same story:

1. an ``acks=all`` produce is appended to the leader's log and parked in the produce
   purgatory: the high watermark (HW) has not passed it;
2. the followers fetch; the leader learns their log end offsets (LEO) from the offsets
   they fetch from, and moves the HW to the smallest LEO in the ISR; when the HW passes
   the batch, the parked produce is answered;
3. a consumer's long-polling fetch (``fetch.min.bytes``) waits in the fetch purgatory
   until enough bytes lie below the HW, which takes new data *and* the followers;
4. the controller shrinks the ISR to the leader alone: ``acks=all`` is refused with
   NOT_ENOUGH_REPLICAS, ``acks=1`` is still accepted.

The ReplicaManager is used as its shell uses it: each request gets a number, and every
call returns the answers it produced (to its own request, or to parked ones it
completed) as values; here they are kept in a dict by request number.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import Acks, TopicPartition, run_app, usage_error
from minikafka.log import LogConfig, LogManager
from minikafka.log.testing import ManualClock, keyed_batch

from . import (
    FetchParams,
    FetchPartition,
    FetchResponse,
    PartitionState,
    ProduceResponse,
    ReplicaManager,
    Response,
    TopicSettings,
)

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.uuid4()


def yes_no(answer: Response | None) -> str:
    return "yes" if answer is not None else "no"


def run(data: Path) -> None:
    clock = ManualClock()  # the logs' clock (record timestamps, segment ages)
    settings = TopicSettings(LogConfig(), min_insync_replicas=2)
    manager = ReplicaManager(
        1, LogManager.startup([data], clock=clock), lambda _: settings
    )
    lead = {TP: (TOPIC_ID, PartitionState(1, 0, 0, replicas=(1, 2, 3), isr=(1, 2, 3)))}
    # nothing waits yet: no answers
    manager.become_leader_or_follower(lead, {}, now=0.0)
    partition = manager.get_partition(TP)
    assert partition is not None
    log = partition.log

    def show(t: float, what: str) -> None:
        leos = {
            b: r.log_end_offset for b, r in sorted(partition.remote_replicas.items())
        }
        print(
            f"  t={t:.1f}  {what:<36} LEO={log.log_end_offset} followers={leos} "
            f"HW={log.high_watermark}"
        )

    answers: dict[int, Response] = {}  # request number -> its answer, once given
    numbers = iter(range(1, 1_000))

    def produce(t: float, acks: Acks, values: list[bytes]) -> int:
        batch = keyed_batch([(None, v) for v in values], timestamp_ms=clock.now_ms)
        request = next(numbers)
        answers.update(
            (r.request_id, r)
            for r in manager.append_records(
                30_000, acks, {TP: batch}, request, now=t
            ).replies
        )
        return request

    def follower_fetch(t: float, broker: int, offset: int) -> None:
        params = FetchParams(
            replica_id=broker, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
        )
        fetch = [FetchPartition(TP, offset, 1 << 20)]
        answers.update(
            (r.request_id, r)
            for r in manager.fetch_messages(params, fetch, 0, t).replies
        )
        show(t, f"broker {broker} fetches from offset {offset}")

    print(
        f"{TP}: replicas [1, 2, 3], leader broker 1, ISR [1, 2, 3], "
        f"min.insync.replicas=2; logs in {data}"
    )

    print(
        "\n1. A producer sends 3 records with acks=all (followers at -1: not fetched yet)"
    )
    produced = produce(0.0, Acks.ALL, [b"a", b"b", b"c"])
    show(0.0, "appended on the leader")
    print(
        f"  answered: {yes_no(answers.get(produced))}; waiting in the produce purgatory: "
        f"{manager.produce_purgatory.delayed} (deadline t={manager.next_deadline():.1f})"
    )

    print("\n2. The followers fetch; the HW is the smallest LEO in the ISR")
    follower_fetch(0.1, 2, 3)
    follower_fetch(0.2, 3, 1)
    print(f"  answered: {yes_no(answers.get(produced))} (broker 3 has only offset 0)")
    follower_fetch(0.3, 3, 3)
    produce_answer = answers[produced]
    assert isinstance(produce_answer, ProduceResponse)
    answer = produce_answer.results[TP]
    print(
        f"  answered: {answer.error_code.name.upper()} at base offset {answer.base_offset}"
    )

    print("\n3. A consumer long-polls from offset 3: min_bytes=200, max_wait=5000 ms")
    fetched = next(numbers)
    params = FetchParams(
        replica_id=-1, max_wait_ms=5000, min_bytes=200, max_bytes=1 << 20
    )
    long_poll = [FetchPartition(TP, 3, 1 << 20)]
    answers.update(
        (r.request_id, r)
        for r in manager.fetch_messages(params, long_poll, fetched, now=1.0).replies
    )
    print(
        f"  answered: {yes_no(answers.get(fetched))}; waiting in the fetch purgatory: "
        f"{manager.fetch_purgatory.delayed}"
    )
    produce(1.1, Acks.LEADER, [b"d"])
    show(1.1, "1 small record, acks=1")
    print(
        f"  answered: {yes_no(answers.get(fetched))} (the record is not below the HW yet)"
    )
    follower_fetch(1.2, 2, 4)
    follower_fetch(1.2, 3, 4)
    print(
        f"  answered: {yes_no(answers.get(fetched))} (below the HW now, but fewer than 200 bytes)"
    )
    produce(1.3, Acks.LEADER, [b"x" * 100] * 2)
    show(1.3, "2 records of 100 bytes, acks=1")
    follower_fetch(1.4, 2, 6)
    follower_fetch(1.4, 3, 6)
    fetch_answer = answers[fetched]
    assert isinstance(fetch_answer, FetchResponse)
    [(_, result)] = fetch_answer.results
    print(
        f"  answered: {result.error_code.name.upper()} with {result.size} bytes from offset 3, "
        f"HW={result.high_watermark}"
    )

    print("\n4. The controller shrinks the ISR to [1]; min.insync.replicas is 2")
    shrunk = PartitionState(1, 0, 1, replicas=(1, 2, 3), isr=(1,))
    # none either
    manager.become_leader_or_follower({TP: (TOPIC_ID, shrunk)}, {}, now=2.0)
    for acks in (Acks.ALL, Acks.LEADER):
        late = answers[produce(2.0, acks, [b"late"])]
        assert isinstance(late, ProduceResponse)
        result_p = late.results[TP]
        print(
            f"  acks={acks:>2}: {result_p.error_code.name.upper()}"
            + (
                f" at offset {result_p.base_offset}"
                if result_p.base_offset >= 0
                else ""
            )
        )
    manager.log_manager.shutdown()


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command(
    help="The purgatory at work, step by step: one partition led by this process, its "
    "followers simulated and time passed by hand, so that every run prints the same "
    "story (produce with acks=all, the followers' fetches, a long-polling consumer, "
    "the ISR shrunk)."
)
def demo(
    ctx: typer.Context,
    dir: Annotated[
        Path | None,
        typer.Option("--dir", help="where the logs go (default: a temp dir)"),
    ] = None,
) -> None:
    if dir is not None:
        if dir.exists() and any(dir.iterdir()):
            usage_error(ctx, f"{dir} is not empty: the demo starts from empty logs")
        run(dir)
    else:
        with tempfile.TemporaryDirectory(prefix="minikafka-replication-") as tmp:
            run(Path(tmp))


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.replication")


if __name__ == "__main__":
    raise SystemExit(main())
