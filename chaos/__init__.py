"""minikafka's chaos harness, begun: the parts that need no running cluster.

``history`` (the history file's format), ``checker`` (the anomalies a history and the
final state show), ``traces`` (what the brokers' and controllers' traces must never
show), ``nemesis`` (a seeded schedule of faults) and ``netns`` (network namespaces for
real partitions). ``chaos/README.md`` says what exists and what is not built yet.
"""
