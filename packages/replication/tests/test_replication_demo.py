"""``python -m minikafka.replication``: the demo tells the story its docstring promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.replication.__main__ import main


def test_the_demo_walks_produce_and_fetch_through_the_purgatory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--dir", str(tmp_path / "logs")]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    expected = [
        # 1. acks=all parked: appended on the leader, HW not moved
        "t=0.0  appended on the leader               LEO=3 followers={2: -1, 3: -1} HW=0",
        "answered: no; waiting in the produce purgatory: 1 (deadline t=30.0)",
        # 2. followers move the HW to the smallest LEO in the ISR, then the produce completes
        "t=0.2  broker 3 fetches from offset 1       LEO=3 followers={2: 3, 3: 1} HW=1",
        "answered: no (broker 3 has only offset 0)",
        "t=0.3  broker 3 fetches from offset 3       LEO=3 followers={2: 3, 3: 3} HW=3",
        "answered: NONE at base offset 0",
        # 3. the long poll waits for the HW, then for min_bytes, then completes
        "answered: no; waiting in the fetch purgatory: 1",
        "answered: no (the record is not below the HW yet)",
        "answered: no (below the HW now, but fewer than 200 bytes)",
        # 4. min.insync.replicas
        "acks=-1: NOT_ENOUGH_REPLICAS",
        "acks= 1: NONE at offset 6",
    ]
    positions = [lines.index(line) for line in expected]
    assert positions == sorted(positions)  # in this order
    [answered] = [line for line in lines if line.startswith("answered: NONE with")]
    assert answered.endswith("bytes from offset 3, HW=6")
    assert (tmp_path / "logs" / "replication-offset-checkpoint").exists()


def test_the_demo_refuses_a_directory_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "something").write_text("")
    with pytest.raises(SystemExit) as exited:
        main(["--dir", str(tmp_path)])
    assert exited.value.code == 2
    assert "is not empty" in capsys.readouterr().err
