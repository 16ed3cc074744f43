"""A fork server for the checks of the labs' deliberately wrong solutions.

Each wrong solution is checked by a pytest of its own, in a process where the lab's
switch (``labs/switch``) or an extend lab's patched packages are in place before
minikafka is first imported. Started afresh, such a process spends seconds of CPU
importing pytest, its plugins and Hypothesis before the first check runs: on a 2-core
machine, over a hundred and fifty wrong solutions, minutes of ``make test``.

This server imports all that once and forks a child per check: the child takes the
check's working directory and environment, does what the interpreter does at start with
``PYTHONPATH`` (its directories go first on ``sys.path``, and a ``sitecustomize`` among
them is run: the switch), sends its output to a file and runs ``pytest.main``. The server
imports nothing of minikafka itself, so every child imports minikafka afresh, as a new
process would, switched or patched.

It is run as a file, never imported (``python -c "import runpy; runpy.run_path(...)"``),
and speaks JSON lines: one job in on stdin (``args``, ``env``, ``cwd``, ``output``), the
child's exit code out on stdout once the child has ended. One job at a time: a caller
that runs several checks at once starts a server for each.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import json
import logging
import os
import sys
import traceback
from typing import Any, NoReturn

PRELOAD = ("pytest", "hypothesis", "hypothesis.strategies", "trio", "execnet", "attrs")
PRELOAD_WARNINGS = (
    "-W",
    "ignore::pytest.PytestAssertRewriteWarning",
    "-W",
    "ignore::hypothesis.errors.HypothesisSideeffectWarning",
)


def preload() -> None:
    """What every check imports first: pytest, and the libraries its plugins import
    (Hypothesis alone is most of a second). Not the plugins' own modules: pytest
    rewrites their asserts as it loads them, which it cannot do to a module imported
    already."""
    for name in PRELOAD:
        importlib.import_module(name)


def _start_like_an_interpreter(env: dict[str, str]) -> None:
    """``PYTHONPATH``'s directories first on ``sys.path`` (after the script's: the
    working directory), and the first ``sitecustomize.py`` among them run."""
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [os.path.abspath(p) for p in entries]
    for entry in entries:
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("sitecustomize", path)
            assert spec is not None
            assert spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            spec.loader.exec_module(module)
            break


def child(job: dict[str, Any]) -> NoReturn:
    """Run one check in this forked process; never returns to the server's loop."""
    code = 3
    try:
        out = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        _start_like_an_interpreter(job["env"])
        import pytest

        # Two warnings only the preloading causes: pytest cannot rewrite the asserts of
        # Hypothesis, a plugin's distribution, imported already; and Hypothesis notices
        # that it was imported before its plugin loaded.
        args = [*PRELOAD_WARNINGS, *job["args"]]
        sys.argv = ["pytest", *args]
        code = int(pytest.main(args))
    except SystemExit as exc:  # the switch stops a process it cannot set up
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # reported in the output, as a process would report it
        traceback.print_exc()
    finally:
        # What an interpreter does at exit, then out without unwinding into the loop.
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    preload()
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(job)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    serve()
