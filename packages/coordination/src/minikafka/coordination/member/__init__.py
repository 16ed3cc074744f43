"""The member's side of the group protocol: Kafka's ``ConsumerCoordinator`` and the
``SubscriptionState`` it keeps, as cores, and KIP-848's member
(``ConsumerProtocolMember``, Kafka's ``ConsumerMembershipManager``) for
``group.protocol=consumer``. The client package's consumer runs them over
the network; the simulator (``..simulate``) runs them against the real
``GroupCoordinator`` on virtual time."""

from ._consumer_coordinator import ASSIGNOR_TYPES as ASSIGNOR_TYPES
from ._consumer_coordinator import ClusterView as ClusterView
from ._consumer_coordinator import ConsumerCoordinator as ConsumerCoordinator
from ._consumer_coordinator import MemberSettings as MemberSettings
from ._consumer_coordinator import MemberState as MemberState
from ._consumer_protocol_member import TRANSITIONS as TRANSITIONS
from ._consumer_protocol_member import ConsumerMemberState as ConsumerMemberState
from ._consumer_protocol_member import (
    ConsumerProtocolMember as ConsumerProtocolMember,
)
from ._pattern import InvalidPattern as InvalidPattern
from ._pattern import SubscriptionPattern as SubscriptionPattern
from ._requests import ConsumerGroupHeartbeat as ConsumerGroupHeartbeat
from ._requests import FindCoordinator as FindCoordinator
from ._requests import GroupRequest as GroupRequest
from ._requests import Heartbeat as Heartbeat
from ._requests import JoinGroup as JoinGroup
from ._requests import JoinMember as JoinMember
from ._requests import LeaveGroup as LeaveGroup
from ._requests import MemberResult as MemberResult
from ._requests import OffsetCommit as OffsetCommit
from ._requests import OffsetFetch as OffsetFetch
from ._requests import RebalanceEvent as RebalanceEvent
from ._requests import SyncGroup as SyncGroup
from ._subscription import EARLIEST as EARLIEST
from ._subscription import LATEST as LATEST
from ._subscription import SubscriptionState as SubscriptionState
from ._subscription import TopicPartitionState as TopicPartitionState
