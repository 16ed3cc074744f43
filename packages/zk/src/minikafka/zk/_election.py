"""Electing the controller through ZooKeeper (seed 001; Kafka 2.8's ``KafkaController.elect``
and ``KafkaZkClient.registerControllerAndIncrementControllerEpoch``), and registering a
broker (``KafkaZkClient.registerBroker``).

Every broker tries to become the controller by creating the ephemeral ``/controller``:
ZooKeeper lets exactly one create succeed, and the znode lives as long as the winner's
session. The same atomic transaction raises ``/controller_epoch`` by one, over the version
just read, so two brokers can never both think they won epoch N: the loser's transaction
fails whole. The epoch goes on every request the controller sends; a broker refuses
one from an older epoch (STALE_CONTROLLER_EPOCH), which is how a controller that was
paused past its session (a zombie) is kept from doing harm. The others watch
``/controller`` and try again when it is deleted.
"""

from __future__ import annotations

import contextlib

import attrs
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from ._client import Check, Create, SetData, ZkClient
from ._znodes import (
    BROKER_IDS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    BrokerRegistration,
    ControllerRegistration,
    broker_path,
    decode_controller_epoch,
    encode_controller_epoch,
)


@attrs.frozen
class Elected:
    """This broker is the controller in ``epoch``; ``epoch_version`` is the version of
    ``/controller_epoch`` it wrote (a later conditional write names it)."""

    epoch: int
    epoch_version: int


@attrs.frozen
class Lost:
    """Another broker is the controller (-1: it went between the two reads; try again)."""

    controller_id: int


async def active_controller(client: ZkClient, *, watch: bool = False) -> int:
    """The controller's broker id, -1 if there is none; with ``watch``, hear when
    ``/controller`` is created or deleted."""
    if await client.exists(CONTROLLER, watch=watch) is None:
        return -1
    try:
        data, _ = await client.get(CONTROLLER)
    except NoNodeError:
        return -1
    return ControllerRegistration.decode(data).broker_id


async def try_to_elect(client: ZkClient, broker_id: int) -> Elected | Lost:
    """One election attempt by ``broker_id``."""
    current = await active_controller(client)
    if current != -1:
        return Lost(current)
    try:
        data, stat = await client.get(CONTROLLER_EPOCH)
        epoch, version = decode_controller_epoch(data), stat.version
    except NoNodeError:
        # The first controller of the cluster: the epoch starts at 0 (Kafka creates the
        # znode with 0 and increments it in the same way).
        with contextlib.suppress(NodeExistsError):  # another broker's came first: fine
            await client.create(CONTROLLER_EPOCH, encode_controller_epoch(0))
        data, stat = await client.get(CONTROLLER_EPOCH)
        epoch, version = decode_controller_epoch(data), stat.version
    registration = ControllerRegistration(broker_id).encode()
    try:
        await client.transaction(
            [
                Check(CONTROLLER_EPOCH, version),
                Create(CONTROLLER, registration, ephemeral=True),
                SetData(CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1), version),
            ]
        )
    except (NodeExistsError, BadVersionError):
        return Lost(await active_controller(client))
    return Elected(epoch + 1, version + 1)


async def controller_epoch(client: ZkClient) -> int:
    """The current controller epoch (0 before any election)."""
    try:
        data, _ = await client.get(CONTROLLER_EPOCH)
    except NoNodeError:
        return 0
    return decode_controller_epoch(data)


async def register_broker(client: ZkClient, registration: BrokerRegistration) -> int:
    """Create the ephemeral ``/brokers/ids/<id>`` and return the broker epoch it gives
    (the znode's czxid, as Kafka 2.8); ``NodeExistsError`` if a live session of another
    process holds that id (two brokers with one ``broker.id``)."""
    await client.ensure_path(BROKER_IDS)
    path = broker_path(registration.broker_id)
    with contextlib.suppress(NodeExistsError):
        await client.create(path, registration.encode(), ephemeral=True)
    _, stat = await client.get(path)
    if stat.ephemeral_owner != client.session_id:
        raise NodeExistsError(f"{path} is held by another session: is broker.id taken?")
    return stat.created_zxid
