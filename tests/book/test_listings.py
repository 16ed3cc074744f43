"""No listing over 40 lines is shown unfolded (``scripts/check_listings.py``, run by
``make book``): the real book passes, and a made-up chapter is measured as Sphinx cuts
its listings and fails only for the long one outside a dropdown."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
FRAMING = ROOT / "packages" / "net" / "src" / "minikafka" / "net" / "_framing.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_listings", ROOT / "scripts" / "check_listings.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_book_shows_no_long_listing_unfolded() -> None:
    assert _script().main([]) == 0


def test_only_the_long_listing_outside_a_dropdown_is_reported(tmp_path: Path) -> None:
    source = os.path.relpath(FRAMING, tmp_path)
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        f"```{{literalinclude}} {source}\n:pyobject: FrameDecoder\n```\n\n"
        f"```{{literalinclude}} {source}\n:pyobject: FrameDecoder.next_frame\n```\n\n"
        f":::{{dropdown}} The whole class\n```{{literalinclude}} {source}\n"
        ":pyobject: FrameDecoder\n```\n:::\n",
        encoding="utf-8",
    )
    script = _script()
    sizes = [script.length(listing) for listing in script.listings(chapter)]
    assert sizes[0] > script.LIMIT >= sizes[1]
    assert sizes[2] == sizes[0]
    long = script.unfolded_long([chapter])
    assert [(listing.line, size) for listing, size in long] == [(1, sizes[0])]
