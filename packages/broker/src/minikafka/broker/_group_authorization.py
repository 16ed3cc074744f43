"""Group READ for the classic group protocol's member APIs (Kafka's
``handleJoinGroupRequest``, ``handleSyncGroupRequest``, ``handleHeartbeatRequest``,
``handleLeaveGroupRequest``): a principal without READ on the group is answered
GROUP_AUTHORIZATION_FAILED before the coordinator sees the request.

Asked only with an authorizer; without one the handlers test one attribute and go on.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from minikafka.net import ApiKey, Request, build
from minikafka.security import AclOperation, ResourceType

from ._authorization import BrokerAuthorizer

_NO_THROTTLE = datetime.timedelta(0)


def refused_group(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """Answer GROUP_AUTHORIZATION_FAILED and return True if the principal may not READ
    the request's group; False (nothing answered) if it may."""
    body = request.body
    group_id = str(getattr(body, "group_id", ""))
    if authorizer.allowed(request, AclOperation.READ, ResourceType.GROUP, group_id):
        return False
    # The fields these answers have beyond an error, as Kafka's error responses fill them.
    extra: dict[str, object] = {}
    if request.api_key == ApiKey.JOIN_GROUP:
        extra = {
            "generation_id": -1,
            "protocol_name": None if request.api_version >= 7 else "",
            "leader": "",
            "member_id": str(getattr(body, "member_id", "")),
            "members": (),
        }
    elif request.api_key == ApiKey.SYNC_GROUP:
        extra["assignment"] = b""
    elif request.api_key == ApiKey.LEAVE_GROUP:
        extra["members"] = ()
    request.respond(
        build(
            request.response_class(),
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.group_authorization_failed,
            **extra,
        )
    )
    return True
