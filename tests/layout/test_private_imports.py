"""No package reaches into another package's private modules.

A package's public API is its ``__init__`` (and the public modules it names, such as
``minikafka.raft.wire`` or a ``testing`` module); everything whose dotted name has a
part starting with ``_`` (``_segment``, ``__main__``) is the package's own. The rule
covers the packages' source (``packages/*/src``) and the labs' harness (``labs/src``):
an import there of another package's private module, or of a private name from it,
fails this test. A package's own tests, the cross-package suites under ``tests/``, the
benchmarks, the book and the labs' exercises may reach into private modules to test or
show them. (import-linter cannot say "any module whose name starts with ``_``": its
wildcards stand for whole names only, so the rule is this walk over the source.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def source_roots(root: Path) -> list[Path]:
    """The directories holding ``minikafka/<package>/``: each package's ``src``, and the
    labs' harness."""
    return [*sorted(root.glob("packages/*/src")), root / "labs" / "src"]


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(
    tree: ast.Module, module: str, is_package: bool
) -> Iterator[tuple[int, str]]:
    """Every dotted name the module imports, relative imports resolved; a
    ``from X import y`` yields ``X.y`` (``y`` may be a module or a name in X)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                parts = base + (node.module.split(".") if node.module else [])
            else:
                parts = node.module.split(".") if node.module else []
            for alias in node.names:
                yield node.lineno, ".".join([*parts, alias.name])


def violations(root: Path) -> list[str]:
    """``path:line: imports NAME`` for each import of another package's private part."""
    found = []
    for src in source_roots(root):
        for path in sorted(src.glob("minikafka/*/**/*.py")):
            module = module_name(src, path)
            owner = module.split(".")[1]
            tree = ast.parse(path.read_text(), str(path))
            names = imported(tree, module, path.name == "__init__.py")
            for line, name in sorted(names):
                parts = name.split(".")
                if parts[0] != "minikafka" or len(parts) < 3 or parts[1] == owner:
                    continue
                if any(part.startswith("_") for part in parts[2:]):
                    where = path.relative_to(root)
                    found.append(f"{where}:{line}: imports {name}")
    return found


def test_no_package_imports_another_packages_private_modules() -> None:
    assert violations(ROOT) == []


def test_a_planted_private_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "packages" / "broker" / "src" / "minikafka" / "broker"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from ._own import x as x\n")
    (pkg / "_own.py").write_text(
        "from minikafka.broker._other import y\n"  # its own: allowed
        "from minikafka.raft import wire\n"  # a public module: allowed
        "from minikafka.raft._messages import Message\n"
        "import minikafka.log._tool\n"
        "from minikafka.tools import _connection\n"
        "from minikafka.raft.wire import _private_name\n"
        "from ..zk.__main__ import main\n"
    )
    (tmp_path / "labs" / "src").mkdir(parents=True)
    where = "packages/broker/src/minikafka/broker/_own.py"
    assert violations(tmp_path) == [
        f"{where}:3: imports minikafka.raft._messages.Message",
        f"{where}:4: imports minikafka.log._tool",
        f"{where}:5: imports minikafka.tools._connection",
        f"{where}:6: imports minikafka.raft.wire._private_name",
        f"{where}:7: imports minikafka.zk.__main__.main",
    ]
