"""``python -m minikafka.labs``: check a lab's exercises, grade every lab, or switch one
in (what ``make lab N [EX=name]``, ``make grade`` and ``make run LAB=N`` run).

    run N [--exercise NAME] [--solutions] [--reuse]   check lab N (one exercise of it)
    grade [--solutions]                               every exercise of every lab: a table
    switch N                                          the environment that runs lab N's code
    mutants N [--mutant NAME]                         lab N's wrong answers: each caught?
    standalone [--workers 2]                          a Spark master and workers here, till Ctrl-C
    parquet TRACE_DIR OUT                             convert a trace to Parquet once
    list                                              the labs

A trace lab's scenario drives the real broker and Spark reads its traces; the run is
kept in ``labs/.runs/`` and ``--reuse`` takes it instead of running it again. A build
lab's exercise runs minikafka's own tests with the learner's code in place of its own;
an extend lab's, its own checks against minikafka as the learner changed it.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ._lab import LABS_ROOT, Lab, all_labs, find_lab
from ._mutants import check_all, find_mutant, mutants, report
from ._parquet import to_parquet
from ._runner import Outcome, run, switched_env, table
from ._spark import spark_session
from ._standalone import standalone_cluster


def _java_missing() -> str | None:
    if shutil.which("java"):
        return None
    return (
        "Spark needs Java 17, and `java` is not on PATH; install it with:\n"
        "  sudo apt-get install -y openjdk-17-jre-headless"
    )


def _check(
    lab: Lab, name: str | None, which: str, reuse: bool, quiet: bool
) -> list[Outcome]:
    config = lab.config
    exercise = config.exercise(name) if name else None
    if config.kind == "rebuild" and exercise is None:
        # One exercise at a time: each switches in only its own code.
        return [o for e in config.exercises for o in run(lab, e, which, quiet=quiet)]
    return run(lab, exercise, which, reuse=reuse, quiet=quiet)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minikafka.labs", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the labs and their directories")
    check = commands.add_parser("run", help="check a lab's exercises")
    check.add_argument("number", type=int, help="the lab's number (1 for labs/01-...)")
    check.add_argument("--exercise", help="check this exercise only")
    check.add_argument(
        "--reuse", action="store_true", help="reuse the last scenario run"
    )
    grade = commands.add_parser("grade", help="check every lab and print a score table")
    for sub in (check, grade):
        sub.add_argument(
            "--solutions", action="store_true", help="check the reference answers"
        )
    switch = commands.add_parser("switch", help="the environment running lab N's code")
    switch.add_argument("number", type=int)
    wrong = commands.add_parser(
        "mutants", help="check that each wrong answer of lab N fails its checks"
    )
    wrong.add_argument("number", type=int)
    wrong.add_argument("--mutant", help="this mutant only")
    standalone = commands.add_parser(
        "standalone", help="a Spark standalone master and workers on 127.0.0.1"
    )
    standalone.add_argument("--workers", type=int, default=2)
    standalone.add_argument("--dir", type=Path, default=LABS_ROOT / ".spark")
    parquet = commands.add_parser(
        "parquet", help="convert a trace directory to Parquet"
    )
    parquet.add_argument("trace_dir", type=Path)
    parquet.add_argument("out", type=Path)
    args = parser.parse_args(argv)

    if args.command == "list":
        for lab in all_labs():
            config = lab.config
            print(
                f"{lab.number}  {lab.directory.relative_to(LABS_ROOT.parent)}  "
                f"({config.kind}: {', '.join(e.name for e in config.exercises)})"
            )
        return 0
    if args.command == "standalone":
        with standalone_cluster(args.dir, args.workers) as (master, ui_port):
            print(
                f"Spark master {master} (status: http://127.0.0.1:{ui_port}), "
                f"{args.workers} workers; logs in {args.dir}"
            )
            print(
                f"run a lab on it: SPARK_MASTER={master} make lab 8   (Ctrl-C stops it)"
            )
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
        return 0
    if args.command == "parquet":
        # Registers every package's trace events (the client's, which no broker imports,
        # too: the producer's batches of lab 12).
        import minikafka.broker
        import minikafka.client  # noqa: F401

        spark = spark_session("minikafka-parquet")
        for component, event in to_parquet(spark, args.trace_dir, args.out):
            print(f"{component}.{event}")
        print(f"read it as the trace: read_events(spark, {str(args.out)!r}, EventType)")
        return 0
    if args.command == "switch":
        lab = find_lab(args.number)
        env = switched_env(lab, lab.config.exercises, "exercises")
        print(" ".join(f"{key}={shlex.quote(value)}" for key, value in env.items()))
        return 0

    if args.command == "mutants":
        return _mutants(find_lab(args.number), args.mutant)

    problem = _java_missing()
    if problem:
        print(f"make lab: {problem}", file=sys.stderr)
        return 2
    which = "solutions" if args.solutions else "exercises"
    if args.command == "grade":
        outcomes = [
            o for lab in all_labs() for o in _check(lab, None, which, False, quiet=True)
        ]
        print(table(outcomes))
        return 0 if all(o.done for o in outcomes) else 1

    try:
        lab = find_lab(args.number)
        outcomes = _check(lab, args.exercise, which, args.reuse, quiet=False)
    except LookupError as exc:
        print(f"make lab: {exc}", file=sys.stderr)
        return 2
    print(table(outcomes))
    if all(o.done for o in outcomes):
        if args.exercise:
            others = len(lab.config.exercises) - 1
            print(
                f"lab {lab.number}: {args.exercise} passes its checks "
                f"({others} other exercise{'s' if others != 1 else ''} not checked)"
            )
        else:
            print(f"lab {lab.number}: every exercise passes its checks")
        return 0
    where = lab.directory.relative_to(LABS_ROOT.parent)
    unfinished = sorted({name for o in outcomes for name in o.not_done})
    if unfinished:
        print(
            f"lab {lab.number}: not done yet: {', '.join(unfinished)} (in {where}/)",
            file=sys.stderr,
        )
    else:
        print(
            f"lab {lab.number}: not there yet; each failure above says what is wrong",
            file=sys.stderr,
        )
    return 1


def _mutants(lab: Lab, name: str | None) -> int:
    chosen = [find_mutant(lab, name)] if name else mutants(lab)
    if not chosen:
        print(f"lab {lab.number} has no mutants here (the instructors' copy has them)")
        return 2
    if lab.config.kind == "trace":
        # A trace lab's mutants run in the checks' own pytest run, beside the reference.
        print(
            f"lab {lab.number}'s mutants run with its checks: make lab {lab.number} "
            "--solutions (python -m minikafka.labs run N --solutions)"
        )
        return 2
    verdicts = check_all(chosen)
    for verdict in verdicts:
        if not verdict.caught:
            print(verdict.output)
    print(report(verdicts))
    return 0 if all(v.caught for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
