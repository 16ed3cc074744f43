"""Every core hands its work back as one ``minikafka.common.CoreResult``
(ARCHITECTURE.md, "Cores and shells", rule 3).

The cores are the modules the "... do not import trio" contracts of ``pyproject.toml``
name (the same list ``test_core_time.py`` reads). The classes a
shell drives there are the cores: each class with a timer (``next_deadline``/``on_timer``)
and those of :data:`DRIVEN` (driven by requests alone); the other classes in those
modules are their parts (a manager, a heap, a purgatory), which answer their owner in
whatever shape it needs. A public method of a core that takes ``now`` is a driving call. It may
return a ``CoreResult`` (the work: records, replies, messages), nothing, or the answer
to a question (``bool``, a number, one value such as a ``QuorumInfo``); it may not
return a batch of work of another shape (a list or tuple of actions, requests or
responses, an ``Output``), which would be a second dialect for the shell to learn. And
no core has a pull channel for work (a ``take_*`` method the shell polls for what to
send or write): that work belongs in the result of the call that made it.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import typing
from collections.abc import Iterator
from types import ModuleType

import pytest

from minikafka.common import CoreResult
from tests.layout.test_core_time import core_modules, module_files, shell_modules

BATCHES = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.Iterable,
    collections.abc.Iterator,
    collections.abc.Collection,
)
"""Return types that are a batch: work in some shape other than ``CoreResult``."""


DRIVEN = frozenset(
    {
        "minikafka.controller._controller.QuorumController",
        "minikafka.coordination.group._coordinator.GroupCoordinator",
        "minikafka.replication._replica_manager.ReplicaManager",
        "minikafka.replication._fetcher.ReplicaFetcher",
        "minikafka.raft._base.RaftNodeBase",
        "minikafka.client._sender.Sender",
        "minikafka.client._fetcher.Fetcher",
        "minikafka.coordination.member._consumer_coordinator.ConsumerCoordinator",
    }
)
"""The cores a shell drives that have no timer of their own (or inherit it)."""


def _modules() -> Iterator[ModuleType]:
    shells = shell_modules()
    for module in core_modules():
        for name, _path in module_files(module):
            if name.endswith("__main__") or name in shells:
                continue
            yield importlib.import_module(name)


def _returns(function: typing.Any, module: ModuleType) -> typing.Any:
    try:
        return typing.get_type_hints(function, vars(module)).get("return")
    except NameError:
        # An annotation naming a type imported only for the type checker: the text.
        return inspect.signature(function).return_annotation


def _is_batch(annotation: typing.Any) -> bool:
    """Whether the annotation is (or, in a union, may be) a collection of things."""
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip()
        return head in {"list", "tuple", "set", "frozenset", "Sequence", "Iterable"}
    origin = typing.get_origin(annotation)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_is_batch(arg) for arg in typing.get_args(annotation))
    if origin is CoreResult or annotation is CoreResult:
        return False
    target = origin if origin is not None else annotation
    return isinstance(target, type) and issubclass(target, BATCHES)


def driving_calls() -> Iterator[tuple[str, typing.Any]]:
    """``(module.Class.method, return annotation)`` for every public method of a core
    that takes ``now``, and every ``take_*`` method of one."""
    for module in _modules():
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__):
                continue
            timed = hasattr(cls, "on_timer") and hasattr(cls, "next_deadline")
            if not (timed or f"{module.__name__}.{cls.__name__}" in DRIVEN):
                continue
            for name, member in vars(cls).items():
                if name.startswith("_") or not inspect.isfunction(member):
                    continue
                where = f"{module.__name__}.{cls.__name__}.{name}"
                if name.startswith("take_"):
                    yield where, "a pull channel"
                elif "now" in inspect.signature(member).parameters:
                    yield where, _returns(member, module)


def test_every_driving_call_of_a_core_returns_a_core_result() -> None:
    calls = list(driving_calls())
    assert len(calls) > 20, "the cores' driving calls were not found"
    wrong = [
        f"{where} -> {returns}"
        for where, returns in calls
        if returns == "a pull channel" or _is_batch(returns)
    ]
    assert wrong == []


def test_the_driven_cores_named_exist() -> None:
    for name in DRIVEN:
        module, cls = name.rsplit(".", 1)
        found = getattr(importlib.import_module(module), cls, None)
        assert inspect.isclass(found), name


@pytest.mark.parametrize(
    ("annotation", "batch"),
    [
        (CoreResult[int, str, bytes], False),
        (CoreResult, False),
        (bool, False),
        (float | None, False),
        (list[int], True),
        (tuple[int, CoreResult[int, int, int]], True),
        (collections.abc.Sequence[str], True),
        (int | list[str], True),
        ("list[Action]", True),
        ("QuorumInfo | None", False),
    ],
)
def test_the_check_tells_a_batch_from_a_result_or_an_answer(
    annotation: typing.Any, batch: bool
) -> None:
    assert _is_batch(annotation) is batch
