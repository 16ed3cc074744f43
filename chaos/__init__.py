"""minikafka's chaos harness: a seeded nemesis over a real process cluster, real
clients, and a checker.

``history`` (the history file's format), ``checker`` (the anomalies a history and the
final state show), ``traces`` (what the brokers' and controllers' traces must never
show), ``nemesis`` (a seeded schedule of faults), ``netns`` (network namespaces for
real partitions), ``workload`` (the clients), ``faults`` (the schedule carried out on
the cluster), ``runner`` (a run end to end) and ``timeline`` (a run's chart).
``chaos/README.md`` says what is injected today and what is not built yet.
"""
