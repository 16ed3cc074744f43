"""``python -m chaos run``'s producer count: every client ``--clients`` names runs a
producer unless ``--producers`` says otherwise (producers take the clients in turn)."""

from __future__ import annotations

from chaos.__main__ import producer_count


def test_two_producers_by_default() -> None:
    assert producer_count(("confluent-kafka",), None) == 2
    assert producer_count(("confluent-kafka", "minikafka"), None) == 2


def test_a_third_client_named_gets_a_producer_of_its_own() -> None:
    assert producer_count(("confluent-kafka", "minikafka", "kafka-python"), None) == 3


def test_producers_asked_for_are_what_runs() -> None:
    assert producer_count(("confluent-kafka", "minikafka", "kafka-python"), 2) == 2
    assert producer_count(("minikafka",), 5) == 5
