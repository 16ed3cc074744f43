"""minikafka.coordination: consumer groups (seeds 002 and 000).

The group coordinator's state machine as a sans-IO core (Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead; the join and sync phases, heartbeats, session and
rebalance timeouts, static members), and the client side of a rebalance as Kafka designs
it: the assignors a group leader runs (Range, RoundRobin, Sticky, CooperativeSticky), the
consumer protocol's subscription and assignment encodings, and the eager and cooperative
(KIP-429) rebalance protocols. Offsets and group metadata live as records of the
compacted topic ``__consumer_offsets`` (``GroupMetadataManager``, the record codec),
which the coordinator reaches through the ``OffsetsTopic`` port; ``GroupCoordinatorShell``
is the trio shell the broker's request handlers call.

Four subpackages: ``group`` (the coordinator: a shard composing a membership and an
offsets manager, as Kafka's newer coordinator is), ``assignors`` (the assignors and the
consumer protocol's codecs), ``member`` (the member's side: Kafka's ``ConsumerCoordinator``
and ``SubscriptionState``, which the client's consumer runs) and ``simulate`` (the
simulator, which runs both sides). This module re-exports the public names of the first
two and of the simulator; ``member``'s are imported from it.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from .assignors._assignor import NO_GENERATION as NO_GENERATION
from .assignors._assignor import Assignment as Assignment
from .assignors._assignor import PartitionAssignor as PartitionAssignor
from .assignors._assignor import RebalanceProtocol as RebalanceProtocol
from .assignors._assignor import Subscription as Subscription
from .assignors._consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE,
)
from .assignors._consumer_protocol import (
    HIGHEST_ASSIGNMENT_VERSION as HIGHEST_ASSIGNMENT_VERSION,
)
from .assignors._consumer_protocol import (
    HIGHEST_SUBSCRIPTION_VERSION as HIGHEST_SUBSCRIPTION_VERSION,
)
from .assignors._consumer_protocol import ConsumerProtocolError as ConsumerProtocolError
from .assignors._consumer_protocol import decode_assignment as decode_assignment
from .assignors._consumer_protocol import decode_subscription as decode_subscription
from .assignors._consumer_protocol import encode_assignment as encode_assignment
from .assignors._consumer_protocol import encode_subscription as encode_subscription
from .assignors._cooperative_sticky import (
    CooperativeStickyAssignor as CooperativeStickyAssignor,
)
from .assignors._cooperative_sticky import (
    cooperative_violations as cooperative_violations,
)
from .assignors._cooperative_sticky import (
    encode_cooperative_user_data as encode_cooperative_user_data,
)
from .assignors._cooperative_sticky import revoked_partitions as revoked_partitions
from .assignors._range import RangeAssignor as RangeAssignor
from .assignors._round_robin import RoundRobinAssignor as RoundRobinAssignor
from .assignors._sticky import MemberData as MemberData
from .assignors._sticky import StickyAssignor as StickyAssignor
from .assignors._sticky import decode_sticky_user_data as decode_sticky_user_data
from .assignors._sticky import encode_sticky_user_data as encode_sticky_user_data
from .group._config import GROUP_CONFIG as GROUP_CONFIG
from .group._config import NEW_MEMBER_JOIN_TIMEOUT_MS as NEW_MEMBER_JOIN_TIMEOUT_MS
from .group._config import GroupConfig as GroupConfig
from .group._consumer_group import CONSUMER_GROUP_TYPE as CONSUMER_GROUP_TYPE
from .group._consumer_group import ConsumerGroup as ConsumerGroup
from .group._consumer_group import ConsumerGroupState as ConsumerGroupState
from .group._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatRequest,
)
from .group._consumer_heartbeat import (
    ConsumerGroupHeartbeatResponse as ConsumerGroupHeartbeatResponse,
)
from .group._coordinator import GroupCoordinator as GroupCoordinator
from .group._events import GroupStateChanged as GroupStateChanged
from .group._events import MemberAssigned as MemberAssigned
from .group._events import MemberAssignmentChanged as MemberAssignmentChanged
from .group._events import MemberJoined as MemberJoined
from .group._events import MemberRemoved as MemberRemoved
from .group._events import RebalanceCompleted as RebalanceCompleted
from .group._events import RebalanceStarted as RebalanceStarted
from .group._events import TxnOffsetCommitWritten as TxnOffsetCommitWritten
from .group._events import TxnOffsetsCompleted as TxnOffsetsCompleted
from .group._group import GroupMetadata as GroupMetadata
from .group._group import GroupSummary as GroupSummary
from .group._group import ListedGroup as ListedGroup
from .group._group import MemberMetadata as MemberMetadata
from .group._group import MemberSummary as MemberSummary
from .group._group import offset_commit_error as offset_commit_error
from .group._group import validate_current_member as validate_current_member
from .group._group_metadata_manager import OFFSETS_TOPIC as OFFSETS_TOPIC
from .group._group_metadata_manager import GroupMetadataManager as GroupMetadataManager
from .group._group_metadata_manager import LoadedRecord as LoadedRecord
from .group._group_metadata_manager import PartitionStatus as PartitionStatus
from .group._group_metadata_manager import StoredRecord as StoredRecord
from .group._group_metadata_manager import partition_for as partition_for
from .group._group_requests import CommittedOffset as CommittedOffset
from .group._group_requests import HeartbeatRequest as HeartbeatRequest
from .group._group_requests import HeartbeatResponse as HeartbeatResponse
from .group._group_requests import JoinGroupRequest as JoinGroupRequest
from .group._group_requests import JoinGroupResponse as JoinGroupResponse
from .group._group_requests import JoinGroupResponseMember as JoinGroupResponseMember
from .group._group_requests import LeaveGroupMemberResponse as LeaveGroupMemberResponse
from .group._group_requests import LeaveGroupRequest as LeaveGroupRequest
from .group._group_requests import LeaveGroupResponse as LeaveGroupResponse
from .group._group_requests import MemberIdentity as MemberIdentity
from .group._group_requests import OffsetCommitRequest as OffsetCommitRequest
from .group._group_requests import OffsetCommitResponse as OffsetCommitResponse
from .group._group_requests import OffsetDeleteResponse as OffsetDeleteResponse
from .group._group_requests import OffsetFetchResponse as OffsetFetchResponse
from .group._group_requests import SyncGroupRequest as SyncGroupRequest
from .group._group_requests import SyncGroupResponse as SyncGroupResponse
from .group._group_requests import TxnOffsetCommitRequest as TxnOffsetCommitRequest
from .group._group_requests import TxnOffsetCommitResponse as TxnOffsetCommitResponse
from .group._group_state import GROUP_TRANSITION_REASONS as GROUP_TRANSITION_REASONS
from .group._group_state import GROUP_TRANSITIONS as GROUP_TRANSITIONS
from .group._group_state import GroupState as GroupState
from .group._group_state import (
    IllegalGroupStateTransitionError as IllegalGroupStateTransitionError,
)
from .group._group_state import check_group_transition as check_group_transition
from .group._offsets_records import GroupMetadataKey as GroupMetadataKey
from .group._offsets_records import GroupMetadataValue as GroupMetadataValue
from .group._offsets_records import OffsetKey as OffsetKey
from .group._offsets_records import OffsetsRecordError as OffsetsRecordError
from .group._offsets_records import OffsetValue as OffsetValue
from .group._offsets_records import StoredMember as StoredMember
from .group._offsets_records import decode_record as decode_record
from .group._results import CoordinatorWrite as CoordinatorWrite
from .group._results import GroupReply as GroupReply
from .group._results import GroupResult as GroupResult
from .group._shell import GroupCoordinatorShell as GroupCoordinatorShell
from .group._shell import OffsetsTopic as OffsetsTopic
from .group._txn_offsets import TxnMarkerRecord as TxnMarkerRecord
from .group._txn_offsets import TxnStoredRecord as TxnStoredRecord
from .simulate._simulate import simulate as simulate
from .simulate._simulate_invariants import (
    ownership_violations as ownership_violations,
)
from .simulate._simulate_invariants import settle_bound_ms as settle_bound_ms
from .simulate._simulate_values import SimulationConfig as SimulationConfig
from .simulate._simulate_values import SimulationError as SimulationError
from .simulate._simulate_values import SimulationResult as SimulationResult
from .simulate._simulate_values import parse_events as parse_events
from .simulate._simulate_values import render_simulation as render_simulation
from .transaction import TRANSACTION_STATE_TOPIC as TRANSACTION_STATE_TOPIC
from .transaction import TXN_CONFIG as TXN_CONFIG
from .transaction import TransactionCoordinator as TransactionCoordinator
from .transaction import TransactionCoordinatorShell as TransactionCoordinatorShell
from .transaction import TransactionDescription as TransactionDescription
from .transaction import TransactionListings as TransactionListings
from .transaction import TransactionStateManager as TransactionStateManager
from .transaction import TxnConfig as TxnConfig
from .transaction import TxnMarkers as TxnMarkers

__all__ = [
    "CONSUMER_GROUP_TYPE",
    "CONSUMER_PROTOCOL_TYPE",
    "GROUP_CONFIG",
    "GROUP_TRANSITIONS",
    "GROUP_TRANSITION_REASONS",
    "HIGHEST_ASSIGNMENT_VERSION",
    "HIGHEST_SUBSCRIPTION_VERSION",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "NO_GENERATION",
    "OFFSETS_TOPIC",
    "TRANSACTION_STATE_TOPIC",
    "TXN_CONFIG",
    "Assignment",
    "CommittedOffset",
    "ConsumerGroup",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupState",
    "ConsumerProtocolError",
    "CooperativeStickyAssignor",
    "CoordinatorWrite",
    "GroupConfig",
    "GroupCoordinator",
    "GroupCoordinatorShell",
    "GroupMetadata",
    "GroupMetadataKey",
    "GroupMetadataManager",
    "GroupMetadataValue",
    "GroupReply",
    "GroupResult",
    "GroupState",
    "GroupStateChanged",
    "GroupSummary",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IllegalGroupStateTransitionError",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListedGroup",
    "LoadedRecord",
    "MemberAssigned",
    "MemberAssignmentChanged",
    "MemberData",
    "MemberIdentity",
    "MemberJoined",
    "MemberMetadata",
    "MemberRemoved",
    "MemberSummary",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteResponse",
    "OffsetFetchResponse",
    "OffsetKey",
    "OffsetValue",
    "OffsetsRecordError",
    "OffsetsTopic",
    "PartitionAssignor",
    "PartitionStatus",
    "RangeAssignor",
    "RebalanceCompleted",
    "RebalanceProtocol",
    "RebalanceStarted",
    "RoundRobinAssignor",
    "SimulationConfig",
    "SimulationError",
    "SimulationResult",
    "StickyAssignor",
    "StoredMember",
    "StoredRecord",
    "Subscription",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TransactionCoordinator",
    "TransactionCoordinatorShell",
    "TransactionDescription",
    "TransactionListings",
    "TransactionStateManager",
    "TxnConfig",
    "TxnMarkerRecord",
    "TxnMarkers",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "TxnOffsetCommitWritten",
    "TxnOffsetsCompleted",
    "TxnStoredRecord",
    "check_group_transition",
    "cooperative_violations",
    "decode_assignment",
    "decode_record",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
    "offset_commit_error",
    "ownership_violations",
    "parse_events",
    "partition_for",
    "render_simulation",
    "revoked_partitions",
    "settle_bound_ms",
    "simulate",
    "validate_current_member",
]
