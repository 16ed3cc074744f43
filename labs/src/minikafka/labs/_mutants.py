"""Deliberately wrong solutions: proof that a lab's checks test what its page promises.

A lab's page says what the checks expect; for each promise, ``labs/instructor/NN-*/
mutants.toml`` names a *mutant*, a solution that is right but for that one promise, and
the checks that must fail with it. A promise no check tests lets its mutant through,
and ``make test`` says which. The table, one ``[mutants.NAME]`` each::

    [mutants.keeps_every_byte]
    promise = "Bytes already returned are not kept forever."
    replaces = { "minikafka.net._framing:FrameDecoder" = "mutants/keep.py:FrameDecoder" }
    tests = ["packages/net/tests/test_net_framing_promises.py::test_memory_is_bounded"]

A rebuild lab's mutant ``replaces`` minikafka's objects through the switch, as a
learner's file does; an extend lab's is a ``patch`` applied over the answer's; a trace
lab's is a ``module`` of exercise functions over ``solutions.py``, checked by the tests
of ``test_lab.py`` its ``select`` names, in the same pytest run as the reference: the
``answers`` fixture is parametrized by :func:`implementations`, and ``labs/conftest.py``
keeps a mutant's runs of the checks it must fail, as strict expected failures::

    @pytest.fixture(scope="module", params=implementations(LAB))
    def answers(request: pytest.FixtureRequest) -> ModuleType:
        return load_answers(LAB, request.param)

Mutants live with the answers, in the instructors' copy only: a learner's checkout has
none, and then a lab is checked against the learner's own code alone.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import tempfile
import tomllib
import types
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import attrs

from minikafka.common.testing import PORTS_ENV, split_ports, worker_ports

from ._lab import IMPLEMENTATION_ENV, LABS_ROOT, Lab
from ._patched import EXTEND_ENV, patched_packages

JOBS = int(os.environ.get("MINIKAFKA_LAB_MUTANT_JOBS", "3"))
"""How many mutants' checks run at once (``$MINIKAFKA_LAB_MUTANT_JOBS``)."""

MUTANT_PREFIX = "mutant:"
"""An implementation name ``mutant:NAME`` is a trace lab's mutant NAME."""


@attrs.frozen
class Mutant:
    lab: Lab
    name: str
    promise: str
    replaces: dict[str, str] = attrs.field(factory=dict)
    tests: tuple[str, ...] = ()
    module: str = ""
    select: str = ""
    patch: str = ""

    @property
    def implementation(self) -> str:
        return MUTANT_PREFIX + self.name


@functools.cache
def mutants(lab: Lab) -> tuple[Mutant, ...]:
    """The lab's mutants, in the file's order; none in a learner's checkout. Read once
    per process: the collection hook asks for them once per check."""
    path = lab.solutions / "mutants.toml"
    if not path.exists():
        return ()
    table = tomllib.loads(path.read_text(encoding="utf-8")).get("mutants", {})
    found = []
    for name, entry in table.items():
        where = f"{path}: mutants.{name}"
        promise = entry.get("promise")
        if not isinstance(promise, str) or not promise:
            raise ValueError(f"{where}.promise must say which promise it breaks")
        mutant = Mutant(
            lab,
            name,
            promise,
            dict(entry.get("replaces", {})),
            tuple(entry.get("tests", ())),
            str(entry.get("module", "")),
            str(entry.get("select", "")),
            str(entry.get("patch", "")),
        )
        kind = lab.config.kind
        if kind == "trace" and not (mutant.module and mutant.select):
            raise ValueError(f"{where}: a trace lab's mutant needs module and select")
        if kind == "rebuild" and not (mutant.replaces and mutant.tests):
            raise ValueError(
                f"{where}: a rebuild lab's mutant needs replaces and tests"
            )
        if kind == "extend" and not (mutant.patch and mutant.tests):
            raise ValueError(f"{where}: an extend lab's mutant needs patch and tests")
        found.append(mutant)
    return tuple(found)


def find_mutant(lab: Lab, name: str) -> Mutant:
    for mutant in mutants(lab):
        if mutant.name == name:
            return mutant
    known = ", ".join(m.name for m in mutants(lab)) or "none"
    raise LookupError(f"lab {lab.number} has no mutant {name!r} (mutants: {known})")


# --- trace labs: mutants in the pytest run of test_lab.py ------------------------------


def implementations(lab: Lab) -> list[str]:
    """What a trace lab's ``answers`` fixture is parametrized by: the implementation
    ``$MINIKAFKA_LAB_IMPL`` chooses and, when that is the reference, every mutant."""
    chosen = os.environ.get(IMPLEMENTATION_ENV) or "solutions"
    if chosen != "solutions":
        return [chosen]
    return [chosen] + [m.implementation for m in mutants(lab)]


def load_answers(lab: Lab, which: str) -> types.ModuleType:
    """A trace lab's ``answers`` fixture's value for one of :func:`implementations`;
    the check is skipped where the reference is not (a learner's checkout)."""
    if which == "solutions" and not (lab.solutions / "solutions.py").exists():
        import pytest

        pytest.skip(
            "the reference answers are in the instructors' copy; check your own with "
            f"make lab {lab.number}"
        )
    return lab.implementation(which)


def mutant_module(mutant: Mutant) -> types.ModuleType:
    """``solutions.py`` with the mutant's functions in place of the reference's."""
    solutions = mutant.lab.module("solutions")
    wrong = mutant.lab.module_at(mutant.lab.solutions / mutant.module)
    combined = types.ModuleType(f"{solutions.__name__}_{mutant.name}")
    combined.__dict__.update(
        {k: v for k, v in vars(solutions).items() if not k.startswith("__")}
    )
    # Only what the mutant defines itself: not what it imported to define it.
    combined.__dict__.update(
        {
            k: v
            for k, v in vars(wrong).items()
            if not k.startswith("_")
            and getattr(v, "__module__", None) == wrong.__name__
        }
    )
    return combined


