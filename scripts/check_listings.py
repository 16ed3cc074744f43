"""No listing in the book longer than 40 lines is shown unfolded, none wider than 88.

A chapter shows our code with ``literalinclude`` (usually ``:pyobject:``, one function
or class). A reader follows 20 lines; a 60-line function with every error path is
where they stop reading. So a listing longer than :data:`LIMIT` lines must sit in a
folded ``{dropdown}`` (sphinx-design), one click away, with the prose before it saying
what to look for. This script measures every listing as Sphinx will cut it (the
``:pyobject:`` found by parsing the file, as ``sphinx.pycode`` does; ``:lines:``;
``:start-after:``/``:end-before:``) and reports each long one that is not folded.

    uv run python scripts/check_listings.py          # exit 1, naming each long listing
    uv run python scripts/check_listings.py --list   # every listing and its length

Every listed line must also fit in :data:`WIDTH` (88) columns, the formatter's line
length, so that code is never wrapped by the page or scrolled sideways.

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
sys.path.insert(0, str(BOOK / "_ext"))
from excerpt import excerpt, pyobject_span  # noqa: E402  (the book's own extension)

LIMIT = 40
# The formatter's line length: what the article column shows without wrapping a line.
WIDTH = 88

_INCLUDE = re.compile(r"^(`{3,}|~{3,})\{(literalinclude|excerpt)\}\s+(\S+)\s*$")
_DROPDOWN = re.compile(r"^(:{3,}|`{3,})\{dropdown\}")


@attrs.frozen
class Listing:
    chapter: Path
    line: int
    source: Path
    options: dict[str, str]
    folded: bool
    directive: str = "literalinclude"
    dropdown: str = ""  # the title of the dropdown holding it

    @property
    def where(self) -> str:
        shown = (
            self.chapter.relative_to(ROOT)
            if self.chapter.is_relative_to(ROOT)
            else self.chapter
        )
        return f"{shown}:{self.line}"


def listings(chapter: Path) -> Iterator[Listing]:
    """Every literalinclude of ``chapter``, and whether a dropdown encloses it."""
    lines = chapter.read_text(encoding="utf-8").splitlines()
    open_dropdowns: list[str] = []  # the fence each open dropdown closes with
    titles: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        dropdown = _DROPDOWN.match(stripped)
        if dropdown:
            open_dropdowns.append(dropdown.group(1))
            titles.append(stripped[dropdown.end() :].strip())
        elif open_dropdowns and stripped == open_dropdowns[-1]:
            open_dropdowns.pop()
            titles.pop()
        include = _INCLUDE.match(stripped)
        if include:
            options: dict[str, str] = {}
            j = i + 1
            while j < len(lines) and lines[j].startswith(":"):
                key, _, value = lines[j][1:].partition(":")
                options[key.strip()] = _unquoted(value.strip())
                j += 1
            target = include.group(3)
            base = BOOK if target.startswith("/") else chapter.parent
            source = (base / target.lstrip("/")).resolve()
            title = titles[-1] if titles else ""
            yield Listing(
                chapter, i + 1, source, options, bool(titles), include.group(2), title
            )
            i = j
            continue
        i += 1


def _unquoted(value: str) -> str:
    """An option's value as MyST reads it (YAML): surrounding quotes are not part of it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def shown(listing: Listing) -> list[str]:
    """The lines the listing shows, as Sphinx cuts them."""
    text = listing.source.read_text(encoding="utf-8")
    options = listing.options
    if listing.directive == "excerpt":
        return excerpt(text, options["pyobject"], where=listing.where)
    lines = text.splitlines()
    if "pyobject" in options:
        first, last = pyobject_span(ast.parse(text), options["pyobject"].split("."))
        lines = lines[first - 1 : last]
    if "start-after" in options:
        at = next(n for n, line in enumerate(lines) if options["start-after"] in line)
        lines = lines[at + 1 :]
    if "start-at" in options:
        at = next(n for n, line in enumerate(lines) if options["start-at"] in line)
        lines = lines[at:]
    if "end-before" in options:
        end = options["end-before"]
        lines = lines[: next(n for n, line in enumerate(lines) if end in line)]
    if "end-at" in options:
        end = options["end-at"]
        lines = lines[: next(n for n, line in enumerate(lines) if end in line) + 1]
    if "lines" in options:
        lines = [
            line
            for part in options["lines"].split(",")
            for line in lines[_span(part, len(lines))]
        ]
    return lines


def length(listing: Listing) -> int:
    """How many lines the listing shows."""
    return len(shown(listing))


def too_wide(listing: Listing) -> list[str]:
    """The lines of ``listing`` wider than :data:`WIDTH` columns."""
    return [line for line in shown(listing) if len(line) > WIDTH]


def _span(part: str, total: int) -> slice:
    """One part of ``:lines:`` (``3``, ``3-7``, ``-7``, ``3-``), 1-based and inclusive."""
    low, dash, high = part.strip().partition("-")
    if not dash:
        return slice(int(low) - 1, int(low))
    return slice((int(low) if low else 1) - 1, int(high) if high else total)


def chapters() -> list[Path]:
    return sorted(BOOK.glob("*.md")) + sorted((BOOK / "labs").glob("*.md"))


def unfolded_long(files: Sequence[Path]) -> list[tuple[Listing, int]]:
    """The listings over :data:`LIMIT` lines that no dropdown folds, with their lengths."""
    found = [
        (listing, length(listing)) for chapter in files for listing in listings(chapter)
    ]
    return [
        (listing, size)
        for listing, size in found
        if size > LIMIT and not listing.folded
    ]


_COUNTED = re.compile(r"\((\d+) lines\)")


def miscounted(found: Sequence[tuple[Listing, int]]) -> list[tuple[Listing, int, int]]:
    """Dropdowns titled "... (N lines)" whose listing has another length: (listing,
    N, the length)."""
    wrong = []
    for listing, size in found:
        said = _COUNTED.search(listing.dropdown)
        if said and int(said.group(1)) != size:
            wrong.append((listing, int(said.group(1)), size))
    return wrong


def main(argv: Sequence[str]) -> int:
    found = [
        (listing, length(listing))
        for chapter in chapters()
        for listing in listings(chapter)
    ]
    if "--list" in argv:
        for listing, size in found:
            shown = "folded" if listing.folded else "shown"
            what = listing.options.get("pyobject") or listing.source.name
            print(f"{size:4d}  {shown:6}  {listing.where}  {what}")
    long = unfolded_long(chapters())
    wide = [(listing, too_wide(listing)) for listing, _ in found]
    for listing, lines in wide:
        for line in lines:
            print(
                f"{listing.where}: {len(line)} columns: {line.strip()}", file=sys.stderr
            )
    wrong = miscounted(found)
    for listing, said, size in wrong:
        print(
            f"{listing.where}: the dropdown says {said} lines, it shows {size}",
            file=sys.stderr,
        )
    if any(lines for _, lines in wide) or wrong:
        print(
            f"check_listings: listed lines wider than {WIDTH} columns or miscounted",
            file=sys.stderr,
        )
        return 1
    for listing, size in long:
        what = listing.options.get("pyobject") or listing.source.name
        print(
            f"{listing.where}: {what} is {size} lines, shown unfolded", file=sys.stderr
        )
    if long:
        print(
            f"check_listings: {len(long)} listings over {LIMIT} lines outside a dropdown",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
