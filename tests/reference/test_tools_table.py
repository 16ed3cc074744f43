"""COMPAT.md's table of Kafka's tools is exactly what ``scripts/tools_table.py`` renders
from the ``kafka_tool`` marks of ``tests/reference``, and the script refuses a mark it
cannot use with a message naming it. Needs no Java: the script reads the tests with
:mod:`ast`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "tools_table.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tools_table", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLE = load_script()


def test_compat_page_holds_the_current_tools_table() -> None:
    # Guarantee: a test added, renamed or re-marked without --write fails here.
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def write_module(directory: Path, body: str) -> Path:
    path = directory / "test_example.py"
    path.write_text("import pytest\n\n" + textwrap.dedent(body))
    return directory


def test_rows_say_what_works_what_needs_an_api_and_the_notes(tmp_path: Path) -> None:
    # Guarantee: a row per (tool, action), "works" or "fails: needs API (key)", its
    # tests, and a note shared by rows numbered once; an xfail test proves nothing.
    tests = write_module(
        tmp_path,
        """
        NOTE = "a difference"

        @pytest.mark.kafka_tool("kafka-topics", "--create")
        @pytest.mark.kafka_tool("kafka-topics", "--describe", notes=NOTE)
        def test_topics(): ...

        @pytest.mark.kafka_tool("kafka-topics", "--describe")
        @pytest.mark.kafka_tool("kafka-log-dirs", "--describe", needs="DescribeLogDirs", notes=NOTE)
        def test_more(): ...

        @pytest.mark.xfail
        @pytest.mark.kafka_tool("kafka-get-offsets", "--topic")
        def test_expected_to_fail(): ...
        """,
    )
    rows = [
        line
        for line in TABLE.render(TABLE.collect_all(tests)).splitlines()
        if line.startswith("| kafka-")
    ]
    assert rows == [
        "| kafka-topics | `--create` | works | test_example.py: `test_topics` |",
        "| kafka-topics | `--describe` | works (1) | test_example.py: `test_topics`, `test_more` |",
        "| kafka-log-dirs | `--describe` | fails: needs DescribeLogDirs (key 35) (1)"
        " | test_example.py: `test_more` |",
    ]
    assert "- (1) a difference" in TABLE.render(TABLE.collect_all(tests))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '@pytest.mark.kafka_tool("kafka-topix", "--create")',
            "'kafka-topix' is not one of",
        ),
        (
            '@pytest.mark.kafka_tool("kafka-topics", "--create", needs="Nope")',
            "needs='Nope' is not a Kafka API name",
        ),
        (
            '@pytest.mark.kafka_tool("kafka-topics", "--create", why="x")',
            "needs= and notes= only",
        ),
        ('@pytest.mark.kafka_tool("kafka-topics")', "takes (tool, action)"),
        (
            '@pytest.mark.kafka_tool("kafka-topics", "--create", needs="DescribeLogDirs")\n'
            '@pytest.mark.kafka_tool("kafka-topics", "--create")',
            "disagree on needs=",
        ),
        (
            'pytestmark = pytest.mark.kafka_tool("kafka-topics", "--create")\n'
            "@pytest.mark.external",
            "goes on a test function's own decorators",
        ),
    ],
)
def test_a_mark_the_table_cannot_use_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    # Guarantee: an unknown tool or API, a wrong argument, rows that disagree, a mark
    # out of place: the script exits 2 naming what was wrong, and writes nothing.
    tests = write_module(tmp_path, body + "\ndef test_x(): ...\n")
    page = tmp_path / "COMPAT.md"
    page.write_text(f"{TABLE.START}\n{TABLE.END}\n")
    assert TABLE.main(["--write", "--tests", str(tests), "--document", str(page)]) == 2
    assert message in capsys.readouterr().err
    assert page.read_text() == f"{TABLE.START}\n{TABLE.END}\n"


def test_a_stale_page_fails_the_check_and_write_mends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Guarantee: --check exits 1 on a page holding another table, naming the fix;
    # --write puts the current one between the markers and leaves the rest.
    tests = write_module(
        tmp_path,
        '@pytest.mark.kafka_tool("kafka-topics", "--list")\ndef test_x(): ...\n',
    )
    page = tmp_path / "COMPAT.md"
    page.write_text(f"before\n{TABLE.START}\nold\n{TABLE.END}\nafter\n")
    args = ["--tests", str(tests), "--document", str(page)]
    assert TABLE.main(["--check", *args]) == 1
    assert "scripts/tools_table.py --write" in capsys.readouterr().err
    assert TABLE.main(["--write", *args]) == 0
    assert TABLE.main(["--check", *args]) == 0
    text = page.read_text()
    assert text.startswith(f"before\n{TABLE.START}\n<!-- generated")
    assert text.endswith(f"{TABLE.END}\nafter\n")
    assert "| kafka-topics | `--list` | works |" in text
