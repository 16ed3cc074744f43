"""The admin clients' config requests: DescribeConfigs v3, IncrementalAlterConfigs v1
(KIP-339) and the legacy AlterConfigs v1 (KIP-133), built from the client's types and read
back into them, and where each resource's request goes.

Kafka's Admin sends a broker's own resource (``ConfigResource(BROKER, "1")``) to that
broker, since only it knows, and may change, its settings; every other resource (a
topic, the brokers' default ``""``) to any broker, which in KRaft mode forwards a change
to the active controller. :func:`route` splits a call's resources so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kio.schema.alter_configs.v1 import request as alter
from kio.schema.alter_configs.v1 import response as alter_response
from kio.schema.describe_configs.v3.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.describe_configs.v3.response import DescribeConfigsResult
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1 import request as incremental
from kio.schema.incremental_alter_configs.v1 import response as incremental_response
from kio.static.primitive import i8

from minikafka.net import Node

from ._admin_types import (
    RESOURCE_BROKER,
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConfigSynonym,
    error_or_none,
)
from ._message import KafkaError

Outcomes = dict[ConfigResource, KafkaError | None]


def broker_id(resource: ConfigResource) -> int | None:
    """The broker a resource must be sent to: a BROKER resource named by its id. The
    default (``""``) and a name that is not an id go anywhere (the broker refuses a bad
    name with its own message)."""
    if resource.restype == RESOURCE_BROKER and resource.name.isdigit():
        return int(resource.name)
    return None


def route(
    resources: Iterable[ConfigResource],
    anywhere: Node,
    brokers: Mapping[int, Node],
) -> tuple[dict[Node, list[ConfigResource]], dict[ConfigResource, KafkaError]]:
    """Each node and the resources to send it; a resource of a broker the metadata does
    not list fails alone (BROKER_NOT_AVAILABLE), the others still go."""
    by_node: dict[Node, list[ConfigResource]] = {}
    failed: dict[ConfigResource, KafkaError] = {}
    for resource in resources:
        node_id = broker_id(resource)
        if node_id is None:
            node = anywhere
        elif node_id in brokers:
            node = brokers[node_id]
        else:
            failed[resource] = KafkaError(
                ErrorCode.broker_not_available, f"broker {node_id} is not alive"
            )
            continue
        by_node.setdefault(node, []).append(resource)
    return by_node, failed


# --- DescribeConfigs ---------------------------------------------------------------------


def describe_request(
    resources: Sequence[ConfigResource], *, include_synonyms: bool
) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=tuple(
            DescribeConfigsResource(
                resource_type=i8(r.restype),
                resource_name=r.name,
                configuration_keys=None,
            )
            for r in resources
        ),
        include_synonyms=include_synonyms,
        include_documentation=False,
    )


def described(
    result: DescribeConfigsResult,
) -> dict[str, ConfigEntry] | KafkaError:
    """One resource's entries, or the error it was answered with."""
    error = error_or_none(int(result.error_code), result.error_message)
    if error is not None:
        return error
    entries = {}
    for c in result.configs:
        source = ConfigSource.of(int(c.config_source))
        entries[c.name] = ConfigEntry(
            c.name,
            c.value,
            c.read_only,
            source == ConfigSource.DEFAULT_CONFIG,
            c.is_sensitive,
            source,
            tuple(
                ConfigSynonym(s.name, s.value, ConfigSource.of(int(s.source)))
                for s in c.synonyms
            ),
        )
    return entries


# --- IncrementalAlterConfigs and AlterConfigs ----------------------------------------------


def incremental_request(
    changes: Mapping[ConfigResource, Sequence[AlterConfigOp]],
    resources: Sequence[ConfigResource],
    *,
    validate_only: bool,
) -> incremental.IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs v1 of ``resources``' changes."""
    return incremental.IncrementalAlterConfigsRequest(
        resources=tuple(
            incremental.AlterConfigsResource(
                resource_type=i8(r.restype),
                resource_name=r.name,
                configs=tuple(
                    incremental.AlterableConfig(
                        name=op.name,
                        config_operation=i8(int(op.op_type)),
                        value=op.value,
                    )
                    for op in changes[r]
                ),
            )
            for r in resources
        ),
        validate_only=validate_only,
    )


def alter_request(
    configs: Mapping[ConfigResource, Mapping[str, str]],
    resources: Sequence[ConfigResource],
    *,
    validate_only: bool,
) -> alter.AlterConfigsRequest:
    """AlterConfigs v1: each resource's whole set of overrides (a key left out goes back
    to its default)."""
    return alter.AlterConfigsRequest(
        resources=tuple(
            alter.AlterConfigsResource(
                resource_type=i8(r.restype),
                resource_name=r.name,
                configs=tuple(
                    alter.AlterableConfig(name=k, value=v)
                    for k, v in configs[r].items()
                ),
            )
            for r in resources
        ),
        validate_only=validate_only,
    )


def outcomes(
    response: incremental_response.IncrementalAlterConfigsResponse
    | alter_response.AlterConfigsResponse,
    asked: Sequence[ConfigResource],
) -> Outcomes:
    """Each asked resource's error or None; one the broker left out of its answer is
    UNKNOWN_SERVER_ERROR (the caller must not read it as done)."""
    answered: Outcomes = {
        ConfigResource(int(r.resource_type), r.resource_name): error_or_none(
            int(r.error_code), r.error_message
        )
        for r in response.responses
    }
    missing = KafkaError(ErrorCode.unknown_server_error, "no answer")
    return {resource: answered.get(resource, missing) for resource in asked}
