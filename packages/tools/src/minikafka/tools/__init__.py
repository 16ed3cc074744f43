"""minikafka.tools: Kafka's command-line client tools, written on ``minikafka.client``.

``kafka-topics.sh``, ``kafka-configs.sh``, ``kafka-console-producer.sh``,
``kafka-console-consumer.sh``, ``kafka-consumer-groups.sh``,
``kafka-reassign-partitions.sh``, ``kafka-leader-election.sh``,
``kafka-metadata-quorum.sh`` and ``kafka-cluster.sh unregister`` (:data:`unregister_command`,
which the broker package mounts on its ``cluster`` command): their flags and their
output, as commands of ``minikafka`` (and of ``python -m minikafka.tools``). Kafka's own
tools are clients of the cluster, not parts of the broker, and so are these: the package
sits above ``minikafka.client`` and below ``minikafka.broker``, which adds
:data:`tools_app` to its server commands, and whose own commands reuse the tools'
connection and errors (:func:`connect`, :class:`ToolError`).
"""

from ._cli import app as tools_app
from ._cli import stdout_to_devnull as stdout_to_devnull
from ._cluster import unregister as unregister_command
from ._cluster import unregister_broker as unregister_broker
from ._connection import BrokerError as BrokerError
from ._connection import ToolError as ToolError
from ._connection import connect as connect
from ._connection import describe_failure as describe_failure
from ._connection import lone_errors as lone_errors
from ._connection import parse_bootstrap as parse_bootstrap

__all__ = [
    "BrokerError",
    "ToolError",
    "connect",
    "describe_failure",
    "lone_errors",
    "parse_bootstrap",
    "stdout_to_devnull",
    "tools_app",
    "unregister_broker",
    "unregister_command",
]
