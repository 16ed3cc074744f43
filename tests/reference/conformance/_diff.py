"""Field-by-field differences between two normalised trees, and COMPAT.md's table of the
differences that are known and explained.

A difference is a path (``topics[conf-data].partitions[1].error_code``) and the two
values rendered as text (``absent`` when one side lacks the field or element). The
"Known differences" table of COMPAT.md lists the accepted ones, one row each::

    | scenario | field | Kafka | minikafka | reason |

``scenario``, ``field`` and the two values are patterns in which only ``*`` is special
(any text, possibly empty): ``produce.v*.bad-crc``, ``api_keys[*].max_version``. A
difference passes when a row matches it; a row that matches no difference of the run is
stale, and fails the test like an unlisted difference: the table says what is true today.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from ._normalise import Tree

START = "<!-- known-differences:start -->"
END = "<!-- known-differences:end -->"
ABSENT = "absent"


@attrs.frozen
class Difference:
    scenario: str
    path: str
    kafka: str
    minikafka: str

    def __str__(self) -> str:
        return f"{self.scenario}: {self.path}: Kafka {self.kafka}, minikafka {self.minikafka}"


def render(value: Tree) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def differences(
    scenario: str, kafka: Tree, minikafka: Tree, path: str = ""
) -> Iterator[Difference]:
    if isinstance(kafka, dict) and isinstance(minikafka, dict):
        for key in list(kafka) + [k for k in minikafka if k not in kafka]:
            sub = _join(path, key)
            if key not in minikafka:
                yield Difference(scenario, sub, _short(kafka[key]), ABSENT)
            elif key not in kafka:
                yield Difference(scenario, sub, ABSENT, _short(minikafka[key]))
            else:
                yield from differences(scenario, kafka[key], minikafka[key], sub)
    elif (
        isinstance(kafka, list)
        and isinstance(minikafka, list)
        and len(kafka) == len(minikafka)
    ):
        for i, (a, b) in enumerate(zip(kafka, minikafka, strict=True)):
            yield from differences(scenario, a, b, f"{path}[{i}]")
    elif kafka != minikafka:
        yield Difference(
            scenario, path or "(response)", _short(kafka), _short(minikafka)
        )


def _short(value: Tree) -> str:
    text = render(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _join(path: str, key: str) -> str:
    if key.startswith("["):  # an element of a keyed array
        return path + key
    return f"{path}.{key}" if path else key


@attrs.frozen
class Known:
    """One row of the table."""

    scenario: str
    path: str
    kafka: str
    minikafka: str
    reason: str
    line: int

    def matches(self, d: Difference) -> bool:
        return (
            _match(self.scenario, d.scenario)
            and _match(self.path, d.path)
            and _match(self.kafka, d.kafka)
            and _match(self.minikafka, d.minikafka)
        )

    def __str__(self) -> str:
        cells = (self.scenario, self.path, self.kafka, self.minikafka)
        return f"COMPAT.md line {self.line}: | " + " | ".join(cells) + " |"


def _match(pattern: str, text: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def read_known(compat: Path) -> list[Known]:
    """The rows between the markers; a malformed row is an error naming its line."""
    text = compat.read_text()
    if START not in text or END not in text:
        raise ValueError(f"{compat} has no {START} ... {END} section")
    first = text[: text.index(START)].count("\n") + 1
    block = text[text.index(START) : text.index(END)].splitlines()
    rows: list[Known] = []
    for offset, line in enumerate(block):
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].lower() == "scenario":
            continue  # the header
        if len(cells) != 5 or not all(cells):
            raise ValueError(
                f"{compat} line {first + offset}: a known difference needs 5 cells "
                f"(scenario | field | Kafka | minikafka | reason), got {line!r}"
            )
        scenario, path, kafka, mini, reason = (c.strip("`") for c in cells)
        rows.append(Known(scenario, path, kafka, mini, reason, first + offset))
    return rows


@attrs.frozen
class Verdict:
    listed: list[tuple[Difference, Known]]
    unlisted: list[Difference]
    stale: list[Known]


def judge(found: Sequence[Difference], known: Sequence[Known]) -> Verdict:
    listed: list[tuple[Difference, Known]] = []
    unlisted: list[Difference] = []
    used: set[int] = set()
    for d in found:
        row = next((k for k in known if k.matches(d)), None)
        if row is None:
            unlisted.append(d)
        else:
            listed.append((d, row))
            used.add(row.line)
    return Verdict(listed, unlisted, [k for k in known if k.line not in used])
