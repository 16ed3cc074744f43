"""The ``{excerpt}`` directive's cut (``book/_ext/excerpt.py``): each ``# aside:``
statement or clause becomes one ``...`` line naming it, the docstring goes, everything
else is shown as written; a marker that folds nothing stops the build."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from excerpt import excerpt

SOURCE = textwrap.dedent(
    '''
    class Handler:
        def handle(self, request):
            """Answer ``request``.

            Long enough to be worth leaving out.
            """
            # aside: a request for a topic we do not host
            if request.topic not in self.topics:
                self.refuse(request)
                return
            if request.acks == 0:
                self.drop(request)
            # aside: acks=1
            elif request.acks == 1:
                self.answer_now(request)
            else:
                self.wait(request)
            try:
                self.append(request)
            # aside: the disk failed
            except OSError:
                self.fail(request)
            # aside: tracing
            # (this comment explains the tracing and goes with it)
            self.trace(
                request,
            )
            return self.done(request)
    '''
)


def test_each_aside_becomes_one_line_and_the_rest_is_as_written() -> None:
    assert excerpt(SOURCE, "Handler.handle") == [
        "    def handle(self, request):",
        "        ...  # a request for a topic we do not host",
        "        if request.acks == 0:",
        "            self.drop(request)",
        "        ...  # acks=1",
        "        else:",
        "            self.wait(request)",
        "        try:",
        "            self.append(request)",
        "        ...  # the disk failed",
        "        ...  # tracing",
        "        return self.done(request)",
    ]


def test_a_marker_that_folds_nothing_is_an_error_naming_the_line() -> None:
    broken = SOURCE.replace(
        "        # aside: a request for a topic we do not host\n",
        "            # aside: a request for a topic we do not host\n",
    )
    with pytest.raises(ValueError, match=r"chapter\.py:8: '# aside:' must stand"):
        excerpt(broken, "Handler.handle", where="chapter.py")
