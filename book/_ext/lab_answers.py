"""The student edition leaves out the code a rebuild lab asks the learner to write.

A rebuild lab (``labs/NN-*/lab.toml``, ``kind = "rebuild"``) replaces objects of
minikafka's (``replaces``: ``"minikafka.net._framing:FrameDecoder"``). Its chapter walks
through minikafka's code, and a listing of exactly those objects would be the answer in
plain sight. In the student edition (the default; ``book/_ext/edition.py``) every code
block that shows one of them, a ``literalinclude``, an ``excerpt``, a copied block or a
cell's output alike, is replaced by a note naming the lab and the file to read after the
attempt; the instructor edition shows them all.

A block shows an object when it holds the line that defines it (``def name(``, ``class
Name``, a module's table's ``NAME: Type = {``), or, for a class, the line of one of its
methods that defines nothing else in minikafka, or defines a function of a name no other
function of minikafka's has (an override in a worked answer, written without the types,
still shows the answer). ``scripts/check_student_edition.py`` applies the same test to
the built pages. A cell whose output *is* an answer drawn from the code (a table printed
from the data a lab has you write) says so with the tag ``lab-N-answer``, and the
student edition leaves out the whole cell, input and output.
And the student edition includes nothing from ``labs/instructor/`` (the answers a
learner's checkout does not have), so it builds there too.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[2]
_DEF = re.compile(r"^(?:async )?def (?P<name>\w+)\(")
_ANSWER_TAG = re.compile(r"^tag_lab-(?P<lab>\d+)-answer$")
_SPACE = re.compile(r"\s+")
INSTRUCTOR = ROOT / "labs" / "instructor"


@attrs.frozen
class Answer:
    lab: int
    target: str
    """``module:Qual.name``, as ``lab.toml`` names it."""
    source: Path
    headers: frozenset[str]
    """Stripped lines that give the object away: its own ``def``/``class`` line and its
    methods' that are unique to it."""


def _module_file(module: str) -> Path | None:
    relative = Path(*module.split(".")).with_suffix(".py")
    for src in sorted((ROOT / "packages").glob("*/src")):
        if (src / relative).exists():
            return src / relative
        package = src / Path(*module.split(".")) / "__init__.py"
        if package.exists():
            return package
    return None


