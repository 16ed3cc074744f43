"""The assignors: the client side of a classic rebalance, the assignors a group leader
runs (Range, RoundRobin, Sticky, CooperativeSticky, KIP-429) and the consumer protocol's
subscription and assignment encodings, re-exported by ``minikafka.coordination``; and,
beside them, the server-side assignors of KIP-848's consumer protocol, which the group
coordinator runs itself (``_server_assignor.py``, ``_uniform.py``, ``_server_range.py``;
``group.consumer.assignors`` names them). Cores.
"""
