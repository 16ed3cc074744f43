"""The compatibility matrix (API x client) of COMPAT.md, built from the tests that prove it.

Every compatibility test that proves a cell carries ``@pytest.mark.compat(api, client)``
(ARCHITECTURE.md, "Tests"). This script reads the test modules ``tests/compat/test_*.py`` with
:mod:`ast` -- it neither imports nor runs them -- and collects those marks wherever pytest
would apply them:

- in a test function's decorators, including ``pytest.param(..., marks=...)`` inside its
  ``parametrize`` (the whole test is then named);
- in a ``Test*`` class's decorators or its ``pytestmark`` (every test method in it);
- in the module's ``pytestmark`` (every test in the module).

A test marked ``xfail`` as a whole proves nothing and is left out (a failing parameter,
``pytest.param(..., marks=pytest.mark.xfail)``, leaves the others standing).

It renders a Markdown table: one row per API, in ApiVersions key order, with the versions
the broker advertises (``KafkaApis.SUPPORTED``), and one column per client. A proven cell
shows ✓ and a number; the numbered notes under the table name the tests.

    uv run python scripts/compat_matrix.py           # print the table
    uv run python scripts/compat_matrix.py --write   # put it into COMPAT.md
    uv run python scripts/compat_matrix.py --check   # exit 1 if COMPAT.md holds another

``--write`` replaces what lies between ``<!-- compat-matrix:start -->`` and
``<!-- compat-matrix:end -->``; ``tests/compat/test_matrix.py`` runs ``--check`` so the
page cannot go stale.

The security matrix (listener's protocol and SASL mechanism x client), between
``<!-- security-matrix:start -->`` and ``<!-- security-matrix:end -->``, is built the same
way from ``@pytest.mark.security_matrix(client, listener=None, mechanism=None)`` on a
test function: the cells are the values of the test's ``listener`` and ``mechanism``
parameters (its ``parametrize`` literals, or module-level literal lists they name), or
the mark's own, and a ``client`` parameter picks the mark it belongs to.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
from kio.schema.index import api_key_map

from minikafka.broker import KafkaApis
from minikafka.net import api_name

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests" / "compat"
DOCUMENT = ROOT / "COMPAT.md"
START = "<!-- compat-matrix:start -->"
END = "<!-- compat-matrix:end -->"
SECURITY_START = "<!-- security-matrix:start -->"
SECURITY_END = "<!-- security-matrix:end -->"
SECURITY_CLIENTS = (
    "kcat",
    "confluent-kafka",
    "kafka-python",
    "aiokafka",
    "minikafka",
    "java",
)
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SECURITY_ROWS: tuple[tuple[str, str], ...] = (
    ("SSL", "–"),
    ("SSL, mTLS", "–"),
    *((p, m) for p in ("SASL_PLAINTEXT", "SASL_SSL") for m in MECHANISMS),
)
LISTENER_PROTOCOLS = {
    "SSL": "SSL",
    "MTLS": "SSL, mTLS",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
}
CLIENTS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka", "java")
POM = ROOT / "reference" / "pom.xml"


def _kafka_version() -> str:
    """The Apache Kafka release reference/pom.xml pins, whose Java client the tests run."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if found is None:
        raise MatrixError(f"{POM} names no <kafka.version>")
    return found.group(1)


def header(client: str) -> str:
    """A client's column header: its mark's name, or for ``java`` which Java client."""
    return f"Java (Kafka {_kafka_version()})" if client == "java" else client


# Cells no test can prove because the client has no way to send the request.
# Requests a client has no way to send (kcat has no admin; aiokafka cannot delete groups).
NOT_OFFERED = frozenset(
    {
        *(
            ("kcat", api)
            for api in (
                "CreateTopics",
                "DeleteTopics",
                "DescribeConfigs",
                "CreatePartitions",
                "DescribeGroups",
                "ListGroups",
                "DeleteGroups",
            )
        ),
        ("aiokafka", "DeleteGroups"),
    }
)
API_KEYS: Mapping[str, int] = {api_name(key): key for key in api_key_map}


