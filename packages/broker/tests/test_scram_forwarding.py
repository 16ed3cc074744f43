"""AlterUserScramCredentials forwarded by a broker on another node (KIP-554): the
controller listener answers it and the credential is in the committed image; a bad
upsertion gets Kafka's error and writes nothing."""

from __future__ import annotations

from pathlib import Path

import trio
from kio.schema.alter_user_scram_credentials.v0 import request as alter_v0
from kio.schema.alter_user_scram_credentials.v0 import response as alter_v0_response
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from minikafka.broker._controller_channel import ControllerLocator, RemoteController
from minikafka.broker.testing import running_broker, single_node_config
from minikafka.net import Node
from minikafka.net.testing import wait_until

DEADLINE = 20.0
TWO_LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "controller.listener.names": "CONTROLLER",
}


def _upsertion(name: str, iterations: int) -> alter_v0.ScramCredentialUpsertion:
    return alter_v0.ScramCredentialUpsertion(
        name=name,
        mechanism=i8(1),
        iterations=i32(iterations),
        salt=b"salt",
        salted_password=b"\x01" * 32,
    )


async def test_a_forwarded_alteration_is_committed_by_the_controller(
    tmp_path: Path,
) -> None:
    """The controller listener answers each user of a forwarded request; the accepted
    credential is in the committed image and the refused one is not."""
    config = single_node_config(tmp_path / "node-1", TWO_LISTENERS)
    async with running_broker(config) as node, trio.open_nursery() as nursery:
        host, port = node.controller_address()
        channel = RemoteController(
            ControllerLocator((Node(node.config.node_id, host, port),)),
            node.cluster_id,
        )
        await nursery.start(channel.run)
        body = alter_v0.AlterUserScramCredentialsRequest(
            deletions=(),
            upsertions=(_upsertion("alice", 4096), _upsertion("few", 10)),
        )
        with trio.fail_after(DEADLINE):
            answer = await channel.forward(body)
        assert isinstance(answer, alter_v0_response.AlterUserScramCredentialsResponse)
        assert [(r.user, r.error_code) for r in answer.results] == [
            ("alice", ErrorCode.none),
            ("few", ErrorCode.unacceptable_credential),
        ]
        await wait_until(
            lambda: ("alice", 1) in node.local_controller.image.scram, DEADLINE
        )
        assert set(node.local_controller.image.scram) == {("alice", 1)}
        nursery.cancel_scope.cancel()
