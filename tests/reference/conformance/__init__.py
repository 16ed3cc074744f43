"""Differential conformance: the same request scenarios sent to Apache Kafka and to
minikafka, the answers compared field by field (see ``_runner`` for the method)."""