class MatrixError(Exception):
    """A compat mark the matrix cannot use, or a page without the markers."""


@attrs.frozen(order=True)
class ProvingTest:
    """A test function, as pytest names it within its module."""

    module: str  # file name, e.g. test_kcat.py
    line: int
    name: str  # test_x, or TestClass::test_x


@attrs.frozen
class CompatMark:
    api: str
    client: str
    test: ProvingTest


# --- collecting the marks ----------------------------------------------------------------


def _is_compat(node: ast.AST) -> bool:
    """``pytest.mark.compat(...)`` or ``mark.compat(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "compat"):
        return False
    owner = func.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
        isinstance(owner, ast.Name) and owner.id == "mark"
    )


def _cells_in(nodes: Iterable[ast.AST], where: str) -> list[tuple[str, str]]:
    """The (api, client) of every compat mark anywhere inside ``nodes``."""
    cells = []
    for node in nodes:
        for call in ast.walk(node):
            if not _is_compat(call):
                continue
            assert isinstance(call, ast.Call)
            args = call.args
            if call.keywords or len(args) != 2:
                raise MatrixError(f"{where}:{call.lineno}: compat takes (api, client)")
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            if len(values) != 2 or not all(isinstance(v, str) for v in values):
                raise MatrixError(
                    f"{where}:{call.lineno}: compat's arguments must be literals"
                )
            api, client = str(values[0]), str(values[1])
            if api not in API_KEYS:
                raise MatrixError(
                    f"{where}:{call.lineno}: {api!r} is not a Kafka API name"
                )
            if client not in CLIENTS:
                raise MatrixError(
                    f"{where}:{call.lineno}: client {client!r} is not one of {', '.join(CLIENTS)}"
                )
            cells.append((api, client))
    return cells


def _is_xfail(node: ast.AST) -> bool:
    """``pytest.mark.xfail`` or ``pytest.mark.xfail(...)`` (a test expected to fail)."""
    target = node.func if isinstance(node, ast.Call) else node
    return isinstance(target, ast.Attribute) and target.attr == "xfail"


def _pytestmark(body: Sequence[ast.stmt]) -> list[ast.AST]:
    """The marks a ``pytestmark = ...`` in ``body`` applies."""
    values: list[ast.AST] = []
    for statement in body:
        if isinstance(statement, ast.Assign):
            names = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            names = [statement.target]
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id == "pytestmark" for n in names):
            value = statement.value
            assert value is not None
            # One mark, or a list of them.
            values.extend(
                value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            )
    return values


def _tests(
    body: Sequence[ast.stmt], prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, list[ast.AST]]]:
    """(name, function, marks of the enclosing classes) of every test in ``body``."""
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if statement.name.startswith("test"):
                yield prefix + statement.name, statement, []
        elif isinstance(statement, ast.ClassDef) and statement.name.startswith("Test"):
            inherited = [*statement.decorator_list, *_pytestmark(statement.body)]
            for name, function, outer in _tests(statement.body, f"{statement.name}::"):
                yield name, function, [*inherited, *outer]


def collect(path: Path) -> list[CompatMark]:
    """The compat marks of one test module, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_level = _pytestmark(tree.body)
    module_marks = _cells_in(module_level, path.name)
    marks: list[CompatMark] = []
    for name, function, inherited in _tests(tree.body):
        if any(
            _is_xfail(d) for d in [*module_level, *inherited, *function.decorator_list]
        ):
            continue  # a test expected to fail proves nothing
        cells = [
            *module_marks,
            *_cells_in(inherited, path.name),
            *_cells_in(function.decorator_list, path.name),
        ]
        test = ProvingTest(path.name, function.lineno, name)
        marks.extend(
            CompatMark(api, client, test) for api, client in dict.fromkeys(cells)
        )
    return marks


def collect_all(tests_dir: Path) -> list[CompatMark]:
    """The compat marks of every ``test_*.py`` in ``tests_dir``."""
    return [
        mark for path in sorted(tests_dir.glob("test_*.py")) for mark in collect(path)
    ]


# --- the security matrix -----------------------------------------------------------------


