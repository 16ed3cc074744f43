"""``jupyter-book build``, with Sphinx reading (so executing) the pages in parallel.

Executing the notebooks is most of the book's build, and Sphinx runs them one after the
other unless asked for several jobs, which Jupyter Book's command line does not offer.
Its own build function takes the number, so this passes it through (``BOOK_JOBS``,
default: one job per CPU) and otherwise runs the command exactly as typed::

    python scripts/build_book.py build book --warningiserror --nitpick --keep-going

Sphinx forks a process per chunk of pages; every extension the book loads says it is
safe for that (an extension that does not would stop the build with a warning).
"""

from __future__ import annotations

import functools
import os
import sys

import jupyter_book.sphinx
from jupyter_book.cli.main import main


def jobs() -> int:
    value = os.environ.get("BOOK_JOBS", "")
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        sys.exit(f"BOOK_JOBS: {value!r} is not a number of jobs (1 or more)")
    return int(value)


if __name__ == "__main__":
    # The build command imports build_sphinx from its module when it runs, so the
    # module's attribute is the one to wrap.
    jupyter_book.sphinx.build_sphinx = functools.partial(
        jupyter_book.sphinx.build_sphinx, jobs=jobs()
    )
    main()
