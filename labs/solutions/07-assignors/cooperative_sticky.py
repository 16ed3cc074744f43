"""Lab 7's reference for ``cooperative``: minikafka's own."""

from minikafka.coordination.assignors._cooperative_sticky import (
    CooperativeStickyAssignor as CooperativeStickyAssignor,
)
