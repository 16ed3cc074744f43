"""The code of ``bench/kafka_reference.py`` that turns tool output into the ratio table.

The benchmark itself measures and never asserts; what it must get right is reading the
figures Kafka's perf tools print and putting each beside the other broker's. The outputs
below are real: captured from kafka-producer-perf-test and kafka-consumer-perf-test of
Apache Kafka 4.1.1 (``reference.kafka.run_tool``) on this project's 2-CPU machine on
2026-12-02, against the real broker and against minikafka. No Java runs here.
"""

from __future__ import annotations

import pytest

from bench import e2e_latency
from bench._common import BenchError
from bench.kafka_reference import (
    BrokerKind,
    BrokerResults,
    IdleRss,
    Row,
    ToolRun,
    format_ratio,
    parse_consumer_summary,
    parse_producer_summary,
    ratio,
    ratio_table,
    scenario_key,
    table_rows,
)

# kafka-producer-perf-test, 200,000 records against Kafka (one line: the run was
# shorter than the tool's 5 s reporting interval).
PRODUCER_SHORT = (
    "200000 records sent, 89847.3 records/sec (8.57 MB/sec), 887.02 ms avg latency, "
    "1222.00 ms max latency, 1010 ms 50th, 1205 ms 95th, 1217 ms 99th, 1221 ms 99.9th.\n"
)
# kafka-producer-perf-test, 1,000,000 records against minikafka: interim lines every
# 5 s, then the summary with percentiles.
PRODUCER_LONG = (
    "62409 records sent, 12481.8 records/sec (1.19 MB/sec), 1886.6 ms avg latency, "
    "3132.0 ms max latency.\n"
    "512817 records sent, 102563.4 records/sec (9.78 MB/sec), 2861.0 ms avg latency, "
    "3522.0 ms max latency.\n"
    "1000000 records sent, 77525.4 records/sec (7.39 MB/sec), 2829.63 ms avg latency, "
    "3689.00 ms max latency, 2981 ms 50th, 3512 ms 95th, 3638 ms 99th, 3666 ms 99.9th.\n"
)
# kafka-consumer-perf-test reading 200,000 records back from Kafka.
CONSUMER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
    "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
    "2026-12-02 09:44:16:310, 2026-12-02 09:44:20:267, 19.0735, 4.8202, 200000, "
    "50543.3409, 3609, 348, 54.8089, 574712.6437\n"
)
# kafka-consumer-perf-test asked for 2,000 records of a topic holding 1,000, with
# --timeout 2000 (shorter than the group join): it gives up, says so and exits 0.
CONSUMER_SHORT_OF_RECORDS = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
    "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
    "WARNING: Exiting before consuming the expected number of messages: timeout "
    "(2000 ms) exceeded. You can use the --timeout option to increase the timeout.\n"
    "2026-12-02 09:48:21:308, 2026-12-02 09:48:23:378, 0.0000, 0.0000, 0, 0.0000, "
    "0, 2070, 0.0000, 0.0000\n"
)


def test_producer_summary_is_read_from_the_final_line() -> None:
    """Every figure of the summary is read, as the tool printed it."""
    s = parse_producer_summary(PRODUCER_SHORT, 200_000)
    assert (s.records, s.records_per_s, s.mb_per_s) == (200_000, 89847.3, 8.57)
    assert (s.avg_latency_ms, s.max_latency_ms) == (887.02, 1222.0)
    assert (s.p50_ms, s.p95_ms, s.p99_ms, s.p999_ms) == (1010, 1205, 1217, 1221)


def test_producer_interim_lines_are_not_the_summary() -> None:
    """The interim lines (no percentiles) are skipped: the whole run's line is quoted."""
    s = parse_producer_summary(PRODUCER_LONG, 1_000_000)
    assert s.records == 1_000_000
    assert (s.records_per_s, s.max_latency_ms, s.p99_ms) == (77525.4, 3689.0, 3638)


def test_producer_summary_problems_are_named() -> None:
    """A run that sent another count, or printed no summary, fails the benchmark
    with a message saying which."""
    with pytest.raises(BenchError, match="sent 200,000 records, not 300,000"):
        parse_producer_summary(PRODUCER_SHORT, 300_000)
    with pytest.raises(BenchError, match="no summary line"):
        parse_producer_summary(PRODUCER_LONG.splitlines()[0], 1_000_000)


def test_consumer_summary_is_read_by_the_header_names() -> None:
    """Each figure is taken from the column its header names."""
    s = parse_consumer_summary(CONSUMER, 200_000)
    assert s.records == 200_000
    assert (s.mb, s.mb_per_s, s.records_per_s) == (19.0735, 4.8202, 50543.3409)
    assert (s.rebalance_ms, s.fetch_ms) == (3609, 348)
    assert (s.fetch_mb_per_s, s.fetch_records_per_s) == (54.8089, 574712.6437)


