"""The optional mypyc build: the hot, typed, sans-IO modules compiled to C extensions.

The source tree stays pure Python, which is what the book shows and what ``make run``
runs. This script copies the packages that hold the compiled modules (``minikafka.log``
and ``minikafka.net``, each a regular package, so each must come wholly from one
directory) into ``build/mypyc/`` and compiles the modules of :data:`COMPILED` there with
mypyc (mypy's compiler); the copy of every other module stays Python. ``minikafka``
itself is a namespace package, so with ``build/mypyc`` first on ``PYTHONPATH`` (what
``MINIKAFKA_BUILD=mypyc`` makes the Makefile set) ``minikafka.log`` and ``minikafka.net``
come from the build and every other package from the workspace.

    python scripts/build_mypyc.py          # build (make mypyc)
    python scripts/build_mypyc.py --check  # is the build the one imported, and current?

``--check`` fails when a compiled module is imported from its ``.py`` (the build is not
on ``sys.path``) or when the copy no longer matches the source (rebuild).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.machinery
import json
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "mypyc"
MANIFEST = BUILD / "manifest.json"

PACKAGES = {"minikafka.log": "packages/log/src", "minikafka.net": "packages/net/src"}
"""The packages copied into the build, and the source directory each comes from."""

COMPILED = (
    # The record batch header and its CRC check. The record codec (_records) stays
    # Python: mypyc 2.4 compiles ``raise ... from e`` without its ``from`` (no
    # ``__cause__``), and the log tool's messages read the cause.
    "minikafka.log._batch",
    # The validator's per-record walk and its runs of same-shape records. The validator
    # itself (_validator) stays Python: it defines errors with class attributes, which a
    # compiled subclass of a Python class loses (see _record_errors).
    "minikafka.log._record_checks",
    "minikafka.log._record_runs",
    # The size-prefix framing and the request header codec.
    "minikafka.net._framing",
    "minikafka.net._headers",
    # The bounds check's helpers; each schema's walk is generated at run time and
    # exec'd, so it stays interpreted (see the README).
    "minikafka.net._bounds",
)
"""The modules compiled with mypyc, each as the source has it."""

# The workspace's packages that the compiled ones import, for mypy's types.
_TYPES_FROM = ("packages/common/src", "packages/trace/src", "packages/security/src")


def module_path(name: str) -> Path:
    return Path(*name.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_digests() -> dict[str, str]:
    """Every file of the copied packages, by path inside the build, with its digest."""
    digests = {}
    for package, src in PACKAGES.items():
        top = ROOT / src / Path(*package.split("."))
        for path in sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                if path.suffix in (".so", ".pyd", ".c"):
                    continue
                digests[str(path.relative_to(ROOT / src))] = _digest(path)
    return digests


def build() -> None:
    """Copy the packages into the build and compile :data:`COMPILED` in place there."""
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        sys.exit(
            "build_mypyc: Python.h is missing (Debian: apt-get install python3-dev); "
            "mypyc's C needs the interpreter's headers"
        )
    started = time.perf_counter()
    BUILD.mkdir(parents=True, exist_ok=True)
    for package, src in PACKAGES.items():
        inside = Path(*package.split("."))
        target = BUILD / inside
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(
            ROOT / src / inside,
            target,
            ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"),
        )
    # mypy resolves minikafka.log and minikafka.net to the copies, the rest to the
    # workspace; the compiled code is checked as strictly as the source is.
    config = BUILD / "mypy.ini"
    config.write_text(
        "[mypy]\nstrict = True\npython_version = 3.11\nnamespace_packages = True\n"
        "explicit_package_bases = True\nmypy_path = "
        + ":".join([str(BUILD), *(str(ROOT / p) for p in _TYPES_FROM)])
        + "\n"
    )
    from mypyc.build import mypycify  # mypy's compiler: a dev dependency
    from setuptools import Distribution  # type: ignore[import-untyped]

    os.chdir(BUILD)
    extensions = mypycify(
        ["--config-file", str(config), *(str(module_path(m)) for m in COMPILED)],
        opt_level="3",
        target_dir=str(BUILD / "c"),
    )
    dist = Distribution({"name": "minikafka-mypyc", "ext_modules": extensions})
    dist.script_args = [
        "build_ext",
        "--inplace",
        "--build-temp",
        str(BUILD / "temp"),
        "--parallel",
        str(os.cpu_count() or 1),
    ]
    dist.parse_command_line()
    dist.run_commands()
    MANIFEST.write_text(
        json.dumps({"compiled": list(COMPILED), "sources": source_digests()}, indent=1)
        + "\n"
    )
    print(
        f"build_mypyc: {len(COMPILED)} modules compiled into {BUILD} "
        f"in {time.perf_counter() - started:.0f} s"
    )


def check() -> list[str]:
    """What is wrong with the build as this interpreter imports it (empty: nothing)."""
    if not MANIFEST.exists():
        return [f"no mypyc build in {BUILD} (make mypyc)"]
    problems = []
    manifest = json.loads(MANIFEST.read_text())
    if manifest["sources"] != source_digests():
        problems.append("the build's copy differs from the source (make mypyc)")
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in manifest["compiled"]:
        where = str(importlib.import_module(name).__file__)
        if not where.endswith(suffixes) or not where.startswith(str(BUILD)):
            problems.append(f"{name} is imported from {where}, not the mypyc build")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="fail unless the compiled modules are imported from a current build",
    )
    args = parser.parse_args()
    if not args.check:
        build()
        return
    problems = check()
    for problem in problems:
        print(f"build_mypyc: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"build_mypyc: the mypyc build in {BUILD} is current and imported")


if __name__ == "__main__":
    main()
