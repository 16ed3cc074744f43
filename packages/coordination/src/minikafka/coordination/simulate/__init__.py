"""The group simulator: the real :class:`~minikafka.coordination.GroupCoordinator` driven
by simulated consumers on virtual time (``python -m minikafka.coordination simulate``).
Re-exported by ``minikafka.coordination``.
"""
