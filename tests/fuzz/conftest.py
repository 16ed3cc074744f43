"""Options and fixtures of the fuzz suite.

``pytest tests/fuzz`` runs the bounded default (part of ``make test``);
``--fuzz-cases N`` runs N cases per generator, ``--fuzz-seed S`` another seed, and
``--fuzz-replay FAMILY:SEED:INDEX`` (what a failure prints) that one case alone. Each
test module gets one broker process (``fuzz_session``); the reports of every run are
printed in the terminal summary, failures or not, so the numbers are always visible.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz._harness import REPORTS, FuzzOptions, FuzzSession

DEFAULT_SEED = 15  # issue 15


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz", "minikafka's fuzz suite (tests/fuzz)")
    group.addoption(
        "--fuzz-cases", type=int, default=None, help="cases per generator (default: bounded)"
    )
    group.addoption("--fuzz-seed", type=int, default=DEFAULT_SEED, help="the run's seed")
    group.addoption(
        "--fuzz-replay",
        default=None,
        metavar="FAMILY:SEED:INDEX",
        help="run only this case (as a failure prints it)",
    )


def _parse_replay(value: str | None) -> tuple[str, int, int] | None:
    if value is None:
        return None
    family, seed, index = value.split(":")
    return family, int(seed), int(index)


@pytest.fixture(scope="session")
def fuzz_options(request: pytest.FixtureRequest) -> FuzzOptions:
    config = request.config
    return FuzzOptions(
        cases=config.getoption("--fuzz-cases", default=None),
        seed=config.getoption("--fuzz-seed", default=DEFAULT_SEED),
        replay=_parse_replay(config.getoption("--fuzz-replay", default=None)),
    )


@pytest.fixture(scope="module")
def fuzz_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FuzzSession]:
    """A broker process for this module's cases, warmed up with the whole corpus."""
    label = request.module.__name__.rsplit(".", 1)[-1]
    session = FuzzSession(tmp_path_factory.mktemp(label), label)
    session.start()
    try:
        yield session
    finally:
        session.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORTS:
        terminalreporter.section("fuzz")
        for text in REPORTS:
            terminalreporter.write_line(text)
