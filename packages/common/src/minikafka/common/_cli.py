"""The shape every ``python -m minikafka.<package>`` tool shares: a program of subcommands.

A package's ``__main__`` names its program, its subcommands and their help once here, then
adds each subcommand's own arguments; argparse does the rest (usage, ``--help``, exit
status 2 on bad usage), and ``args.command`` names the subcommand given.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping


def subcommand_parser(
    prog: str, description: str, commands: Mapping[str, str]
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The program's parser and one parser per subcommand (``commands``: name to help)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    subparsers = parser.add_subparsers(dest="command", required=True)
    return parser, {
        name: subparsers.add_parser(name, help=h) for name, h in commands.items()
    }
