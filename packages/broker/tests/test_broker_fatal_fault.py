"""A fatal fault ends the broker's process with one line, as Kafka's
ProcessTerminatingFaultHandler does (KIP-859): ``Encountered fatal fault: ...`` at ERROR,
exit status 1, no traceback; whether the fault left its nursery grouped or not."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
import typer

from minikafka.broker import _run
from minikafka.broker._config import KafkaConfig
from minikafka.broker._server import BrokerServer
from minikafka.common import FatalFaultError


class _Server:
    """Stands for a BrokerServer: what run_broker starts is replaced below."""


async def _fault_in_a_task(server: object) -> None:
    async def replay() -> None:
        raise FatalFaultError("replaying the record at offset 57 failed: KeyError: 'x'")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(replay)


async def _fault_outside_a_nursery(server: object) -> None:
    raise FatalFaultError("the Raft driver failed: RuntimeError: a bug")


@pytest.mark.parametrize("serve", [_fault_in_a_task, _fault_outside_a_nursery])
def test_a_fatal_fault_ends_the_process_with_one_line_and_status_1(
    serve: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = KafkaConfig.from_properties(
        {"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}
    )
    monkeypatch.setattr(BrokerServer, "open", lambda *a, **k: _Server())
    monkeypatch.setattr(_run, "_serve", serve)
    caplog.set_level(logging.ERROR, "minikafka.broker")
    with pytest.raises(typer.Exit) as exit_:
        _run.run_broker(config, tracer=None)  # type: ignore[arg-type]
    assert exit_.value.exit_code == 1
    [record] = caplog.records
    assert record.getMessage().startswith("Encountered fatal fault: ")
    assert record.exc_info is None, "one line, no traceback"
    assert "Traceback" not in capsys.readouterr().err
