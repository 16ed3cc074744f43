"""The member's side of the group protocol: Kafka's ``ConsumerCoordinator`` and the
``SubscriptionState`` it keeps, as cores. The client package's consumer runs them over
the network; the simulator (``..simulate``) runs them against the real
``GroupCoordinator`` on virtual time."""

from ._consumer_coordinator import ASSIGNOR_TYPES as ASSIGNOR_TYPES
from ._consumer_coordinator import ClusterView as ClusterView
from ._consumer_coordinator import ConsumerCoordinator as ConsumerCoordinator
from ._consumer_coordinator import FindCoordinator as FindCoordinator
from ._consumer_coordinator import GroupRequest as GroupRequest
from ._consumer_coordinator import Heartbeat as Heartbeat
from ._consumer_coordinator import JoinGroup as JoinGroup
from ._consumer_coordinator import JoinMember as JoinMember
from ._consumer_coordinator import LeaveGroup as LeaveGroup
from ._consumer_coordinator import MemberSettings as MemberSettings
from ._consumer_coordinator import MemberState as MemberState
from ._consumer_coordinator import OffsetCommit as OffsetCommit
from ._consumer_coordinator import OffsetFetch as OffsetFetch
from ._consumer_coordinator import RebalanceEvent as RebalanceEvent
from ._consumer_coordinator import SyncGroup as SyncGroup
from ._subscription import EARLIEST as EARLIEST
from ._subscription import LATEST as LATEST
from ._subscription import SubscriptionState as SubscriptionState
from ._subscription import TopicPartitionState as TopicPartitionState
