"""Lab 12's exercises: how ``linger.ms`` and ``batch.size`` shape the producer's
batches, its requests and its latency (seed 000's producer; ARCHITECTURE.md, "Traces and
labs").

Write each function with Spark's DataFrame API (``pyspark.sql.functions as F``), then
run ``make lab 12``: it runs the scenario (a cluster of three brokers, one producer per
setting) and checks every answer against what the producers' application saw and what
the leaders stored. Until you write it, a function raises :class:`ExerciseNotDone`.

The DataFrames come from ``minikafka.labs.read_events``; each has the envelope
columns ``ts`` (seconds since the epoch), ``node``, ``component``, ``event`` and
``time`` (``ts`` as a timestamp), plus its event's fields:

- ``batches``: ``ProducerBatchCompleted`` (``producer.batch``), one row per batch a
  producer sent, emitted when its outcome was known: ``client_id``, ``topic``,
  ``partition``, ``records``, ``size_bytes`` (as sent), ``reason`` (why it left the
  accumulator: ``full``, ``linger``, ``flush``, ...), ``queue_ms`` (from its first
  record's append to the Sender taking it), ``in_flight_ms`` (from then to the answer),
  ``retries``, ``base_offset``, ``error``;
- ``requests``: ``RequestCompleted`` (``net.request``), one row per request a broker
  answered: ``client_id``, ``api_name``, ``total_ms`` and the rest of Kafka's request
  time breakdown.

Each producer's ``client_id`` names its setting: ``lab12-linger0``, ``-linger5`` and
``-linger50`` send 400 records a second with ``linger.ms`` 0, 5 and 50;
``lab12-batch1k`` sends 2,000 a second with ``batch.size`` 1,024 (and ``linger.ms``
20).

Percentiles: use Spark's exact ``F.percentile(column, p)``, not ``percentile_approx``:
the checks compare with an exact computation.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will want it)

from minikafka.labs import ExerciseNotDone


def batch_shapes(batches: DataFrame) -> DataFrame:
    """How many batches did each producer send, and how full were they?

    Question: at the same rate, how do ``linger.ms`` 0, 5 and 50 change the number of
    batches and the records in each? What does a small ``batch.size`` do at a high rate?

    Mechanism: ``produce()`` appends a record to the open batch of its partition; the
    Sender takes a partition's first batch when it is ready: full, or its first record
    has waited ``linger.ms``, or ``flush()`` asks. Until then every record produced
    joins it. So a batch holds about ``rate x linger.ms`` records, unless ``batch.size`` bytes
    come first, or the Sender could not take it at once (all
    ``max.in.flight.requests.per.connection`` requests unanswered).

    Output columns, one row per ``client_id``, ordered by it: ``client_id``; ``batches``
    (a count); ``records`` (their sum); ``records_per_batch`` (``records / batches``);
    ``max_records`` (the most in one batch); ``mean_bytes`` (the mean ``size_bytes``).
    """
    raise ExerciseNotDone(
        "batch_shapes",
        "group by client_id; count the rows, sum and average the columns",
    )


def leave_reasons(batches: DataFrame) -> DataFrame:
    """Why did each producer's batches leave the accumulator?

    Question: which of the ready conditions sent each setting's batches on their way,
    and how long had they waited?

    Mechanism: the Sender asks the accumulator which batches are ready; the first
    condition that holds is the batch's ``reason``: ``full`` (a record did not fit under
    ``batch.size``, so a second batch waits behind it), ``linger`` (its first record has
    waited ``linger.ms``; with 0, at once), ``flush`` (``flush()`` is waiting for every
    record). A batch that is not ready goes along with a ready one of another partition
    of the same leader (``piggyback``); a producer that closes takes the rest
    (``close``). ``queue_ms`` is how long the batch waited from its first record on.

    Output columns, one row per (``client_id``, ``reason``) that occurred, ordered by
    both: ``client_id``; ``reason``; ``batches`` (a count); ``share`` (of that client's
    batches, between 0 and 1); ``mean_records`` (records per batch); ``min_queue_ms``
    (the shortest ``queue_ms``).
    """
    raise ExerciseNotDone(
        "leave_reasons",
        "count per (client_id, reason); a window over client_id gives each share",
    )


def batch_latency(batches: DataFrame) -> DataFrame:
    """Where does a batch spend its time, waiting in the producer or in flight?

    Question: what does lingering cost? A batch's first record waits the longest: from
    its append (``queue_ms``: the linger, and any wait for a free request slot) through
    the Produce request's round trip (``in_flight_ms``: with ``acks=all``, until every
    in-sync replica has the batch) to its delivery report.

    Mechanism: ``queue_ms + in_flight_ms`` is the first record's latency as the producer
    measured it; the records appended after it waited less. A batch ready at once
    (``linger.ms=0``) still waits when every request slot to its leader is taken: the
    Sender keeps at most ``max.in.flight.requests.per.connection`` (5) unanswered.

    Output columns, one row per ``client_id``, ordered by it: ``client_id``;
    ``batches``; ``queue_p50_ms``, ``queue_p99_ms``; ``in_flight_p50_ms``;
    ``total_p50_ms``, ``total_p99_ms`` (of ``queue_ms + in_flight_ms``); all exact
    (``F.percentile``).
    """
    raise ExerciseNotDone(
        "batch_latency", "add the two times into a column, then F.percentile per client"
    )


def produce_requests(batches: DataFrame, requests: DataFrame) -> DataFrame:
    """What did each setting cost the brokers, in Produce requests and their time?

    Question: how many Produce requests did the brokers serve per producer, how many
    records did each carry, and how much of a batch's time in flight was the broker's?

    Mechanism: a Produce request carries at most one batch per partition, the batches
    drained together for one leader; each setting produces to a topic of one partition,
    so every request carries one batch (a retry is a request of its own). The broker's
    ``total_ms`` runs from the request's last byte read to its response's last byte
    written; the producer's ``in_flight_ms`` holds it and the network both ways, and the
    client's own work on either side.

    Output columns, one row per producer ``client_id`` (the rows of ``batches``),
    ordered by it: ``client_id``; ``records`` and ``batches`` (from ``batches``); ``requests``
    (the brokers' Produce requests with that ``client_id``); ``records_per_request``;
    ``broker_p50_ms`` (the p50 of those requests' ``total_ms``); ``in_flight_p50_ms``
    (the p50 of the batches' ``in_flight_ms``).
    """
    raise ExerciseNotDone(
        "produce_requests",
        "aggregate each DataFrame per client_id (Produce requests only), then join",
    )