@attrs.frozen
class SecurityMark:
    protocol: str  # a row's first column: SSL, "SSL, mTLS", SASL_PLAINTEXT, SASL_SSL
    mechanism: str  # "–" without SASL
    client: str
    test: ProvingTest


def _is_mark_named(node: ast.AST, name: str) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (
        isinstance(target, ast.Attribute)
        and target.attr == name
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
    )


def _literal(node: ast.AST, names: Mapping[str, ast.AST], where: str) -> object:
    """A literal, or a module-level name bound to one."""
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise MatrixError(f"{where}: parametrize values must be literals") from None


def _parameter_sets(
    decorators: Sequence[ast.AST], names: Mapping[str, ast.AST], where: str
) -> list[dict[str, str]]:
    """Every combination of the test's ``parametrize`` values, by argument name."""
    combos: list[dict[str, str]] = [{}]
    for decorator in decorators:
        if not (
            _is_mark_named(decorator, "parametrize") and isinstance(decorator, ast.Call)
        ):
            continue
        argnames = _literal(decorator.args[0], names, where)
        keys = (
            [k.strip() for k in argnames.split(",")]
            if isinstance(argnames, str)
            else list(argnames)  # type: ignore[call-overload]
        )
        rows = _literal(decorator.args[1], names, where)
        sets = [
            dict(zip(keys, row if len(keys) > 1 else (row,), strict=True))
            for row in rows  # type: ignore[attr-defined]
        ]
        combos = [{**c, **s} for c in combos for s in sets]
    return combos


def collect_security(path: Path) -> list[SecurityMark]:
    """The security-matrix cells the tests of one module prove."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = {
        t.id: st.value
        for st in tree.body
        if isinstance(st, ast.Assign)
        for t in st.targets
        if isinstance(t, ast.Name)
    }
    found: list[SecurityMark] = []
    for name, function, _inherited in _tests(tree.body):
        decorators = function.decorator_list
        marks = [d for d in decorators if _is_mark_named(d, "security_matrix")]
        if not marks or any(_is_xfail(d) for d in decorators):
            continue
        where = f"{path.name}:{function.lineno}"
        combos = _parameter_sets(decorators, names, where)
        test = ProvingTest(path.name, function.lineno, name)
        for mark in marks:
            assert isinstance(mark, ast.Call)
            client = str(_literal(mark.args[0], names, where))
            if client not in SECURITY_CLIENTS:
                raise MatrixError(f"{where}: client {client!r} is not in the matrix")
            fixed = {
                str(k.arg): str(_literal(k.value, names, where)) for k in mark.keywords
            }
            for combo in combos:
                if combo.get("client", client) != client:
                    continue
                cell: dict[str, str] = {**combo, **fixed}
                protocol = LISTENER_PROTOCOLS.get(str(cell.get("listener")))
                if protocol is None:
                    raise MatrixError(f"{where}: no security protocol for {cell}")
                mechanism = str(cell.get("mechanism", "–"))
                found.append(SecurityMark(protocol, mechanism, client, test))
    return found


def render_security(marks: Iterable[SecurityMark]) -> str:
    """The security matrix and, per client, the tests that prove its column."""
    cells = {(m.protocol, m.mechanism, m.client) for m in marks}
    proving: dict[str, set[ProvingTest]] = {}
    for mark in marks:
        proving.setdefault(mark.client, set()).add(mark.test)
    lines = [
        "<!-- generated by scripts/compat_matrix.py from the security_matrix marks in"
        " tests/compat; do not edit -->",
        "",
        "| Protocol | SASL mechanism | " + " | ".join(SECURITY_CLIENTS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in SECURITY_CLIENTS) + " |",
    ]
    for protocol, mechanism in SECURITY_ROWS:
        row = [
            "✓" if (protocol, mechanism, client) in cells else "–"
            for client in SECURITY_CLIENTS
        ]
        lines.append(f"| {protocol} | {mechanism} | " + " | ".join(row) + " |")
    lines += [
        "",
        "✓: a test produces with that client there and consumes what it wrote in a"
        " consumer group (subscribe, the group's assignment, a commit); –: no test.",
        "",
    ]
    for client in SECURITY_CLIENTS:
        tests = proving.get(client)
        if tests:
            by_module: dict[str, list[str]] = {}
            for test in sorted(tests):
                by_module.setdefault(test.module, []).append(f"`{test.name}`")
            where = "; ".join(f"{m}: {', '.join(n)}" for m, n in by_module.items())
            lines.append(f"- {client}: {where}")
    return "\n".join(lines) + "\n"


# --- rendering ---------------------------------------------------------------------------


def render(
    marks: Iterable[CompatMark], advertised: Mapping[int, tuple[int, int]]
) -> str:
    """The Markdown table and its notes, between (not including) the page's markers."""
    cells: dict[tuple[str, str], list[ProvingTest]] = {}
    for mark in marks:
        cells.setdefault((mark.api, mark.client), []).append(mark.test)
    rows = sorted({API_KEYS[api] for api, _ in cells} | set(advertised))

    lines = [
        "<!-- generated by scripts/compat_matrix.py from the compat marks in tests/compat;"
        " do not edit -->",
        "",
        "| API (key) | versions | " + " | ".join(map(header, CLIENTS)) + " |",
        "| --- | --- | " + " | ".join("---" for _ in CLIENTS) + " |",
    ]
    notes: list[str] = []
    for key in rows:
        api = api_name(key)
        low_high = advertised.get(key)
        versions = f"{low_high[0]}-{low_high[1]}" if low_high else "not advertised"
        row = [f"{api} ({key})", versions]
        for client in CLIENTS:
            tests = cells.get((api, client))
            if not tests:
                row.append("n/a" if (client, api) in NOT_OFFERED else "–")
                continue
            notes.append(_note(len(notes) + 1, api, client, tests))
            row.append(f"✓ ({len(notes)})")
        lines.append("| " + " | ".join(row) + " |")
    legend = "✓ (n): proven by the tests of note n; n/a: the client cannot send it; –: no test yet."
    lines += ["", legend, ""]
    lines += notes
    return "\n".join(lines) + "\n"


