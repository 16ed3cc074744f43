"""No listing in the book longer than 40 lines is shown unfolded.

A chapter shows our code with ``literalinclude`` (usually ``:pyobject:``, one function
or class). A reader follows 20 lines; a 60-line function with every error path is
where they stop reading. So a listing longer than :data:`LIMIT` lines must sit in a
folded ``{dropdown}`` (sphinx-design), one click away, with the prose before it saying
what to look for. This script measures every listing as Sphinx will cut it (the
``:pyobject:`` found by parsing the file, as ``sphinx.pycode`` does; ``:lines:``;
``:start-after:``/``:end-before:``) and reports each long one that is not folded.

    uv run python scripts/check_listings.py          # exit 1, naming each long listing
    uv run python scripts/check_listings.py --list   # every listing and its length

``make book`` runs it.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
LIMIT = 40

_INCLUDE = re.compile(r"^(`{3,}|~{3,})\{literalinclude\}\s+(\S+)\s*$")
_DROPDOWN = re.compile(r"^(:{3,}|`{3,})\{dropdown\}")


@attrs.frozen
class Listing:
    chapter: Path
    line: int
    source: Path
    options: dict[str, str]
    folded: bool

    @property
    def where(self) -> str:
        shown = (
            self.chapter.relative_to(ROOT) if self.chapter.is_relative_to(ROOT) else self.chapter
        )
        return f"{shown}:{self.line}"


def listings(chapter: Path) -> Iterator[Listing]:
    """Every literalinclude of ``chapter``, and whether a dropdown encloses it."""
    lines = chapter.read_text(encoding="utf-8").splitlines()
    open_dropdowns: list[str] = []  # the fence each open dropdown closes with
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        dropdown = _DROPDOWN.match(stripped)
        if dropdown:
            open_dropdowns.append(dropdown.group(1))
        elif open_dropdowns and stripped == open_dropdowns[-1]:
            open_dropdowns.pop()
        include = _INCLUDE.match(stripped)
        if include:
            options: dict[str, str] = {}
            j = i + 1
            while j < len(lines) and lines[j].startswith(":"):
                key, _, value = lines[j][1:].partition(":")
                options[key.strip()] = _unquoted(value.strip())
                j += 1
            target = include.group(2)
            base = BOOK if target.startswith("/") else chapter.parent
            source = (base / target.lstrip("/")).resolve()
            yield Listing(chapter, i + 1, source, options, bool(open_dropdowns))
            i = j
            continue
        i += 1


def _unquoted(value: str) -> str:
    """An option's value as MyST reads it (YAML): surrounding quotes are not part of it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def length(listing: Listing) -> int:
    """How many lines the listing shows."""
    text = listing.source.read_text(encoding="utf-8")
    lines = text.splitlines()
    options = listing.options
    if "pyobject" in options:
        first, last = _pyobject_span(ast.parse(text), options["pyobject"].split("."))
        lines = lines[first - 1 : last]
    if "start-after" in options:
        at = next(n for n, line in enumerate(lines) if options["start-after"] in line)
        lines = lines[at + 1 :]
    if "start-at" in options:
        at = next(n for n, line in enumerate(lines) if options["start-at"] in line)
        lines = lines[at:]
    if "end-before" in options:
        lines = lines[: next(n for n, line in enumerate(lines) if options["end-before"] in line)]
    if "end-at" in options:
        lines = lines[: next(n for n, line in enumerate(lines) if options["end-at"] in line) + 1]
    if "lines" in options:
        return sum(_span_length(part, len(lines)) for part in options["lines"].split(","))
    return len(lines)


def _pyobject_span(tree: ast.AST, names: Sequence[str]) -> tuple[int, int]:
    node = tree
    for name in names:
        node = next(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and child.name == name
        )
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    assert node.end_lineno is not None
    return first, node.end_lineno


def _span_length(part: str, total: int) -> int:
    low, dash, high = part.strip().partition("-")
    if not dash:
        return 1
    return (int(high) if high else total) - (int(low) if low else 1) + 1


def chapters() -> list[Path]:
    return sorted(BOOK.glob("*.md")) + sorted((BOOK / "labs").glob("*.md"))


def unfolded_long(files: Sequence[Path]) -> list[tuple[Listing, int]]:
    """The listings over :data:`LIMIT` lines that no dropdown folds, with their lengths."""
    found = [(listing, length(listing)) for chapter in files for listing in listings(chapter)]
    return [(listing, size) for listing, size in found if size > LIMIT and not listing.folded]


def main(argv: Sequence[str]) -> int:
    found = [(listing, length(listing)) for chapter in chapters() for listing in listings(chapter)]
    if "--list" in argv:
        for listing, size in found:
            shown = "folded" if listing.folded else "shown"
            what = listing.options.get("pyobject") or listing.source.name
            print(f"{size:4d}  {shown:6}  {listing.where}  {what}")
    long = unfolded_long(chapters())
    for listing, size in long:
        what = listing.options.get("pyobject") or listing.source.name
        print(f"{listing.where}: {what} is {size} lines, shown unfolded", file=sys.stderr)
    if long:
        print(
            f"check_listings: {len(long)} listings over {LIMIT} lines outside a dropdown",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
