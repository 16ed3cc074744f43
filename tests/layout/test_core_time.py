"""The core contract's time rules, read from the cores' source (ARCHITECTURE.md, "Cores and
shells").

The cores are the modules import-linter's "... do not import trio" contracts in the root
``pyproject.toml`` list (read from there, so the two lists are one). In each, parsed with
``ast``:

- no ``import trio`` (import-linter checks it too; this names the line);
- no clock read: ``time.time``, ``time.monotonic``, ``time.perf_counter`` (and their
  ``_ns`` forms), ``datetime.now``/``utcnow``/``today``, ``trio.current_time``, nor
  those names imported from ``time``: time comes in as ``now``;
- every ``.emit(...)`` passes a time (a second argument or ``ts=``): a core stamps its
  trace events with the ``now`` it was given, and only a shell may let the tracer read
  the wall clock.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CLOCK_READS = frozenset(
    {
        ("time", "time"),
        ("time", "time_ns"),
        ("time", "monotonic"),
        ("time", "monotonic_ns"),
        ("time", "perf_counter"),
        ("time", "perf_counter_ns"),
        ("datetime", "now"),
        ("datetime", "utcnow"),
        ("datetime", "today"),
        ("date", "today"),
        ("trio", "current_time"),
    }
)
"""(module or class, attribute) pairs whose reading is a clock read."""

NO_CLOCK_CHECK = {
    # The trace package is listed for trio only: its writer stamps a shell's event that
    # came without a time, and EpochClock reads the wall clock once to make the cores'
    # time base. Neither is a core's decision.
    "minikafka.trace",
    # The Raft simulator runs the cores in virtual time; it times its own run (wall
    # seconds per scenario) for the report, which no node ever sees.
    "minikafka.raft._simulator",
}
"""Listed modules exempt from the clock rule (a package's: all its modules), and every
``__main__``: a command line may time itself."""


def _trio_contracts(pyproject: Path) -> list[dict[str, list[str]]]:
    config = tomllib.loads(pyproject.read_text())
    return [
        contract
        for contract in config["tool"]["importlinter"]["contracts"]
        if "trio" in contract.get("forbidden_modules", ())
    ]


def core_modules(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """Every module a "do not import trio" contract names, in the order listed."""
    modules: list[str] = []
    for contract in _trio_contracts(pyproject):
        modules += [m for m in contract["source_modules"] if m not in modules]
    return modules


def shell_modules(pyproject: Path = ROOT / "pyproject.toml") -> set[str]:
    """The modules such a contract lets import trio (``ignore_imports``: the shell
    runtime in ``minikafka.common``): shells, not cores."""
    return {
        rule.split("->")[0].strip()
        for contract in _trio_contracts(pyproject)
        for rule in contract.get("ignore_imports", ())
        if rule.split("->")[1].strip() == "trio"
    }


def module_files(module: str) -> list[tuple[str, Path]]:
    """The source files of ``module`` (all of a package's), each with its dotted name."""
    parts = module.split(".")
    base = ROOT / "packages" / parts[1] / "src"
    path = base.joinpath(*parts)
    if path.is_dir():
        return [
            (".".join(f.relative_to(base).with_suffix("").parts), f)
            for f in sorted(path.rglob("*.py"))
        ]
    file = path.with_suffix(".py")
    return [(module, file)] if file.exists() else []


def _dotted(node: ast.expr) -> tuple[str, ...]:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return tuple(reversed(names))


def violations(source: str) -> Iterator[tuple[str, int, str]]:
    """``(rule, line, what)`` for each break of the rules in one module's source."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "trio":
                    yield "trio", node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top == "trio":
                yield "trio", node.lineno, f"from {node.module} import ..."
            for alias in node.names:
                if (top, alias.name) in CLOCK_READS:
                    yield (
                        "clock",
                        node.lineno,
                        f"from {node.module} import {alias.name}",
                    )
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if len(dotted) >= 2 and dotted[-2:] in CLOCK_READS:
                yield "clock", node.lineno, ".".join(dotted)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "emit"
            and len(node.args) < 2
            and not any(k.arg == "ts" for k in node.keywords)
        ):
            yield "emit", node.lineno, f"{ast.unparse(node.func)}(...) without a time"


def test_the_contracts_name_cores_that_exist() -> None:
    assert shell_modules() == {"minikafka.common.shell"}
    modules = core_modules()
    assert "minikafka.replication._partition" in modules
    assert "minikafka.client._sender" in modules
    assert "minikafka.controller._controller" in modules
    missing = [m for m in modules if not module_files(m)]
    assert missing == []


@pytest.mark.parametrize("module", core_modules())
def test_a_core_reads_no_clock_imports_no_trio_and_stamps_its_events(
    module: str,
) -> None:
    found: list[str] = []
    shells = shell_modules()
    for name, path in module_files(module):
        if name in shells:
            continue
        for rule, line, what in violations(path.read_text()):
            if rule == "clock" and (
                name.endswith(".__main__")
                or any(name == m or name.startswith(m + ".") for m in NO_CLOCK_CHECK)
            ):
                continue
            found.append(f"{path.relative_to(ROOT)}:{line}: {rule}: {what}")
    assert found == []


PLANTED = """
import time
from datetime import datetime

def on_timer(self, now: float) -> None:
    started = time.monotonic()
    self.tracer.emit(Expired("a"))
    self.tracer.emit(Expired("b"), now)
    self.tracer.emit(Expired("c"), ts=now)
    stamp = datetime.now()
"""


def test_the_check_catches_a_clock_read_and_an_unstamped_emit() -> None:
    found = sorted((rule, line) for rule, line, _ in violations(PLANTED))
    assert found == [("clock", 6), ("clock", 10), ("emit", 7)]
    assert [r for r, *_ in violations("import trio\nfrom trio import sleep\n")] == [
        "trio",
        "trio",
    ]
    assert [r for r, *_ in violations("from time import monotonic\n")] == ["clock"]
