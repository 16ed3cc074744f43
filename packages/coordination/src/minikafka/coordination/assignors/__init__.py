"""The client side of a rebalance: the assignors a group leader runs (Range, RoundRobin,
Sticky, CooperativeSticky, KIP-429) and the consumer protocol's subscription and
assignment encodings. Cores; re-exported by ``minikafka.coordination``.
"""
