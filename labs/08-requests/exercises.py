"""Lab 8's exercises: the anatomy of a request (ARCHITECTURE.md, "Traces and labs").

Write each function with Spark's DataFrame API, then run ``make lab 8``: it runs the
scenario (a broker driven by librdkafka clients) and checks every answer against what
the clients themselves counted and timed. Until you write it, a function raises
:class:`ExerciseNotDone`, and its check fails with that message.

Every function takes ``requests``, the broker's ``net.request`` events as read by
``read_events(spark, traces, RequestCompleted)``: one row per request, with the envelope
(``ts`` in seconds since the epoch, ``node``, ``component``, ``event``), the event's fields
(``client_id``, ``api_name``, ``api_version``, ``connection_id``, ``request_bytes``,
``response_bytes`` and the time breakdown ``request_queue_ms``, ``local_ms``,
``remote_ms``, ``response_queue_ms``, ``response_send_ms``, ``total_ms``) and ``time``
(``ts`` as a UTC timestamp).

Percentiles: use Spark's exact ``F.percentile(column, p)`` (linear interpolation between
the two nearest ranks, as numpy's default), not ``percentile_approx``: the checks compare
with an exact computation.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will want it)

from minikafka.labs import ExerciseNotDone
from minikafka.net import REQUEST_TIME_COMPONENTS

# Kafka's request time breakdown, in the order a request lives through it; the first
# five add up to ``total_ms`` (the fields of minikafka.net's RequestMetrics).
COMPONENTS = REQUEST_TIME_COMPONENTS


def request_counts(requests: DataFrame, by_client: bool = False) -> DataFrame:
    """How many requests of each API did the broker serve, and how many bytes moved?

    Mechanism: every request carries its API key in its header, and the client decides
    how many it sends: one Produce per ``flush()`` of one message, or one per batch that
    ``linger.ms`` filled; Fetch requests keep coming as long as a consumer is assigned.
    Beside the APIs you call there are the ones the client sends on its own
    (ApiVersions on every new connection, Metadata, FindCoordinator, ListOffsets).
    ``request_bytes`` and ``response_bytes`` are the frames' sizes without their 4-byte
    size prefix; an acks=0 Produce has no response, so 0 response bytes.

    Columns: ``api_name``, ``requests`` (a count), ``request_bytes`` and
    ``response_bytes`` (sums), one row per API; with ``by_client=True``, ``client_id``
    first and one row per (client, API). Order by ``requests``, most first.
    """
    raise ExerciseNotDone(
        "request_counts", "group by api_name (and client_id), then count and sum"
    )


def time_percentiles(requests: DataFrame) -> DataFrame:
    """Per API, the p50 and p99 of each part of the request time breakdown.

    Mechanism: a request is read by its connection's Processor and put on the
    RequestChannel (``request_queue_ms``: waiting for a handler); a handler runs it
    (``local_ms``); if it cannot answer yet it parks it in a purgatory (``remote_ms``:
    an acks=all Produce waiting for the ISR, a Fetch waiting for data or for
    ``fetch.max.wait.ms``); the answer waits for its Processor (``response_queue_ms``)
    and is written to the socket (``response_send_ms``). ``total_ms`` is the whole.
    Which part dominates for Produce, and which for Fetch?

    Columns: ``api_name``, ``component`` (one of :data:`COMPONENTS`: the name of the time
    column, not the envelope's ``component``), ``requests`` (the API's request count),
    ``p50_ms`` and ``p99_ms`` (exact, ``F.percentile``): one row per (API, component).
    """
    raise ExerciseNotDone(
        "time_percentiles",
        "unpivot the six time columns into (component, ms), then F.percentile per group",
    )


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    """How do ``acks`` and ``fetch.wait.max.ms`` change where Produce and Fetch spend time?

    Mechanism: each client of the scenario has one setting, and its ``client_id`` says
    which: ``lab08-producer-acks0``, ``-acks1``, ``-acksall`` (and ``-burst``, acks=1),
    ``lab08-consumer-wait500`` and ``-wait10`` (``fetch.wait.max.ms``). acks=0 gets no
    response at all; acks=1 is answered once the leader has appended; acks=all waits in
    the produce purgatory until every replica in the ISR has the records (with one broker
    the ISR is the leader alone). A Fetch that finds no new data waits in the fetch
    purgatory until data arrives or ``fetch.wait.max.ms`` runs out: long polling.

    Only Produce and Fetch requests. Columns: ``client_id``, ``api_name``, ``requests``,
    ``total_p50_ms``, ``total_p99_ms``, ``remote_p50_ms``, ``remote_p99_ms`` (exact
    percentiles), ``remote_share`` (the client's summed ``remote_ms`` over its summed
    ``total_ms``) and ``no_response`` (how many had ``response_bytes == 0``): one row
    per (client, API).
    """
    raise ExerciseNotDone(
        "acks_and_long_polling",
        "keep Produce and Fetch, group by client_id and api_name; F.count_if for no_response",
    )


def busiest_second(requests: DataFrame) -> DataFrame:
    """Which second of the wall clock had the most requests, and how many?

    Mechanism: request rates come in bursts; a per-second count (a tumbling one-second
    window, on whole seconds of ``time``) finds them. The scenario made one on purpose.

    Columns: ``second`` (a timestamp: the window's start, ``time`` truncated to the
    second) and ``requests`` (how many requests completed in it): one row, the busiest
    (the earliest one if two tie).
    """
    raise ExerciseNotDone(
        "busiest_second", "F.date_trunc('second', 'time'), count, keep the largest"
    )
