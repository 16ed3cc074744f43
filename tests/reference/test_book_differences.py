"""The book's "What Kafka does differently" sections, checked against the differential
corpus.

A difference the corpus finds between Kafka's answers and minikafka's is a row of
COMPAT.md's "Known differences" table (``test_conformance.py`` fails on any other, and on
a row that matches nothing). A chapter cites the rows it explains in its "What Kafka does
differently" section, as ``(differential corpus: `metadata.v*.auto-create`)``. Checked
here, without a broker:

- every row's scenario pattern is cited by some chapter: no difference a client can see
  goes unexplained in the book;
- every citation names a row's pattern, and the pattern matches scenarios of the corpus:
  a chapter cannot claim a difference on the wire that the corpus does not show;
- a citation stands in a "What Kafka does differently" section, where a reader looks for
  it, and nowhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from tests.reference.conformance._diff import read_known
from tests.reference.conformance.corpus import corpus

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "COMPAT.md"
BOOK = ROOT / "book"
SECTION = "## What Kafka does differently"
CITATION = re.compile(r"\(differential corpus: ((?:`[^`]+`(?:,\s*)?)+)\)")
PATTERN = re.compile(r"`([^`]+)`")


@attrs.frozen
class Citation:
    chapter: str
    pattern: str
    in_section: bool


def _section_span(text: str) -> tuple[int, int]:
    """Where a chapter's "What Kafka does differently" section starts and ends (its
    next heading of the same level), or (0, 0) when it has none."""
    start = text.find("\n" + SECTION + "\n")
    if start < 0:
        return 0, 0
    end = text.find("\n## ", start + 1)
    return start, len(text) if end < 0 else end


def citations(book: Path = BOOK) -> list[Citation]:
    found = []
    for page in sorted(book.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        start, end = _section_span(text)
        for match in CITATION.finditer(text):
            inside = start <= match.start() < end
            for pattern in PATTERN.findall(match.group(1)):
                found.append(Citation(page.name, pattern, inside))
    return found


def _matches(pattern: str, text: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text) is not None


def test_every_listed_difference_is_explained_by_a_chapter() -> None:
    cited = {c.pattern for c in citations()}
    rows = read_known(COMPAT)
    unexplained = sorted({row.scenario for row in rows} - cited)
    assert not unexplained, (
        "known differences no chapter's 'What Kafka does differently' cites "
        f"(add '(differential corpus: `pattern`)' where the book explains it): {unexplained}"
    )


def test_every_citation_is_a_listed_difference_the_corpus_runs() -> None:
    listed = {row.scenario for row in read_known(COMPAT)}
    ids = [scenario.id for scenario in corpus()]
    for citation in citations():
        assert citation.in_section, (
            f"book/{citation.chapter} cites {citation.pattern!r} outside its "
            f"'{SECTION.removeprefix('## ')}' section"
        )
        assert citation.pattern in listed, (
            f"book/{citation.chapter} cites {citation.pattern!r}, which is no row of "
            "COMPAT.md's known differences: the corpus shows no such difference"
        )
        assert any(_matches(citation.pattern, i) for i in ids), (
            f"book/{citation.chapter} cites {citation.pattern!r}: no scenario has that id"
        )


def test_citations_are_found_only_in_the_section(tmp_path: Path) -> None:
    # The reader itself: a citation inside the section counts, one in another section is
    # flagged, and a page without the section has none inside it.
    (tmp_path / "a.md").write_text(
        "# A\n\n## Before\n\n(differential corpus: `x.v*.one`)\n\n"
        f"{SECTION}\n\n- ours (differential corpus: `x.v*.two`, `y.v1.three`)\n\n"
        "## Challenges\n\n(differential corpus: `x.v*.four`)\n",
        encoding="utf-8",
    )
    found = {(c.pattern, c.in_section) for c in citations(tmp_path)}
    assert found == {
        ("x.v*.one", False),
        ("x.v*.two", True),
        ("y.v1.three", True),
        ("x.v*.four", False),
    }
