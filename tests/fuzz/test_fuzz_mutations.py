"""Byte-level mutations of valid requests of every API and version (see ``_mutate``).

One broker for the module; the default run is bounded for ``make test``;
``--fuzz-cases N`` runs longer.
"""

from __future__ import annotations

from tests.fuzz._harness import FuzzOptions, FuzzSession, run_family
from tests.fuzz._mutate import mutation_case

DEFAULT_CASES = 1500


def test_mutated_requests_leave_the_broker_serving(
    fuzz_session: FuzzSession, fuzz_options: FuzzOptions
) -> None:
    """Mutated requests of every advertised API close their own connection or get a
    well-formed answer for their correlation id; the broker stays up, a bystander keeps
    being answered, RSS stays bounded, no traceback is logged, and afterwards every log
    verifies clean and the broker restarts on its data."""
    run_family(fuzz_session, fuzz_options, "mutation", mutation_case, DEFAULT_CASES)
