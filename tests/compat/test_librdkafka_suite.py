"""librdkafka's own regression tests, the ones that need a broker with SASL and ACLs,
against a three-broker KRaft cluster whose client listeners are SASL_SSL.

The runner is librdkafka 2.0.2's ``tests/test-runner`` (Debian's source, built once by
``scripts/build_librdkafka_tests.sh``: ``make test`` does it), run as librdkafka's
``sasl_test.py`` runs it against a trivup cluster: a ``test.conf`` with the client's
``security.protocol`` and ``sasl.*`` settings, ``TESTS`` naming the tests,
``TEST_KAFKA_VERSION`` the broker's version, ``TEST_REPORT`` the JSON report each case
reads its own result from. Each run of :data:`RUNS` is one invocation; each librdkafka
test in it is one case here, named ``<run>-<test>``.

The brokers (the ``PLAINTEXT`` listener name, mapped to SASL_SSL) take PLAIN (users in
the JAAS line), SCRAM-SHA-256/512 (credentials created through AlterUserScramCredentials
once the cluster is up) and OAUTHBEARER's unsecured tokens with a required scope; the
StandardAuthorizer (KIP-801) with ``super.users`` the admin and, as librdkafka's own
test clusters have it, ``allow.everyone.if.no.acl.found``. The brokers talk over a
PLAINTEXT REPLICATION listener: the two tests librdkafka runs only on an unauthenticated
listener (0115 and 0119: they add ACLs with ``kafka-acls.sh``, here Apache Kafka 4.1.1's
``AclCommand``, and expect the authorizer's refusals) run there, against the same
authorizer. What the cases prove: each listed librdkafka test passes (a run expected to
fail, a wrong password, must fail, and with an authentication error);
:data:`NOT_RUN` says why the other SASL/ACL tests of the suite are not here.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from reference.kafka import ReferenceMissing, java_command
from tests.cluster._cluster import FAST, SHARED, WAIT, wait_for

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "reference" / ".cache" / "librdkafka" / "librdkafka-2.0.2"
RUNNER = TREE / "tests" / "test-runner"

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.external,
    pytest.mark.serial,
    pytest.mark.skipif(
        not RUNNER.is_file(),
        reason="librdkafka's test runner is built by `make test` "
        "(scripts/bootstrap.sh librdkafka-tests)",
    ),
]

KAFKA_VERSION = "4.1.1"
"""The version the runner is told the broker is (``TEST_KAFKA_VERSION``): the Kafka
release minikafka answers as."""
ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
USER, PASSWORD = "myuser", "mypassword"
"""sasl_test.py's user."""
SCOPE = "requiredScope"
"""The scope the brokers require of an OAUTHBEARER token (sasl_test.py's)."""
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@attrs.frozen
class Run:
    """One invocation of the runner: the client settings of its ``test.conf`` (over the
    listener's), the librdkafka tests it runs, and the state each must end in."""

    listener: str
    """``SASL_SSL`` (the client listeners) or ``PLAINTEXT`` (the REPLICATION one)."""
    client: Mapping[str, str]
    tests: tuple[str, ...]
    subtests: str | None = None
    """``SUBTESTS``: only the sub-tests whose names hold this."""
    expect: str = "PASSED"
    failure: str = ""
    """What the runner's log says when ``expect`` is FAILED: why the broker refused."""


def _scram(mechanism: str) -> dict[str, str]:
    return {
        "sasl.mechanism": mechanism,
        "sasl.username": USER,
        "sasl.password": PASSWORD,
    }


