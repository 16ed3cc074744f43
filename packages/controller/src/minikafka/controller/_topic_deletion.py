"""DeleteTopics: which topics a request may delete, as RemoveTopicRecords.

Kafka's ReplicationControlManager.deleteTopics. A request names topics by name, by id,
or both (KIP-516); every name and every id gets one answer. A name or id listed twice,
or one topic named once by name and once by id, is refused rather than guessed at, as
Kafka does, and a request that would write more than ``MAX_RECORDS_PER_USER_OP``
records deletes nothing (POLICY_VIOLATION).

Deciding writes one ``RemoveTopicRecord`` per topic and changes nothing; replaying it
(``ReplicationState.replay``) forgets the topic, its partitions and its configs, and
each broker that replays it deletes its replicas' logs.
"""

from __future__ import annotations

import collections
import uuid
from typing import Never

from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult

from ._records import MetadataRecord, RemoveTopicRecord
from ._replication_state import DUPLICATE, Refused, ReplicationState, too_large
from ._requests import (
    MAX_RECORDS_PER_USER_OP,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)


def delete_topics(
    state: ReplicationState, request: DeleteTopicsRequest
) -> CoreResult[MetadataRecord, DeleteTopicsResponse, Never]:
    # (name, id, error or None when the topic is to be deleted), one per name or id.
    entries: list[tuple[str | None, uuid.UUID | None, Refused | None]] = []
    listed_names = collections.Counter(request.names)
    for name in dict.fromkeys(request.names):
        topic_id = state.topics_by_name.get(name)
        if listed_names[name] > 1:
            entries.append((name, None, Refused(ErrorCode.invalid_request, DUPLICATE)))
        elif topic_id is None:
            # "" too: a name no topic has (Kafka's findTopicIds), not a missing id.
            unknown = Refused(ErrorCode.unknown_topic_or_partition, "no such topic")
            entries.append((name, None, unknown))
        else:
            entries.append((name, topic_id, None))
    listed_ids = collections.Counter(request.topic_ids)
    for topic_id in dict.fromkeys(request.topic_ids):
        if listed_ids[topic_id] > 1:
            refused = Refused(ErrorCode.invalid_request, "Duplicate topic id.")
            entries.append((None, topic_id, refused))
        elif topic_id.int == 0:
            refused = Refused(
                ErrorCode.invalid_request, "The zero topic id names no topic."
            )
            entries.append((None, topic_id, refused))
        elif topic_id not in state.topics:
            unknown = Refused(ErrorCode.unknown_topic_id, "no such topic")
            entries.append((None, topic_id, unknown))
        else:
            entries.append((state.topics[topic_id].name, topic_id, None))
    # A topic named once by name and once by id: as for any duplicate, delete neither.
    chosen = collections.Counter(i for _, i, error in entries if error is None)
    both = Refused(
        ErrorCode.invalid_request,
        "The topic name maps to a topic id also in the request.",
    )
    entries = [
        (n, i, both if error is None and chosen[i] > 1 else error)
        for n, i, error in entries
    ]
    doomed = [i for _, i, error in entries if error is None and i is not None]
    if len(doomed) > MAX_RECORDS_PER_USER_OP:
        refused_all = Refused(ErrorCode.policy_violation, too_large(len(doomed)))
        entries = [(n, i, refused_all) for n, i, _ in entries]
        doomed = []
    results = tuple(
        DeletableTopicResult(n, i, ErrorCode.none)
        if error is None
        else DeletableTopicResult(n, i, error.error_code, error.message)
        for n, i, error in entries
    )
    records = tuple(RemoveTopicRecord(topic_id) for topic_id in doomed)
    return CoreResult(records, (DeleteTopicsResponse(results),))
