"""The topic admin APIs: CreateTopics, DeleteTopics, CreatePartitions.

A KRaft broker decides none of these itself. It translates the request into the
controller's request type, submits it to the QuorumController (in this process, in
combined mode; Kafka forwards it over the network otherwise) and answers once the
controller's records are committed, by which time this broker's MetadataCache has
replayed them too. (DescribeConfigs is ``_describe_configs.py``'s, the changes to
configs ``_alter_configs.py``'s.)
"""

from __future__ import annotations

import collections
import datetime
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from minikafka.controller import (
    ControllerConfig,
    ControllerError,
    ControllerRequest,
)
from minikafka.controller import CreatableTopic as ControllerCreatableTopic
from minikafka.controller import (
    CreatableTopicResult as ControllerCreatableTopicResult,
)
from minikafka.controller import CreatePartitionsRequest as ControllerCreatePartitions
from minikafka.controller import (
    CreatePartitionsResponse as ControllerCreatePartitionsResponse,
)
from minikafka.controller import (
    CreatePartitionsTopic as ControllerCreatePartitionsTopic,
)
from minikafka.controller import CreateTopicsRequest as ControllerCreateTopics
from minikafka.controller import CreateTopicsResponse as ControllerCreateTopicsResponse
from minikafka.controller import DeleteTopicsRequest as ControllerDeleteTopics
from minikafka.controller import DeleteTopicsResponse as ControllerDeleteTopicsResponse
from minikafka.net import Request, build, has_field, is_body, nested
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._body import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DELETE_TOPICS_BY_NAME_OR_ID,
    DeleteTopicsByNameOrId,
)
from ._controller_channel import ControllerChannel, submit_once
from ._describe_configs import ConfigEntry
from ._metadata_cache import INTERNAL_TOPICS, ZERO_UUID, MetadataCache

NO_THROTTLE = datetime.timedelta(0)


async def _submit(
    controller: ControllerChannel, request: ControllerRequest
) -> object | ErrorCode:
    try:
        return await controller.submit(request)
    except ControllerError as exc:
        return exc.error_code


def _failure(answer: object) -> ErrorCode:
    """The error for every item of a request the controller did not answer as asked."""
    return answer if isinstance(answer, ErrorCode) else ErrorCode.unknown_server_error


def _internal_refusal(name: str, verb: str) -> str | None:
    """Why a client may not ``verb`` ``name``, if it is an internal topic.

    ``__consumer_offsets`` is created by the group coordinator with its own settings
    (compacted, ``offsets.topic.num.partitions`` partitions): created by a client with one
    partition and ``cleanup.policy=delete``, no group could find its coordinator again;
    deleted, every group's offsets would go; given more partitions, groups would hash onto
    partitions the coordinator never loads. Kafka guards these topics with ACLs and
    refuses ``__cluster_metadata`` outright (ControllerApis); this broker has no
    authorizer, so it refuses every internal topic the way Kafka refuses that one.
    """
    if name in INTERNAL_TOPICS:
        return f"{verb} of internal topic {name} is prohibited."
    return None


class _TopicResult(Protocol):
    """The controller's answer for one topic it created, deleted or grew."""

    @property
    def name(self) -> str | None: ...
    @property
    def error_code(self) -> ErrorCode: ...
    @property
    def error_message(self) -> str | None: ...


class _ControllerAnswer(Protocol):
    """The controller's response to a CreateTopics, DeleteTopics or CreatePartitions."""

    @property
    def topics(self) -> Sequence[_TopicResult]: ...


