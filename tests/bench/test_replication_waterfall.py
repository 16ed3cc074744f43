"""The join of ``bench/replication_waterfall.py``: the brokers' trace events of one
``acks=all`` produce become its hops, each the difference of the right two timestamps,
and the follower whose fetch moved the high watermark is the one whose hops are shown.
No broker runs here: the events are written out as the brokers would write them.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.replication_waterfall import CHECKS, HOPS, TOPIC, TOTALS, waterfall

LEADER = 1
T = 100.0
"""The produce reaches the leader at ``T`` (seconds); every time below is ms after it."""


def at(ms: float) -> float:
    return T + ms / 1000


def request(api: str, client: str, end_ms: float, **times: float) -> dict[str, Any]:
    return {
        "node": LEADER,
        "event": "request",
        "api_name": api,
        "client_id": client,
        "ts": at(end_ms),
        **times,
    }


def one_produce() -> list[dict[str, Any]]:
    """Follower 2 answers first; follower 3's next fetch moves the HW to 6."""
    answer = {"request_queue_ms": 0.0, "local_ms": 0.0, "remote_ms": 3.0}
    answer |= {"response_queue_ms": 0.25, "response_send_ms": 0.1}
    events = [
        request(
            "Produce",
            "rdkafka",
            2.3,
            total_ms=2.3,
            request_queue_ms=0.1,
            local_ms=0.3,
            remote_ms=1.7,
            response_queue_ms=0.1,
            response_send_ms=0.1,
        ),
        # the parked fetches, woken in the produce's handler (0.1-0.4 ms), leave at
        # 0.6 and 0.7
        request("Fetch", "ReplicaFetcherThread-2-1", 0.6, **answer),
        request("Fetch", "ReplicaFetcherThread-3-1", 0.7, **answer),
    ]
    for follower, appended, taken in ((2, 1.2, 1.6), (3, 1.5, 2.0)):
        events.append(
            {
                "node": follower,
                "event": "follower_append",
                "topic": TOPIC,
                "fetch_offset": 5,
                "log_end_offset": 6,
                "append_ms": 0.1,
                "ts": at(appended),
            }
        )
        events.append(
            {
                "node": LEADER,
                "event": "follower_fetch",
                "topic": TOPIC,
                "follower": follower,
                "fetch_offset": 6,
                "ts": at(taken),
            }
        )
    events.append(
        {
            "node": LEADER,
            "event": "hw_advance",
            "topic": TOPIC,
            "high_watermark": 6,
            "ts": at(2.0),
        }
    )
    events.append(
        {"node": LEADER, "event": "delayed_op", "kind": "produce", "ts": at(2.0)}
    )
    return sorted(events, key=lambda e: float(e["ts"]))


def test_each_hop_is_the_gap_between_its_two_events_on_the_slower_followers_path() -> (
    None
):
    hops, checks, joined, seen = waterfall(
        one_produce(), LEADER, {5: 2.5}, (T - 1, T + 1)
    )
    assert (joined, seen) == (1, 1)
    expected = {
        "client and wire": 0.2,
        "request queue (leader)": 0.1,
        "leader append": 0.3,
        "follower fetch answered": 0.3,  # follower 3's, from the append at 0.4
        "wire to the follower": 0.7,  # to its answer decoded at 1.4
        "follower append": 0.1,
        "follower's next fetch": 0.5,  # from 1.5 to the leader taking it at 2.0
        "HW move": 0.0,
        "DelayedProduce completion": 0.1,  # the answer handed over at 2.1
        "response (leader)": 0.2,
        "leader total": 2.3,
        "client latency": 2.5,
    }
    assert set(hops) == set(HOPS + TOTALS)
    for hop, ms in expected.items():
        assert hops[hop] == [pytest.approx(ms, abs=1e-6)], hop
    assert set(checks) == set(CHECKS)
    assert checks == {
        "follower answers woken by the append": 1,
        "follower fetches expired (not woken)": 0,
        "DelayedProduce completed in the HW move's call": 1,
    }


def test_a_produce_without_a_timed_record_or_a_hw_move_is_not_joined() -> None:
    # Its record was sent before the timed stretch (a warm-up record): not joined.
    _, _, joined, seen = waterfall(one_produce(), LEADER, {}, (T - 1, T + 1))
    assert (joined, seen) == (0, 1)
    # No HW move while it waited (an ISR of the leader alone): nothing to join.
    events = [e for e in one_produce() if e["event"] != "hw_advance"]
    _, _, joined, _ = waterfall(events, LEADER, {5: 2.5}, (T - 1, T + 1))
    assert joined == 0


def test_a_follower_fetch_that_ran_out_its_wait_is_counted_until_the_last_produce() -> (
    None
):
    def expired(ms: float) -> dict[str, Any]:
        return {
            "node": LEADER,
            "event": "delayed_op",
            "kind": "fetch",
            "outcome": "expired",
            "ts": at(ms),
        }

    # One during the stretch; one after the last answer (nothing more to fetch).
    events = sorted(
        [*one_produce(), expired(1.0), expired(600.0)], key=lambda e: float(e["ts"])
    )
    _, checks, _, _ = waterfall(events, LEADER, {5: 2.5}, (T - 1, T + 1))
    assert checks["follower fetches expired (not woken)"] == 1
