"""Lab 6's reference: minikafka's own ``Rebalancer`` (packages/coordination/src/
minikafka/coordination/group/_rebalance.py, in the Consumer groups chapter)."""

from minikafka.coordination.group._rebalance import Rebalancer

complete_join = Rebalancer.complete_join
propagate_assignment = Rebalancer.propagate_assignment
assignment_stored = Rebalancer.assignment_stored
