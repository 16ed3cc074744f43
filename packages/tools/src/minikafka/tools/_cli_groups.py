"""``minikafka groups``: kafka-consumer-groups.sh's flags (ConsumerGroupCommandOptions),
checked before anything connects, and its five actions: ``--list``, ``--describe`` and
``--delete`` (:mod:`._groups`), ``--reset-offsets`` and ``--delete-offsets``
(:mod:`._reset_offsets`). A bad combination is a usage error (exit 2) in Kafka's words
where Kafka has them."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from minikafka.client import AsyncAdminClient

from ._cli_common import BootstrapServer, CommandConfig, run_tool, usage
from ._connection import ToolError
from ._groups import DEFAULT_TIMEOUT_MS, View, deletion_report, list_groups
from ._groups import delete_groups as delete_consumer_groups
from ._groups import describe as describe_consumer_groups
from ._reset_offsets import (
    NO_EXECUTE_WARNING,
    Reset,
    Scenario,
    delete_offsets,
    delete_offsets_report,
    parse_datetime,
    parse_duration,
    parse_topic_arg,
    reset_offsets,
    reset_table,
)

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets")


def reset_of(
    *,
    to_earliest: bool = False,
    to_latest: bool = False,
    to_current: bool = False,
    to_offset: int | None = None,
    shift_by: int | None = None,
    to_datetime: str | None = None,
    by_duration: str | None = None,
) -> Reset:
    """The one ``--reset-offsets`` scenario given, its argument parsed; a usage error
    (Kafka's words) for none or several."""
    given: dict[Scenario, bool] = {
        "to-earliest": to_earliest,
        "to-latest": to_latest,
        "to-current": to_current,
        "to-offset": to_offset is not None,
        "shift-by": shift_by is not None,
        "to-datetime": to_datetime is not None,
        "by-duration": by_duration is not None,
    }
    chosen = [s for s, on in given.items() if on]
    if not chosen:
        names = ", ".join(f"--{s}" for s in given)
        raise usage(
            f"Option '--reset-offsets' requires one of the following scenarios: {names}"
        )
    if len(chosen) > 1:
        raise usage(f"Option '--{chosen[0]}' can't be used with option '--{chosen[1]}'")
    scenario = chosen[0]
    try:
        if scenario == "to-datetime":
            assert to_datetime is not None
            return Reset(scenario, parse_datetime(to_datetime))
        if scenario == "by-duration":
            assert by_duration is not None
            return Reset(scenario, parse_duration(by_duration))
    except ToolError as e:
        raise usage(str(e)) from None
    value = to_offset if scenario == "to-offset" else shift_by
    return Reset(scenario, value or 0)


def groups(
    bootstrap_server: BootstrapServer,
    command_config: CommandConfig = None,
    list_: Annotated[
        bool, typer.Option("--list", help="list the consumer groups")
    ] = False,
    describe: Annotated[
        bool, typer.Option("--describe", help="describe --group or --all-groups")
    ] = False,
    delete: Annotated[
        bool, typer.Option("--delete", help="delete --group or --all-groups")
    ] = False,
    reset_offsets_: Annotated[
        bool,
        typer.Option(
            "--reset-offsets",
            help="plan (--dry-run, the default) or --execute new offsets for inactive groups",
        ),
    ] = False,
    delete_offsets_: Annotated[
        bool,
        typer.Option(
            "--delete-offsets",
            help="delete --group's offsets of each --topic T[:p,...]",
        ),
    ] = False,
    group: Annotated[
        list[str] | None,
        typer.Option("--group", metavar="GROUP", help="the group (repeatable)"),
    ] = None,
    all_groups: Annotated[
        bool,
        typer.Option(
            "--all-groups", help="--describe/--delete/--reset-offsets: every group"
        ),
    ] = False,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            metavar="TOPIC[:P,...]",
            help="--reset-offsets/--delete-offsets: a topic, or some of its partitions",
        ),
    ] = None,
    all_topics: Annotated[
        bool,
        typer.Option(
            "--all-topics", help="--reset-offsets: every partition the group committed"
        ),
    ] = False,
    to_earliest: Annotated[
        bool, typer.Option("--to-earliest", help="reset to the log start")
    ] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="reset to the high watermark")
    ] = False,
    to_current: Annotated[
        bool, typer.Option("--to-current", help="reset to the committed offset")
    ] = False,
    to_offset: Annotated[
        int | None, typer.Option("--to-offset", metavar="N", help="reset to offset N")
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option("--shift-by", metavar="N", help="move the committed offset by N"),
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="YYYY-MM-DDTHH:mm:SS.sss",
            help="reset to the first offset at that time (UTC unless a zone is given)",
        ),
    ] = None,
    by_duration: Annotated[
        str | None,
        typer.Option(
            "--by-duration",
            metavar="PnDTnHnMnS",
            help="reset to the first offset that long before now",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="--reset-offsets: only print the plan")
    ] = False,
    execute: Annotated[
        bool, typer.Option("--execute", help="--reset-offsets: commit the plan")
    ] = False,
    offsets: Annotated[
        bool,
        typer.Option("--offsets", help="--describe: offsets and lag (the default)"),
    ] = False,
    members: Annotated[
        bool,
        typer.Option("--members", help="--describe: the members and their partitions"),
    ] = False,
    state: Annotated[
        bool,
        typer.Option(
            "--state", help="--describe: coordinator, assignor, state, #members"
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", help="--describe --members: each one's partitions"),
    ] = False,
    timeout: Annotated[
        int,
        typer.Option(
            "--timeout",
            min=0,
            metavar="MS",
            help="how long to retry a busy or moving coordinator",
        ),
    ] = DEFAULT_TIMEOUT_MS,
) -> None:
    """List, describe or delete consumer groups, reset or delete their offsets
    (kafka-consumer-groups.sh)."""
    flags = (list_, describe, delete, reset_offsets_, delete_offsets_)
    chosen = [name for name, on in zip(ACTIONS, flags, strict=True) if on]
    if len(chosen) != 1:
        raise usage("give exactly one of " + ", ".join(ACTIONS))
    action = chosen[0]
    if action == "--delete-offsets":
        if len(group or ()) != 1 or all_groups or not topic:
            raise usage(
                "Option --delete-offsets takes the following options: --group, --topic "
                "(one group)"
            )
    elif action != "--list" and not group and not all_groups:
        raise usage(f"{action} needs --group or --all-groups")
    if group and all_groups:
        raise usage("give --group or --all-groups, not both")
    views = {"--offsets": offsets, "--members": members, "--state": state}
    picked = [name for name, on in views.items() if on]
    if len(picked) > 1:
        raise usage("give at most one of " + ", ".join(views))
    if (picked or verbose) and action != "--describe":
        raise usage(f"{(picked or ['--verbose'])[0]} is for --describe")
    view: View = "members" if members else "state" if state else "offsets"
    if topic and action == "--delete":
        raise usage(
            "The consumer does not support topic-specific offset deletion from a "
            "consumer group."
        )
    if topic and action not in ("--reset-offsets", "--delete-offsets"):
        raise usage("--topic is for --reset-offsets and --delete-offsets")
    scenario_given = (
        to_earliest or to_latest or to_current or dry_run or execute or all_topics
    ) or any(v is not None for v in (to_offset, shift_by, to_datetime, by_duration))
    if scenario_given and action != "--reset-offsets":
        raise usage(
            "the reset scenarios, --all-topics, --dry-run and --execute are for "
            "--reset-offsets"
        )
    reset = None
    if action == "--reset-offsets":
        if dry_run and execute:
            raise usage(
                "Option --reset-offsets only accepts one of --execute and --dry-run"
            )
        if bool(topic) == all_topics:
            raise usage(
                "One of the reset scopes should be defined: --all-topics, --topic."
            )
        for t in topic or ():
            try:
                parse_topic_arg(t)
            except ToolError as e:
                raise usage(str(e)) from None
        reset = reset_of(
            to_earliest=to_earliest,
            to_latest=to_latest,
            to_current=to_current,
            to_offset=to_offset,
            shift_by=shift_by,
            to_datetime=to_datetime,
            by_duration=by_duration,
        )
        if not dry_run and not execute:
            print(NO_EXECUTE_WARNING, file=sys.stderr)
    if action == "--delete-offsets":
        for t in topic or ():
            try:
                parse_topic_arg(t)
            except ToolError as e:
                raise usage(str(e)) from None

    async def run(cluster: AsyncAdminClient) -> bool:
        if action == "--list":
            for name in await list_groups(cluster, timeout_ms=timeout):
                print(name)
            return True
        if action == "--delete-offsets":
            one = (group or [""])[0]
            error, outcome = await delete_offsets(cluster, one, list(topic or ()))
            sys.stdout.write(
                delete_offsets_report(one, list(topic or ()), error, outcome)
            )
            return error == 0 and all(e is None for e in outcome.values())
        names = (
            await list_groups(cluster, timeout_ms=timeout)
            if all_groups
            else list(group or ())
        )
        if reset is not None:
            result, ok = await reset_offsets(
                cluster,
                names,
                list(topic or ()),
                reset,
                execute=execute,
                out=sys.stdout,
                now_ms=lambda: int(time.time() * 1000),
                timeout_ms=timeout,
            )
            sys.stdout.write(reset_table(result))
            return ok
        if action == "--describe":
            return await describe_consumer_groups(
                cluster,
                names,
                view,
                sys.stdout,
                sys.stderr,
                verbose=verbose,
                timeout_ms=timeout,
            )
        out, errors = deletion_report(
            await delete_consumer_groups(cluster, names, timeout_ms=timeout)
        )
        for line in errors:
            print(line, file=sys.stderr)
        for line in out:
            print(line)
        return not errors

    ok = run_tool(run, bootstrap_server, "minikafka-consumer-groups", command_config)
    raise typer.Exit(0 if ok else 1)