# --- rebuild and extend labs: a process per mutant, forked from a fork server --------


@attrs.frozen
class Verdict:
    mutant: Mutant
    failed: tuple[str, ...]
    """The listed tests that failed: at least one, or the promise is not tested."""
    ran: int
    output: str = ""

    @property
    def caught(self) -> bool:
        return bool(self.failed)


ZYGOTE = Path(__file__).with_name("_zygote.py")
# Run as a file: importing it as minikafka.labs._zygote would import minikafka.
_RUN_ZYGOTE = f"import runpy; runpy.run_path({str(ZYGOTE)!r}, run_name='__main__')"


class Zygote:
    """A fork server (``_zygote.py``): each check's pytest is a child forked from a
    process that has imported pytest and its plugins already, instead of a process
    that imports them again (seconds of CPU each). One check at a time."""

    def __init__(self) -> None:
        # The server's environment is this process's: no switch, no patched packages
        # (a child takes its check's own).
        self.process = subprocess.Popen(
            [sys.executable, "-c", _RUN_ZYGOTE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=LABS_ROOT.parent,
        )

    def run(self, args: Sequence[str], env: Mapping[str, str], cwd: Path) -> str:
        """pytest with ``args`` in a child with ``env`` in ``cwd``; what it printed (the
        verdict is read from its JUnit XML, not from its exit code)."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        with tempfile.TemporaryDirectory() as scratch:
            output = Path(scratch) / "output"
            job = {"args": list(args), "env": dict(env), "cwd": str(cwd)}
            job["output"] = str(output)
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the fork server ended ({self.process.wait()})")
            returncode = json.loads(line)["returncode"]
            text = output.read_text(errors="replace") if output.exists() else ""
        return f"{text}\n(pytest exited {returncode})"

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


@contextmanager
def zygotes(count: int) -> Iterator[list[Zygote]]:
    with ExitStack() as stack:
        servers = []
        for _ in range(count):
            servers.append(Zygote())
            stack.callback(servers[-1].close)
        yield servers


def check(mutant: Mutant, server: Zygote, ports: range | None = None) -> Verdict:
    """Run the mutant's tests with it in place, in a child of ``server``; it is caught
    when one of them fails. ``ports``: the ones its brokers may listen on (when several
    checks run at once)."""
    from ._runner import SWITCH_DIR, SWITCH_ENV

    lab = mutant.lab
    root = LABS_ROOT.parent
    env = dict(os.environ)
    if ports is not None:
        env[PORTS_ENV] = f"{ports.start}-{ports.stop}"
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        # -x: one failed check is enough to catch the mutant, and its failing example
        # needs no shrinking (_no_shrink).
        args = ["-q", "-x", "--no-header", "-p", "no:cacheprovider"]
        args += ["-p", "minikafka.labs._no_shrink", f"--junitxml={junit}"]
        args += mutant.tests
        if lab.config.kind == "rebuild":
            spec = ";".join(
                f"{target}={lab.solutions / file}:{attribute}"
                for target, (file, attribute) in (
                    (t, s.rsplit(":", 1)) for t, s in mutant.replaces.items()
                )
            )
            path = env.get("PYTHONPATH")
            env[SWITCH_ENV] = spec
            env["PYTHONPATH"] = str(SWITCH_DIR) + (os.pathsep + path if path else "")
            output = server.run(args, env, root)
        else:
            patches = [lab.solutions / "answer.patch", lab.solutions / mutant.patch]
            with patched_packages(patches, Path(scratch) / "tree") as pythonpath:
                env["PYTHONPATH"] = pythonpath
                env[EXTEND_ENV] = "1"
                output = server.run(args, env, root)
        ran, failed = _outcomes(junit)
    return Verdict(mutant, tuple(failed), ran, output)


def check_all(chosen: Sequence[Mutant], jobs: int = JOBS) -> list[Verdict]:
    """:func:`check` for each, ``jobs`` at a time (each mostly waits: for brokers and
    clients), in ``chosen``'s order, each forked from one of ``jobs`` fork servers. The
    checks running at once never share a port: each takes a slice of this process's
    ports while it runs (two clusters starting side by side would otherwise meet now
    and then, and a broker that cannot listen proves nothing about a promise)."""
    jobs = max(1, min(jobs, len(chosen)))
    slots: queue.SimpleQueue[tuple[range, Zygote]] = queue.SimpleQueue()
    with zygotes(jobs) as servers:
        for ports, server in zip(
            split_ports(worker_ports(), jobs), servers, strict=True
        ):
            slots.put((ports, server))

        def one(mutant: Mutant) -> Verdict:
            ports, server = slots.get()
            try:
                return check(mutant, server, ports)
            finally:
                slots.put((ports, server))

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, chosen))


def _outcomes(junit: Path) -> tuple[int, list[str]]:
    if not junit.exists():
        return 0, []
    ran, failed = 0, []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        ran += 1
        # A failed assertion is a <failure>; an <error> is a fixture or collection that
        # broke, which proves nothing about the promise.
        if case.find("failure") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return ran, failed


def report(verdicts: Sequence[Verdict]) -> str:
    lines = []
    for v in verdicts:
        status = "caught" if v.caught else "NOT CAUGHT"
        lines.append(
            f"lab {v.mutant.lab.number:2d}  {v.mutant.name:32s} {status:10s} "
            f"({len(v.failed)} of {v.ran} checks failed): {v.mutant.promise}"
        )
    return "\n".join(lines)
