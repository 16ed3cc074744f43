"""The security of a node's own channels, read from its configuration.

- The inter-broker channel speaks the protocol of ``inter.broker.listener.name``'s
  listener, or of the listener ``security.inter.broker.protocol`` names (setting both is
  refused, as Kafka refuses it); in KRaft the controller channel speaks the first
  controller listener's, each with its own mechanism key.
- The node's login is the ``username``/``password`` of the listener's JAAS line.
- A bad or missing value stops start-up naming its key: Kafka's default mechanism
  GSSAPI, a JAAS line without the node's own login, an unknown identification algorithm.
- A cluster laid out with one security protocol gives every listener that protocol,
  and a PLAINTEXT one is laid out as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker import KafkaConfig
from minikafka.broker._cluster_layout import ClusterLayout
from minikafka.broker._secure_cluster import secure_overrides
from minikafka.common import ConfigError
from minikafka.net.testing import ThrowawayPki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("pki"), clients=())


def kraft_broker(pki: ThrowawayPki, **extra: str) -> dict[str, str]:
    """A broker-only KRaft node whose INTERNAL and CONTROLLER listeners are SASL_SSL."""
    return {
        "process.roles": "broker",
        "node.id": "1",
        "controller.quorum.voters": "0@127.0.0.1:9090",
        "controller.listener.names": "CONTROLLER",
        "listeners": "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
        "listener.security.protocol.map": (
            "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL"
        ),
        "inter.broker.listener.name": "INTERNAL",
        "log.dirs": "/tmp/unused",
        **secure_overrides(
            "SASL_SSL", pki, listeners=("INTERNAL", "CONTROLLER"), kraft=True
        ),
        **extra,
    }


def test_the_inter_broker_and_controller_channels_take_their_listeners_security(
    pki: ThrowawayPki,
) -> None:
    config = KafkaConfig.from_properties(kraft_broker(pki))
    inter, controller = config.channels.inter_broker, config.channels.controller
    assert (inter.listener, inter.protocol) == ("INTERNAL", "SASL_SSL")
    assert (controller.listener, controller.protocol) == ("CONTROLLER", "SASL_SSL")
    for side in (inter, controller):
        assert side.context is not None
        # ssl.endpoint.identification.algorithm=https
        assert side.context.check_hostname
        assert side.sasl is not None
        assert (side.sasl.mechanism, side.sasl.username) == ("SCRAM-SHA-512", "broker")
        assert side.sasl.password == "broker-secret"


def test_security_inter_broker_protocol_names_the_listener(pki: ThrowawayPki) -> None:
    props = kraft_broker(pki)
    del props["inter.broker.listener.name"]
    props |= {
        "listeners": "SASL_SSL://127.0.0.1:9093",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
        "security.inter.broker.protocol": "SASL_SSL",
        **secure_overrides(
            "SASL_SSL", pki, listeners=("SASL_SSL", "CONTROLLER"), kraft=True
        ),
    }
    config = KafkaConfig.from_properties(props)
    assert config.roles.inter_broker_listener_name == "SASL_SSL"
    assert config.channels.inter_broker.protocol == "SASL_SSL"


def test_a_plaintext_node_has_plaintext_channels() -> None:
    config = KafkaConfig.from_properties(
        {"listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": "/tmp/unused"}
    )
    assert config.channels.inter_broker.context is None
    assert config.channels.inter_broker.sasl is None


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (
            {"security.inter.broker.protocol": "SASL_SSL"},
            "security.inter.broker.protocol",
        ),
        (
            {"sasl.mechanism.inter.broker.protocol": "GSSAPI"},
            "sasl.mechanism.inter.broker.protocol",
        ),
        (
            {"sasl.mechanism.controller.protocol": "SCRAM-SHA-1"},
            "sasl.mechanism.controller.protocol",
        ),
        (
            {
                "listener.name.internal.scram-sha-512.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule "
                    'required user_broker="broker-secret";'
                )
            },
            "listener.name.internal.scram-sha-512.sasl.jaas.config",
        ),
        (
            {"ssl.endpoint.identification.algorithm": "dns"},
            "ssl.endpoint.identification.algorithm",
        ),
    ],
)
def test_a_bad_channel_value_stops_start_up_naming_its_key(
    pki: ThrowawayPki, change: dict[str, str], key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        KafkaConfig.from_properties(kraft_broker(pki, **change))
    assert err.value.key == key


def test_an_empty_identification_algorithm_turns_the_hostname_check_off(
    pki: ThrowawayPki,
) -> None:
    props = kraft_broker(pki, **{"ssl.endpoint.identification.algorithm": ""})
    tls = KafkaConfig.from_properties(props).channels.inter_broker.context
    assert tls is not None
    assert not tls.check_hostname


@pytest.mark.parametrize("zookeeper", [False, True])
def test_a_secure_layout_gives_every_listener_its_protocol(
    tmp_path: Path, pki: ThrowawayPki, zookeeper: bool
) -> None:
    listeners = ("SASL_SSL",) if zookeeper else ("SASL_SSL", "CONTROLLER")
    layout = ClusterLayout.create(
        tmp_path,
        2,
        broker_port=19092,
        controller_port=19090,
        zookeeper=zookeeper,
        zookeeper_port=19081,
        overrides=secure_overrides(
            "SASL_SSL", pki, listeners=listeners, kraft=not zookeeper
        ),
        security_protocol="SASL_SSL",
    )
    for node in layout.node_ids:
        config = KafkaConfig.from_properties(layout.properties(node))
        assert {lst.security_protocol for lst in config.net.listeners} == {"SASL_SSL"}
        if config.roles.is_broker:
            assert config.channels.inter_broker.protocol == "SASL_SSL"
        if not zookeeper:
            assert config.channels.controller.protocol == "SASL_SSL"
    assert ClusterLayout.load(tmp_path).security_protocol == "SASL_SSL"


def test_a_plaintext_layout_is_laid_out_as_before(tmp_path: Path) -> None:
    layout = ClusterLayout.create(tmp_path, 1, broker_port=19092, controller_port=19090)
    props = layout.properties(1)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
