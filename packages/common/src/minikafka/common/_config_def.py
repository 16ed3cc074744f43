"""ConfigDef: one way for every package to declare its configuration keys (Kafka's ConfigDef).

Kafka declares each key once, with its type, default, validator and documentation
(``ConfigDef.define(name, type, default, validator, importance, doc)``), and parses a
``Properties`` against the declarations. Here the same, in two parts:

- a :class:`ConfigKey` is one key: its name, :class:`ConfigType` (or a parser of the
  package's own, for values such as listener lists), the field of the package's config
  class it sets, a validator, its documentation, and its *synonyms*: other names that set
  the same field with lower precedence (``log.segment.bytes`` for the topic config
  ``segment.bytes``; ``log.retention.hours`` in hours for ``retention.ms``), as Kafka's
  ``ServerTopicConfigSynonyms`` lists them;
- a :class:`ConfigDef` is a package's keys. It parses a properties mapping into the
  fields it sets (:meth:`ConfigDef.parse`, every given name checked, errors naming the
  key) and lists its names, so that the broker assembles ``KafkaConfig`` from the
  packages' declarations and rejects a key none of them declares.

Defaults stay where the code reads them: the fields of the package's frozen attrs config
class (``LogConfig()``, ``NetConfig()``); :meth:`ConfigDef.apply` evolves such a value.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import attrs

from ._errors import ConfigError

C = TypeVar("C")

Parser = Callable[[str, str], object]
"""``(key, raw) -> value``: a parser of the package's own; raises ConfigError naming ``key``."""
Validator = Callable[[str, Any], None]
"""``(key, value)``: raises ConfigError naming ``key`` if ``value`` is not allowed."""

_INT_BOUNDS = {"SHORT": 15, "INT": 31, "LONG": 63}


class ConfigType(enum.Enum):
    """Kafka's ``ConfigDef.Type``s that minikafka's keys use."""

    BOOLEAN = "boolean"
    STRING = "string"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"

    def parse(self, key: str, raw: str) -> object:
        """``raw`` (already stripped) as a value of this type, or ConfigError naming ``key``."""
        if self is ConfigType.BOOLEAN:
            if raw.lower() not in ("true", "false"):
                raise ConfigError(key, f"{raw!r} is neither true nor false")
            return raw.lower() == "true"
        if self is ConfigType.STRING:
            return raw
        if self is ConfigType.LIST:
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        if self is ConfigType.DOUBLE:
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(key, f"{raw!r} is not a number") from None
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(key, f"{raw!r} is not an integer") from None
        bits = _INT_BOUNDS[self.name]
        if not -(2**bits) <= value < 2**bits:
            # Java's Short/Integer/Long: a value that does not fit is not of the type.
            raise ConfigError(key, f"{value} is outside [{-(2**bits)}, {2**bits - 1}]")
        return value


# --- validators (Kafka's Range, ValidString, ValidList) -----------------------------------


def at_least(minimum: float) -> Validator:
    """Kafka's ``Range.atLeast``."""

    def check(key: str, value: Any) -> None:
        if value < minimum:
            raise ConfigError(key, f"{value} is below the minimum {minimum}")

    return check


def between(minimum: float, maximum: float, *also: int) -> Validator:
    """Kafka's ``Range.between``; ``also`` lists sentinels allowed outside it (-1: default)."""

    def check(key: str, value: Any) -> None:
        if value not in also and not minimum <= value <= maximum:
            raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")

    return check


def one_of(*allowed: str) -> Validator:
    """Kafka's ``ValidString.in``."""

    def check(key: str, value: Any) -> None:
        if value not in allowed:
            raise ConfigError(key, f"{value!r} is not one of {', '.join(allowed)}")

    return check


def matches(pattern: str, what: str) -> Validator:
    """A string matching ``pattern`` entirely; ``what`` says what was expected."""
    compiled = re.compile(pattern)

    def check(key: str, value: Any) -> None:
        if not compiled.fullmatch(value):
            raise ConfigError(key, f"{value!r} is not {what}")

    return check


# --- the declarations ---------------------------------------------------------------------


