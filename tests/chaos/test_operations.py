"""What a run records of Kafka's tools' answers: the line that says why, not the box a
usage error is drawn in (a five-minute run, seed 115, recorded only the box's bottom
edge for a reassignment file the tool refused)."""

from __future__ import annotations

from chaos.operations import last_line

USAGE_ERROR = """\
Usage: python -m minikafka.tools reassign-partitions [OPTIONS]
Try 'python -m minikafka.tools reassign-partitions --help' for help.
╭─ Error ──────────────────────────────────────────────────────────╮
│ Invalid value: partition chaos-0: replicas [] are not valid      │
╰──────────────────────────────────────────────────────────────────╯
"""


def test_a_usage_error_is_recorded_by_its_reason() -> None:
    said = last_line(USAGE_ERROR)
    assert said == "Invalid value: partition chaos-0: replicas [] are not valid"


def test_plain_answers_are_recorded_as_their_last_line() -> None:
    done = "Current assignment ...\nSuccessfully started partition reassignments\n"
    assert last_line(done) == "Successfully started partition reassignments"
    assert last_line("Error: REQUEST_TIMED_OUT\n") == "Error: REQUEST_TIMED_OUT"
    assert last_line("") == ""
