"""The reader build: the book with only the cells that need nothing but Python.

``make book`` builds the book for a reader: a fresh clone with Python and nothing else,
a few minutes. Cells that need Java (Spark), ZooKeeper or a cluster of broker processes
are not executed there; in place of their output the page says that the cell runs in the
full build (``make book FULL=1``, and ``make test``), which executes every cell.
``MINIKAFKA_BOOK=reader`` turns the reader build on; anything else (or unset) is the full
build, in which this extension changes nothing.

Which cells, decided per page as the notebook is read (MyST-NB's reader for MyST
markdown, wrapped here), before anything runs:

1. a cell tagged ``needs-java``, ``needs-zookeeper``, ``needs-cluster`` or ``needs-reference``;
2. a cell whose source uses what starts one of them (``NEEDS_PATTERNS``): a Spark
   session, a lab's scenario run, a ``ProcessCluster`` or ``BrokerProcess``, a
   ``ZooKeeperServer``;
3. a cell that reads a name (a variable, an import) bound by a cell left out and not
   bound again since by a cell that runs: ``broker.stop()`` after the cell that started
   ``broker``.

Such a cell gets nbclient's ``skip-execution`` tag and, as its output, the note. What
these rules miss cannot pass silently: every executed page starts with a hidden cell
(book/_ext/reader_guard.py) that makes the kernel refuse to start Java, ZooKeeper or a
broker or controller process, failing the build with the tag to add.

    python book/_ext/reader.py [PAGE.md ...]   # which cells the reader build leaves out
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import nbformat

MODE_VARIABLE = "MINIKAFKA_BOOK"
SKIP_TAG = "skip-execution"  # nbclient's: the cell is not sent to the kernel
GUARD = Path(__file__).with_name("reader_guard.py")

# What a cell's source uses that needs more than Python, and what it needs.
NEEDS_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(spark_session|SparkSession|pyspark|read_events)\b"), "java"),
    (re.compile(r"\bZooKeeperServer\b"), "zookeeper"),
    (re.compile(r"\b(KafkaNode|run_tool)\b"), "reference"),
    (
        re.compile(r"\b(ProcessCluster|BrokerProcess|scenario_run|run_standalone)\b"),
        "cluster",
    ),
)
WHAT = {
    "java": "Java (Spark)",
    "zookeeper": "a ZooKeeper server",
    "cluster": "broker processes",
    "reference": "Apache Kafka's jars",
}


def reader_mode() -> bool:
    return os.environ.get(MODE_VARIABLE, "") == "reader"


def note(needs: str) -> str:
    """The note in place of a cell's output; ``needs`` as ``cells_to_skip`` gives it."""
    what = " and ".join(WHAT[n] for n in needs.split(", "))
    return (
        f"*This cell runs in the full build (`make book FULL=1`, or `make test`): it "
        f"needs {what}, which the reader build (`make book`) leaves out.*"
    )


def _tags(cell: Any) -> list[str]:
    tags: list[str] = cell.setdefault("metadata", {}).setdefault("tags", [])
    return tags


class _Names(ast.NodeVisitor):
    """The names a cell binds at its top level and the names it reads anywhere."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.imported: set[str] = set()  # the part of ``bound`` that imports bind
        self.read: set[str] = set()
        self._depth = 0

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.read.add(node.id)
        elif self._depth == 0:
            self.bound.add(node.id)

    def _alias(self, node: ast.Import | ast.ImportFrom) -> None:
        if self._depth == 0:
            for alias in node.names:
                self.imported.add(alias.asname or alias.name.split(".")[0])
            self.bound |= self.imported

    visit_Import = _alias
    visit_ImportFrom = _alias

    def _scope(self, node: ast.AST) -> None:
        if self._depth == 0 and isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            self.bound.add(node.name)
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope
    visit_ClassDef = _scope
    visit_Lambda = _scope
    visit_ListComp = _scope
    visit_SetComp = _scope
    visit_DictComp = _scope
    visit_GeneratorExp = _scope


def _names(source: str) -> _Names | None:
    # IPython's magics and shell escapes are not Python: such a cell is judged by its
    # patterns only.
    lines = [
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    ]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    names = _Names()
    names.visit(tree)
    return names


def cells_to_skip(sources: Iterable[tuple[str, list[str]]]) -> dict[int, str]:
    """For code cells given as (source, tags) in page order: the index of each cell the
    reader build leaves out, with what it needs ("java", "zookeeper", "cluster", or
    several joined by ", "), by the rules of this module's docstring."""
    skipped: dict[int, str] = {}
    tainted: dict[str, set[str]] = {}  # a name bound by a cell left out -> its needs
    defined: set[str] = set()  # names bound by cells that run
    for index, (source, tags) in enumerate(sources):
        needs = {t.removeprefix("needs-") for t in tags if t.startswith("needs-")}
        for need in needs - WHAT.keys():
            raise ValueError(f"unknown tag needs-{need} (known: {', '.join(WHAT)})")
        needs |= {n for p, n in NEEDS_PATTERNS if p.search(source)}
        names = _names(source)
        if not needs and names is not None:
            for name in names.read - names.bound:
                needs |= tainted.get(name, set())
        if needs:
            skipped[index] = ", ".join(n for n in WHAT if n in needs)
            if names is not None:
                # An import a cell that runs made already binds the same module again.
                for name in names.bound - (names.imported & defined):
                    tainted[name] = needs
        elif names is not None:
            defined |= names.bound
            for name in names.bound:
                tainted.pop(name, None)
    return skipped


