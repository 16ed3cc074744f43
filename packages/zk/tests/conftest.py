"""Fixtures of the zk package's tests: a real ZooKeeper server per test."""

from __future__ import annotations

from minikafka.zk.testing import zookeeper as zookeeper