@attrs.define
class _TopicAnswers:
    """One answer per topic name of an admin request, in the order the names first appear.

    Kafka answers a name listed twice once (with INVALID_REQUEST, as the controller
    does), so the answers are keyed by name; None marks a name still waiting for the
    controller.
    """

    request: Request
    field: str
    """The response's array of per-topic results: topics, responses or results."""
    guard_internal: bool = True
    """Refuse internal topics (a client's request); off on the controller's listener,
    where a broker creates ``__consumer_offsets`` for its group coordinator."""
    response_cls: type[ResponsePayload] = attrs.field(init=False)
    result_cls: type[Entity] = attrs.field(init=False)
    answers: dict[str, object] = attrs.field(init=False, factory=dict)
    configs_of: Callable[[str], list[ConfigEntry]] | None = None
    """A created topic's configs in force (CreateTopics v5+, KIP-525)."""
    topic_ids: Mapping[str, uuid.UUID] = attrs.field(factory=dict)
    """The ids of the topics named, for an answer that carries them (DeleteTopics v6)."""

    def __attrs_post_init__(self) -> None:
        self.response_cls = self.request.response_class()
        self.result_cls = nested(self.response_cls, self.field)

    def refused(self, name: str, verb: str) -> bool:
        """Answer ``name`` with INVALID_REQUEST if it is internal; False if it goes on."""
        refusal = _internal_refusal(name, verb) if self.guard_internal else None
        if refusal is None:
            self.answers.setdefault(name, None)
            return False
        self.answers[name] = build(
            self.result_cls,
            name=name,
            error_code=ErrorCode.invalid_request,
            error_message=refusal,
            **self._not_created(),
        )
        return True

    def not_authorized(self, name: str, denied: frozenset[str]) -> bool:
        """Answer ``name`` with TOPIC_AUTHORIZATION_FAILED if it is ``denied``."""
        if name not in denied:
            return False
        self.answers[name] = build(
            self.result_cls,
            name=name,
            error_code=ErrorCode.topic_authorization_failed,
            error_message=None,
            **self._not_created(),
        )
        return True

    async def submit(
        self,
        controller: ControllerChannel,
        request: ControllerRequest,
        response_type: type[_ControllerAnswer],
        names: Sequence[str],
    ) -> None:
        """Submit ``request`` about ``names``; keep the controller's answers, or its one
        error for every name submitted."""
        answer = await _submit(controller, request)
        if not isinstance(answer, response_type):
            code = _failure(answer)
            for name in names:
                self.answers[name] = build(
                    self.result_cls,
                    name=name,
                    error_code=code,
                    error_message=None,
                    **self._not_created(),
                )
            return
        for r in answer.topics:
            if r.name is not None:  # a topic named by its id only (KIP-516) has no name
                self.answers[r.name] = build(
                    self.result_cls,
                    name=r.name,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    **self._created(r),
                )

    def refuse(
        self,
        key: str,
        name: str | None,
        topic_id: uuid.UUID,
        error: ErrorCode,
        message: str | None,
    ) -> None:
        """Answer one entry before the controller sees it (DeleteTopics v6's checks)."""
        self.answers[key] = build(
            self.result_cls,
            name=name,
            topic_id=topic_id,
            error_code=error,
            error_message=message,
        )

    def _not_created(self) -> dict[str, object]:
        """A CreateTopics v5+ answer's configs when the topic was not created (none), and
        v7's topic id (zero)."""
        cls = self.result_cls
        return {
            **({"configs": ()} if has_field(cls, "configs") else {}),
            **({"topic_id": ZERO_UUID} if has_field(cls, "topic_id") else {}),
        }

    def _created(self, r: _TopicResult) -> dict[str, object]:
        """What CreateTopics v5+ adds to a topic's answer (KIP-525), and v7 its id; what
        DeleteTopics v6 adds, the deleted topic's id."""
        if not isinstance(r, ControllerCreatableTopicResult):
            if not has_field(self.result_cls, "topic_id"):
                return {}
            return {"topic_id": self.topic_ids.get(r.name or "", ZERO_UUID)}
        ok = r.error_code is ErrorCode.none
        configs: tuple[Entity, ...] | None = () if not ok else None
        if ok and self.configs_of is not None and has_field(self.result_cls, "configs"):
            entry_cls = nested(self.result_cls, "configs")
            configs = tuple(
                build(
                    entry_cls,
                    name=e.name,
                    value=e.value,
                    read_only=False,
                    config_source=e.source,
                    is_sensitive=False,
                )
                for e in self.configs_of(r.name)
            )
        return {
            "topic_id": r.topic_id or ZERO_UUID,
            "num_partitions": r.num_partitions if ok else -1,
            "replication_factor": r.replication_factor if ok else -1,
            "configs": configs,
        }

    def respond(self) -> None:
        """Answer every name in the order it first appeared; a name the controller left
        unanswered (it never does) is UNKNOWN_SERVER_ERROR rather than silently dropped."""
        results = tuple(
            build(
                self.result_cls,
                name=n,
                error_code=ErrorCode.unknown_server_error,
                **self._not_created(),
            )
            if a is None
            else a
            for n, a in self.answers.items()
        )
        self.request.respond(
            build(self.response_cls, throttle_time=NO_THROTTLE, **{self.field: results})
        )


TopicConfigs = Callable[[str, Mapping[str, str]], "list[ConfigEntry]"]
"""A new topic's configs in force, from its name and the overrides it was created with."""


