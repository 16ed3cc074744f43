"""``reference.java``: a test's Java program is compiled once per content and run with a
scenario; bad sources and bad scenarios get a message naming what was wrong; the client's
request log is read back as the APIs and versions it sent and negotiated."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.java import (
    JavaFailed,
    compile_sources,
    negotiated,
    refused,
    requests_sent,
    run_scenario,
    sources_hash,
)
from tests.compat import _java

pytestmark = pytest.mark.external

ECHO = """\
public final class Echo {
    public static void main(String[] args) throws Exception {
        String text = new String(System.in.readAllBytes(), "UTF-8");
        System.out.println("not json");
        System.out.println(text);
    }
}
"""


def test_a_program_is_compiled_once_per_content_and_run(tmp_path: Path) -> None:
    # Guarantee: the same sources give the same cached classes (no second javac); other
    # bytes give other classes; the program reads the scenario and its JSON lines are
    # returned, other output left out.
    source = tmp_path / "Echo.java"
    source.write_text(ECHO)
    classes = compile_sources([source])
    assert (classes / "Echo.class").is_file()
    stamp = (classes / "Echo.class").stat().st_mtime_ns
    assert compile_sources([source]) == classes
    assert (classes / "Echo.class").stat().st_mtime_ns == stamp
    run = run_scenario("Echo", classes, {"step": 0, "op": "echo", "result": 7}).check()
    assert run.lines == ({"step": 0, "op": "echo", "result": 7},)
    assert run.result(0) == 7
    with pytest.raises(JavaFailed, match=r"step 0 \(echo\) did not fail"):
        run.error(0)
    source.write_text(ECHO.replace("not json", "still not json"))
    assert sources_hash([source]) != classes.name


def test_bad_sources_and_scenarios_are_named(tmp_path: Path) -> None:
    # Guarantee: a file that is not Java, a program that does not compile, and a scenario
    # the driver cannot read each fail with a message naming the problem.
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match=r"notes\.txt is not a \.java file"):
        compile_sources([text])
    broken = tmp_path / "Broken.java"
    broken.write_text("public final class Broken { int x = ; }\n")
    with pytest.raises(JavaFailed, match=r"(?s)javac exited 1:.*Broken\.java"):
        compile_sources([broken])
    run = run_scenario(_java.MAIN, _java.classes(), {"steps": []})
    assert run.returncode == 2
    assert 'the scenario needs "bootstrap" and "steps"' in run.stderr
    with pytest.raises(JavaFailed, match="exited 2"):
        run.check()


def test_the_request_log_is_read_back(tmp_path: Path) -> None:
    # Guarantee: the lines NetworkClient logs at DEBUG are parsed into what was sent,
    # what each API negotiated to, and what the client refused to send.
    log = tmp_path / "requests.log"
    log.write_text(
        "[Producer clientId=p] Sending PRODUCE request with header RequestHeader("
        "apiKey=PRODUCE, apiVersion=8, clientId=p, correlationId=3, headerVersion=1)"
        " and timeout 30000 to node 1: {}\n"
        "[Producer clientId=p] Node 1 has finalized features epoch: -1, finalized"
        " features: [], supported features: [], ZK migration ready: false, API"
        " versions: (Produce(0): 3 to 8 [usable: 8], SaslHandshake(17): UNSUPPORTED,"
        " AlterPartitionReassignments(45): 0 [usable: 0], Fetch(1): 4 to 20"
        " [unusable: node too new]).\n"
        "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not"
        " support DESCRIBE_CLUSTER\n"
    )
    assert requests_sent(log) == {("PRODUCE", 8)}
    found = negotiated(log)
    assert found["Produce"].broker == (3, 8)
    assert found["Produce"].usable == 8
    assert found["SaslHandshake"].broker is None
    assert found["AlterPartitionReassignments"].broker == (0, 0)
    assert found["Fetch"].usable is None
    assert refused(log) == {"DESCRIBE_CLUSTER"}
    assert requests_sent(tmp_path / "absent.log") == set()
