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

import contextlib
import shlex
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from minikafka.common import run_app

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


app = typer.Typer(
    name="python -m minikafka.labs",
    help="Check a lab's exercises, grade every lab, or switch one in (what make lab N "
    "[EX=name], make grade and make run LAB=N run).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Number = Annotated[int, typer.Argument(help="the lab's number (1 for labs/01-...)")]
Solutions = Annotated[
    bool, typer.Option("--solutions", help="check the reference answers")
]


@app.callback()
def _group() -> None:
    """Check a lab's exercises, grade every lab, or switch one in."""


@app.command("list")
def list_labs() -> None:
    """The labs and their directories."""
    for lab in all_labs():
        config = lab.config
        print(
            f"{lab.number}  {lab.directory.relative_to(LABS_ROOT.parent)}  "
            f"({config.kind}: {', '.join(e.name for e in config.exercises)})"
        )


@app.command("run")
def run_lab(
    number: Number,
    exercise: Annotated[
        str | None, typer.Option(help="check this exercise only")
    ] = None,
    reuse: Annotated[
        bool, typer.Option("--reuse", help="reuse the last scenario run")
    ] = False,
    solutions: Solutions = False,
) -> None:
    """Check a lab's exercises."""
    raise typer.Exit(_run(number, exercise, reuse, solutions))


@app.command()
def grade(solutions: Solutions = False) -> None:
    """Check every lab and print a score table."""
    problem = _java_missing()
    if problem:
        print(f"make lab: {problem}", file=sys.stderr)
        raise typer.Exit(2)
    which = "solutions" if solutions else "exercises"
    outcomes = [
        o for lab in all_labs() for o in _check(lab, None, which, False, quiet=True)
    ]
    print(table(outcomes))
    raise typer.Exit(0 if all(o.done for o in outcomes) else 1)


@app.command()
def switch(number: Annotated[int, typer.Argument()]) -> None:
    """The environment running lab N's code."""
    lab = find_lab(number)
    env = switched_env(lab, lab.config.exercises, "exercises")
    print(" ".join(f"{key}={shlex.quote(value)}" for key, value in env.items()))


@app.command("mutants")
def mutants_command(
    number: Annotated[int, typer.Argument()],
    mutant: Annotated[str | None, typer.Option(help="this mutant only")] = None,
) -> None:
    """Check that each wrong answer of lab N fails its checks."""
    raise typer.Exit(_mutants(find_lab(number), mutant))


@app.command()
def standalone(
    workers: Annotated[int, typer.Option()] = 2,
    dir: Annotated[Path, typer.Option()] = LABS_ROOT / ".spark",
) -> None:
    """A Spark standalone master and workers on 127.0.0.1."""
    with standalone_cluster(dir, workers) as (master, ui_port):
        print(
            f"Spark master {master} (status: http://127.0.0.1:{ui_port}), "
            f"{workers} workers; logs in {dir}"
        )
        print(f"run a lab on it: SPARK_MASTER={master} make lab 8   (Ctrl-C stops it)")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


@app.command()
def parquet(
    trace_dir: Annotated[Path, typer.Argument()],
    out: Annotated[Path, typer.Argument()],
) -> None:
    """Convert a trace directory to Parquet."""
    # Registers every package's trace events (the client's, which no broker imports,
    # too: the producer's batches of lab 12).
    import minikafka.broker
    import minikafka.client  # noqa: F401

    spark = spark_session("minikafka-parquet")
    for component, event in to_parquet(spark, trace_dir, out):
        print(f"{component}.{event}")
    print(f"read it as the trace: read_events(spark, {str(out)!r}, EventType)")


def _run(number: int, exercise: str | None, reuse: bool, solutions: bool) -> int:
    problem = _java_missing()
    if problem:
        print(f"make lab: {problem}", file=sys.stderr)
        return 2
    which = "solutions" if solutions else "exercises"
    try:
        lab = find_lab(number)
        outcomes = _check(lab, exercise, which, reuse, quiet=False)
    except LookupError as exc:
        print(f"make lab: {exc}", file=sys.stderr)
        return 2
    print(table(outcomes))
    if all(o.done for o in outcomes):
        if exercise:
            others = len(lab.config.exercises) - 1
            print(
                f"lab {lab.number}: {exercise} passes its checks "
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


def main(argv: Sequence[str] | None = None) -> int:
    return run_app(app, argv, "python -m minikafka.labs")


if __name__ == "__main__":
    sys.exit(main())
