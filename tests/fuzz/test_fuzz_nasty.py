"""Valid but nasty requests of every advertised API (see ``_nasty``).

Well-formed requests with hostile values: partition counts and replication factors at
the limits of their types, internal and odd topic names, record batches with correct
CRCs and lying headers or garbage compressed payloads. Each must get the proper Kafka
error code (or, for what cannot be answered, a closed connection), never a crash, a
stall, a traceback or a damaged log.
"""

from __future__ import annotations

from tests.fuzz._harness import FuzzOptions, FuzzSession, run_family
from tests.fuzz._nasty import nasty_case

DEFAULT_CASES = 1500


def test_nasty_requests_leave_the_broker_serving(
    fuzz_session: FuzzSession, fuzz_options: FuzzOptions
) -> None:
    """Valid-but-nasty requests are answered (with Kafka's error codes) or close their
    own connection; the broker stays up, a bystander keeps being answered, RSS stays
    bounded, no traceback is logged, and afterwards every log verifies clean and the
    broker restarts on its data."""
    run_family(fuzz_session, fuzz_options, "nasty", nasty_case, DEFAULT_CASES)