RUNS: dict[str, Run] = {
    # sasl_test.py's "SASL_SSL PLAIN" suite (every test there; here those that exercise
    # the broker's side of a SASL client: produce, consume, groups, commits, and 0135's
    # re-login with new credentials).
    "plain": Run(
        "SASL_SSL",
        {"sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": PASSWORD},
        ("0001", "0002", "0005", "0030", "0135"),
    ),
    # 0081-admin's ACL sub-tests: CreateAcls, DescribeAcls and DeleteAcls (versions 0
    # and 1), as the super user.
    "acls": Run(
        "SASL_SSL",
        {
            "sasl.mechanism": "PLAIN",
            "sasl.username": ADMIN,
            "sasl.password": ADMIN_PASSWORD,
        },
        ("0081",),
        subtests="Acls",
    ),
    # sasl_test.py's "SASL SCRAM". librdkafka before 2.6.1 repeats its own nonce in its
    # client-final message; Kafka 4 checks the nonce for equality (RFC 5802) and refuses
    # it, as minikafka does: the test must fail, refused.
    "scram512": Run(
        "SASL_SSL",
        _scram("SCRAM-SHA-512"),
        ("0001",),
        expect="FAILED",
        failure="invalid credentials with SASL mechanism SCRAM-SHA-512",
    ),
    "scram256": Run(
        "SASL_SSL",
        _scram("SCRAM-SHA-256"),
        ("0001",),
        expect="FAILED",
        failure="invalid credentials with SASL mechanism SCRAM-SHA-256",
    ),
    # sasl_test.py's "SASL PLAIN with wrong username": every test must fail.
    "plain-wrong-user": Run(
        "SASL_SSL",
        {
            "sasl.mechanism": "PLAIN",
            "sasl.username": "wrongjoe",
            "sasl.password": PASSWORD,
        },
        ("0001",),
        expect="FAILED",
        failure="Invalid username or password",
    ),
    # sasl_test.py's "SASL OAUTHBEARER" and "... with wrong scope".
    "oauthbearer": Run(
        "SASL_SSL",
        {
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": f"scope={SCOPE} principal={USER}",
        },
        ("0001",),
    ),
    "oauthbearer-wrong-scope": Run(
        "SASL_SSL",
        {
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": f"scope=wrongScope principal={USER}",
        },
        ("0001",),
        expect="FAILED",
        failure="SASL authentication error",
    ),
    # The producer's and consumer's handling of TOPIC_AUTHORIZATION_FAILED after
    # kafka-acls.sh denies them: librdkafka skips both on an authenticated listener.
    "acl-plaintext": Run("PLAINTEXT", {}, ("0115", "0119")),
}

NOT_RUN = {
    "0126": "OIDC: needs an OAuth token endpoint (trivup's), which is no broker feature",
    "0128": "sets no broker: checks librdkafka's own SASL callback queue",
    "0009, 0052, 0077, 0104, 0105, 0106, 0117, 0120, 0121, 0138": (
        "run on librdkafka's mock cluster; they skip themselves when auth is configured"
    ),
}
"""The suite's tests that name SASL or ``test_needs_auth()`` and are not run here."""

CASES = [(name, test) for name, run in RUNS.items() for test in run.tests]


@attrs.frozen
class Cluster:
    cluster: ProcessCluster
    pki: ThrowawayPki
    work: Path

    def bootstrap(self, listener: str) -> str:
        layout = self.cluster
        if listener == "SASL_SSL":
            ports = [layout.broker_ports[b] for b in sorted(layout.broker_ports)]
        else:
            ports = [
                layout.replication_ports[b][1] for b in sorted(layout.broker_ports)
            ]
        return ",".join(f"{self.cluster.host}:{port}" for port in ports)


def _overrides(pki: ThrowawayPki) -> dict[str, str]:
    users = f'user_{ADMIN}="{ADMIN_PASSWORD}" user_{USER}="{PASSWORD}"'
    prefix = "listener.name.plaintext."
    return {
        **FAST,
        "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,REPLICATION:PLAINTEXT,"
        "CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        prefix + "plain.sasl.jaas.config": f"{PLAIN_MODULE} required {users};",
        prefix + "scram-sha-256.sasl.jaas.config": f"{SCRAM_MODULE} required;",
        prefix + "scram-sha-512.sasl.jaas.config": f"{SCRAM_MODULE} required;",
        prefix + "oauthbearer.sasl.jaas.config": (
            f'{OAUTH_MODULE} required unsecuredValidatorRequiredScope="{SCOPE}";'
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": f"User:{ADMIN}",
        "allow.everyone.if.no.acl.found": "true",
    }


def _sasl_ssl(cluster: ProcessCluster, pki: ThrowawayPki) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca),
    }


def _add_scram_user(cluster: ProcessCluster, pki: ThrowawayPki) -> None:
    """Creates sasl_test.py's user's SCRAM credentials, and checks them with
    confluent-kafka's librdkafka (2.6.1 or newer: its SCRAM client Kafka 4 accepts)."""
    plain = {"sasl.mechanism": "PLAIN", "sasl.username": ADMIN}
    admin = AdminClient(
        {**_sasl_ssl(cluster, pki), **plain, "sasl.password": ADMIN_PASSWORD}
    )
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            USER, ScramCredentialInfo(mechanism, 4096), PASSWORD.encode()
        )
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=WAIT)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        client = AdminClient({**_sasl_ssl(cluster, pki), **_scram(mechanism)})
        wait_for(
            functools.partial(_authenticates, client),
            f"{USER} authenticates with {mechanism} (confluent-kafka)",
        )


def _authenticates(client: AdminClient) -> bool:
    try:
        client.list_topics(timeout=5)
    except KafkaException:
        return False
    return True


