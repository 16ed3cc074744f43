"""The student edition's fold (``book/_ext/lab_answers.py``) of what rebuild labs ask
for: a module's table a lab replaces is known by its assignment line, as a function by
its ``def``; a cell tagged ``lab-N-answer`` is left out whole, input and output, with a
note naming the lab and the files to read after the attempt; other cells stay."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import lab_answers  # noqa: E402  (book/_ext is the extensions' path)

STATE = ROOT / "packages/coordination/src/minikafka/coordination/transaction"
TABLE = "minikafka.coordination.transaction._txn_state:TXN_TRANSITIONS"


def test_a_replaced_table_is_known_by_its_assignment_line() -> None:
    known = {answer.target: answer for answer in lab_answers.answers()}
    table = known[TABLE]
    assert table.lab == 17
    assert table.headers == {
        "TXN_TRANSITIONS: Mapping[TransactionState, frozenset[TransactionState]] = {"
    }
    source = (STATE / "_txn_state.py").read_text()
    assert table in lab_answers.shown(source, [table])
    # The learner's skeleton names it, unwritten: not the answer.
    skeleton = (ROOT / "labs/17-transactions/txn_state.py").read_text()
    assert lab_answers.shown(skeleton, [table]) == []


class _App:
    """What the extension's setup asks of Sphinx: its directive and its hook."""

    def __init__(self) -> None:
        self.hooks: dict[str, Any] = {}

    def add_directive(self, *args: object, **kwargs: object) -> None:
        pass

    def connect(self, event: str, hook: Any) -> None:
        self.hooks[event] = hook


def test_a_tagged_cell_is_left_out_of_the_student_edition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MINIKAFKA_EDITION", raising=False)
    app = _App()
    lab_answers.setup(app)
    document = nodes.document(None, None)
    tagged = nodes.container(classes=["cell", "tag_remove-input", "tag_lab-17-answer"])
    tagged += nodes.literal_block("", "TXN_TRANSITIONS.items()")
    kept = nodes.container(classes=["cell"])
    kept += nodes.literal_block("", "print('the table is drawn above')")
    document += [tagged, kept]
    app.hooks["doctree-read"](None, document)
    [note] = list(document.findall(nodes.note))
    assert "lab 17 asks you to write" in note.astext()
    assert "_txn_state.py" in note.astext()
    assert note["classes"] == []
    assert "TXN_TRANSITIONS.items()" not in document.astext()
    assert "print('the table is drawn above')" in document.astext()
