"""COMPAT.md's compatibility matrix is exactly what ``scripts/compat_matrix.py`` renders.

The script reads the compat marks of whichever test modules exist in ``tests/compat``; a
test added, renamed or re-marked without ``--write`` fails here. The other tests run the
script on small modules of their own to pin down which marks it sees.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import attrs

from minikafka.broker import KafkaApis
from minikafka.net import ApiKey

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compat_matrix.py"


@attrs.frozen
class Run:
    returncode: int
    stdout: str
    stderr: str


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compat_matrix", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT_MODULE = load_script()


def run_script(*args: str) -> Run:
    """``compat_matrix.py ARGS``, in this process (importing the broker once is enough)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = SCRIPT_MODULE.main(list(args))
    assert isinstance(returncode, int)
    return Run(returncode, out.getvalue(), err.getvalue())


def test_compat_page_holds_the_current_matrix() -> None:
    # As `make test` and a contributor run it: the script itself, on the real COMPAT.md.
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    rendered = run_script()
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stdout in (ROOT / "COMPAT.md").read_text(encoding="utf-8")


def write_module(directory: Path, name: str, source: str) -> None:
    (directory / name).write_text(textwrap.dedent(source), encoding="utf-8")


def test_marks_are_collected_where_pytest_applies_them(tmp_path: Path) -> None:
    write_module(
        tmp_path,
        "test_one.py",
        """
        import pytest
        from pytest import mark

        pytestmark = [pytest.mark.external, pytest.mark.compat("ApiVersions", "kcat")]

        @pytest.mark.compat("Produce", "kcat")
        @mark.compat("Fetch", "kcat")
        def test_produce() -> None: ...

        @pytest.mark.parametrize(
            "x", [1, pytest.param(2, marks=pytest.mark.compat("ListOffsets", "kcat"))]
        )
        async def test_param(x: int) -> None: ...

        @pytest.mark.compat("CreateTopics", "aiokafka")
        class TestAdmin:
            pytestmark = pytest.mark.compat("DeleteTopics", "aiokafka")

            def test_create(self) -> None: ...

            def helper(self) -> None: ...

        @pytest.mark.xfail(strict=True, reason="a bug")
        @pytest.mark.compat("Metadata", "kafka-python")
        def test_expected_to_fail() -> None: ...

        def helper() -> None: ...
        """,
    )
    write_module(
        tmp_path,
        "test_two.py",
        """
        import pytest

        @pytest.mark.compat("Produce", "kcat")
        def test_other() -> None: ...
        """,
    )
    write_module(
        tmp_path,
        "test_three.py",
        """
        import pytest

        pytestmark = pytest.mark.xfail(reason="all of it")

        @pytest.mark.compat("Produce", "aiokafka")
        def test_failing() -> None: ...
        """,
    )
    write_module(tmp_path, "conftest.py", "import pytest\n")
    result = run_script("--tests", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # Rows in ApiVersions key order; the advertised APIs are all there.
    table = [
        line for line in out.splitlines() if line.startswith("| ") and "---" not in line
    ]
    rows = [line.split(" | ")[0].removeprefix("| ") for line in table]
    keys = [int(row.rsplit("(", 1)[1].rstrip(")")) for row in rows[1:]]
    assert rows[0] == "API (key)"
    assert keys == sorted(keys)
    assert {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.METADATA,
        ApiKey.API_VERSIONS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
    } <= set(keys)

    notes = [line for line in out.splitlines() if line.startswith("- (")]
    assert notes == [
        "- (1) Produce × kcat: test_one.py: `test_produce`; test_two.py: `test_other`",
        "- (2) Fetch × kcat: test_one.py: `test_produce`",
        "- (3) ListOffsets × kcat: test_one.py: `test_param`",
        "- (4) ApiVersions × kcat: test_one.py: `test_produce`, `test_param`,"
        " `TestAdmin::test_create`",
        "- (5) CreateTopics × aiokafka: test_one.py: `TestAdmin::test_create`",
        "- (6) DeleteTopics × aiokafka: test_one.py: `TestAdmin::test_create`",
    ]
    # test_three's is xfail
    served = {k: f"{low}-{high}" for k, (low, high) in KafkaApis.SUPPORTED.items()}
    assert f"| Produce (0) | {served[ApiKey.PRODUCE]} | ✓ (1) | – | – | – | – |" in out
    # Metadata's only test is xfail
    assert f"| Metadata (3) | {served[ApiKey.METADATA]} | – | – | – | – | – |" in out
    partitions = served[ApiKey.CREATE_PARTITIONS]
    assert f"| CreatePartitions (37) | {partitions} | n/a | – | – | – | – |" in out
    # The Java client's column says which release's client it is.
    version = (ROOT / "reference" / "pom.xml").read_text().split("<kafka.version>")[1]
    header = f"| aiokafka | Java (Kafka {version.split('<')[0]}) |"
    assert header in out


def test_write_replaces_only_the_marked_section(tmp_path: Path) -> None:
    write_module(
        tmp_path,
        "test_x.py",
        """
        import pytest

        @pytest.mark.compat("Produce", "confluent-kafka")
        def test_produce() -> None: ...
        """,
    )
    readme = tmp_path / "README.md"
    before, after = "# title\n\ntext before\n\n", "\nafter\n"
    readme.write_text(
        before
        + "<!-- compat-matrix:start -->\nold\n<!-- compat-matrix:end -->"
        + after,
        encoding="utf-8",
    )
    common = ("--tests", str(tmp_path), "--document", str(readme))
    assert run_script("--check", *common).returncode == 1
    assert run_script("--write", *common).returncode == 0
    text = readme.read_text(encoding="utf-8")
    rendered = run_script("--tests", str(tmp_path)).stdout
    assert text == (
        before
        + "<!-- compat-matrix:start -->\n"
        + rendered
        + "<!-- compat-matrix:end -->"
        + after
    )
    assert run_script("--check", *common).returncode == 0
    assert run_script("--write", *common).returncode == 0
    assert readme.read_text(encoding="utf-8") == text  # idempotent


def test_bad_marks_and_missing_markers_are_errors(tmp_path: Path) -> None:
    for mark, error in (
        ('"Produce", "kafka-go"', "test_bad.py:4: client 'kafka-go'"),
        ('"Produse", "kcat"', "'Produse' is not a Kafka API name"),
    ):
        write_module(
            tmp_path,
            "test_bad.py",
            f"""
            import pytest

            @pytest.mark.compat({mark})
            def test_produce() -> None: ...
            """,
        )
        result = run_script("--tests", str(tmp_path))
        assert result.returncode == 2
        assert error in result.stderr

    (tmp_path / "test_bad.py").unlink()
    readme = tmp_path / "README.md"
    readme.write_text("no markers here\n", encoding="utf-8")
    result = run_script("--write", "--tests", str(tmp_path), "--document", str(readme))
    assert result.returncode == 2
    assert "no <!-- compat-matrix:start -->" in result.stderr
    assert readme.read_text(encoding="utf-8") == "no markers here\n"