async def handle_create_topics(
    request: Request,
    controller: ControllerChannel,
    *,
    guard_internal: bool = True,
    configs_of: TopicConfigs | None = None,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """CreateTopics; from v5 each created topic's answer carries its partitions,
    replication factor and every config in force (KIP-525), which ``configs_of``
    gives (without it, as on the controller's listener, none). With an authorizer,
    CREATE on the cluster, or else on each topic, is needed (Kafka's
    ``handleCreateTopicsRequest``)."""
    body = request.body_as(CREATE_TOPICS)
    answers = _TopicAnswers(request, "topics", guard_internal)
    denied: frozenset[str] = frozenset()
    if authorizer is not None and not authorizer.cluster_allowed(
        request, AclOperation.CREATE
    ):
        names = (str(t.name) for t in body.topics)
        denied = authorizer.denied_topics(request, AclOperation.CREATE, names)
    if configs_of is not None:
        requested: dict[str, dict[str, str]] = {
            str(t.name): {c.name: c.value for c in t.configs if c.value is not None}
            for t in body.topics
        }
        answers.configs_of = lambda name: configs_of(name, requested.get(name, {}))
    submitted = tuple(
        ControllerCreatableTopic(
            name=t.name,
            num_partitions=int(t.num_partitions),
            replication_factor=int(t.replication_factor),
            # As given, partition_index and all: the controller refuses a gap or a
            # repeat instead of this handler renumbering them.
            assignments=tuple(
                tuple(int(b) for b in a.broker_ids) for a in t.assignments
            ),
            partition_ids=tuple(int(a.partition_index) for a in t.assignments),
            configs=tuple((c.name, c.value) for c in t.configs),
        )
        for t in body.topics
        if not answers.refused(t.name, "Creation")
        and not answers.not_authorized(t.name, denied)
    )
    if submitted:
        validate_only = bool(body.validate_only)  # v1+
        await answers.submit(
            controller,
            ControllerCreateTopics(submitted, validate_only),
            ControllerCreateTopicsResponse,
            [c.name for c in submitted],
        )
    answers.respond()


async def handle_delete_topics(
    request: Request,
    controller: ControllerChannel,
    cache: MetadataCache | None = None,
    *,
    guard_internal: bool = True,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DeleteTopics v1-6: by name, or from v6 by name or by id (KIP-516), which the
    broker turns into names from its metadata before it asks the controller. With an
    authorizer, DELETE on each topic is needed (TOPIC_AUTHORIZATION_FAILED)."""
    body = request.body_as(DELETE_TOPICS)
    answers = _TopicAnswers(request, "responses", guard_internal)
    if is_body(body, DELETE_TOPICS_BY_NAME_OR_ID):
        assert cache is not None, "v6 is served on the client listeners only"
        names = _names_for_deletion(body, cache, answers)
    else:
        names = [str(n) for n in body.topic_names]
    denied: frozenset[str] = frozenset()
    if authorizer is not None:
        denied = authorizer.denied_topics(request, AclOperation.DELETE, names)
    deletable = [
        n
        for n in names
        if not answers.refused(n, "Deletion") and not answers.not_authorized(n, denied)
    ]
    if deletable:
        await answers.submit(
            controller,
            ControllerDeleteTopics(names=tuple(deletable)),
            ControllerDeleteTopicsResponse,
            deletable,
        )
    answers.respond()


def _names_for_deletion(
    body: DeleteTopicsByNameOrId, cache: MetadataCache, answers: _TopicAnswers
) -> list[str]:
    """The names a v6 request deletes, each entry checked as Kafka's controller checks
    it: a name or an id, not both and not neither; an id listed twice (refused once),
    or no topic's, refused on its own; an id turned into its topic's name (whose id the
    answer keeps). A topic named both by its name and by its id is refused once, for the
    name's entry, and not deleted: Kafka 4.1 answers exactly that (the id's entry gets
    no answer of its own). A name listed twice is left to the controller, which refuses
    it as for v1-5."""
    ids = collections.Counter(
        t.topic_id for t in body.topics if t.name is None and t.topic_id
    )
    names: list[str] = []
    by_name: list[str] = []
    topic_ids: dict[str, uuid.UUID] = {}
    for entry in body.topics:
        topic_id = entry.topic_id or ZERO_UUID
        if entry.name is not None and topic_id != ZERO_UUID:
            message = "You may not specify both topic name and topic id."
            answers.refuse(
                f"{entry.name}/{topic_id}", entry.name, topic_id,
                ErrorCode.invalid_request, message,
            )  # fmt: skip
        elif entry.name is not None:
            by_name.append(entry.name)
        elif topic_id == ZERO_UUID:
            message = "Neither topic name nor id were specified."
            answers.refuse(
                f"/{len(answers.answers)}",
                None,
                ZERO_UUID,
                ErrorCode.invalid_request,
                message,
            )
        elif ids[topic_id] > 1:
            answers.refuse(
                f"/{topic_id}", None, topic_id,
                ErrorCode.invalid_request, "Duplicate topic id.",
            )  # fmt: skip
        elif (found := cache.topic_by_id(topic_id)) is None:
            answers.refuse(
                f"/{topic_id}", None, topic_id, ErrorCode.unknown_topic_id, None
            )
        else:
            names.append(found.name)
            topic_ids[found.name] = topic_id
    for name in by_name:
        if name in topic_ids:  # its id is in the request too
            message = "The provided topic name maps to an ID that was already supplied."
            answers.refuse(
                f"{name}/{topic_ids[name]}", name, topic_ids[name],
                ErrorCode.invalid_request, message,
            )  # fmt: skip
            if name in names:
                names.remove(name)  # the id's entry: neither deleted nor answered
            continue
        names.append(name)
        known = cache.topic(name)
        if known is not None:
            topic_ids[name] = known.topic_id
    answers.topic_ids = topic_ids
    return names


async def handle_create_partitions(
    request: Request,
    controller: ControllerChannel,
    *,
    guard_internal: bool = True,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """CreatePartitions v0-3; with an authorizer a topic needs ALTER
    (TOPIC_AUTHORIZATION_FAILED, and it keeps its partitions)."""
    body = request.body_as(CREATE_PARTITIONS)
    answers = _TopicAnswers(request, "results", guard_internal)
    denied: frozenset[str] = frozenset()
    if authorizer is not None:
        names = (t.name for t in body.topics)
        denied = authorizer.denied_topics(request, AclOperation.ALTER, names)
    submitted = tuple(
        ControllerCreatePartitionsTopic(
            name=t.name,
            count=int(t.count),
            assignments=tuple(
                tuple(int(b) for b in a.broker_ids) for a in (t.assignments or ())
            ),
        )
        for t in body.topics
        if not answers.not_authorized(t.name, denied)
        and not answers.refused(t.name, "Adding partitions")
    )
    if submitted:
        await answers.submit(
            controller,
            ControllerCreatePartitions(
                submitted, validate_only=bool(body.validate_only)
            ),
            ControllerCreatePartitionsResponse,
            [g.name for g in submitted],
        )
    answers.respond()


_ASK_AGAIN = (ErrorCode.none, ErrorCode.topic_already_exists, ErrorCode.not_controller)


async def auto_create_topics(
    controller: ControllerChannel,
    cache: MetadataCache,
    defaults: ControllerConfig,
    names: list[str],
) -> dict[str, ErrorCode]:
    """Metadata's auto-creation: ``names`` created with the default partitions and
    replication factor; the error of each topic not answered with its metadata.

    Kafka's broker answers LEADER_NOT_AVAILABLE and lets the client ask again; this
    broker waits for the controller's answer (about one fsync in combined mode) and
    answers with the new topics' metadata when it has replayed them.
    """
    # This broker's num.partitions and default.replication.factor, as Kafka's
    # AutoTopicCreationManager sends them: the controller may be configured apart.
    request = ControllerCreateTopics(
        tuple(
            ControllerCreatableTopic(
                name, defaults.num_partitions, defaults.default_replication_factor
            )
            for name in dict.fromkeys(names)
        )
    )
    try:
        response = await submit_once(controller, request)
    except ControllerError:
        # Kafka answers LEADER_NOT_AVAILABLE whatever becomes of the forwarded request
        # (the controller moved, a timeout), and the client asks again.
        return dict.fromkeys(names, ErrorCode.leader_not_available)
    assert isinstance(response, ControllerCreateTopicsResponse)
    # Created (or created by someone else meanwhile) but not replayed here yet, as
    # on a broker-only node, or asked of a voter that does not lead (its next attempt
    # goes to the next one): LEADER_NOT_AVAILABLE, which every client retries.
    return {
        r.name: ErrorCode.leader_not_available
        if r.error_code in _ASK_AGAIN
        else r.error_code
        for r in response.topics
        if r.error_code is not ErrorCode.none or cache.topic(r.name) is None
    }
