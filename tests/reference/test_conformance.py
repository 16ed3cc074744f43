"""Differential conformance: every scenario of the corpus sent to the shared Apache Kafka
node and to a minikafka node set up the same way, the answers compared field by field
(method: ``tests/reference/conformance/_runner.py``). A difference passes only when
COMPAT.md's "Known differences" table lists it, and a row that matches nothing fails."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker import KafkaApis
from minikafka.broker.testing import BrokerProcess
from reference.kafka import KafkaNode
from tests.reference.conformance._diff import judge, read_known
from tests.reference.conformance._fixtures import prepare
from tests.reference.conformance._runner import BROKEN, compare
from tests.reference.conformance.corpus import corpus

COMPAT = Path(__file__).resolve().parents[2] / "COMPAT.md"

# The minikafka node is configured as reference.kafka.KafkaNode configures Kafka's: one
# node (node.id 1, broker and controller, minikafka's default) with the internal topics'
# replication factor 1 set explicitly, as KafkaNode sets it. Every other setting the
# corpus touches has the same default in both (num.partitions 1, 50 offsets partitions,
# a 3 s group.initial.rebalance.delay.ms, a 6 s minimum session timeout): setting them
# here would make minikafka describe them as static broker configs where Kafka says
# default, and the describe-configs scenarios check those defaults.
MINIKAFKA_LIKE_KAFKA = {"offsets.topic.replication.factor": "1"}


@pytest.fixture(scope="module")
def minikafka_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(
        tmp_path_factory.mktemp("conformance"), overrides=MINIKAFKA_LIKE_KAFKA
    ) as broker:
        yield broker


def test_the_corpus_covers_every_advertised_version() -> None:
    # Guarantee: each API and version minikafka advertises has at least one scenario,
    # and there are at least 300 of them, each with its own id.
    scenarios = corpus()
    ids = [s.id for s in scenarios]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 300
    covered = {tuple(i.split(".")[:2]) for i in ids}
    names = {s.id.split(".")[0] for s in scenarios}
    for api, (low, high) in KafkaApis.SUPPORTED.items():
        name = _scenario_prefix(api)
        assert name in names, f"no scenario for api key {api} ({name})"
        for v in range(low, high + 1):
            assert (name, f"v{v}") in covered, f"no scenario for {name} v{v}"


def _scenario_prefix(api: int) -> str:
    from minikafka.net import ApiKey

    return ApiKey(api).name.lower().replace("_", "-")


@pytest.mark.external
def test_minikafka_answers_as_kafka_does(
    kafka_reference: KafkaNode,
    minikafka_node: BrokerProcess,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Guarantee: for every scenario, minikafka's answer equals Kafka's field by field
    # after normalising what may legitimately differ, except the differences COMPAT.md's
    # table lists with a reason; and every row of that table still happens.
    known = read_known(COMPAT)
    started = time.monotonic()
    outcomes = compare(
        kafka_reference.bootstrap, minikafka_node.bootstrap, prepare, corpus()
    )
    elapsed = time.monotonic() - started
    broken = [
        f"{o.scenario} on {side}:\n{tree[BROKEN]}"
        for o in outcomes
        for side, tree in (("Kafka", o.kafka), ("minikafka", o.minikafka))
        if isinstance(tree, dict) and BROKEN in tree
    ]
    verdict = judge([d for o in outcomes for d in o.differences], known)
    identical = sum(1 for o in outcomes if not o.differences)
    reasons = collections.Counter(row.reason for _, row in verdict.listed)
    summary = (
        f"conformance: {len(outcomes)} scenarios, {identical} identical answers, "
        f"{len(outcomes) - identical} with listed differences "
        f"({len(verdict.listed)} field differences under {len(reasons)} reasons), "
        f"{len(verdict.unlisted)} unlisted, {len(verdict.stale)} stale rows, "
        f"in {elapsed:.1f} s"
    )
    with capsys.disabled():  # shown in every run, not only with -s
        print("\n" + summary)
    assert not broken, "scenarios that could not run:\n" + "\n".join(broken[:10])
    problems = [f"unlisted: {d}" for d in verdict.unlisted[:300]]
    problems += [f"stale (matches no difference): {row}" for row in verdict.stale]
    assert not problems, summary + "\n" + "\n".join(problems)
