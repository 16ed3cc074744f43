"""The book's two editions: the student's (the default) and the instructor's.

The labs' reference answers are shown only in the instructor edition: a lab page puts
them in an ``{only} instructor`` block, and this extension sets Sphinx's ``instructor``
tag when the book is built with ``MINIKAFKA_EDITION=instructor`` (``make book
EDITION=instructor``). Any other value is refused, naming the variable, so a typo cannot
print the answers into a student's book or hide them from an instructor's.
"""

from __future__ import annotations

import os
from typing import Any

EDITION_ENV = "MINIKAFKA_EDITION"
EDITIONS = ("student", "instructor")


def edition() -> str:
    chosen = os.environ.get(EDITION_ENV) or "student"
    if chosen not in EDITIONS:
        raise ValueError(
            f"{EDITION_ENV}={chosen!r}: expected one of {', '.join(EDITIONS)}"
        )
    return chosen


def setup(app: Any) -> dict[str, Any]:
    if edition() == "instructor":
        app.tags.add("instructor")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
