"""Lab 7's reference for ``range``: minikafka's own (the Assignors chapter)."""

from minikafka.coordination.assignors._range import RangeAssignor as RangeAssignor
