"""Lab 7's reference for ``roundrobin``: minikafka's own."""

from minikafka.coordination.assignors._round_robin import (
    RoundRobinAssignor as RoundRobinAssignor,
)
