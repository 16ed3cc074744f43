"""COMPAT.md's table of Kafka's tools against minikafka, built from the tests that prove it.

Every test that runs one of Apache Kafka's ``kafka-*`` tools against minikafka carries, on
its own decorators, one mark a row of the table it proves::

    @pytest.mark.kafka_tool("kafka-topics", "--create")
    @pytest.mark.kafka_tool("kafka-log-dirs", "--describe", needs="DescribeLogDirs")
    @pytest.mark.kafka_tool("kafka-topics", "--describe", notes="no TopicId: ...")

``needs`` says the test proves today's failure, a clear error naming that API (a Kafka API
name); ``notes`` a difference from Kafka a user would see. As ``compat_matrix.py`` does,
this script reads the modules ``tests/reference/test_*.py`` with :mod:`ast` (it neither
imports nor runs them). A mark anywhere but a test function's decorators is refused, and
so is a row two tests disagree on; a test marked ``xfail`` proves nothing.

    uv run python scripts/tools_table.py           # print the table
    uv run python scripts/tools_table.py --write   # put it into COMPAT.md
    uv run python scripts/tools_table.py --check   # exit 1 if COMPAT.md holds another

``--write`` replaces what lies between ``<!-- kafka-tools:start -->`` and
``<!-- kafka-tools:end -->``; ``tests/reference/test_tools_table.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs
from kio.schema.index import api_key_map

from minikafka.net import api_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the reference module lives at the repository's root

from reference.kafka import TOOLS  # noqa: E402

TESTS = ROOT / "tests" / "reference"
DOCUMENT = ROOT / "COMPAT.md"
START = "<!-- kafka-tools:start -->"
END = "<!-- kafka-tools:end -->"
LEGEND = (
    "works: the test reads what the tool prints against minikafka; fails: needs X: the"
    " test expects today's clear error, which names the API X minikafka does not serve"
    " yet; (n): a difference from Kafka's output that a user sees."
)
API_KEYS: Mapping[str, int] = {api_name(key): key for key in api_key_map}


class TableError(Exception):
    """A kafka_tool mark the table cannot use, or a page without the markers."""


@attrs.frozen
class ToolMark:
    tool: str
    action: str
    needs: str | None
    notes: str | None
    module: str
    test: str
    line: int


def _is_mark(node: ast.AST, name: str) -> bool:
    """``pytest.mark.<name>``, called or not."""
    target = node.func if isinstance(node, ast.Call) else node
    return (
        isinstance(target, ast.Attribute)
        and target.attr == name
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
    )


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's ``NAME = "text"`` assignments: a mark may name one."""
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def _literal(node: ast.expr, where: str, constants: Mapping[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    raise TableError(
        f"{where}: kafka_tool's arguments must be strings, literal or a module's constant"
    )


def _mark(
    call: ast.Call, module: str, test: str, constants: Mapping[str, str]
) -> ToolMark:
    where = f"{module}:{call.lineno}"
    if len(call.args) != 2:
        raise TableError(f"{where}: kafka_tool takes (tool, action)")
    tool, action = (_literal(a, where, constants) for a in call.args)
    options: dict[str, str] = {}
    for keyword in call.keywords:
        if keyword.arg not in ("needs", "notes"):
            raise TableError(f"{where}: kafka_tool takes needs= and notes= only")
        options[keyword.arg] = _literal(keyword.value, where, constants)
    if tool not in TOOLS:
        raise TableError(f"{where}: {tool!r} is not one of {', '.join(TOOLS)}")
    if not action.strip():
        raise TableError(f"{where}: the action is empty")
    needs = options.get("needs")
    if needs is not None and needs not in API_KEYS:
        raise TableError(f"{where}: needs={needs!r} is not a Kafka API name")
    return ToolMark(
        tool, action, needs, options.get("notes"), module, test, call.lineno
    )


def collect(path: Path) -> list[ToolMark]:
    """The kafka_tool marks of one test module, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _constants(tree)
    marks: list[ToolMark] = []
    placed: set[int] = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        calls = [
            d
            for d in node.decorator_list
            if isinstance(d, ast.Call) and _is_mark(d, "kafka_tool")
        ]
        placed |= {id(n) for call in calls for n in (call, call.func)}
        if not any(_is_mark(d, "xfail") for d in node.decorator_list):
            marks += [_mark(c, path.name, node.name, constants) for c in calls]
    for found in ast.walk(tree):
        if _is_mark(found, "kafka_tool") and id(found) not in placed:
            line = getattr(found, "lineno", "?")
            raise TableError(
                f"{path.name}:{line}: a kafka_tool mark goes on a test function's own"
                " decorators"
            )
    return marks


def collect_all(tests_dir: Path) -> list[ToolMark]:
    return [m for path in sorted(tests_dir.glob("test_*.py")) for m in collect(path)]


def render(marks: Iterable[ToolMark]) -> str:
    """The table and its notes, between (not including) the page's markers."""
    rows: dict[tuple[str, str], list[ToolMark]] = {}
    order = list(TOOLS)
    for mark in sorted(marks, key=lambda m: (order.index(m.tool), m.module, m.line)):
        rows.setdefault((mark.tool, mark.action), []).append(mark)
    lines = [
        "<!-- generated by scripts/tools_table.py from the kafka_tool marks in"
        " tests/reference; do not edit -->",
        "",
        "| Tool | Action | Against minikafka | Proven by |",
        "| --- | --- | --- | --- |",
    ]
    notes: dict[str, int] = {}  # a note's text -> its number (rows may share one)
    for (tool, action), proving in rows.items():
        needs = {m.needs for m in proving}
        if len(needs) > 1:
            tests = ", ".join(f"{m.module}:{m.line}" for m in proving)
            raise TableError(f"{tool} {action}: the marks disagree on needs= ({tests})")
        [api] = needs
        status = "works" if api is None else f"fails: needs {api} (key {API_KEYS[api]})"
        for text in dict.fromkeys(m.notes for m in proving if m.notes):
            status += f" ({notes.setdefault(text, len(notes) + 1)})"
        tests = ", ".join(f"`{t}`" for t in dict.fromkeys(m.test for m in proving))
        modules = ", ".join(dict.fromkeys(m.module for m in proving))
        lines.append(f"| {tool} | `{action}` | {status} | {modules}: {tests} |")
    lines += ["", LEGEND, ""] + [f"- ({n}) {text}" for text, n in notes.items()]
    return "\n".join(lines) + "\n"


def replace_between_markers(text: str, block: str) -> str:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise TableError(f"the page has no {START} ... {END} section")
    return text[: start + len(START)] + "\n" + block + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update the page in place")
    action.add_argument(
        "--check", action="store_true", help="exit 1 if the page is stale"
    )
    parser.add_argument("--tests", type=Path, default=TESTS, help="test modules' dir")
    parser.add_argument("--document", type=Path, default=DOCUMENT, help="COMPAT.md")
    args = parser.parse_args(argv)
    try:
        block = render(collect_all(args.tests))
        if not (args.write or args.check):
            sys.stdout.write(block)
            return 0
        text = args.document.read_text(encoding="utf-8")
        updated = replace_between_markers(text, block)
    except (TableError, SyntaxError, OSError) as exc:
        print(f"tools_table: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if updated != text:
            print(
                f"tools_table: {args.document} holds a stale table of Kafka's tools;"
                " run `uv run python scripts/tools_table.py --write`",
                file=sys.stderr,
            )
            return 1
        return 0
    if updated != text:
        args.document.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
