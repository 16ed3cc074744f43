"""ConfigurationControlManager and FeatureControlManager: dynamic configs and feature levels.

Configs are ConfigRecords keyed by resource (a topic, a broker, or the cluster-wide
default broker resource ``""``) and replayed into a TimelineHashMap like everything
else the controller knows; reads for DescribeConfigs happen at the committed offset, so
a client never sees a config that could still be rolled back.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError

from ._config import validate_topic_config
from ._records import (
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    MetadataRecord,
)
from ._requests import (
    AlterConfigOp,
    ControllerResult,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from ._timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

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

    def incremental_alter(
        self, request: IncrementalAlterConfigsRequest, resource_exists: bool
    ) -> ControllerResult[IncrementalAlterConfigsResponse]:
        if not resource_exists:
            error = IncrementalAlterConfigsResponse(
                ErrorCode.unknown_topic_or_partition,
                f"no resource {request.resource_name!r}",
            )
            return ControllerResult((), error)
        records: list[MetadataRecord] = []
        for entry in request.configs:
            if entry.op == AlterConfigOp.SET:
                if entry.value is None:
                    return ControllerResult(
                        (),
                        IncrementalAlterConfigsResponse(
                            ErrorCode.invalid_config, f"{entry.name}: no value"
                        ),
                    )
                if request.resource_type == ConfigResourceType.TOPIC:
                    try:
                        validate_topic_config(entry.name, entry.value)
                    except ConfigError as exc:
                        return ControllerResult(
                            (),
                            IncrementalAlterConfigsResponse(
                                ErrorCode.invalid_config, str(exc)
                            ),
                        )
            value = entry.value if entry.op == AlterConfigOp.SET else None
            records.append(
                ConfigRecord(
                    request.resource_type, request.resource_name, entry.name, value
                )
            )
        if request.validate_only:
            records = []
        return ControllerResult(
            tuple(records), IncrementalAlterConfigsResponse(ErrorCode.none)
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