@attrs.frozen
class Synonym:
    """Another name that sets a key's field, with lower precedence than the key's own.

    ``name`` None is Kafka's ``ConfigSynonym.sameName``: the broker-level default of a
    topic config spelled like the topic config (``compression.type``). ``scale``: the
    synonym counts in larger units (``log.retention.hours``: 3,600,000 ms each); a
    negative value (Kafka's -1, "forever") is not scaled. ``type``: the synonym's own
    type when it differs (hours are an INT, milliseconds a LONG).
    """

    name: str | None = None
    scale: int = 1
    type: ConfigType | None = None


@attrs.frozen
class ConfigKey:
    """One configuration key: Kafka's ``ConfigDef.ConfigKey``.

    ``field`` is the attribute of the package's config class the key sets; None for a
    key that is declared (so accepted and checked) but read some other way or not at all.
    """

    name: str
    type: ConfigType | Parser
    field: str | None
    validator: Validator | None = None
    doc: str = ""
    synonyms: tuple[Synonym, ...] = ()
    """In order of precedence, all below the key's own name."""
    no_effect: str | None = None
    """Why minikafka accepts and stores this key but does nothing with it (or None)."""

    def synonym_names(self) -> tuple[str, ...]:
        return tuple(s.name or self.name for s in self.synonyms)

    def parse(
        self, raw: str, name: str | None = None, synonym: Synonym | None = None
    ) -> object:
        """``raw`` parsed and validated, errors naming ``name`` (the key or a synonym)."""
        key = name or self.name
        kind = (
            synonym.type
            if synonym is not None and synonym.type is not None
            else self.type
        )
        value = (
            kind.parse(key, raw.strip())
            if isinstance(kind, ConfigType)
            else kind(key, raw.strip())
        )
        if self.validator is not None:
            self.validator(key, value)
        if (
            synonym is not None
            and synonym.scale != 1
            and isinstance(value, int)
            and value >= 0
        ):
            value *= synonym.scale
        return value

    def lookup(self) -> tuple[tuple[str, Synonym | None], ...]:
        """Every name that sets this key, highest precedence first."""
        # A same-name synonym (compression.type) is the key itself: read it once.
        others = tuple(
            (s.name, s) for s in self.synonyms if s.name not in (None, self.name)
        )
        return ((self.name, None), *others)


@attrs.frozen
class ConfigDef:
    """A package's configuration keys (Kafka's ``ConfigDef``); ``+`` joins two."""

    keys: tuple[ConfigKey, ...]
    _by_name: dict[str, ConfigKey] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        by_name: dict[str, ConfigKey] = {}
        for key in self.keys:
            if key.name in by_name:
                raise ValueError(f"{key.name} is declared twice")
            by_name[key.name] = key
        object.__setattr__(self, "_by_name", by_name)

    def __add__(self, other: ConfigDef) -> ConfigDef:
        return ConfigDef((*self.keys, *other.keys))

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self.keys)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> ConfigKey:
        return self._by_name[name]

    def names(self) -> frozenset[str]:
        """The keys' own names (a topic's config names, for the log's topic configs)."""
        return frozenset(self._by_name)

    def synonym_names(self) -> frozenset[str]:
        """Every synonym's name (the broker-level names of the topic configs)."""
        return frozenset(name for key in self.keys for name in key.synonym_names())

    def parse(self, props: Mapping[str, str]) -> dict[str, object]:
        """The fields ``props`` sets: every given name is parsed and validated (so a bad
        value is refused even where a name of higher precedence wins, as Kafka checks
        every key it is given), then the highest-precedence one sets the field.
        """
        values: dict[str, object] = {}
        for key in self.keys:
            # Lowest precedence first, so that the first error is the same as before and
            # the name of highest precedence is the one left in ``values``.
            for name, synonym in reversed(key.lookup()):
                if name not in props:
                    continue
                value = key.parse(props[name], name, synonym)
                if key.field is not None:
                    values[key.field] = value
        return values

    def validate(self, config: object) -> None:
        """Check a config built in code, not parsed, against the validators (naming the key)."""
        for key in self.keys:
            if key.field is not None and key.validator is not None:
                key.validator(key.name, getattr(config, key.field))

    def apply(self, base: C, props: Mapping[str, str]) -> C:
        """``base`` (a frozen attrs config) with the fields ``props`` sets."""
        return attrs.evolve(base, **self.parse(props))  # type: ignore[misc]
