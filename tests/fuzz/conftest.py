"""Options and fixtures of the fuzz suite.

``pytest tests/fuzz`` runs the bounded default (part of ``make test``);
``--fuzz-cases N`` runs N cases per generator, ``--fuzz-seed S`` another seed, and
``--fuzz-replay FAMILY:SEED:INDEX`` (what a failure prints) that one case alone. Each
test module gets one broker process (``fuzz_session``); the reports of every run are
printed in the terminal summary's "fuzz" section, failures or not, so the numbers are
always visible.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.fuzz._harness import REPORTS, FuzzOptions, FuzzSession

DEFAULT_SEED = 15


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz", "minikafka's fuzz suite (tests/fuzz)")
    group.addoption(
        "--fuzz-cases",
        type=int,
        default=None,
        help="cases per generator (default: bounded)",
    )
    group.addoption(
        "--fuzz-seed", type=int, default=DEFAULT_SEED, help="the run's seed"
    )
    group.addoption(
        "--fuzz-replay",
        default=None,
        metavar="FAMILY:SEED:INDEX",
        help="run only this case (as a failure prints it)",
    )


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    # pyproject's 120 s per test is for ordinary tests; a fuzz run's time grows with its
    # case count (the default run takes well under a minute per test).
    cases = config.getoption("--fuzz-cases", default=None) or 3000
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.timeout(max(600, cases // 5)))


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
def fuzz_session(request: pytest.FixtureRequest) -> Iterator[FuzzSession]:
    """A broker process for this module's cases, warmed up with the whole corpus.

    Its data lives in a directory of its own, not under pytest's basetemp: pytest
    prunes all but the newest three basetemps of a user, and a concurrent pytest run
    would delete a long fuzz run's logs under the broker's feet. The directory is kept
    when the run failed, for ``python -m minikafka.log dump``.
    """
    label = request.module.__name__.rsplit(".", 1)[-1]
    root = Path(tempfile.mkdtemp(prefix=f"minikafka-{label}-"))
    session = FuzzSession(root, label)
    session.start()
    try:
        yield session
    finally:
        session.close()
        if not session.failures:
            shutil.rmtree(root, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Each report a fuzz test wrote rides on its test's report to the terminal summary's
    "fuzz" section (the repository's conftest.py prints it; under pytest-xdist the
    report crosses from the worker that ran the test)."""
    report = yield
    while REPORTS:
        report.user_properties.append(("summary:fuzz", REPORTS.pop(0)))
    return report