def _defines(node: ast.AST, name: str) -> bool:
    """Whether ``node`` defines ``name``: a function, a class, or a module's table
    assigned once (``TXN_TRANSITIONS: Mapping[...] = {...}``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    return False


def _find(tree: ast.AST, names: list[str]) -> ast.AST | None:
    node: ast.AST | None = tree
    for name in names:
        node = next(
            (
                child
                for child in ast.iter_child_nodes(node)  # type: ignore[arg-type]
                if _defines(child, name)
            ),
            None,
        )
        if node is None:
            return None
    return node


def _header(lines: list[str], node: ast.AST) -> str:
    return lines[node.lineno - 1].strip()  # type: ignore[attr-defined]


def _all_headers() -> tuple[Counter[str], Counter[str]]:
    """How many times each stripped ``def``/``class`` line, and each function name,
    occurs in minikafka."""
    lines: Counter[str] = Counter()
    names: Counter[str] = Counter()
    for path in (ROOT / "packages").glob("*/src/**/*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("def ", "async def ", "class ")):
                lines[stripped] += 1
                if match := _DEF.match(stripped):
                    names[match["name"]] += 1
    return lines, names


def _lab_targets() -> Iterator[tuple[int, str]]:
    for toml in sorted((ROOT / "labs").glob("[0-9][0-9]-*/lab.toml")):
        config = tomllib.loads(toml.read_text(encoding="utf-8"))
        if config.get("kind") != "rebuild":
            continue
        number = int(toml.parent.name[:2])
        for exercise in config.get("exercises", {}).values():
            for target in exercise.get("replaces", {}):
                yield number, target


def answers() -> list[Answer]:
    """Every object a rebuild lab replaces, with the lines that show it."""
    counts, names = _all_headers()
    found = []
    for number, target in _lab_targets():
        module, _, qualname = target.partition(":")
        path = _module_file(module)
        if path is None:
            raise LookupError(f"lab {number}: no module {module} for {target}")
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        node = _find(ast.parse(text), qualname.split("."))
        if node is None:
            raise LookupError(f"lab {number}: {target} is not in {path}")
        headers = {_header(lines, node)}
        functions = [
            child
            for child in ast.walk(node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for function in functions:
            header = _header(lines, function)
            if function is node or counts[header] == 1:
                headers.add(header)
            # A name no other function of minikafka's has gives the object away
            # however it is written: an override in a worked answer, say.
            if names[function.name] == 1:
                headers.add(f"def {function.name}(")
        found.append(Answer(number, target, path, frozenset(headers)))
    return found


def shown(text: str, known: Iterable[Answer]) -> list[Answer]:
    """The answers a block of code (or a page's text) shows."""
    lines = {_SPACE.sub(" ", line.strip()) for line in text.splitlines()}
    defined = {f"def {match['name']}(" for line in lines if (match := _DEF.match(line))}
    return [
        answer
        for answer in known
        if any(
            _SPACE.sub(" ", header) in lines or header in defined
            for header in answer.headers
        )
    ]


def _skeleton(source: str | None) -> bool:
    """Whether a listing comes from a learner's file of a lab (``labs/NN-*/``)."""
    if not source:
        return False
    path = Path(source).resolve()
    labs = ROOT / "labs"
    return path.is_relative_to(labs) and path.relative_to(labs).parts[0][:2].isdigit()


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes
    from edition import edition  # book/_ext is on the extensions' path

    if edition() == "instructor":
        return {"parallel_read_safe": True, "parallel_write_safe": True}
    from sphinx.directives.code import LiteralInclude

    class StudentLiteralInclude(LiteralInclude):
        """Includes nothing from labs/instructor/: a page shows an answer only inside an
        ``{only} instructor`` block, and a learner's checkout has no such file."""

        def run(self) -> list[Any]:
            _, path = self.env.relfn2path(self.arguments[0])
            if INSTRUCTOR in Path(path).resolve().parents:
                return []
            return list(super().run())

    app.add_directive("literalinclude", StudentLiteralInclude, override=True)
    known = answers()

    def note(text: str) -> Any:
        return nodes.note("", nodes.paragraph(text, text))

    def fold(_app: Any, doctree: Any) -> None:
        for cell in list(doctree.findall(nodes.container)):
            tagged = [
                int(match["lab"])
                for name in cell.get("classes") or []
                if (match := _ANSWER_TAG.match(name))
            ]
            if not tagged:
                continue
            files = sorted(
                {str(a.source.relative_to(ROOT)) for a in known if a.lab in tagged}
            )
            folded = note(
                f"This cell shows what lab {', '.join(map(str, tagged))} asks you "
                "to write, so the student edition leaves it out. The source is "
                f"there to read after your attempt: {', '.join(files)}."
            )
            cell.replace_self(folded)
            folded["classes"] = []  # not the cell's (replace_self copies them)
        for block in list(doctree.findall(nodes.literal_block)):
            if _skeleton(block.get("source")):
                continue  # a lab's own file: the signatures the learner fills in
            hits = shown(block.astext(), known)
            if not hits:
                continue
            labs = sorted({hit.lab for hit in hits})
            files = sorted({str(hit.source.relative_to(ROOT)) for hit in hits})
            names = ", ".join(f"`{hit.target.partition(':')[2]}`" for hit in hits)
            text = (
                f"This listing is what lab {', '.join(map(str, labs))} asks you to "
                f"write ({names}), so the student edition leaves it out. The source is "
                f"there to read after your attempt: {', '.join(files)}."
            )
            parent = block.parent
            # A captioned listing is a container of its caption and the block.
            if isinstance(parent, nodes.container) and "literal-block-wrapper" in (
                parent.get("classes") or []
            ):
                parent.replace_self(note(text))
            else:
                block.replace_self(note(text))

    app.connect("doctree-read", fold)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
