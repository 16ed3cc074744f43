"""SCRAM credentials for clients (KIP-554): AlterUserScramCredentials and
DescribeUserScramCredentials, and the credentials SASL listeners check proofs against.

A broker never decides a credential: it forwards AlterUserScramCredentials to the
active controller (as is, to a controller on another node; as the controller's request
in combined mode), which writes UserScramCredentialRecords and
RemoveUserScramCredentialRecords and answers once they are committed. Every broker
replays them into its metadata image, and :func:`image_scram_lookup` is how its SCRAM
servers find a user's credential there, at each exchange. DescribeUserScramCredentials
is answered from this broker's image, as Kafka's ``KRaftMetadataCache`` does: names,
mechanisms and iteration counts, never a salt or key.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kio.schema.alter_user_scram_credentials.v0 import request as alter_v0
from kio.schema.alter_user_scram_credentials.v0 import response as alter_v0_response
from kio.schema.describe_user_scram_credentials.v0 import request as describe_v0
from kio.schema.describe_user_scram_credentials.v0 import (
    response as describe_v0_response,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32, i32Timedelta

from minikafka.controller import (
    MECHANISMS_BY_TYPE,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ControllerError,
    ScramDeletion,
    ScramUpsertion,
    describe_user_scram_credentials,
)
from minikafka.net import Request
from minikafka.security import SCRAM_MECHANISMS, ScramCredential

from ._controller_channel import ControllerChannel, RemoteController
from ._metadata_cache import MetadataCache

_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
_ALTER = (alter_v0.AlterUserScramCredentialsRequest,)
_DESCRIBE = (describe_v0.DescribeUserScramCredentialsRequest,)
SCRAM_API_VERSIONS = (0, 0)
"""Both APIs have one version, v0, in Kafka 4.1."""


def image_scram_lookup(
    cache: MetadataCache,
) -> Callable[[str, str], ScramCredential | None]:
    """A SASL listener's SCRAM credentials: the user's UserScramCredentialRecord in the
    broker's current metadata image (Kafka's ``CredentialCache``, which its
    ``ScramPublisher`` fills from the image)."""

    def lookup(mechanism: str, user: str) -> ScramCredential | None:
        kind = SCRAM_MECHANISMS.get(mechanism)
        record = None if kind is None else cache.image.scram.get((user, kind.type))
        if record is None:
            return None
        return ScramCredential(
            record.salt, record.stored_key, record.server_key, record.iterations
        )

    return lookup


def alteration_of(
    body: alter_v0.AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsRequest:
    """The controller's request for a client's AlterUserScramCredentials."""
    return AlterUserScramCredentialsRequest(
        tuple(ScramDeletion(d.name, int(d.mechanism)) for d in body.deletions),
        tuple(
            ScramUpsertion(
                u.name, int(u.mechanism), int(u.iterations), u.salt, u.salted_password
            )
            for u in body.upsertions
        ),
    )


def _users(body: alter_v0.AlterUserScramCredentialsRequest) -> list[str]:
    names = [d.name for d in body.deletions] + [u.name for u in body.upsertions]
    return list(dict.fromkeys(names))


def alter_response(
    answer: AlterUserScramCredentialsResponse,
) -> alter_v0_response.AlterUserScramCredentialsResponse:
    return alter_v0_response.AlterUserScramCredentialsResponse(
        throttle_time=_NO_THROTTLE,
        results=tuple(
            alter_v0_response.AlterUserScramCredentialsResult(
                user=r.user, error_code=r.error_code, error_message=r.error_message
            )
            for r in answer.results
        ),
    )


def _failed(
    body: alter_v0.AlterUserScramCredentialsRequest, error: ErrorCode
) -> alter_v0_response.AlterUserScramCredentialsResponse:
    return alter_v0_response.AlterUserScramCredentialsResponse(
        throttle_time=_NO_THROTTLE,
        results=tuple(
            alter_v0_response.AlterUserScramCredentialsResult(
                user=user, error_code=error, error_message=None
            )
            for user in _users(body)
        ),
    )


async def handle_alter_user_scram_credentials(
    request: Request, channel: ControllerChannel
) -> None:
    """A broker's AlterUserScramCredentials: forwarded to the active controller; every
    user gets the error if the controller cannot be reached."""
    body = request.body_as(_ALTER)
    try:
        if isinstance(channel, RemoteController):
            forwarded = await channel.forward(body)
            if not isinstance(
                forwarded, alter_v0_response.AlterUserScramCredentialsResponse
            ):
                raise ControllerError(ErrorCode.unknown_server_error)
            request.respond(forwarded)
            return
        answer = await channel.submit(alteration_of(body))
    except ControllerError as exc:
        request.respond(_failed(body, exc.error_code))
        return
    if not isinstance(answer, AlterUserScramCredentialsResponse):
        request.respond(_failed(body, getattr(answer, "error_code", ErrorCode.none)))
        return
    request.respond(alter_response(answer))


def handle_describe_user_scram_credentials(
    request: Request, cache: MetadataCache
) -> None:
    """DescribeUserScramCredentials from this broker's metadata image."""
    body = request.body_as(_DESCRIBE)
    users = None if body.users is None else tuple(u.name for u in body.users)
    described = describe_user_scram_credentials(cache.image.scram, users)
    request.respond(
        describe_v0_response.DescribeUserScramCredentialsResponse(
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            results=tuple(
                describe_v0_response.DescribeUserScramCredentialsResult(
                    user=d.user,
                    error_code=d.error_code,
                    error_message=d.error_message,
                    credential_infos=tuple(
                        describe_v0_response.CredentialInfo(
                            mechanism=i8(mechanism), iterations=i32(iterations)
                        )
                        for mechanism, iterations in d.credentials
                        if mechanism in MECHANISMS_BY_TYPE
                    ),
                )
                for d in described
            ),
        )
    )
