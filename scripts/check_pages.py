"""The book as a reader sees it: no listing, output or figure wider than the page, and no
stderr noise in an output.

Each built page (``book/_build/html``) is opened in headless Chromium (Debian's) at a
1280-pixel-wide window, with a small script added that, once the page has laid out,
measures every code block, cell output, figure and table against the article's column
and lists what sticks out of it or scrolls sideways, and every cell output written to
stderr. The page is printed back (``--dump-dom``) with the list in an attribute, which
this script reads. Chromium runs with ``--no-sandbox`` only as root, where its sandbox
cannot start; pages are read from ``file://``, nothing touches the network.

    uv run python scripts/check_pages.py              # every chapter and lab page
    uv run python scripts/check_pages.py net log      # some of them

``make book FULL=1`` (the full build, and so ``make test``) runs it after the build; it
exits 1 naming each page and what overflows. The reader build (``make book``) does not:
it needs nothing but Python.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "book" / "_build" / "html"
WIDTH = 1280

# Runs in the page after layout: what sticks out of the article, what scrolls sideways.
PROBE = """
<script>
window.addEventListener("load", () => {
  const article = document.querySelector(".bd-article") || document.body;
  const right = article.getBoundingClientRect().right + 1;
  const found = [];
  const name = (el) => {
    const caption = el.closest(".literal-block-wrapper, .cell, figure");
    const label = caption && caption.querySelector(".caption-text, .caption");
    const text = (label ? label.textContent : el.textContent || el.tagName).trim();
    return el.tagName.toLowerCase() + " " + JSON.stringify(text.slice(0, 70));
  };
  const watched = "div.highlight pre, .cell_output pre, svg, img, table";
  for (const el of article.querySelectorAll(watched)) {
    if (el.closest(".dropdown:not([open]), details:not([open])")) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0) continue;
    if (box.right > right) found.push("wider than the page: " + name(el));
    else if (el.tagName === "PRE" && el.scrollWidth > el.clientWidth + 1)
      found.push("scrolls sideways: " + name(el));
  }
  for (const el of article.querySelectorAll(".stderr, .output.stderr"))
    found.push("stderr output: " + JSON.stringify(el.textContent.trim().slice(0, 120)));
  document.body.setAttribute("data-page-check", JSON.stringify(found));
});
</script>
"""
_RESULT = re.compile(r'data-page-check="([^"]*)"')


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit(
        "check_pages: no Chromium; run: sudo apt-get install -y chromium "
        "(make book FULL=1 installs it when run as root)"
    )


def check_page(browser: str, page: Path, scratch: Path, root: Path = HTML) -> list[str]:
    """What overflows on ``page`` (a file under ``root``, the built site), as the probe in
    Chromium found it."""
    probed = scratch / page.relative_to(root)
    probed.parent.mkdir(parents=True, exist_ok=True)
    html = page.read_text(encoding="utf-8")
    probed.write_text(html.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    link_assets(scratch, root)
    command = [
        browser,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={WIDTH},900",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probed.as_uri(),
    ]
    if os.geteuid() == 0:
        command.insert(1, "--no-sandbox")
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False
    )
    match = _RESULT.search(done.stdout)
    if match is None:
        return [
            f"Chromium printed no result (exit {done.returncode}): {done.stderr[-300:]}"
        ]
    found: list[str] = json.loads(
        match.group(1).replace("&quot;", '"').replace("&amp;", "&")
    )
    return found


def link_assets(scratch: Path, root: Path = HTML) -> None:
    """The site's shared files, reached from the probed copies in ``scratch``."""
    for asset in ("_static", "_images"):
        link = scratch / asset
        if not link.exists() and (root / asset).exists():
            link.symlink_to(root / asset)


def pages(names: Sequence[str]) -> list[Path]:
    if names:
        return [HTML / f"{name}.html" for name in names]
    skip = {"genindex.html", "search.html", "index.html"}
    built = HTML.glob("**/*.html")
    return sorted(
        p for p in built if p.name not in skip and not p.parent.name.startswith("_")
    )


def main(argv: Sequence[str]) -> int:
    if not HTML.is_dir():
        print("check_pages: build the book first (make book)", file=sys.stderr)
        return 2
    browser = chromium()
    problems = []
    with tempfile.TemporaryDirectory(prefix="minikafka-pages-") as tmp:
        scratch = Path(tmp)
        link_assets(scratch)  # once, before the pages are opened side by side
        chosen = pages(argv)
        # A Chromium per page, as many at a time as there are cores.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            found = pool.map(lambda page: check_page(browser, page, scratch), chosen)
            for page, problems_of_page in zip(chosen, found, strict=True):
                problems += [f"{page.relative_to(HTML)}: {p}" for p in problems_of_page]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_pages: {len(problems)} problems at {WIDTH} px", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