def test_consumer_that_gave_up_fails_the_benchmark() -> None:
    """A consumer run that read fewer records than asked (the tool exits 0) is an error
    quoting the tool's own warning; so is output with no header."""
    with pytest.raises(
        BenchError, match=r"read 0 records, not 2,000: WARNING: Exiting"
    ):
        parse_consumer_summary(CONSUMER_SHORT_OF_RECORDS, 2_000)
    with pytest.raises(BenchError, match="no header line"):
        parse_consumer_summary(PRODUCER_SHORT, 200_000)
    with pytest.raises(BenchError, match="header but no figures"):
        parse_consumer_summary(CONSUMER.splitlines()[0], 200_000)


def test_ratio_table_puts_minikafka_over_kafka() -> None:
    """The last column is minikafka / Kafka; a missing figure shows its note and no
    ratio; a range is shown only where the repeats differ."""
    table = ratio_table(
        [
            Row("idle", "RSS MiB", 400.0, 80.0, "{:.1f}"),
            Row("p", "records/s", 200_000.0, 50_000.0, kafka_range=(190e3, 210e3)),
            Row("e2e", "p99 ms", 2.0, None, "{:.2f}", minikafka_note="stalled"),
            Row("", "x", 0.0, 1.0),
        ]
    ).splitlines()
    header = [c.strip() for c in table[0].split("|")[1:-1]]
    assert header == ["scenario", "figure", "Kafka", "minikafka", "minikafka / Kafka"]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table[2:]]
    assert cells[0] == ["idle", "RSS MiB", "400.0", "80.0", "0.2x"]
    assert cells[1] == [
        "p",
        "records/s",
        "200,000 (190,000-210,000)",
        "50,000",
        "0.25x",
    ]
    assert cells[2] == ["e2e", "p99 ms", "2.00", "stalled", "-"]
    assert cells[3][-1] == "-"  # Kafka's 0: no ratio rather than a division by zero
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert (format_ratio(1271.4), format_ratio(0.1234)) == ("1,271x", "0.123x")


def _tool(records_per_s: float, broker_cpu_s: float) -> ToolRun:
    return ToolRun(
        "kafka-consumer-perf-test",
        "t",
        None,
        1_000,
        1.0,
        broker_cpu_s,
        2.0,
        None,
        None,
        parse_consumer_summary(
            CONSUMER.replace("200000", "1000").replace(
                "574712.6437", str(records_per_s)
            ),
            1_000,
        ),
        "",
    )


def _latency(p99: float) -> e2e_latency.Run:
    return e2e_latency.Run(
        rate=1_000,
        acks="1",
        records=3_000,
        warmup_records=500,
        seconds=3.0,
        achieved_rate_per_s=1_000.0,
        latency={"p50_ms": p99 / 2, "p99_ms": p99},
        broker_cpu_percent=50.0,
        client_cpu_percent=20.0,
        other_cpu_percent=None,
    )


def test_table_quotes_each_brokers_median_run() -> None:
    """Each broker's median run (by records/s) is quoted whole: its CPU figures with
    its rate, not another repeat's."""
    results: dict[BrokerKind, BrokerResults] = {}
    measured: list[tuple[BrokerKind, tuple[float, ...], float]] = [
        ("kafka", (100.0, 300.0, 200.0), 2.0),
        ("minikafka", (40.0, 10.0, 20.0), 8.0),
    ]
    for kind, rates, p99 in measured:
        runs = [_tool(rate, rate / 100) for rate in rates]
        e2e = {
            scenario_key(e2e_latency.Scenario(rate, acks)): [_latency(p99)]
            for rate in e2e_latency.RATES
            for acks in e2e_latency.ACKS
        }
        results[kind] = BrokerResults(
            kind,
            IdleRss(100.0, True, 3.0, [100.0], None),
            produce_acks_1=runs,
            consume=runs,
            produce_acks_all=runs,
            e2e=e2e,
        )
    rows = table_rows(results, 1_000)
    rate_row = rows[1]
    assert (rate_row.kafka, rate_row.minikafka) == (200.0, 20.0)
    assert (rate_row.kafka_range, rate_row.minikafka_range) == ((100, 300), (10, 40))
    cpu_row = rows[2]  # broker µs/record of the median run: 2.0 s and 0.2 s / 1,000
    assert (cpu_row.kafka, cpu_row.minikafka) == (2000.0, 200.0)
    assert cpu_row.ratio == pytest.approx(0.1)
    e2e_row = rows[10]
    assert e2e_row.scenario.startswith("e2e 1,000 records/s")
    assert e2e_row.ratio == pytest.approx(4.0)
