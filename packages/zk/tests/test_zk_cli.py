"""``python -m minikafka.zk`` (and ``minikafka zookeeper``): start, status, ls, get, stop,
as an operator runs them; a missing znode is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.testing import free_ports
from minikafka.zk.__main__ import main
from minikafka.zk.testing import needs_zookeeper

pytestmark = [
    pytest.mark.external,
    needs_zookeeper,
]


def test_start_look_inside_and_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = str(free_ports(1)[0])
    where = ["--dir", str(tmp_path / "zk"), "--port", port]
    connect = ["--zookeeper", f"127.0.0.1:{port}"]
    assert main(["start", *where]) == 0
    try:
        assert f"ZooKeeper running on 127.0.0.1:{port}" in capsys.readouterr().out
        assert main(["status", *where]) == 0
        assert "answers ruok" in capsys.readouterr().out
        assert main(["ls", "/", *connect]) == 0
        assert capsys.readouterr().out.strip() == "[zookeeper]"
        assert main(["get", "/brokers/ids/1", *connect]) == 1
        assert "no znode /brokers/ids/1" in capsys.readouterr().err
    finally:
        assert main(["stop", *where]) == 0
    assert main(["status", *where]) == 0
    assert capsys.readouterr().out.strip() == "not running"
