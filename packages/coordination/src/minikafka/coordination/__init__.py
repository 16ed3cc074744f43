"""minikafka.coordination: consumer groups (seeds 002 and 000).

The group coordinator's state machine as a sans-IO core (Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead; the join and sync phases, heartbeats, session and
rebalance timeouts, static members), and the client side of a rebalance as Kafka designs
it: the assignors a group leader runs (Range, RoundRobin, Sticky, CooperativeSticky), the
consumer protocol's subscription and assignment encodings, and the eager and cooperative
(KIP-429) rebalance protocols. Offsets and group metadata live as records of the
compacted topic ``__consumer_offsets`` (``GroupMetadataManager``, the record codec),
which the coordinator reaches through the ``OffsetsTopic`` port; ``GroupCoordinatorService``
is the trio shell the broker's request handlers call.
"""

from ._assignor import NO_GENERATION as NO_GENERATION
from ._assignor import Assignment as Assignment
from ._assignor import PartitionAssignor as PartitionAssignor
from ._assignor import RebalanceProtocol as RebalanceProtocol
from ._assignor import Subscription as Subscription
from ._consumer_protocol import CONSUMER_PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from ._consumer_protocol import HIGHEST_ASSIGNMENT_VERSION as HIGHEST_ASSIGNMENT_VERSION
from ._consumer_protocol import HIGHEST_SUBSCRIPTION_VERSION as HIGHEST_SUBSCRIPTION_VERSION
from ._consumer_protocol import ConsumerProtocolError as ConsumerProtocolError
from ._consumer_protocol import decode_assignment as decode_assignment
from ._consumer_protocol import decode_subscription as decode_subscription
from ._consumer_protocol import encode_assignment as encode_assignment
from ._consumer_protocol import encode_subscription as encode_subscription
from ._cooperative_sticky import CooperativeStickyAssignor as CooperativeStickyAssignor
from ._cooperative_sticky import cooperative_violations as cooperative_violations
from ._cooperative_sticky import encode_cooperative_user_data as encode_cooperative_user_data
from ._cooperative_sticky import revoked_partitions as revoked_partitions
from ._coordinator import NEW_MEMBER_JOIN_TIMEOUT_MS as NEW_MEMBER_JOIN_TIMEOUT_MS
from ._coordinator import CoordinatorWrite as CoordinatorWrite
from ._coordinator import GroupConfig as GroupConfig
from ._coordinator import GroupCoordinator as GroupCoordinator
from ._coordinator import GroupReply as GroupReply
from ._events import GroupStateChanged as GroupStateChanged
from ._events import MemberAssigned as MemberAssigned
from ._events import MemberJoined as MemberJoined
from ._events import MemberRemoved as MemberRemoved
from ._events import RebalanceCompleted as RebalanceCompleted
from ._events import RebalanceStarted as RebalanceStarted
from ._group import GroupMetadata as GroupMetadata
from ._group import GroupSummary as GroupSummary
from ._group import ListedGroup as ListedGroup
from ._group import MemberMetadata as MemberMetadata
from ._group import MemberSummary as MemberSummary
from ._group import offset_commit_error as offset_commit_error
from ._group import validate_current_member as validate_current_member
from ._group_metadata_manager import OFFSETS_TOPIC as OFFSETS_TOPIC
from ._group_metadata_manager import GroupMetadataManager as GroupMetadataManager
from ._group_metadata_manager import PartitionStatus as PartitionStatus
from ._group_metadata_manager import StoredRecord as StoredRecord
from ._group_metadata_manager import partition_for as partition_for
from ._group_requests import CommittedOffset as CommittedOffset
from ._group_requests import HeartbeatRequest as HeartbeatRequest
from ._group_requests import HeartbeatResponse as HeartbeatResponse
from ._group_requests import JoinGroupRequest as JoinGroupRequest
from ._group_requests import JoinGroupResponse as JoinGroupResponse
from ._group_requests import JoinGroupResponseMember as JoinGroupResponseMember
from ._group_requests import LeaveGroupMemberResponse as LeaveGroupMemberResponse
from ._group_requests import LeaveGroupRequest as LeaveGroupRequest
from ._group_requests import LeaveGroupResponse as LeaveGroupResponse
from ._group_requests import MemberIdentity as MemberIdentity
from ._group_requests import OffsetCommitRequest as OffsetCommitRequest
from ._group_requests import OffsetCommitResponse as OffsetCommitResponse
from ._group_requests import OffsetFetchResponse as OffsetFetchResponse
from ._group_requests import SyncGroupRequest as SyncGroupRequest
from ._group_requests import SyncGroupResponse as SyncGroupResponse
from ._group_state import GROUP_TRANSITION_REASONS as GROUP_TRANSITION_REASONS
from ._group_state import GROUP_TRANSITIONS as GROUP_TRANSITIONS
from ._group_state import GroupState as GroupState
from ._group_state import IllegalGroupStateTransitionError as IllegalGroupStateTransitionError
from ._group_state import check_group_transition as check_group_transition
from ._offsets_records import GroupMetadataKey as GroupMetadataKey
from ._offsets_records import GroupMetadataValue as GroupMetadataValue
from ._offsets_records import OffsetKey as OffsetKey
from ._offsets_records import OffsetsRecordError as OffsetsRecordError
from ._offsets_records import OffsetValue as OffsetValue
from ._offsets_records import StoredMember as StoredMember
from ._offsets_records import decode_record as decode_record
from ._range import RangeAssignor as RangeAssignor
from ._round_robin import RoundRobinAssignor as RoundRobinAssignor
from ._service import GroupCoordinatorService as GroupCoordinatorService
from ._service import OffsetsTopic as OffsetsTopic
from ._simulate import simulate as simulate
from ._simulate_values import SimulationConfig as SimulationConfig
from ._simulate_values import SimulationError as SimulationError
from ._simulate_values import SimulationResult as SimulationResult
from ._simulate_values import parse_events as parse_events
from ._simulate_values import render_simulation as render_simulation
from ._sticky import MemberData as MemberData
from ._sticky import StickyAssignor as StickyAssignor
from ._sticky import decode_sticky_user_data as decode_sticky_user_data
from ._sticky import encode_sticky_user_data as encode_sticky_user_data

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "GROUP_TRANSITIONS",
    "GROUP_TRANSITION_REASONS",
    "HIGHEST_ASSIGNMENT_VERSION",
    "HIGHEST_SUBSCRIPTION_VERSION",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "NO_GENERATION",
    "OFFSETS_TOPIC",
    "Assignment",
    "CommittedOffset",
    "ConsumerProtocolError",
    "CooperativeStickyAssignor",
    "CoordinatorWrite",
    "GroupConfig",
    "GroupCoordinator",
    "GroupCoordinatorService",
    "GroupMetadata",
    "GroupMetadataKey",
    "GroupMetadataManager",
    "GroupMetadataValue",
    "GroupReply",
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
    "MemberAssigned",
    "MemberData",
    "MemberIdentity",
    "MemberJoined",
    "MemberMetadata",
    "MemberRemoved",
    "MemberSummary",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
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
    "parse_events",
    "partition_for",
    "render_simulation",
    "revoked_partitions",
    "simulate",
    "validate_current_member",
]
