"""UnregisterBroker (KIP-631; Kafka's ``Admin.unregisterBroker``, what
``kafka-cluster.sh unregister --id N`` sends): remove a broker's registration for good.

A KRaft broker that stops heartbeating is fenced, not forgotten: its registration stays
in the metadata, and DescribeCluster and the tools list it no more but the controller
keeps it. An operator who retires the broker says so with this request; the
QuorumController takes it out of every ISR and leadership, as it does for a fenced
broker, and writes the UnregisterBrokerRecord (:mod:`minikafka.controller`).

The same handler serves a client on a broker (which forwards it to the active controller,
as Kafka's ``KafkaApis`` does) and the request on the controller listener (Kafka's
``ControllerApis.handleUnregisterBroker``); :class:`RemoteController` forwards it with
the ``to_wire`` function below. A ZooKeeper-mode broker does not serve it: the API's
listeners are KRaft's alone.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0 import request as unregister_v0
from kio.schema.unregister_broker.v0 import response as unregister_v0_response

from minikafka.controller import (
    ControllerError,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from minikafka.net import Request, build

if TYPE_CHECKING:  # the channel forwards with this module's functions: no import cycle
    from ._controller_channel import ControllerChannel

NO_THROTTLE = datetime.timedelta(0)
UNREGISTER_BROKER_VERSIONS = (0, 0)


async def handle_unregister_broker(
    request: Request, channel: ControllerChannel
) -> None:
    body = request.body_as((unregister_v0.UnregisterBrokerRequest,))
    try:
        answer = await channel.submit(UnregisterBrokerRequest(int(body.broker_id)))
    except ControllerError as exc:
        error = exc.error_code
    else:
        assert isinstance(answer, UnregisterBrokerResponse)
        error = answer.error_code
    # Kafka's controller answers the error's code alone, without a message.
    fields = {"error_code": error, "error_message": None}
    request.respond(
        build(request.response_class(), throttle_time=NO_THROTTLE, **fields)
    )


def unregister_broker_to_wire(
    request: UnregisterBrokerRequest,
) -> unregister_v0.UnregisterBrokerRequest:
    return unregister_v0.UnregisterBrokerRequest(broker_id=BrokerId(request.broker_id))


def unregister_broker_from_wire(
    response: unregister_v0_response.UnregisterBrokerResponse,
) -> UnregisterBrokerResponse:
    return UnregisterBrokerResponse(ErrorCode(response.error_code))
