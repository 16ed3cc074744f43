"""Lets Sphinx read (so execute) the book's pages in several processes.

``scripts/build_book.py`` asks Sphinx for one job per CPU, and Sphinx reads in parallel
only if every extension says it may; without this it warns and reads one page after
another. Jupyter Book adds two extensions that do not say, and both are safe:

- ``sphinx_multitoc_numbering`` (the chapter numbers that run on across the book's
  parts) replaces the toctree collector's section numbering, which Sphinx runs once, in
  the main process, after the pages have been read and the environments merged;
- ``sphinx_jupyterbook_latex``'s transforms change only the page being read (they mark
  toctrees and sections for a LaTeX build), and its events only the configuration.
"""

from __future__ import annotations

from typing import Any

UNDECLARED = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def setup(app: Any) -> dict[str, Any]:
    for name in UNDECLARED:
        app.setup_extension(name)
        extension = app.extensions[name]
        extension.parallel_read_safe = True
        extension.parallel_write_safe = True
    return {"parallel_read_safe": True, "parallel_write_safe": True}
