"""``bench/security_cost.py`` in its quick form, on a real broker: its raw client
completes the TLS handshake and the SASL exchanges (SCRAM-SHA-512 over TLS, PLAIN) on
every listener, every Produce answer passes its checks (NONE, base offsets stepping by
the batch's records), and each listener gets each figure. Nothing about their size is
asserted: a benchmark measures."""

from __future__ import annotations

from bench import security_cost

FIGURES = {
    "large_mb_s",
    "small_p50_ms",
    "small_p99_ms",
    "handshakes_s",
    "large_cpu_ms_per_mib",
    "small_cpu_us",
    "handshake_cpu_ms",
}


def test_every_listener_authenticates_and_gets_every_figure() -> None:
    report = security_cost.run(quick=True)
    medians = report.document["medians"]
    assert isinstance(medians, dict)
    assert set(medians) == set(security_cost.LISTENERS)
    for figures in medians.values():
        assert set(figures) == FIGURES
        # A rate of new connections, and of bytes: each listener served some.
        assert figures["handshakes_s"] > 0
        assert figures["large_mb_s"] > 0
    assert all(listener in report.table for listener in security_cost.LISTENERS)
