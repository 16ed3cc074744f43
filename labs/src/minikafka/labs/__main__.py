"""``python -m minikafka.labs run N``: check a lab's exercises (what ``make lab N`` runs).

It runs the lab's ``test_lab.py`` against the reader's ``exercises.py`` (or, with
``--solutions``, the reference answers): the scenario drives the real broker, Spark reads
its traces, and each test compares one exercise's answer with what the scenario recorded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

from ._lab import IMPLEMENTATION_ENV, LABS_ROOT, all_labs, find_lab


def _java_missing() -> str | None:
    if shutil.which("java"):
        return None
    return (
        "Spark needs Java 17, and `java` is not on PATH; install it with:\n"
        "  sudo apt-get install -y openjdk-17-jre-headless"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minikafka.labs", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the labs and their directories")
    run = commands.add_parser("run", help="run a lab's checks against exercises.py")
    run.add_argument("number", type=int, help="the lab's number (1 for labs/01-...)")
    run.add_argument(
        "--solutions",
        action="store_true",
        help="check solutions.py instead of exercises.py",
    )
    args = parser.parse_args(argv)

    if args.command == "list":
        for lab in all_labs():
            print(f"{lab.number}  {lab.directory.relative_to(LABS_ROOT.parent)}")
        return 0

    try:
        lab = find_lab(args.number)
    except LookupError as exc:
        print(f"make lab: {exc}", file=sys.stderr)
        return 2
    problem = _java_missing()
    if problem:
        print(f"make lab: {problem}", file=sys.stderr)
        return 2
    which = "solutions" if args.solutions else "exercises"
    print(f"lab {lab.number} ({lab.name}): checking {which}.py", flush=True)
    env = {**os.environ, IMPLEMENTATION_ENV: which}
    test_file = lab.directory / "test_lab.py"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--no-header",
        "-rfE",
        str(test_file),
    ]
    status = subprocess.run(
        command, env=env, cwd=LABS_ROOT.parent, check=False
    ).returncode
    if status == 0:
        print(f"lab {lab.number}: every exercise matches what the scenario recorded")
    elif which == "exercises":
        print(
            f"lab {lab.number}: not there yet. Each failure above names its exercise; "
            f"write it in {lab.directory.relative_to(LABS_ROOT.parent)}/exercises.py and "
            f"run `make lab {lab.number}` again.",
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
