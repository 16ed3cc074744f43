"""Lab 7's reference for ``sticky``: minikafka's own."""

from minikafka.coordination.assignors._sticky import (
    sticky_assignment as sticky_assignment,
)
