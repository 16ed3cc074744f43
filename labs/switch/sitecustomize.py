"""The labs' switch: put a learner's code in place of minikafka's, in any process.

A build-the-mechanism lab (``labs/NN-*/lab.toml``) names what the learner writes and
what it replaces: ``minikafka.net._framing:FrameDecoder`` is replaced by
``FrameDecoder`` of the learner's ``labs/01-framing/framing.py``. ``python -m
minikafka.labs`` turns that into two environment variables, and every Python process
started with them (``make run LAB=1``, the lab's tests, the brokers those tests start)
runs the learner's code:

- ``PYTHONPATH`` begins with this directory, so Python imports this module at start-up
  (``site`` imports ``sitecustomize``);
- ``MINIKAFKA_LAB_SWITCH`` holds the replacements, ``target=file:attribute`` separated
  by ``;``, where ``target`` is ``module:name`` or ``module:Class.method``.

When the target module has run, the learner's file is loaded and its attribute set in
the target's place, before any other module can import the original: a package's
``__init__`` that does ``from ._framing import FrameDecoder`` gets the learner's class.
Nothing here imports minikafka, and without the variable nothing happens.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

SWITCH_ENV = "MINIKAFKA_LAB_SWITCH"


def parse(spec: str) -> dict[str, list[tuple[str, Path, str]]]:
    """``target=file:attribute;...`` -> module -> [(name in it, file, attribute)]."""
    found: dict[str, list[tuple[str, Path, str]]] = {}
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        target, eq, source = item.partition("=")
        module, colon, name = target.partition(":")
        path, colon2, attribute = source.rpartition(":")
        if not (eq and colon and colon2 and module and name and path and attribute):
            raise ValueError(
                f"{SWITCH_ENV}: {item!r} is not module:name=file:attribute"
            )
        found.setdefault(module, []).append((name, Path(path), attribute))
    return found


def load_file(path: Path) -> ModuleType:
    """The learner's file as a module of its own (once per process)."""
    name = "minikafka_lab_" + "".join(c if c.isalnum() else "_" for c in str(path))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{SWITCH_ENV}: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # attrs and dataclasses look a class's module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


class _Replacing(importlib.abc.Loader):
    """Runs the real module, then sets the learner's objects in it."""

    def __init__(
        self, real: importlib.abc.Loader, items: Sequence[tuple[str, Path, str]]
    ) -> None:
        self.real = real
        self.items = items

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def __getattr__(self, name: str) -> object:
        # get_source, get_filename, is_package...: the real loader's, for tracebacks.
        return getattr(self.real, name)

    def exec_module(self, module: ModuleType) -> None:
        self.real.exec_module(module)
        for name, path, attribute in self.items:
            try:
                value = getattr(load_file(path), attribute)
            except ImportError as exc:
                # The learner's file is loaded as the module it replaces finishes:
                # it can import what that module imports, not what imports it.
                target = module.__name__
                raise ImportError(
                    f"{path} is loaded in place of {target}:{name}; it may "
                    f"import what {target} imports, not what imports it ({exc})"
                ) from exc
            owner: object = module
            *outer, last = name.split(".")
            for part in outer:
                owner = getattr(owner, part)
            if not hasattr(owner, last):
                raise AttributeError(f"{SWITCH_ENV}: {module.__name__} has no {name}")
            setattr(owner, last, value)


class Switch(importlib.abc.MetaPathFinder):
    """Finds the targets' real specs with the other finders and swaps their loader."""

    def __init__(self, replacements: dict[str, list[tuple[str, Path, str]]]) -> None:
        self.replacements = replacements

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        items = self.replacements.get(fullname)
        if items is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Replacing(spec.loader, items)
                return spec
        return None


def install(spec: str) -> Switch:
    switch = Switch(parse(spec))
    sys.meta_path.insert(0, switch)
    return switch


if os.environ.get(SWITCH_ENV):
    try:
        install(os.environ[SWITCH_ENV])
    except ValueError as exc:
        # site reports an exception in sitecustomize and goes on: the process would run
        # minikafka's own code while the learner believes theirs is checked. Stop it.
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
