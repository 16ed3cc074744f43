"""``minikafka configs --entity-type users``: a user's SCRAM credentials, as
kafka-configs.sh sets and shows them (KIP-554: AlterUserScramCredentials and
DescribeUserScramCredentials).

``--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'`` upserts a
credential: as Kafka's Admin client does, the tool draws a random salt and sends the
salted password (PBKDF2 over the mechanism's HMAC), never the password itself;
``iterations`` defaults to 4096. ``--delete-config SCRAM-SHA-512`` deletes one.
``--describe`` prints ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192`` for each user that has credentials. Other user configs
are Kafka's client quotas, which minikafka does not keep: they are refused by name.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.alter_user_scram_credentials.v0.response import (
    AlterUserScramCredentialsResponse,
)
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from kio.schema.describe_user_scram_credentials.v0.response import (
    DescribeUserScramCredentialsResponse,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from minikafka.client import AsyncAdminClient, KafkaError, to_controller
from minikafka.security import SCRAM_MECHANISMS, ScramMechanism, salted_password

from ._configs import AdminCallFailed, ConfigCommandError

USERS = "users"
DEFAULT_ITERATIONS = 4096  # ConfigCommand's DefaultScramIterations
SALT_BYTES = 32
_BY_TYPE = {m.type: m for m in SCRAM_MECHANISMS.values()}


def scram_upserts(
    to_add: dict[str, str],
) -> list[tuple[ScramMechanism, int, str]]:
    """The ``(mechanism, iterations, password)`` of each ``SCRAM-SHA-*=[...]`` value;
    ConfigCommandError for a missing password, a bad iteration count, or a key that is
    not a SCRAM mechanism (a client quota, which minikafka does not keep)."""
    upserts = []
    for key, value in to_add.items():
        mechanism = SCRAM_MECHANISMS.get(key)
        if mechanism is None:
            raise ConfigCommandError(
                f"Invalid config {key} for users: minikafka keeps SCRAM credentials "
                f"({', '.join(SCRAM_MECHANISMS)}), not client quotas"
            )
        fields = {}
        for part in value.split(","):
            name, _, text = part.strip().partition("=")
            if name:
                fields[name] = text
        password = fields.get("password")
        if not password:
            raise ConfigCommandError(
                f"SCRAM credential config {key} must specify a password"
            )
        try:
            iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        except ValueError:
            raise ConfigCommandError(
                f"Invalid iterations for {key}: {fields['iterations']}"
            ) from None
        upserts.append((mechanism, iterations, password))
    return upserts


def scram_deletions(to_delete: Sequence[str]) -> list[ScramMechanism]:
    deletions = []
    for key in to_delete:
        mechanism = SCRAM_MECHANISMS.get(key)
        if mechanism is None:
            raise ConfigCommandError(
                f"Invalid config {key} for users: minikafka keeps SCRAM credentials "
                f"({', '.join(SCRAM_MECHANISMS)}), not client quotas"
            )
        deletions.append(mechanism)
    return deletions


async def alter_user(
    cluster: AsyncAdminClient,
    user: str,
    to_add: dict[str, str],
    to_delete: Sequence[str],
) -> str:
    """One AlterUserScramCredentials with the user's upsertions and deletions."""
    upserts, deletions = scram_upserts(to_add), scram_deletions(to_delete)
    body = AlterUserScramCredentialsRequest(
        deletions=tuple(
            ScramCredentialDeletion(name=user, mechanism=i8(m.type)) for m in deletions
        ),
        upsertions=tuple(_upsertion(user, *u) for u in upserts),
    )
    # Sent again whole while the controller moves, as Kafka's Admin does: NOT_CONTROLLER
    # in any user's answer (handleNotControllerError), or a lost connection.
    response = await to_controller(
        cluster,
        lambda node: cluster.request(node, body, AlterUserScramCredentialsResponse),
        lambda r: any(u.error_code == ErrorCode.not_controller for u in r.results),
    )
    for result in response.results:
        if result.error_code != ErrorCode.none:
            raise AdminCallFailed(
                KafkaError(int(result.error_code), result.error_message)
            )
    return f"Completed updating config for user {user}."


def _upsertion(
    user: str, mechanism: ScramMechanism, iterations: int, password: str
) -> ScramCredentialUpsertion:
    salt = secrets.token_bytes(SALT_BYTES)
    return ScramCredentialUpsertion(
        name=user,
        mechanism=i8(mechanism.type),
        iterations=i32(iterations),
        salt=salt,
        salted_password=salted_password(mechanism, password, salt, iterations),
    )


async def describe_users(cluster: AsyncAdminClient, user: str | None) -> list[str]:
    """DescribeUserScramCredentials of ``user`` (None: every user with credentials);
    one line per user that has some, as ConfigCommand prints them."""
    body = DescribeUserScramCredentialsRequest(
        users=None if user is None else (UserName(name=user),)
    )
    if not cluster.brokers:
        await cluster.metadata([])
    node = next(iter(cluster.brokers.values()), cluster.bootstrap[0])
    response = await cluster.request(node, body, DescribeUserScramCredentialsResponse)
    if response.error_code != ErrorCode.none:
        raise AdminCallFailed(
            KafkaError(int(response.error_code), response.error_message)
        )
    lines = []
    for result in response.results:
        if result.error_code != ErrorCode.none:
            continue  # Kafka's Admin lists only the users it got credentials for
        infos = ", ".join(
            f"{_BY_TYPE[int(i.mechanism)].mechanism_name}=iterations={int(i.iterations)}"
            for i in result.credential_infos
            if int(i.mechanism) in _BY_TYPE
        )
        lines.append(
            f"SCRAM credential configs for user-principal '{result.user}' are {infos}"
        )
    return lines
