"""The reader build (``book/_ext/reader.py``, ``make book``): which cells it leaves out,
the guard that fails a build running a cell it should have left out, and both in a small
MyST-NB project built in a subprocess, as ``make book`` builds."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"


@pytest.fixture
def reader() -> Iterator[ModuleType]:
    sys.path.insert(0, str(EXT))
    try:
        import reader

        yield reader
    finally:
        sys.path.remove(str(EXT))


def test_cells_needing_more_than_python_are_left_out(reader: ModuleType) -> None:
    cells: list[tuple[str, list[str]]] = [
        ("import json\nroot = 1", []),
        ("spark = spark_session('book')", []),
        ("print(root)", []),
        ("rows = spark.read.json('x')\nn = 3", []),
        ("print(n, root)", []),
        ("zk = ZooKeeperServer(root, 2181)", []),
        ("cluster = make_one()", ["needs-cluster"]),
        ("print(cluster.bootstrap)", []),
    ]
    assert reader.cells_to_skip(cells) == {
        1: "java",
        3: "java",  # reads `spark`
        4: "java",  # reads `n`, bound by a cell left out
        5: "zookeeper",
        6: "cluster",  # by its tag
        7: "cluster",
    }


def test_a_name_bound_again_by_a_cell_that_runs_is_clean(reader: ModuleType) -> None:
    cells: list[tuple[str, list[str]]] = [
        ("from pathlib import Path\nimport time", []),
        (
            "from pathlib import Path\nbroker = BrokerProcess(Path('x'))\nt = time.time()",
            [],
        ),
        ("print(Path('y'), time.time())", []),  # the same imports: still runs
        ("print(t)", []),  # t is the skipped cell's
        ("t = 0", []),
        ("print(t, broker)", []),  # t is clean again, broker is not
        ("print(t)", []),
    ]
    assert reader.cells_to_skip(cells) == {1: "cluster", 3: "cluster", 5: "cluster"}


def test_an_unknown_needs_tag_stops_the_build(reader: ModuleType) -> None:
    with pytest.raises(ValueError, match="needs-gpu"):
        reader.cells_to_skip([("x = 1", ["needs-gpu"])])


def test_the_note_says_what_the_cell_needs(reader: ModuleType) -> None:
    note = reader.note("java, cluster")
    assert "Java (Spark) and broker processes" in note
    assert "make book FULL=1" in note


GUARDED = """
import subprocess, sys
exec(open(sys.argv[1]).read())
subprocess.run([sys.executable, "-c", "pass"], check=True)  # Python alone is allowed
subprocess.run([sys.executable, "-m", "minikafka.controller", "--help"],
               capture_output=True)  # a package's tool is not a server
for command in (["java", "-version"], [sys.executable, "-m", "minikafka.broker", "broker"],
                ["/usr/share/zookeeper/bin/zkServer.sh", "start"], "minikafka cluster up"):
    try:
        subprocess.Popen(command)
    except RuntimeError as e:
        print(str(e).split(":")[0])
    else:
        print("started", command)
"""


def test_the_guard_refuses_java_zookeeper_and_brokers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", GUARDED, str(EXT / "reader_guard.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    refusal = "the reader build (make book) runs no cell that needs"
    assert done.stdout.splitlines() == [
        f"{refusal} java",
        f"{refusal} cluster",
        f"{refusal} zookeeper",
        f"{refusal} cluster",
    ]


PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

# Page

```{{code-cell}} python3
answer = 6 * 7
```

```{{code-cell}} python3
{cell}
```

```{{code-cell}} python3
print("after", answer)
```
"""


def build(tmp_path: Path, cell: str, mode: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_nb', 'reader']\n"
        "nb_execution_mode = 'force'\nnb_execution_raise_on_error = True\n"
        "nb_execution_show_tb = True\n"
        "nb_kernel_rgx_aliases = {'.*': 'python3'}\n"
    )
    (source / "index.md").write_text(PAGE.format(cell=cell))
    env = {**os.environ, "MINIKAFKA_BOOK": mode}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-T",  # the cell's traceback, with the guard's message, on stderr
            "-b",
            "html",
            str(source),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


JAVA_CELL = "import subprocess\nversion = subprocess.run(['java', '-version'])"


def test_the_reader_build_leaves_out_a_cell_and_says_so(tmp_path: Path) -> None:
    done = build(tmp_path, "spark = spark_session('x')", "reader")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    assert "This cell runs in the full build" in page
    assert "after 42" in page  # the cells around it ran


def test_the_reader_build_fails_on_a_cell_it_should_have_left_out(
    tmp_path: Path,
) -> None:
    done = build(tmp_path, JAVA_CELL, "reader")
    assert done.returncode != 0
    assert "Tag the cell `needs-java`" in done.stdout + done.stderr


def test_the_full_build_changes_nothing(tmp_path: Path) -> None:
    done = build(tmp_path, "print('ran', answer)", "full")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    assert "ran 42" in page
    assert "full build" not in page
