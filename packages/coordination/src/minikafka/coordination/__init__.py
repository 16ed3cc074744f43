"""minikafka.coordination: consumer groups (seeds 002 and 000).

So far the client side of a rebalance, as Kafka designs it: the assignors a group leader
runs (Range, RoundRobin, Sticky, CooperativeSticky), the consumer protocol's
subscription and assignment encodings, and the eager and cooperative (KIP-429)
rebalance protocols. The group coordinator follows with issue 6.
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
from ._range import RangeAssignor as RangeAssignor
from ._round_robin import RoundRobinAssignor as RoundRobinAssignor
from ._sticky import MemberData as MemberData
from ._sticky import StickyAssignor as StickyAssignor
from ._sticky import decode_sticky_user_data as decode_sticky_user_data
from ._sticky import encode_sticky_user_data as encode_sticky_user_data

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "HIGHEST_ASSIGNMENT_VERSION",
    "HIGHEST_SUBSCRIPTION_VERSION",
    "NO_GENERATION",
    "Assignment",
    "ConsumerProtocolError",
    "CooperativeStickyAssignor",
    "MemberData",
    "PartitionAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "cooperative_violations",
    "decode_assignment",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
    "revoked_partitions",
]
