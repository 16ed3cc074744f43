"""Byte-level mutations of valid requests of every API and version (see ``_mutate``).

One broker for the module; the default run is bounded for ``make test``;
``--fuzz-cases N`` runs longer.
"""

from __future__ import annotations

from tests.fuzz._framing import framing_case
from tests.fuzz._harness import FuzzOptions, FuzzSession, run_family
from tests.fuzz._mutate import mutation_case

DEFAULT_CASES = 3000
FRAMING_CASES = 60


def test_framing_cases_close_only_their_connection(
    fuzz_session: FuzzSession, fuzz_options: FuzzOptions
) -> None:
    """Size prefixes of 0, negative, huge or cut short, a TLS ClientHello and an HTTP
    GET close their own connection (after answering any whole request before them);
    the broker stays up and keeps answering the bystander."""
    run_family(
        fuzz_session, fuzz_options, "framing", framing_case, FRAMING_CASES, last=False
    )


def test_mutated_requests_leave_the_broker_serving(
    fuzz_session: FuzzSession, fuzz_options: FuzzOptions
) -> None:
    """Mutated requests of every advertised API close their own connection or get a
    well-formed answer for their correlation id; the broker stays up, a bystander keeps
    being answered, RSS stays bounded, no traceback is logged, and afterwards every log
    verifies clean and the broker restarts on its data."""
    run_family(fuzz_session, fuzz_options, "mutation", mutation_case, DEFAULT_CASES)
