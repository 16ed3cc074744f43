"""``scripts/check_pages.py`` (run by ``make book``) finds, in headless Chromium, a listing
that scrolls sideways, a figure wider than the page and stderr in an output, and passes a
page where everything fits (the book's own wrap.css makes its listings fit)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PAGE = """<!doctype html><html><head><style>{css}</style></head><body>
<main class="bd-main"><article class="bd-article" style="width:600px">
<div class="highlight"><pre>{code}</pre></div>
{figure}
{stderr}
</article></main></body></html>"""


def test_overflow_and_stderr_are_found_and_a_fitting_page_passes(
    tmp_path: Path, script: Callable[[str], ModuleType]
) -> None:
    checker = script("check_pages")
    site = tmp_path / "site"
    site.mkdir()
    long_line = "x = " + "1 + " * 120 + "1"
    bad = site / "bad.html"
    bad.write_text(
        PAGE.format(
            css="",
            code=long_line,
            figure='<svg width="900" height="20"></svg>',
            stderr='<div class="output stderr"><pre>WARNING: noise</pre></div>',
        ),
        encoding="utf-8",
    )
    good = site / "good.html"
    wrap = (ROOT / "book" / "_static" / "wrap.css").read_text(encoding="utf-8")
    good.write_text(
        PAGE.format(
            css=wrap,
            code=long_line,
            figure='<svg width="900" height="20" style="max-width:100%"></svg>',
            stderr="",
        ),
        encoding="utf-8",
    )
    browser = checker.chromium()
    found = checker.check_page(browser, bad, tmp_path / "scratch", root=site)
    assert any(f.startswith("scrolls sideways: pre") for f in found), found
    assert any(f.startswith("wider than the page: svg") for f in found), found
    assert any(f.startswith("stderr output:") and "noise" in f for f in found), found
    assert checker.check_page(browser, good, tmp_path / "scratch", root=site) == []
