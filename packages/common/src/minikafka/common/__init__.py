"""minikafka.common: what every layer shares.

The core/shell contract's two types live here so that every core (the controller, the
group coordinator, replication, the Raft quorum) speaks the same way: :class:`CoreResult`
is what a core asks its shell to do, :class:`Deadlines` is how it knows its next timer.
"""

from ._deadlines import Deadlines as Deadlines
from ._result import CoreResult as CoreResult

__all__ = ["CoreResult", "Deadlines"]
