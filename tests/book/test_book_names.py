"""The book's prose names only modules, names and configuration keys that exist.

``scripts/check_book_names.py`` runs in ``make book``; these tests hold it to the real
book (which must pass) and to a made-up chapter with one stale name of each kind (which
must fail, naming both, and ignore what sits in code blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def test_the_book_names_nothing_that_does_not_exist(
    script: Callable[[str], ModuleType],
) -> None:
    assert script("check_book_names").main() == 0


def test_a_stale_name_and_an_unknown_key_are_reported_with_their_lines(
    tmp_path: Path, script: Callable[[str], ModuleType]
) -> None:
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        "# A chapter\n"
        "\n"
        "`minikafka.client.Producer.flush` and `linger.ms` exist; `net.request` is an event;\n"
        "`minikafka.client.Producer.flushes` does not, nor does `linger.millis`.\n"
        "Files (`truth.json`) and Kafka's own (`transactional.id`) are fine.\n"
        "\n"
        "```python\n"
        "`minikafka.nothing.here` in a code block is not prose\n"
        "```\n",
        encoding="utf-8",
    )
    checker = script("check_book_names")
    problems = checker.unknown_names([chapter])
    assert len(problems) == 2, problems
    assert problems[0].endswith(
        ":4: `minikafka.client.Producer.flushes` does not exist"
    )
    assert problems[1].endswith(
        ":4: `linger.millis` is no configuration key minikafka has"
    )
