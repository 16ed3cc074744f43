"""``python -m minikafka.zk start|stop|status|ls|get``: a ZooKeeper for ZooKeeper mode,
and a look inside it (``ls`` a znode's children, ``get`` its data, JSON shown indented),
as ``zookeeper-shell.sh`` gives a Kafka operator. The commands are :mod:`.cli`'s, which
``minikafka zookeeper`` mounts too."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from minikafka.common import run_app

from .cli import zookeeper_app


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(zookeeper_app, argv, "python -m minikafka.zk")


if __name__ == "__main__":
    sys.exit(main())