def _node(fields: dict[str, Any]) -> Any:
    """``fields`` as nbformat's attribute dictionary, as a read notebook's cells are."""
    return nbformat.from_dict(fields)  # type: ignore[no-untyped-call]


def prepare(notebook: nbformat.NotebookNode) -> dict[int, str]:
    """Turn ``notebook`` (as read, before execution) into its reader build: the cells
    left out are tagged ``skip-execution`` and get the note as their output, and the
    guard is put first. Returns what ``cells_to_skip`` found, by index among the code
    cells."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if not code:
        return {}
    skipped = cells_to_skip((cell.source, _tags(cell)) for cell in code)
    for index, needs in skipped.items():
        cell = code[index]
        _tags(cell).append(SKIP_TAG)
        text = note(needs)
        output = {"output_type": "display_data", "metadata": {}}
        output["data"] = {"text/markdown": text, "text/plain": text}
        cell.outputs = [_node(output)]
    guard = _node(
        {
            "cell_type": "code",
            "id": "reader-guard",
            "source": GUARD.read_text(encoding="utf-8"),
            "metadata": {"tags": ["remove-cell"]},
            "outputs": [],
            "execution_count": None,
        }
    )
    first = notebook.cells.index(code[0])
    notebook.cells.insert(first, guard)
    source_map: list[int] | None = notebook.metadata.get("source_map")
    if source_map is not None:  # MyST-NB's: each cell's line in the page, in cell order
        source_map.insert(first, source_map[first])
    return skipped


def setup(app: Any) -> dict[str, Any]:
    if reader_mode():
        from myst_nb.core import read  # type: ignore[import-untyped]

        original: Callable[..., nbformat.NotebookNode] | None = getattr(
            read, "read_myst_markdown_notebook", None
        )
        if original is None:  # MyST-NB moved its reader: fail, never build unguarded
            raise RuntimeError(
                "reader build: myst_nb.core.read has no MyST reader to wrap"
            )

        def read_for_reader(*args: Any, **kwargs: Any) -> nbformat.NotebookNode:
            notebook = original(*args, **kwargs)
            prepare(notebook)
            return notebook

        read.read_myst_markdown_notebook = read_for_reader
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(pages: list[str]) -> int:
    """Prints, for each page, the cells the reader build leaves out."""
    from myst_nb.core.read import read_myst_markdown_notebook  # type: ignore[import-untyped]
    from myst_parser.config.main import MdParserConfig

    book = Path(__file__).resolve().parent.parent
    paths = [Path(p) for p in pages] or sorted(book.glob("*.md")) + sorted(
        book.glob("labs/*.md")
    )
    for path in paths:
        text = path.read_text(encoding="utf-8")
        notebook = read_myst_markdown_notebook(text, MdParserConfig(), path=str(path))
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        skipped = cells_to_skip((cell.source, _tags(cell)) for cell in code)
        if skipped:
            print(
                f"{path.relative_to(book) if path.is_absolute() else path}: "
                f"{len(skipped)} of {len(code)} cells left out"
            )
            for index, needs in skipped.items():
                first = code[index].source.strip().splitlines()[0][:60]
                print(f"  cell {index + 1:2} needs {needs:9} {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