def _note(number: int, api: str, client: str, tests: Sequence[ProvingTest]) -> str:
    by_module: dict[str, list[str]] = {}
    for test in sorted(set(tests)):
        by_module.setdefault(test.module, []).append(f"`{test.name}`")
    where = "; ".join(
        f"{module}: {', '.join(names)}" for module, names in by_module.items()
    )
    return f"- ({number}) {api} × {client}: {where}"


def replace_between_markers(
    text: str, block: str, start_marker: str = START, end_marker: str = END
) -> str:
    """``text`` with ``block`` between the markers, which stay."""
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise MatrixError(f"the page has no {start_marker} ... {end_marker} section")
    return text[: start + len(start_marker)] + "\n" + block + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update the page in place")
    action.add_argument(
        "--check", action="store_true", help="exit 1 if the page is stale"
    )
    parser.add_argument(
        "--tests", type=Path, default=TESTS, help="directory of test modules"
    )
    parser.add_argument(
        "--document", type=Path, default=DOCUMENT, help="the page to update (COMPAT.md)"
    )
    args = parser.parse_args(argv)
    try:
        block = render(collect_all(args.tests), KafkaApis.SUPPORTED)
        if not (args.write or args.check):
            sys.stdout.write(block)
            return 0
        text = args.document.read_text(encoding="utf-8")
        updated = replace_between_markers(text, block)
        security = [
            mark
            for path in sorted(args.tests.glob("test_*.py"))
            for mark in collect_security(path)
        ]
        if SECURITY_START in text or security:
            updated = replace_between_markers(
                updated, render_security(security), SECURITY_START, SECURITY_END
            )
    except (MatrixError, SyntaxError) as exc:
        print(f"compat_matrix: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if updated != text:
            print(
                f"compat_matrix: {args.document} holds a stale matrix;"
                " run `uv run python scripts/compat_matrix.py --write`",
                file=sys.stderr,
            )
            return 1
        return 0
    if updated != text:
        args.document.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
