"""minikafka.tools: Kafka's command-line client tools, written on ``minikafka.client``.

``kafka-topics.sh``, ``kafka-console-producer.sh``, ``kafka-console-consumer.sh``,
``kafka-consumer-groups.sh``, ``kafka-reassign-partitions.sh``,
``kafka-leader-election.sh`` and ``kafka-metadata-quorum.sh``: their flags and their
output, as commands of ``minikafka`` (and of ``python -m minikafka.tools``). Kafka's own
tools are clients of the cluster, not parts of the broker, and so are these: the package
sits above ``minikafka.client`` and below ``minikafka.broker``, which adds
:data:`tools_app` to its server commands.
"""

from ._cli import app as tools_app

__all__ = ["tools_app"]
