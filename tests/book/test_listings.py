"""No listing over 40 lines is shown unfolded (``scripts/check_listings.py``, run by
``make book``): the real book passes, and a made-up chapter is measured as Sphinx cuts
its listings and fails only for the long one outside a dropdown."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
FRAMING = ROOT / "packages" / "net" / "src" / "minikafka" / "net" / "_framing.py"


def test_the_book_shows_no_long_listing_unfolded(
    script: Callable[[str], ModuleType],
) -> None:
    assert script("check_listings").main([]) == 0


def test_only_the_long_listing_outside_a_dropdown_is_reported(
    tmp_path: Path, script: Callable[[str], ModuleType]
) -> None:
    source = os.path.relpath(FRAMING, tmp_path)
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        f"```{{literalinclude}} {source}\n:pyobject: FrameDecoder\n```\n\n"
        f"```{{literalinclude}} {source}\n:pyobject: FrameDecoder.next_frame\n```\n\n"
        f":::{{dropdown}} The whole class\n```{{literalinclude}} {source}\n"
        ":pyobject: FrameDecoder\n```\n:::\n",
        encoding="utf-8",
    )
    checker = script("check_listings")
    sizes = [checker.length(listing) for listing in checker.listings(chapter)]
    assert sizes[0] > checker.LIMIT >= sizes[1]
    assert sizes[2] == sizes[0]
    long = checker.unfolded_long([chapter])
    assert [(listing.line, size) for listing, size in long] == [(1, sizes[0])]


def test_a_wide_line_and_a_miscounted_dropdown_are_reported(
    tmp_path: Path, script: Callable[[str], ModuleType]
) -> None:
    source = tmp_path / "code.py"
    wide = "    return " + "x" * 80  # 91 columns
    source.write_text(f"def narrow():\n    return 1\n\n\ndef wide():\n{wide}\n")
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        "```{literalinclude} code.py\n:pyobject: narrow\n```\n\n"
        ":::{dropdown} The whole `wide` (3 lines)\n"
        "```{literalinclude} code.py\n:pyobject: wide\n```\n:::\n",
        encoding="utf-8",
    )
    checker = script("check_listings")
    narrow, folded = checker.listings(chapter)
    assert checker.too_wide(narrow) == []
    assert checker.too_wide(folded) == [wide]
    assert [
        (said, size) for _, said, size in checker.miscounted([(narrow, 2), (folded, 2)])
    ] == [(3, 2)]
