"""``AdminClient``: topics, configs and groups, shaped like confluent-kafka's.

Each call returns at once with a ``concurrent.futures.Future`` per topic, resource or
group (``fs = admin.create_topics([...]); fs["orders"].result()``), as confluent-kafka's
AdminClient does. The work is :class:`AsyncAdminClient`'s (which says where each request
goes), run on trio by a worker thread; a per-key error becomes that future's
KafkaException, and a failure of the whole call every future's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import trio
from kio.schema.errors import ErrorCode

from ._admin_types import (
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConsumerGroupDescription,
    NewPartitions,
    NewTopic,
)
from ._async_admin import AsyncAdminClient, admin_config
from ._message import TRANSPORT, KafkaError, KafkaException

T = TypeVar("T")
Work = Callable[[AsyncAdminClient], Awaitable[Mapping[T, Any]]]


class AdminClient:
    """``AdminClient({"bootstrap.servers": "127.0.0.1:9092"})``."""

    def __init__(self, config: Mapping[str, object]) -> None:
        admin_config(config)  # a bad key or value is refused here, naming the key
        self._config = dict(config)
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="minikafka-admin"
        )

    def _run(self, keys: Iterable[T], work: Work[T]) -> dict[T, Future[Any]]:
        """A future per key, completed by ``work`` (run on trio in the worker thread)."""
        futures: dict[T, Future[Any]] = {key: Future() for key in keys}

        def job() -> None:
            async def main() -> Mapping[T, Any]:
                async with AsyncAdminClient.open(self._config) as admin:
                    return await work(admin)

            try:
                results = trio.run(main)
            except KafkaException as exc:
                results = dict.fromkeys(futures, exc.args[0])
            except OSError as exc:
                results = dict.fromkeys(futures, KafkaError(TRANSPORT, str(exc)))
            for key, future in futures.items():
                outcome = results.get(
                    key, KafkaError(ErrorCode.unknown_server_error, "no answer")
                )
                if isinstance(outcome, KafkaError):
                    future.set_exception(KafkaException(outcome))
                else:
                    future.set_result(outcome)

        self._pool.submit(job)
        return futures

    # --- topics -------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        topics = list(new_topics)
        return self._run(
            [t.topic for t in topics],
            lambda admin: admin.create_topics(topics, validate_only=validate_only),
        )

    def delete_topics(self, topics: Iterable[str]) -> dict[str, Future[None]]:
        names = list(topics)
        return self._run(names, lambda admin: admin.delete_topics(names))

    def create_partitions(
        self, new_partitions: Iterable[NewPartitions], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        wanted = list(new_partitions)
        return self._run(
            [p.topic for p in wanted],
            lambda admin: admin.create_partitions(wanted, validate_only=validate_only),
        )

    def list_topics(
        self, topic: str | None = None, timeout: float = -1
    ) -> ClusterMetadata:
        """The cluster's brokers and topics (or one topic), as confluent-kafka's."""

        async def work(admin: AsyncAdminClient) -> dict[str, ClusterMetadata]:
            return {"": await admin.list_topics(topic)}

        wait = None if timeout is None or timeout < 0 else timeout
        result: ClusterMetadata = self._run([""], work)[""].result(wait)
        return result

    # --- configs ------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource]
    ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        wanted = list(resources)
        return self._run(wanted, lambda admin: admin.describe_configs(wanted))

    # --- groups -------------------------------------------------------------------

    def list_consumer_groups(self) -> Future[list[str]]:
        """Every group on every broker (ListGroups is answered per coordinator)."""

        async def work(admin: AsyncAdminClient) -> dict[str, list[str]]:
            return {"": await admin.list_consumer_groups()}

        return self._run([""], work)[""]

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, Future[ConsumerGroupDescription]]:
        groups = list(group_ids)
        return self._run(groups, lambda admin: admin.describe_consumer_groups(groups))

    def delete_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, Future[None]]:
        groups = list(group_ids)
        return self._run(groups, lambda admin: admin.delete_consumer_groups(groups))
