"""minikafka.broker.zk: a broker in ZooKeeper mode, and the controller's trio shell (seed 001).

In ZooKeeper mode (Kafka before KRaft; KIP-500 replaced it) there is no controller
process and no metadata log: the brokers register in ZooKeeper, one of them wins the
``/controller`` znode and is the controller, and it tells the others with LeaderAndIsr,
UpdateMetadata and StopReplica requests. The controller's decisions are the cores of
``minikafka.controller.zk``; this subpackage is everything around them that does I/O:

- ``_server.py``: :class:`ZkBrokerServer` (Kafka 2.8's ``KafkaServer``), one broker;
- ``_apis.py``: :class:`ZkKafkaApis`, the APIs only this mode has, and the way to the
  controller;
- ``_metadata.py``: :class:`ZkBrokerMetadata`, what the controller's requests leave in
  the broker (its MetadataCache, the partitions it leads or follows);
- ``_controller_shell.py`` (with ``_controller_events.py``): :class:`ZkControllerShell`,
  the election, the one event queue and the writes (``ControllerEventManager``);
- ``_controller_zk.py``: :class:`ControllerZkClient`, how the controller reads ZooKeeper
  and writes it, fenced by its epoch (``KafkaZkClient``'s controller calls);
- ``_channel_manager.py``: :class:`ControllerChannelManager`, one sender per broker
  (``ControllerChannelManager``);
- ``_wire.py``: the controller's requests to and from their wire form.

``minikafka zookeeper`` (the ZooKeeper itself) is ``minikafka.zk``'s command.
"""

from ._apis import ZkKafkaApis as ZkKafkaApis
from ._channel_manager import ControllerChannelManager as ControllerChannelManager
from ._controller_shell import ZkControllerShell as ZkControllerShell
from ._metadata import ZkBrokerMetadata as ZkBrokerMetadata
from ._server import ZkBrokerServer as ZkBrokerServer
from ._wire import from_wire as from_wire
from ._wire import stop_replica_response as stop_replica_response
from ._wire import to_wire as to_wire

__all__ = [
    "ControllerChannelManager",
    "ZkBrokerMetadata",
    "ZkBrokerServer",
    "ZkControllerShell",
    "ZkKafkaApis",
    "from_wire",
    "stop_replica_response",
    "to_wire",
]