def _kafka_path(work: Path) -> Path:
    """A ``KAFKA_PATH`` whose ``bin/kafka-acls.sh`` runs Apache Kafka's AclCommand, then
    waits until every broker describes the same ACLs on the topic
    (:mod:`tests.compat._acl_propagation` says why)."""
    try:
        command = java_command("org.apache.kafka.tools.AclCommand")
    except ReferenceMissing as missing:
        pytest.skip(str(missing))
    propagated = [sys.executable, "-m", "tests.compat._acl_propagation"]
    script = work / "kafka" / "bin" / "kafka-acls.sh"
    script.parent.mkdir(parents=True)
    script.write_text(
        "#!/bin/sh\n"
        f'{shlex.join(command)} "$@" || exit $?\n'
        f'cd {shlex.quote(str(ROOT))} && exec {shlex.join(propagated)} "$@"\n'
    )
    script.chmod(0o755)
    return script.parents[1]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pki = make_pki(tmp_path_factory.mktemp("pki"), clients=())
    ports = free_ports(7)
    ids = range(1, 4)
    replication = {b: (ports[3 + b], ports[3 + b]) for b in ids}
    cluster = ProcessCluster.create(
        tmp_path_factory.mktemp("cluster"),
        3,
        controller_ports=ports[:1],
        broker_ports=ports[1:4],
        replication_ports=replication,
        overrides=_overrides(pki),
    )
    SHARED.append(cluster)  # each test's crash check asks it too
    try:
        cluster.up()
        _add_scram_user(cluster, pki)
        yield Cluster(cluster, pki, tmp_path_factory.mktemp("librdkafka"))
    finally:
        SHARED.remove(cluster)
        cluster.kill_all()


_REPORTS: dict[str, dict[str, Any]] = {}


def _report(secured: Cluster, name: str) -> dict[str, Any]:
    """The runner's JSON report of run ``name`` (run once, on first asking)."""
    if name in _REPORTS:
        return _REPORTS[name]
    run = RUNS[name]
    work = secured.work / name
    work.mkdir()
    conf = {
        "bootstrap.servers": secured.bootstrap(run.listener),
        "security.protocol": run.listener.lower(),
        # A loaded two-core machine: librdkafka's CI uses the same multiplier on slow hosts.
        "test.timeout.multiplier": "3",
    }
    if run.listener == "SASL_SSL":
        conf["ssl.ca.location"] = str(secured.pki.ca)
    conf.update(run.client)
    (work / "test.conf").write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": f"{TREE / 'src'}:{TREE / 'src-cpp'}",
        "RDKAFKA_TEST_CONF": str(work / "test.conf"),
        "TEST_KAFKA_VERSION": KAFKA_VERSION,
        "TESTS": ",".join(run.tests),
        "TEST_REPORT": str(work / "report.json"),
        "BROKERS": secured.bootstrap("PLAINTEXT"),
        "KAFKA_PATH": str(_kafka_path(work)),
    }
    if run.subtests is not None:
        env["SUBTESTS"] = run.subtests
    with (work / "runner.log").open("w") as log:
        # -Q: quick mode, as librdkafka's CI; the suite's tests end with their own
        # timeouts, so this one only bounds a hung runner.
        subprocess.run(
            [str(RUNNER), "-Q"],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=420,
            check=False,
        )
    if not (work / "report.json").is_file():
        tail = (work / "runner.log").read_text(errors="replace")[-4000:]
        pytest.fail(f"the runner wrote no report; its log ends:\n{tail}")
    report: dict[str, Any] = json.loads((work / "report.json").read_text())
    report["log"] = str(work / "runner.log")
    _REPORTS[name] = report
    return report


@pytest.mark.parametrize(("run", "test"), CASES, ids=[f"{r}-{t}" for r, t in CASES])
def test_librdkafka_test_ends_as_expected(
    secured: Cluster, run: str, test: str
) -> None:
    """librdkafka's test ``test`` ends as ``RUNS[run]`` expects (PASSED; FAILED for the
    wrong credentials, with an authentication error in the runner's log)."""
    report = _report(secured, run)
    states = {
        name: result["state"]
        for name, result in report["tests"].items()
        if name.startswith(test)
    }
    log = Path(report["log"]).read_text(errors="replace")
    assert states, f"the runner ran no test {test}: see {report['log']}"
    expected = RUNS[run].expect
    assert set(states.values()) == {expected}, (
        f"{states}, expected {expected}; the runner's log {report['log']} ends:\n"
        + log[-4000:]
    )
    assert RUNS[run].failure in log, log[-4000:]
