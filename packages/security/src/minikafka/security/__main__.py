"""``python -m minikafka.security``: the cores at work, without a socket.

- ``scram USER PASSWORD``: a SCRAM-SHA-256 exchange through the SASL server
  authenticator, each request and answer printed;
- ``map-principal DN [--rules RULES]``: the principal ``ssl.principal.mapping.rules``
  gives a certificate's subject;
- ``authorize``: a few questions to the StandardAuthorizer over a small ACL set.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Sequence

import typer
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from minikafka.common import run_app

from . import (
    SCRAM_SHA_256,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourceType,
    SaslServerAuthenticator,
    SaslServerConfig,
    ScramSaslClient,
    ScramSaslServer,
    SslPrincipalMapper,
    StandardAuthorizer,
    generate_credential,
)

app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def scram(user: str = "alice", password: str = "alice-secret") -> None:
    """A SCRAM-SHA-256 exchange through the authenticator."""
    credentials = {user: generate_credential(SCRAM_SHA_256, password, 4096)}
    authenticator = SaslServerAuthenticator(
        SaslServerConfig(("SCRAM-SHA-256",), connections_max_reauth_ms=3_600_000),
        {"SCRAM-SHA-256": lambda: ScramSaslServer(SCRAM_SHA_256, credentials)},
    )
    client = ScramSaslClient(SCRAM_SHA_256, user, password)
    now = time.time()  # a command line may read the clock; the cores are given it
    steps: list[object] = [
        ApiVersionsRequest(client_software_name="demo", client_software_version="1"),
        SaslHandshakeRequest(mechanism="SCRAM-SHA-256"),
        SaslAuthenticateRequest(auth_bytes=client.first_message()),
    ]
    while steps:
        request = steps.pop(0)
        typer.echo(f"{authenticator.state.value:<18} <- {request!r}")
        for action in authenticator.receive(request, now).replies:
            typer.echo(f"{'':<18} -> {action!r}")
            response = getattr(action, "response", None)
            token = getattr(response, "auth_bytes", b"")
            if token and not client.complete:
                answer = client.evaluate_challenge(token)
                if answer:
                    steps.append(SaslAuthenticateRequest(auth_bytes=answer))
    typer.echo(f"{authenticator.state.value}: {authenticator.principal}")


@app.command("map-principal")
def map_principal(
    distinguished_name: str,
    rules: str = typer.Option("DEFAULT", help="ssl.principal.mapping.rules"),
) -> None:
    """The principal of a certificate's subject (RFC 2253 form)."""
    typer.echo(SslPrincipalMapper.from_rules(rules).principal(distinguished_name))


@app.command()
def authorize() -> None:
    """A small ACL set and the decisions it gives."""
    authorizer = StandardAuthorizer(super_users={"User:admin"})
    for name, pattern, principal, operation, permission in [
        ("orders-", PatternType.PREFIXED, "User:alice", AclOperation.WRITE, "ALLOW"),
        ("orders-eu", PatternType.LITERAL, "User:alice", AclOperation.WRITE, "DENY"),
    ]:
        binding = AclBinding(
            ResourcePattern(ResourceType.TOPIC, name, pattern),
            AccessControlEntry(
                principal, "*", operation, AclPermissionType[permission]
            ),
        )
        authorizer.add_acl(uuid.uuid4(), binding)
        typer.echo(f"ACL {binding}")
    for who, operation, topic in [
        ("User:alice", AclOperation.WRITE, "orders-us"),
        ("User:alice", AclOperation.DESCRIBE, "orders-us"),
        ("User:alice", AclOperation.WRITE, "orders-eu"),
        ("User:bob", AclOperation.WRITE, "orders-us"),
        ("User:admin", AclOperation.DELETE, "orders-eu"),
    ]:
        action = Action(operation, ResourceType.TOPIC, topic)
        decision = authorizer.authorize(
            KafkaPrincipal.from_string(who), "10.0.0.1", action
        )
        typer.echo(
            f"{who} {operation.name} {topic}: {decision.result.value} ({decision.rule})"
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.security")


if __name__ == "__main__":
    sys.exit(main())
