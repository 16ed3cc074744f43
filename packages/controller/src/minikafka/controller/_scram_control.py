"""ScramControlManager: users' SCRAM credentials in the metadata log (KIP-554).

Kafka keeps each user's SCRAM credential, per mechanism, as a UserScramCredentialRecord
(salt, StoredKey, ServerKey, iterations) and deletes it with a
RemoveUserScramCredentialRecord. An admin client never sends a password: it sends a
salt, an iteration count and the salted password (AlterUserScramCredentials), and the
controller derives the two keys from the salted password and keeps only them. Every
broker replays the records into its metadata image, where its SCRAM server finds them.

An alteration of one user is all-or-nothing: if any of its upsertions or deletions is
refused, none of that user's records is written, and the user's one result carries the
error. Other users of the same request are not affected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap
from minikafka.security import (
    SCRAM_MECHANISMS,
    ScramMechanism,
    credential_from_salted_password,
)

from ._records import (
    MetadataRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

MECHANISMS_BY_TYPE: Mapping[int, ScramMechanism] = {
    m.type: m for m in SCRAM_MECHANISMS.values()
}
"""The admin API's mechanism codes (Kafka's ``ScramMechanism.fromType``)."""

ScramKey = tuple[str, int]  # (user, mechanism code)


@attrs.frozen
class ScramUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@attrs.frozen
class ScramDeletion:
    name: str
    mechanism: int


@attrs.frozen
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramDeletion, ...]
    upsertions: tuple[ScramUpsertion, ...]


@attrs.frozen
class ScramAlterationResult:
    user: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None


@attrs.frozen
class AlterUserScramCredentialsResponse:
    results: tuple[ScramAlterationResult, ...]
    """One per user the request names, in the order they first appear."""


class _Refused(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _mechanism(code: int) -> ScramMechanism:
    mechanism = MECHANISMS_BY_TYPE.get(code)
    if mechanism is None:
        raise _Refused(ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    return mechanism


def upsertion_record(upsertion: ScramUpsertion) -> UserScramCredentialRecord:
    """The record of one upsertion, or :class:`_Refused` with Kafka's error: an empty
    user name or an iteration count outside the mechanism's bounds is
    UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM."""
    mechanism = _mechanism(upsertion.mechanism)
    if not upsertion.name:
        raise _Refused(ErrorCode.unacceptable_credential, "Username must not be empty")
    if upsertion.iterations < mechanism.min_iterations:
        raise _Refused(ErrorCode.unacceptable_credential, "Too few iterations")
    if upsertion.iterations > mechanism.max_iterations:
        raise _Refused(ErrorCode.unacceptable_credential, "Too many iterations")
    if not upsertion.salt or not upsertion.salted_password:
        raise _Refused(
            ErrorCode.unacceptable_credential, "Salt and salted password are required"
        )
    credential = credential_from_salted_password(
        mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations
    )
    return UserScramCredentialRecord(
        name=upsertion.name,
        mechanism=mechanism.type,
        salt=credential.salt,
        stored_key=credential.stored_key,
        server_key=credential.server_key,
        iterations=credential.iterations,
    )


@attrs.define(eq=False)
class ScramControlManager:
    """The credentials as of each offset, for the active controller's checks."""

    registry: SnapshotRegistry
    credentials: TimelineHashMap[ScramKey, UserScramCredentialRecord] = attrs.field(
        init=False
    )

    def __attrs_post_init__(self) -> None:
        self.credentials = TimelineHashMap(self.registry)

    def replay(self, record: MetadataRecord) -> None:
        if isinstance(record, UserScramCredentialRecord):
            self.credentials.put((record.name, record.mechanism), record)
        elif isinstance(record, RemoveUserScramCredentialRecord):
            self.credentials.remove((record.name, record.mechanism))

    def alter(
        self, request: AlterUserScramCredentialsRequest, epoch: int = LATEST_EPOCH
    ) -> CoreResult[MetadataRecord, AlterUserScramCredentialsResponse, Never]:
        """The records of every user whose alterations are all accepted, and one result
        per user (Kafka's ``ScramControlManager.alterCredentials``)."""
        users: dict[str, list[MetadataRecord]] = {}
        errors: dict[str, _Refused] = {}
        seen: set[ScramKey] = set()
        alterations: list[ScramDeletion | ScramUpsertion] = [
            *request.deletions,
            *request.upsertions,
        ]
        for alteration in alterations:
            records = users.setdefault(alteration.name, [])
            key = (alteration.name, alteration.mechanism)
            if alteration.name in errors:
                continue
            try:
                if key in seen:
                    raise _Refused(
                        ErrorCode.duplicate_resource,
                        "A user credential cannot be altered twice in the same request",
                    )
                seen.add(key)
                if isinstance(alteration, ScramUpsertion):
                    records.append(upsertion_record(alteration))
                    continue
                _mechanism(alteration.mechanism)
                if self.credentials.get(key, epoch) is None:
                    raise _Refused(
                        ErrorCode.resource_not_found,
                        "Attempt to delete a user credential that does not exist",
                    )
                records.append(RemoveUserScramCredentialRecord(*key))
            except _Refused as refused:
                errors[alteration.name] = refused
        written: list[MetadataRecord] = []
        results: list[ScramAlterationResult] = []
        for user, records in users.items():
            error = errors.get(user)
            if error is None:
                written.extend(records)
                results.append(ScramAlterationResult(user))
            else:
                results.append(
                    ScramAlterationResult(user, error.error_code, str(error))
                )
        response = AlterUserScramCredentialsResponse(tuple(results))
        return CoreResult(tuple(written), (response,))


@attrs.frozen
class ScramUserDescription:
    user: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None
    credentials: tuple[tuple[int, int], ...] = ()
    """(mechanism code, iterations) of each credential the user has."""


def describe_user_scram_credentials(
    scram: Mapping[ScramKey, UserScramCredentialRecord], users: tuple[str, ...] | None
) -> tuple[ScramUserDescription, ...]:
    """DescribeUserScramCredentials from a metadata image's credentials (Kafka's
    ``ScramImage.describe``): every user with a credential when ``users`` is None or
    empty; otherwise each named user, RESOURCE_NOT_FOUND if it has none and
    DUPLICATE_RESOURCE if named twice. Never a salt nor a key: only mechanism and
    iterations."""
    by_user: dict[str, list[tuple[int, int]]] = {}
    for (user, mechanism), record in sorted(scram.items()):
        by_user.setdefault(user, []).append((mechanism, record.iterations))
    if not users:
        return tuple(
            ScramUserDescription(u, credentials=tuple(c)) for u, c in by_user.items()
        )
    counts: dict[str, int] = {}
    for user in users:
        counts[user] = counts.get(user, 0) + 1
    described: list[ScramUserDescription] = []
    for user in counts:
        if counts[user] > 1:
            described.append(
                ScramUserDescription(
                    user,
                    ErrorCode.duplicate_resource,
                    "Cannot describe SCRAM credentials for the same user twice in a "
                    f"single request: {user}",
                )
            )
        elif user not in by_user:
            described.append(
                ScramUserDescription(
                    user,
                    ErrorCode.resource_not_found,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )
            )
        else:
            described.append(
                ScramUserDescription(user, credentials=tuple(by_user[user]))
            )
    return tuple(described)
