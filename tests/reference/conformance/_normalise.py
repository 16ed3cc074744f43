"""A response as a tree of plain values, with what legitimately differs made equal.

:func:`to_tree` turns a kio response (frozen dataclasses) into nested dicts of plain
values: an error code becomes its Kafka name (``UNKNOWN_TOPIC_OR_PARTITION``), a
duration or timestamp its milliseconds, a record set its decoded batches. An array of
named things (topics, partitions, groups, users, API keys) becomes a dict keyed by
``[name]``, so a diff reads ``topics[conf-data].partitions[1].error_code`` and does not
depend on the order a hash map gave; a name listed twice keeps both, as ``name#1``.

:class:`Normaliser` then replaces, in both brokers' trees, only what two correct
brokers may answer differently (each rule says why):

- ``throttle_time_ms``: quotas are time-based (and minikafka has none: COMPAT.md).
- ``error_message`` (and a refused record's ``batch_index_error_message``): free
  text; the error *code* and the record's index are what clients act on.
- ``host``, ``port``, ``client_host``: each broker listens on its own free port.
- ``cluster_id``, ``topic_id``, ``incarnation_id``: random per cluster and per topic
  (a zero uuid stays visible: it means "none").
- ``session_id`` of a fetch session (KIP-227): random; any but 0 ("none") is ``<session>``.
- ``member_id``, ``producer_id``: chosen by the broker; each distinct value becomes
  ``<member-N>`` / ``<producer-N>`` in order of first appearance within a scenario, so
  a scenario that reuses a member id still shows whether the broker kept it.
- ``log_append_time`` and the timestamps and CRC of a LogAppendTime batch: the broker's
  clock at the append.
- an answer about *all* topics or groups (a scenario says so): only the conformance
  corpus's own names are kept (the shared Kafka node serves every other
  reference test's topics and groups as well).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import struct
import uuid
from collections.abc import Mapping
from typing import Any

import attrs
from kio.static.primitive import Records

Tree = Any
"""A plain value, a list, or a dict of trees."""

# The field that names an element of an array, most specific first.
KEY_FIELDS = (
    "api_key",
    "name",
    "topic",
    "topic_name",
    "group_id",
    "user",
    "resource_name",
    "partition_index",
    "partition",
    "index",
    "key",
)


def to_tree(value: object) -> Tree:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _field_tree(f.name, getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, tuple | list):
        return _array_tree([to_tree(v) for v in value])
    if isinstance(value, enum.Enum):
        return value.name.upper()
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # kio's i32 and friends, and IntEnum-free ints
    if isinstance(value, bool | str | float) or value is None:
        return value
    raise TypeError(f"no tree for {type(value).__name__}: {value!r}")


def _field_tree(name: str, value: object) -> Tree:
    if name == "records" and isinstance(value, bytes | Records):
        return decode_batches(bytes(value))
    return to_tree(value)


def _array_tree(items: list[Tree]) -> Tree:
    if not items or not all(isinstance(i, dict) for i in items):
        return items
    for key in KEY_FIELDS:
        if all(key in i and isinstance(i[key], int | str) for i in items):
            keyed: dict[str, Tree] = {}
            for item in items:
                name = str(item[key])
                copies = sum(1 for k in keyed if k[1:-1].split("#")[0] == name)
                keyed[f"[{name}]" if copies == 0 else f"[{name}#{copies}]"] = item
            return keyed
    return items


_BATCH = struct.Struct(">qiibIhiqqqhii")


def decode_batches(data: bytes) -> Tree:
    """The v2 batch headers of ``data``; each batch's records stay bytes (hex)."""
    batches: list[Tree] = []
    position = 0
    while position + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        end = position + 12 + length
        if end > len(data) or position + _BATCH.size > len(data):
            batches.append({"partial_tail_bytes": len(data) - position})
            break
        (
            base_offset,
            _length,
            leader_epoch,
            magic,
            crc,
            attributes,
            last_delta,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        ) = _BATCH.unpack_from(data, position)
        entry: dict[str, Tree] = {
            "base_offset": base_offset,
            "partition_leader_epoch": leader_epoch,
            "magic": magic,
            "crc": crc,
            "attributes": attributes,
            "last_offset_delta": last_delta,
            "base_timestamp": base_ts,
            "max_timestamp": max_ts,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "base_sequence": base_sequence,
            "records_count": count,
            "records": data[position + _BATCH.size : end].hex(),
        }
        batches.append(entry)
        position = end
    return batches


_LOG_APPEND_TIME = 0x08


@attrs.define
class Normaliser:
    """Normalises one scenario's trees of one broker (ids numbered per scenario)."""

    trim: str | None = None
    """The answer is about every topic or group: keep the names with this prefix only."""
    varies: frozenset[str] = frozenset()
    """Fields the scenario says may differ (replaced by ``<varies>``)."""
    members: dict[str, str] = attrs.field(factory=dict)
    producers: dict[int, str] = attrs.field(factory=dict)

    def __call__(self, tree: Tree) -> Tree:
        if isinstance(tree, dict):
            if "base_offset" in tree and "crc" in tree and "attributes" in tree:
                tree = self._batch(tree)
            return {key: self._field(key, value) for key, value in tree.items()}
        if isinstance(tree, list):
            return [self(v) for v in tree]
        return tree

    def _field(self, name: str, value: Tree) -> Tree:
        if name in self.varies:
            return "<varies>"
        if name in ("throttle_time_ms", "throttle_time"):
            return 0
        if name in ("error_message", "batch_index_error_message"):
            return None
        if name in ("host", "client_host"):
            return "<host>"
        if name == "port":
            return "<port>"
        if name in ("cluster_id", "topic_id", "incarnation_id") and isinstance(
            value, str
        ):
            return value if value == str(uuid.UUID(int=0)) else "<id>"
        if name == "session_id" and isinstance(value, int) and value != 0:
            return "<session>"
        if name == "member_id" or name == "leader":
            return self._member(value) if isinstance(value, str) else value
        if name == "producer_id" and isinstance(value, int) and value >= 0:
            return self.producers.setdefault(
                value, f"<producer-{len(self.producers) + 1}>"
            )
        if name == "log_append_time" and isinstance(value, int) and value != -1:
            return "<time>"
        if self.trim and name in ("topics", "groups") and isinstance(value, dict):
            return {
                k: self(v) for k, v in value.items() if k.startswith("[" + self.trim)
            }
        return self(value)

    def _member(self, value: str) -> str:
        if value == "":
            return value
        return self.members.setdefault(value, f"<member-{len(self.members) + 1}>")

    @staticmethod
    def _batch(batch: Mapping[str, Tree]) -> Tree:
        out = dict(batch)
        if int(out["attributes"]) & _LOG_APPEND_TIME:
            out["base_timestamp"] = out["max_timestamp"] = out["crc"] = "<time>"
        return out
