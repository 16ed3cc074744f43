"""The student edition shows no rebuild lab's answer: no built page holds the lines
that define an object a rebuild lab replaces (book/_ext/lab_answers.py's test, applied
to the HTML ``make book`` wrote), but a rebuild lab's own page, which shows the learner's
skeleton files. Run after a student-edition build; exits 1 naming each page and object."""

from __future__ import annotations

import html
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from lab_answers import answers, shown  # noqa: E402


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def page_text(path: Path) -> str:
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return html.unescape("".join(parser.parts))


def main() -> int:
    built = ROOT / "book" / "_build" / "html"
    pages = sorted(built.rglob("*.html"))
    if not pages:
        print(f"check_student_edition: no pages in {built}", file=sys.stderr)
        return 1
    known = answers()
    found = [
        (page.relative_to(built), hit.lab, hit.target)
        for page in pages
        if "_static" not in page.parts
        for hit in shown(page_text(page), known)
        # A lab's own page shows the learner's skeleton: its signatures, not the code.
        if not (page.parent.name == "labs" and page.name[:2] == f"{hit.lab:02d}")
    ]
    for page, lab, target in found:
        print(f"{page}: shows {target}, lab {lab}'s answer", file=sys.stderr)
    print(f"check_student_edition: {len(pages)} pages, {len(found)} answers shown")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
