"""Changing configs on a live cluster: IncrementalAlterConfigs (KIP-339) and the legacy
AlterConfigs (KIP-133).

A broker checks what only it can check (Kafka's ``ConfigAdminManager.preprocess``):
each resource named at most once, each key at most once, a value for every operation
but DELETE, a resource type it knows, and for a broker resource, that it names this
broker (or is ``""``, every broker's default) and changes only keys that may change at
run time (``_dynamic_config``). Then each resource goes to the controller channel on its own, as one
all-or-nothing change: in KRaft mode the controller writes a ConfigRecord per changed
key, and every broker's metadata publisher hands the topic's new settings to its
partitions; in ZooKeeper mode the channel writes ``/config/topics/<topic>`` (a broker
resource: ``/config/brokers/<id>`` or ``/config/brokers/<default>``) and a change
notification that every broker watches. Either way the answer comes once the
change is durable.

The same handlers serve a client on a broker and a broker forwarding on the
controller's listener (``node_id`` None there: the broker that got the request has
checked it); :func:`incremental_alter_configs_to_wire` and
:func:`alter_configs_to_wire` are what the broker forwards.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kio.schema.alter_configs.v1 import request as alter_v1
from kio.schema.alter_configs.v1 import response as alter_v1_response
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1 import request as incremental_v1
from kio.schema.incremental_alter_configs.v1 import response as incremental_v1_response
from kio.static.primitive import i8

from minikafka.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResponse,
    ConfigChangeError,
    ConfigResourceType,
    ControllerError,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from minikafka.net import Request, build, nested
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer, config_refusal
from ._body import ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS
from ._dynamic_config import check_broker_change

if TYPE_CHECKING:  # the channel forwards with this module's functions: no import cycle
    from ._controller_channel import ControllerChannel

NO_THROTTLE = datetime.timedelta(0)

ConfigChange = IncrementalAlterConfigsRequest | AlterConfigsRequest
Outcome = tuple[ErrorCode, str | None]


async def handle_incremental_alter_configs(
    request: Request,
    channel: ControllerChannel,
    node_id: int | None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """IncrementalAlterConfigs v0-1; with an authorizer a resource needs ALTER_CONFIGS
    (``config_refusal``) and a refused one is left as it is."""
    body = request.body_as(INCREMENTAL_ALTER_CONFIGS)
    named = _named_twice([(r.resource_type, r.resource_name) for r in body.resources])
    changes: list[tuple[int, str, ConfigChange | Outcome]] = []
    for resource in body.resources:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        configs = resource.configs
        refusal = (
            _duplicate_refusal((kind, name) in named)
            or _authorization(request, authorizer, kind, name)
            or _incremental_refusal(kind, name, configs, node_id)
        )
        if refusal is not None:
            changes.append((kind, name, refusal))
            continue
        ops = tuple(
            AlterableConfig(c.name, AlterConfigOp(c.config_operation), c.value)
            for c in configs
        )
        change = IncrementalAlterConfigsRequest(kind, name, ops, body.validate_only)
        changes.append((kind, name, change))
    await _answer(request, channel, changes)


async def handle_alter_configs(
    request: Request,
    channel: ControllerChannel,
    node_id: int | None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """AlterConfigs v0-2; with an authorizer as IncrementalAlterConfigs."""
    body = request.body_as(ALTER_CONFIGS)
    named = _named_twice([(r.resource_type, r.resource_name) for r in body.resources])
    changes: list[tuple[int, str, ConfigChange | Outcome]] = []
    for resource in body.resources:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        entries = tuple((str(c.name), c.value) for c in resource.configs)
        keys = [n for n, _ in entries]
        refusal = (
            _duplicate_refusal((kind, name) in named)
            or _authorization(request, authorizer, kind, name)
            or _refusal(
                kind,
                name,
                keys,
                [n for n, v in entries if v is None],
                {n: v for n, v in entries if v is not None},
                node_id,
            )
        )
        change = AlterConfigsRequest(kind, name, entries, body.validate_only)
        changes.append((kind, name, refusal or change))
    await _answer(request, channel, changes)


# --- what a broker checks before the controller sees the change --------------------------


def _named_twice(resources: Sequence[tuple[int, str]]) -> set[tuple[int, str]]:
    """The resources a request names more than once."""
    counts = Counter((int(kind), str(name)) for kind, name in resources)
    return {resource for resource, count in counts.items() if count > 1}


def _authorization(
    request: Request, authorizer: BrokerAuthorizer | None, kind: int, name: str
) -> Outcome | None:
    if authorizer is None:
        return None
    return config_refusal(request, authorizer, kind, name, AclOperation.ALTER_CONFIGS)


def _duplicate_refusal(duplicate: bool) -> Outcome | None:
    if duplicate:
        return ErrorCode.invalid_request, "Each resource must appear at most once."
    return None


def _incremental_refusal(
    kind: int,
    name: str,
    configs: Sequence[_IncrementalEntry],
    node_id: int | None,
) -> Outcome | None:
    unknown = [c.config_operation for c in configs if c.config_operation not in _OPS]
    if unknown:
        return ErrorCode.invalid_request, f"Unknown operations type {unknown[0]}"
    return _refusal(
        kind,
        name,
        [c.name for c in configs],
        [c.name for c in configs if c.config_operation != _DELETE and c.value is None],
        {c.name: c.value or "" for c in configs if c.config_operation != _DELETE},
        node_id,
    )


class _IncrementalEntry(Protocol):
    """An IncrementalAlterConfigs entry, in any version served."""

    @property
    def name(self) -> str: ...
    @property
    def config_operation(self) -> int: ...
    @property
    def value(self) -> str | None: ...


_OPS = frozenset(int(op) for op in AlterConfigOp)
_DELETE = i8(AlterConfigOp.DELETE)


def _refusal(
    kind: int,
    name: str,
    keys: list[str],
    without_value: list[str],
    given: dict[str, str],
    node_id: int | None,
) -> Outcome | None:
    """Kafka's answer for a resource the broker refuses before asking the controller;
    None if it may go on. ``given``: the keys the change would give a value to, with
    their values."""
    if len(set(keys)) != len(keys):
        return ErrorCode.invalid_request, "Error due to duplicate config keys"
    if without_value:
        nulls = ", ".join(without_value)
        return ErrorCode.invalid_request, f"Null value not supported for : {nulls}"
    if kind == ConfigResourceType.TOPIC:
        if not name:
            return ErrorCode.invalid_request, "Default topic resources are not allowed."
        return None
    if kind != ConfigResourceType.BROKER:
        return ErrorCode.invalid_request, f"Unknown resource type {kind}"
    if node_id is None:
        return None  # checked by the broker that forwarded it
    if name and not name.isdigit():
        return (
            ErrorCode.invalid_request,
            f"Node id must be an integer, but it is: {name}",
        )
    if name and int(name) != node_id:
        return (
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {node_id}, but received {name}",
        )
    try:
        check_broker_change(given)
    except ConfigChangeError as exc:
        return exc.error_code, str(exc)
    return None


# --- the controller's answers -------------------------------------------------------------


async def _answer(
    request: Request,
    channel: ControllerChannel,
    changes: list[tuple[int, str, ConfigChange | Outcome]],
) -> None:
    """Submit each resource's change in turn; answer with each one's outcome."""
    outcomes = []
    for kind, name, change in changes:
        outcome = (
            change if isinstance(change, tuple) else await _submit(channel, change)
        )
        outcomes.append((kind, name, outcome))
    cls = request.response_class()
    result_cls = nested(cls, "responses")
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            responses=tuple(
                build(
                    result_cls,
                    error_code=error,
                    error_message=message,
                    resource_type=kind,
                    resource_name=name,
                )
                for kind, name, (error, message) in outcomes
            ),
        )
    )


async def _submit(channel: ControllerChannel, change: ConfigChange) -> Outcome:
    try:
        answer = await channel.submit(change)
    except ControllerError as exc:
        return exc.error_code, None
    if not isinstance(answer, IncrementalAlterConfigsResponse | AlterConfigsResponse):
        return ErrorCode.unknown_server_error, None
    return answer.error_code, answer.error_message


# --- forwarded to a controller on another node ---------------------------------------------


def incremental_alter_configs_to_wire(
    request: IncrementalAlterConfigsRequest,
) -> incremental_v1.IncrementalAlterConfigsRequest:
    return incremental_v1.IncrementalAlterConfigsRequest(
        resources=(
            incremental_v1.AlterConfigsResource(
                resource_type=i8(request.resource_type),
                resource_name=request.resource_name,
                configs=tuple(
                    incremental_v1.AlterableConfig(
                        name=c.name, config_operation=i8(c.op), value=c.value
                    )
                    for c in request.configs
                ),
            ),
        ),
        validate_only=request.validate_only,
    )


def alter_configs_to_wire(request: AlterConfigsRequest) -> alter_v1.AlterConfigsRequest:
    return alter_v1.AlterConfigsRequest(
        resources=(
            alter_v1.AlterConfigsResource(
                resource_type=i8(request.resource_type),
                resource_name=request.resource_name,
                configs=tuple(
                    alter_v1.AlterableConfig(name=n, value=v)
                    for n, v in request.configs
                ),
            ),
        ),
        validate_only=request.validate_only,
    )


def config_change_from_wire(
    response: incremental_v1_response.IncrementalAlterConfigsResponse
    | alter_v1_response.AlterConfigsResponse,
) -> Outcome:
    """The one resource's outcome a forwarded change was answered with."""
    if len(response.responses) != 1:
        raise ControllerError(ErrorCode.unknown_server_error)
    (result,) = response.responses
    return result.error_code, result.error_message
