"""A trace lab on Spark beyond one JVM: lab 8's checks, run against its reference
answers, on a standalone master with two workers started from PySpark's own
distribution (``minikafka.labs.standalone_cluster``), the driver in its own process as a
learner's ``make lab`` would be. Holds that the labs' queries need nothing of
``local[2]``, and that the work really ran on the cluster: the master lists the lab's
application, and both workers started executors for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.labs import IMPLEMENTATION_ENV, REUSE_ENV, SPARK_MASTER_ENV, find_lab
from minikafka.labs._standalone import master_state, standalone_cluster

ROOT = Path(__file__).resolve().parents[2]

# Lab 8's checks measure its scenario's run: serial, on the worker that runs lab 8's own
# test (the repository's conftest.py groups them), after it, so its kept run is reused.
pytestmark = pytest.mark.serial


@pytest.mark.timeout(900)
def test_lab_8_runs_on_a_standalone_master_with_two_workers(tmp_path: Path) -> None:
    spark_dir = tmp_path / "spark"
    with standalone_cluster(spark_dir, workers=2) as (master, ui_port):
        env = {
            **os.environ,
            SPARK_MASTER_ENV: master,
            IMPLEMENTATION_ENV: "solutions",
            # A run of lab 8's scenario kept earlier (make test keeps them) will do:
            # what is tested here is Spark's side.
            REUSE_ENV: "1",
        }
        test_file = find_lab(8).directory / "test_lab.py"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                # The reference's checks: the deliberately wrong answers' runs of them
                # (mutant:NAME, strict expected failures) prove the checks, not the
                # cluster, and lab 8's own test runs every one of them.
                "-k",
                "not mutant",
                str(test_file),
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        state = master_state(ui_port)
    apps = state.get("completedapps", []) + state.get("activeapps", [])
    assert "minikafka-lab-tests" in {app["name"] for app in apps}
    for n in range(2):
        # A worker keeps a directory per application it ran executors for.
        assert any((spark_dir / f"worker-{n}").iterdir()), f"worker {n} ran nothing"
