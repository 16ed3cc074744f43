"""No chapter, page, doc or code comment cites one of this project's issue numbers: a
reader of the book or the code cannot see the tracker, so a goal cited by its number
tells them nothing. Say what the issue asked for instead. Another project's issue (kafka-python's,
librdkafka's, a KAFKA- ticket) is a reference a reader can follow and is left alone, and
so are the benchmarks' recorded results (bench/results/), which quote the run's text.

    python scripts/check_no_issue_numbers.py   # exits 1 naming each line
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"\b[Ii]ssues? #?\d+\b")
# Another project's tracker, named just before the number.
FOREIGN = re.compile(
    r"(kafka-python|librdkafka|aiokafka|jupyter-book|GitHub|KAFKA-\d+)\b[^.]{0,20}$"
)
LEFT_ALONE = ("bench/results/", "issues/", "uv.lock")


def offending(text: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in CITATION.finditer(line):
            if FOREIGN.search(line[: match.start()]):
                continue
            found.append((number, line.strip()))
            break
    return found


def main() -> int:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    problems = 0
    for name in listed:
        if name.startswith(LEFT_ALONE) or not name.endswith(
            (".py", ".md", ".toml", ".yml", ".css", ".sh", ".cfg", "Makefile")
        ):
            continue
        path = ROOT / name
        if path.is_symlink() or not path.is_file():
            continue
        for number, line in offending(path.read_text(encoding="utf-8")):
            print(f"{name}:{number}: cites an issue number: {line[:100]}")
            problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
