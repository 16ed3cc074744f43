"""minikafka.raft: KRaft's Raft as a sans-IO core, and a simulator that proves it.

KIP-595 (the quorum: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch with diverging
epochs, the high watermark from the voters' fetch offsets), KIP-630 (snapshots and
FetchSnapshot), KIP-996 (pre-vote in the prospective's own epoch, which moves a voter
behind it up to it, and a leader that sends BeginQuorumEpoch again to voters that
stopped fetching: either way a voter stranded at a higher epoch brings the quorum up to
it and rejoins); seed 004 (KRaft replaces ZooKeeper with a Raft quorum of
controllers). :class:`RaftNode` is one voter or observer; :mod:`.simulation` runs
whole quorums in virtual time under faults and checks Raft's invariants after every step.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._config import QUORUM_CONFIG as QUORUM_CONFIG
from ._config import RaftConfig as RaftConfig
from ._describe import QuorumInfo as QuorumInfo
from ._describe import ReplicaInfo as ReplicaInfo
from ._describe import format_replication as format_replication
from ._describe import format_status as format_status
from ._file_log import FileRaftLog as FileRaftLog
from ._log import Entry as Entry
from ._log import EpochEnd as EpochEnd
from ._log import MemoryLog as MemoryLog
from ._log import RaftLog as RaftLog
from ._log import Snapshot as Snapshot
from ._log import SnapshotId as SnapshotId
from ._messages import BeginQuorumEpochRequest as BeginQuorumEpochRequest
from ._messages import BeginQuorumEpochResponse as BeginQuorumEpochResponse
from ._messages import DivergingEpoch as DivergingEpoch
from ._messages import EndQuorumEpochRequest as EndQuorumEpochRequest
from ._messages import EndQuorumEpochResponse as EndQuorumEpochResponse
from ._messages import Envelope as Envelope
from ._messages import Errors as Errors
from ._messages import FetchRequest as FetchRequest
from ._messages import FetchResponse as FetchResponse
from ._messages import FetchSnapshotRequest as FetchSnapshotRequest
from ._messages import FetchSnapshotResponse as FetchSnapshotResponse
from ._messages import Message as Message
from ._messages import Request as Request
from ._messages import Response as Response
from ._messages import VoteRequest as VoteRequest
from ._messages import VoteResponse as VoteResponse
from ._node import NotLeaderError as NotLeaderError
from ._node import RaftNode as RaftNode
from ._result import Committed as Committed
from ._result import LoadSnapshot as LoadSnapshot
from ._result import RaftReply as RaftReply
from ._result import RaftResult as RaftResult
from ._states import TRANSITIONS as TRANSITIONS
from ._states import RaftStateError as RaftStateError
from ._states import State as State
from ._store import ElectionState as ElectionState
from ._store import FileStateStore as FileStateStore
from ._store import MemoryStateStore as MemoryStateStore
from ._store import QuorumStateStore as QuorumStateStore
