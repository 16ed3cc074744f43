"""A Spark standalone cluster on this machine: a master and workers, each its own JVM.

``local[2]`` runs Spark's driver and executors in one JVM; a standalone cluster is what
Spark looks like beyond one machine: a master that hands out resources, workers that
start executors, and a driver (the lab's Python process) that sends them tasks over the
network. The labs' queries run unchanged on one: point ``SPARK_MASTER`` at its URL.

The processes come from PySpark's own distribution (``pyspark/bin/spark-class``), so
nothing beyond ``pip install pyspark`` and Java 17 is needed, and listen on 127.0.0.1
only. The executors run the workspace's Python (``PYSPARK_PYTHON``) and read trace
files from the same disk the driver sees.

    with standalone_cluster(tmp_path, workers=2) as master:
        env = {"SPARK_MASTER": master}   # spark://127.0.0.1:<port>
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pyspark

from minikafka.common.testing import free_ports

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HOST = "127.0.0.1"


def _env(workdir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "PYSPARK_PYTHON": sys.executable,
        # The daemons' own heap; an executor's is spark.executor.memory.
        "SPARK_DAEMON_MEMORY": "256m",
    }


def master_state(ui_port: int) -> dict[str, Any]:
    """The master's status page as JSON (workers, running and completed apps)."""
    with urllib.request.urlopen(f"http://{HOST}:{ui_port}/json/", timeout=5) as page:
        state: dict[str, Any] = json.load(page)
        return state


@contextmanager
def standalone_cluster(
    workdir: Path,
    workers: int = 2,
    *,
    cores: int = 1,
    memory: str = "1g",
    timeout: float = 120.0,
) -> Iterator[tuple[str, int]]:
    """Start a master and ``workers`` workers; yield (the master's URL, its UI port).

    Waits until every worker has registered with the master, within ``timeout``
    seconds; stops them all on the way out. Their logs are in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = _env(workdir)
    port, ui_port, *worker_ui_ports = free_ports(2 + workers, HOST)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_url = f"spark://{HOST}:{port}"
    with ExitStack() as stack:

        def start(name: str, *args: str) -> None:
            log = stack.enter_context((workdir / f"{name}.log").open("wb"))
            child = subprocess.Popen(
                [spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT
            )
            stack.callback(_stop, child)

        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", HOST, "--port", str(port), "--webui-port", str(ui_port)),
        )
        for n in range(workers):
            start(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", HOST, "--cores", str(cores), "--memory", memory),
                *("--webui-port", str(worker_ui_ports[n])),
                *("--work-dir", str(workdir / f"worker-{n}")),
                master_url,
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                alive = master_state(ui_port).get("aliveworkers", 0)
            except OSError:
                alive = 0
            if alive >= workers:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{alive} of {workers} Spark workers registered with {master_url} "
                    f"within {timeout:.0f} s; see the logs in {workdir}"
                )
            time.sleep(0.5)
        yield master_url, ui_port


def _stop(child: subprocess.Popen[bytes]) -> None:
    child.terminate()
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
