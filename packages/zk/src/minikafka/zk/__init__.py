"""minikafka.zk: ZooKeeper for ZooKeeper mode (seed 001).

A real ZooKeeper server from Debian's package (:class:`ZooKeeperServer`), kazoo driven
from trio (:class:`ZkClient`: watches and session changes on one channel, as Kafka's
controller takes them on its single event queue), and Kafka's znodes with the JSON Kafka
writes in them (:mod:`._znodes`), a topic's or a broker's config changes with the
notifications every broker follows (:mod:`._config_changes`), a request retried across a
lost connection as Kafka's controller retries it (:mod:`._retry`), and the SCRAM credentials
and ACLs of Kafka 3.x's ZooKeeper mode (:mod:`._security_znodes`,
:mod:`._security_store`).

Its command, ``python -m minikafka.zk`` and ``minikafka zookeeper``, is the typer app of
:mod:`minikafka.zk.cli`, a public module this package does not import, so that a broker
that imports ZooKeeper's client does not load the command line's libraries.
"""

from kazoo.exceptions import BadVersionError as BadVersionError
from kazoo.exceptions import NodeExistsError as NodeExistsError
from kazoo.exceptions import NoNodeError as NoNodeError

from ._client import SESSION_CONNECTED as SESSION_CONNECTED
from ._client import SESSION_LOST as SESSION_LOST
from ._client import SESSION_SUSPENDED as SESSION_SUSPENDED
from ._client import Check as Check
from ._client import Create as Create
from ._client import Delete as Delete
from ._client import Op as Op
from ._client import SessionChanged as SessionChanged
from ._client import SetData as SetData
from ._client import Stat as Stat
from ._client import WatchFired as WatchFired
from ._client import ZkClient as ZkClient
from ._client import ZkEvent as ZkEvent
from ._cluster import LiveBroker as LiveBroker
from ._cluster import ZkCluster as ZkCluster
from ._cluster import read_broker_configs as read_broker_configs
from ._cluster import read_brokers as read_brokers
from ._cluster import read_cluster as read_cluster
from ._cluster import read_topic_configs as read_topic_configs
from ._cluster import read_topics as read_topics
from ._config_changes import BROKERS_ENTITY as BROKERS_ENTITY
from ._config_changes import (
    CONFIG_CHANGE_EXPIRATION_MS as CONFIG_CHANGE_EXPIRATION_MS,
)
from ._config_changes import TOPICS_ENTITY as TOPICS_ENTITY
from ._config_changes import ConfigChangeCursor as ConfigChangeCursor
from ._config_changes import alter_broker_config as alter_broker_config
from ._config_changes import alter_topic_config as alter_topic_config
from ._config_changes import (
    purge_expired_config_changes as purge_expired_config_changes,
)
from ._config_changes import read_broker_config as read_broker_config
from ._config_changes import read_config_changes as read_config_changes
from ._election import Elected as Elected
from ._election import Lost as Lost
from ._election import active_controller as active_controller
from ._election import controller_epoch as controller_epoch
from ._election import register_broker as register_broker
from ._election import try_to_elect as try_to_elect
from ._retry import retry_until_connected as retry_until_connected
from ._security_store import ResourcePatternAcls as ResourcePatternAcls
from ._security_store import acl_ops as acl_ops
from ._security_store import read_acl_changes as read_acl_changes
from ._security_store import read_acls as read_acls
from ._security_store import read_all_acls as read_all_acls
from ._security_store import (
    read_all_scram_credentials as read_all_scram_credentials,
)
from ._security_store import read_user_config as read_user_config
from ._security_store import user_config_ops as user_config_ops
from ._security_znodes import ACL_CHANGE_PREFIX as ACL_CHANGE_PREFIX
from ._security_znodes import ACL_CHANGES as ACL_CHANGES
from ._security_znodes import EXTENDED_ACL_CHANGES as EXTENDED_ACL_CHANGES
from ._security_znodes import LITERAL_ACL_CHANGES as LITERAL_ACL_CHANGES
from ._security_znodes import USERS_ENTITY as USERS_ENTITY
from ._security_znodes import acl_path as acl_path
from ._security_znodes import decode_acls as decode_acls
from ._security_znodes import decode_scram_credential as decode_scram_credential
from ._security_znodes import desanitize as desanitize
from ._security_znodes import encode_acl_change as encode_acl_change
from ._security_znodes import encode_acls as encode_acls
from ._security_znodes import encode_scram_credential as encode_scram_credential
from ._security_znodes import sanitize as sanitize
from ._security_znodes import scram_credentials as scram_credentials
from ._security_znodes import user_config_path as user_config_path
from ._server import INSTALL as INSTALL
from ._server import ZooKeeperError as ZooKeeperError
from ._server import ZooKeeperServer as ZooKeeperServer
from ._znodes import BROKER_CONFIGS as BROKER_CONFIGS
from ._znodes import BROKER_IDS as BROKER_IDS
from ._znodes import CONFIG_CHANGE_PREFIX as CONFIG_CHANGE_PREFIX
from ._znodes import CONFIG_CHANGES as CONFIG_CHANGES
from ._znodes import CONTROLLER as CONTROLLER
from ._znodes import CONTROLLER_EPOCH as CONTROLLER_EPOCH
from ._znodes import DEFAULT_BROKER_ENTITY as DEFAULT_BROKER_ENTITY
from ._znodes import DELETE_TOPICS as DELETE_TOPICS
from ._znodes import TOPICS as TOPICS
from ._znodes import BrokerRegistration as BrokerRegistration
from ._znodes import ControllerRegistration as ControllerRegistration
from ._znodes import LeaderIsrAndControllerEpoch as LeaderIsrAndControllerEpoch
from ._znodes import TopicAssignment as TopicAssignment
from ._znodes import ZnodeError as ZnodeError
from ._znodes import broker_config_path as broker_config_path
from ._znodes import broker_entity as broker_entity
from ._znodes import broker_path as broker_path
from ._znodes import broker_resource as broker_resource
from ._znodes import config_change_number as config_change_number
from ._znodes import decode_broker_config as decode_broker_config
from ._znodes import decode_config_change as decode_config_change
from ._znodes import decode_topic_config as decode_topic_config
from ._znodes import delete_topic_path as delete_topic_path
from ._znodes import encode_broker_config as encode_broker_config
from ._znodes import encode_config_change as encode_config_change
from ._znodes import encode_topic_config as encode_topic_config
from ._znodes import partition_state_path as partition_state_path
from ._znodes import topic_config_path as topic_config_path
from ._znodes import topic_path as topic_path
