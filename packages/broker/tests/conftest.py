"""Fixtures of the broker package's tests: a real ZooKeeper server per test of ZooKeeper
mode."""

from __future__ import annotations

from minikafka.zk.testing import zookeeper as zookeeper
