"""Running a client benchmark's aiokafka part without aiokafka's C extensions.

aiokafka ships its record batch codec compiled (Cython, ``aiokafka.record._crecords``)
and falls back to Python only when ``AIOKAFKA_NO_EXTENSIONS`` is set when it is first
imported. The client benchmarks compare minikafka with the *pure-Python* clients, so they
run aiokafka twice: as installed, and in a child process with that variable set. The
child (``python -m bench.<module> --child NAME ARGS...``) times its own work, so that
its interpreter's start-up and imports stay out, and prints the seconds and its CPU
seconds over them as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from ._common import BenchError, own_cpu_seconds

PURE_ENV = {"AIOKAFKA_NO_EXTENSIONS": "1"}


def timed(work: Callable[[], object]) -> tuple[object, float, float]:
    """``work()``'s result, its wall seconds and this process's CPU seconds over them."""
    cpu, start = own_cpu_seconds(), time.perf_counter()
    result = work()
    return result, time.perf_counter() - start, own_cpu_seconds() - cpu


def in_child(module: str, args: Sequence[str]) -> tuple[object, float, float]:
    """Run ``python -m bench.<module> --child ARGS`` with aiokafka's extensions off."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", "--child", *args],
        env={**os.environ, **PURE_ENV},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise BenchError(f"the pure-Python child failed: {done.stderr[-2000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["result"], float(answer["seconds"]), float(answer["cpu_seconds"])


def child_main(work: Callable[[], object]) -> int:
    """The child's side: check the extensions are off, time ``work``, print JSON."""
    from aiokafka.record import default_records  # type: ignore[import-untyped]

    if "_crecords" in default_records.DefaultRecordBatchBuilder.__module__:
        raise BenchError("aiokafka's C extensions are still in use")
    result, seconds, cpu = timed(work)
    print(json.dumps({"result": result, "seconds": seconds, "cpu_seconds": cpu}))
    return 0
