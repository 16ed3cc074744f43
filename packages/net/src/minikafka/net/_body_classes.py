"""The kio classes a handler accepts, named once and imported only when a request needs one.

kio generates one class per API version, and a broker that served every version of every
API by importing each class would pay for hundreds of dataclasses at start-up (about half
a second of every broker and tool process) while a client only ever sends a few. So a
module of request bodies names the classes of the versions it serves once, as a type
alias written as a string over kio's modules, imported for the type checker only::

    if TYPE_CHECKING:
        from kio.schema.produce.v3 import request as produce_v3
        ...
    ProduceRequest: TypeAlias = "produce_v3.ProduceRequest | produce_v4.ProduceRequest"
    PRODUCE: tuple[type[ProduceRequest], ...] = body_classes(ProduceRequest)

mypy reads the alias as the Union it spells, and narrows ``isinstance(body, PRODUCE)`` to
it. At run time the alias is that string, and :func:`body_classes` reads it: each
``<api>_v<N>.<Class>`` names ``kio.schema.<api>.v<N>.request``'s class, which the
decoder imported when a request of that version arrived. The tuple it returns holds one
stand-in class whose ``isinstance`` compares an object's class by module and name, so
nothing is imported to check a body.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeIs

B = TypeVar("B")

_MEMBER = re.compile(r"(?P<api>[a-z_]+)_v(?P<version>\d+)\.(?P<name>\w+)")


class _MatchByName(type):
    """The metaclass of :func:`body_classes`' stand-ins: ``isinstance`` by name."""

    names: frozenset[tuple[str, str]]
    seen: dict[type, bool]
    """Each class asked about, answered once: a produce or fetch asks per request."""

    def __instancecheck__(cls, instance: object) -> bool:
        kind = type(instance)
        found = cls.seen.get(kind)
        if found is None:
            found = cls.seen[kind] = (kind.__module__, kind.__qualname__) in cls.names
        return found

    def __repr__(cls) -> str:
        return f"<body classes {cls.__qualname__}>"


def body_classes(alias: object) -> tuple[type[Any], ...]:
    """A tuple for ``isinstance`` and :meth:`Request.body_as`: true of an instance of
    any class the string ``alias`` names (``"produce_v3.ProduceRequest | ..."``)."""
    if not isinstance(alias, str):
        raise TypeError(f"expected the alias's string, got {alias!r:.80}")
    members = [m.strip() for m in alias.split("|")]
    names = set()
    for member in members:
        match = _MEMBER.fullmatch(member)
        if match is None:
            raise ValueError(f"{member!r}: expected <api>_v<N>.<Class>")
        module = f"kio.schema.{match['api']}.v{match['version']}.request"
        names.add((module, match["name"]))
    stand_in = _MatchByName(members[0].split(".")[-1], (), {})
    stand_in.names = frozenset(names)
    stand_in.seen = {}
    return (stand_in,)


def is_body(body: object, classes: tuple[type[B], ...]) -> TypeIs[B]:
    """``isinstance(body, classes)``, narrowing both ways for mypy: ``classes`` is a tuple
    of stand-ins typed as the alias's classes, and ``isinstance`` against a tuple only
    narrows where it is true; where a handler's other branch reads the fields of the
    remaining versions (``body.member_id`` before LeaveGroup v3), it asks this."""
    return isinstance(body, classes)


def load_body_classes(classes: tuple[type[Any], ...]) -> list[type[Any]]:
    """The kio classes :func:`body_classes` stands for, imported, by module and name:
    what a test reads to check a module's aliases against kio and the API table."""
    loaded = []
    for stand_in in classes:
        names = getattr(stand_in, "names", None)
        if names is None:  # a real class
            loaded.append(stand_in)
            continue
        for module, name in sorted(names, key=_by_version):
            loaded.append(getattr(importlib.import_module(module), name))
    return loaded


def _by_version(name: tuple[str, str]) -> tuple[str, int, str]:
    module, qualname = name
    api, _, version = module.removesuffix(".request").rpartition(".v")
    return api, int(version), qualname
