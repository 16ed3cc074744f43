"""ConfigurationControlManager and FeatureControlManager: dynamic configs and feature levels.

Configs are ConfigRecords keyed by resource (a topic, a broker, or the cluster-wide
default broker resource ``""``) and replayed into a TimelineHashMap like everything
else the controller knows; reads for DescribeConfigs happen at the committed offset, so
a client never sees a config that could still be rolled back.
"""

from __future__ import annotations

from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

from ._config_alter import ConfigChangeError, incrementally_altered
from ._config_alter import changes as config_changes
from ._config_alter import replaced as replaced_configs
from ._records import (
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    MetadataRecord,
)
from ._requests import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

ConfigKey = tuple[int, str, str]  # (resource type, resource name, config name)


@attrs.define(eq=False)
class ConfigurationControlManager:
    registry: SnapshotRegistry
    configs: TimelineHashMap[ConfigKey, str] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.configs = TimelineHashMap(self.registry)

    def replay(self, record: MetadataRecord) -> None:
        if isinstance(record, ConfigRecord):
            key = (record.resource_type, record.resource_name, record.name)
            if record.value is None:
                self.configs.remove(key)
            else:
                self.configs.put(key, record.value)

    def remove_topic_configs(self, topic: str) -> None:
        """Replay side of RemoveTopicRecord: a deleted topic's configs go with it."""
        for key in [
            k for k in self.configs if k[:2] == (ConfigResourceType.TOPIC, topic)
        ]:
            self.configs.remove(key)

    def resource_configs(
        self, resource_type: int, resource_name: str, epoch: int = LATEST_EPOCH
    ) -> dict[str, str]:
        return {
            name: value
            for (rtype, rname, name), value in self.configs.items(epoch)
            if (rtype, rname) == (resource_type, resource_name)
        }

    def topic_config(self, topic: str, name: str) -> str | None:
        return self.configs.get((ConfigResourceType.TOPIC, topic, name))

    def topic_config_or_broker_default(
        self, topic: str, name: str, node_id: int
    ) -> str | None:
        """The topic's value of ``name``, else the dynamic broker default this
        controller's node has, else the cluster-wide one (Kafka's ``getTopicConfig``);
        None: the static configuration decides."""
        for kind, resource in (
            (ConfigResourceType.TOPIC, topic),
            (ConfigResourceType.BROKER, str(node_id)),
            (ConfigResourceType.BROKER, ""),
        ):
            value = self.configs.get((kind, resource, name))
            if value is not None:
                return value
        return None

    def incremental_alter(
        self, request: IncrementalAlterConfigsRequest, resource_exists: bool
    ) -> CoreResult[MetadataRecord, IncrementalAlterConfigsResponse, Never]:
        """IncrementalAlterConfigs of one resource: a ConfigRecord per key whose value
        changes (None: the override deleted), or the error that refuses them all."""
        kind, name = request.resource_type, request.resource_name
        try:
            current = self.resource_configs(kind, name)
            altered = incrementally_altered(kind, current, request.configs)
            self._check_exists(kind, name, resource_exists)
        except ConfigChangeError as exc:
            error = IncrementalAlterConfigsResponse(exc.error_code, str(exc))
            return CoreResult(replies=(error,))
        records = self._records(kind, name, current, altered, request.validate_only)
        return CoreResult(records, (IncrementalAlterConfigsResponse(ErrorCode.none),))

    def alter(
        self, request: AlterConfigsRequest, resource_exists: bool
    ) -> CoreResult[MetadataRecord, AlterConfigsResponse, Never]:
        """The legacy AlterConfigs of one resource: its overrides become exactly the
        request's, so a key the request leaves out is deleted."""
        kind, name = request.resource_type, request.resource_name
        try:
            current = self.resource_configs(kind, name)
            altered = replaced_configs(kind, request.configs)
            self._check_exists(kind, name, resource_exists)
        except ConfigChangeError as exc:
            return CoreResult(replies=(AlterConfigsResponse(exc.error_code, str(exc)),))
        records = self._records(kind, name, current, altered, request.validate_only)
        return CoreResult(records, (AlterConfigsResponse(ErrorCode.none),))

    @staticmethod
    def _check_exists(kind: int, name: str, resource_exists: bool) -> None:
        if resource_exists:
            return
        if kind == ConfigResourceType.TOPIC:
            raise ConfigChangeError(
                ErrorCode.unknown_topic_or_partition,
                f"Topic {name!r} does not exist.",
            )
        raise ConfigChangeError(ErrorCode.invalid_request, f"no broker {name!r}")

    @staticmethod
    def _records(
        kind: int,
        name: str,
        current: dict[str, str],
        altered: dict[str, str],
        validate_only: bool,
    ) -> tuple[MetadataRecord, ...]:
        if validate_only:
            return ()
        return tuple(
            ConfigRecord(kind, name, key, value)
            for key, value in config_changes(current, altered)
        )

    def describe(
        self, request: DescribeConfigsRequest, epoch: int
    ) -> DescribeConfigsResponse:
        entries = self.resource_configs(
            request.resource_type, request.resource_name, epoch
        )
        return DescribeConfigsResponse(ErrorCode.none, tuple(sorted(entries.items())))


@attrs.define(eq=False)
class FeatureControlManager:
    """Finalized feature levels; ``metadata.version`` says which records may be written."""

    registry: SnapshotRegistry
    levels: TimelineHashMap[str, int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.levels = TimelineHashMap(self.registry)

    def replay(self, record: MetadataRecord) -> None:
        if isinstance(record, FeatureLevelRecord):
            if record.feature_level == 0:
                self.levels.remove(record.name)
            else:
                self.levels.put(record.name, record.feature_level)
