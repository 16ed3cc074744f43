"""The ``{excerpt}`` directive: a function's happy path, its asides folded to one line.

A production function carries every error path, and a reader meeting it for the first
time should see the path a request takes when all goes well. Rather than keep a second,
shortened copy of the code in the chapter (which would drift), the source marks what a
first reading can skip with a comment of its own::

    # aside: a topic this broker does not host
    if topic not in self.topics:
        ...

and ``{excerpt}`` shows the object named by ``:pyobject:`` with each marked statement
(the whole statement after the comment and any comments between them, however many
lines, or the one ``elif`` or ``except`` clause after it) replaced by one line,
``...  # a topic this broker does not host``, and without its docstring. In the source
the marker is an ordinary comment that names the branch; the chapter shows the whole
function in a dropdown under the excerpt.

    ```{excerpt} ../packages/broker/src/minikafka/broker/_produce.py
    :pyobject: handle_produce
    :caption: packages/broker/src/minikafka/broker/_produce.py (the happy path)
    ```

``scripts/check_listings.py`` measures excerpts with :func:`excerpt` too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

MARK = re.compile(r"^(\s*)# aside: (\S.*)$")


def _pyobject(
    tree: ast.AST, names: Sequence[str]
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef:
    """The class or function ``names`` names (``Class.method``), as ``sphinx.pycode``
    finds a ``:pyobject:``."""
    node = tree
    for name in names:
        node = next(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and child.name == name
        )
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    return node


def pyobject_span(tree: ast.AST, names: Sequence[str]) -> tuple[int, int]:
    """The first and last line (1-based) of the object ``names`` names, its decorators
    included."""
    node = _pyobject(tree, names)
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    assert node.end_lineno is not None
    return first, node.end_lineno


def _docstring_lines(tree: ast.AST, names: Sequence[str]) -> range:
    first = _pyobject(tree, names).body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return range(first.lineno, (first.end_lineno or first.lineno) + 1)
    return range(0)


def excerpt(text: str, pyobject: str, where: str = "<source>") -> list[str]:
    """The lines of ``pyobject`` in ``text`` with every ``# aside:`` statement folded.

    Raises ValueError naming ``where`` and the line when a marker is not followed, at
    its own indentation, by the statement it folds."""
    tree = ast.parse(text)
    lines = text.splitlines()
    first, last = pyobject_span(tree, pyobject.split("."))
    # Where each foldable thing that starts on a line ends: a statement, or one clause
    # (an ``elif`` branch, an ``except`` handler) of the statement it belongs to.
    ends: dict[int, int] = {}
    clause_ends: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            ends[node.lineno] = node.end_lineno or node.lineno
        if isinstance(node, ast.If):
            clause_ends[node.lineno] = node.body[-1].end_lineno or node.lineno
        if isinstance(node, ast.ExceptHandler):
            clause_ends[node.lineno] = node.end_lineno or node.lineno
    # The docstring is the whole listing's: the excerpt goes straight to the code.
    skip = _docstring_lines(tree, pyobject.split("."))
    shown: list[str] = []
    at = first  # 1-based
    while at <= last:
        if at in skip:
            at += 1
            continue
        line = lines[at - 1]
        mark = MARK.match(line)
        if mark is None:
            shown.append(line)
            at += 1
            continue
        indent, label = mark.groups()
        # Comments between the marker and its statement belong to what is folded.
        while at < len(lines) and lines[at].startswith(indent + "#"):
            at += 1
        following = lines[at] if at < len(lines) else ""
        head = following[len(indent) :] if following.startswith(indent) else ""
        if head.startswith(("elif ", "except")) and at + 1 in clause_ends:
            end = clause_ends[at + 1]
        elif head[:1].strip() and at + 1 in ends:
            end = ends[at + 1]
        else:
            raise ValueError(
                f"{where}:{at}: '# aside:' must stand on the line before the statement "
                "(or the elif or except clause) it folds, at its indentation"
            )
        shown.append(f"{indent}...  # {label}")
        at = end + 1
    return shown


def setup(app: Any) -> dict[str, Any]:
    # Sphinx and docutils are imported here: the function above is used without them
    # (by scripts/check_listings.py and its tests).
    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective

    class Excerpt(SphinxDirective):
        required_arguments = 1
        has_content = False
        option_spec: ClassVar[dict[str, Any]] = {
            "pyobject": directives.unchanged_required,
            "caption": directives.unchanged,
        }

        def run(self) -> list[Any]:
            _, path = self.env.relfn2path(self.arguments[0])
            self.env.note_dependency(path)
            source = Path(path)
            try:
                shown = excerpt(
                    source.read_text(encoding="utf-8"),
                    self.options["pyobject"],
                    where=self.arguments[0],
                )
            except (ValueError, StopIteration, OSError) as failure:
                message = f"excerpt {self.arguments[0]}: {failure!r}"
                return [self.state.document.reporter.error(message, line=self.lineno)]
            code = "\n".join(shown)
            block = nodes.literal_block(code, code, language="python")
            block["source"] = path
            self.set_source_info(block)
            caption = self.options.get("caption")
            if not caption:
                return [block]
            container = nodes.container(
                "", literal_block=True, classes=["literal-block-wrapper"]
            )
            title = nodes.caption(caption, caption)
            self.set_source_info(title)
            container += title
            container += block
            return [container]

    app.add_directive("excerpt", Excerpt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
