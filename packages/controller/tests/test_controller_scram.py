"""SCRAM credentials in the metadata log (KIP-554): what the controller writes for
AlterUserScramCredentials, what it refuses with Kafka's errors, and what a broker's
image holds after replaying the records (and after a snapshot of that image)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    BootstrapError,
    MetadataDelta,
    MetadataImage,
    MetadataRecord,
    QuorumController,
    RemoveUserScramCredentialRecord,
    ScramAlterationResult,
    ScramDeletion,
    ScramUpsertion,
    ScramUserDescription,
    UserScramCredentialRecord,
    describe_user_scram_credentials,
    parse_add_scram,
    read_bootstrap,
    write_bootstrap,
)
from minikafka.controller.testing import ControllerHarness
from minikafka.security import SCRAM_SHA_256, SCRAM_SHA_512, generate_credential
from minikafka.security._scram_formatter import salted_password

SALT = b"some-salt"


def _upsert(
    name: str, mechanism: int = 1, iterations: int = 4096, password: str = "pw"
) -> ScramUpsertion:
    kind = SCRAM_SHA_256 if mechanism != 2 else SCRAM_SHA_512
    salted = salted_password(kind, password, SALT, max(iterations, 1))
    return ScramUpsertion(name, mechanism, iterations, SALT, salted)


def _alter(
    harness: ControllerHarness,
    upsertions: tuple[ScramUpsertion, ...] = (),
    deletions: tuple[ScramDeletion, ...] = (),
) -> tuple[AlterUserScramCredentialsResponse, list[MetadataRecord]]:
    before = len(harness.log)
    response = harness.request(AlterUserScramCredentialsRequest(deletions, upsertions))
    assert isinstance(response, AlterUserScramCredentialsResponse)
    return response, [record for _, record in harness.log[before:]]


def test_an_upsertion_writes_the_derived_keys_not_the_salted_password() -> None:
    harness = ControllerHarness.start()
    response, records = _alter(harness, (_upsert("alice", password="alice-secret"),))
    expected = generate_credential(SCRAM_SHA_256, "alice-secret", 4096, salt=SALT)
    assert response.results == (ScramAlterationResult("alice"),)
    assert records == [
        UserScramCredentialRecord(
            "alice", 1, SALT, expected.stored_key, expected.server_key, 4096
        )
    ]


def test_a_deletion_writes_the_removal_and_an_absent_one_is_resource_not_found() -> (
    None
):
    harness = ControllerHarness.start()
    _alter(harness, (_upsert("alice"),))
    response, records = _alter(harness, deletions=(ScramDeletion("alice", 1),))
    assert response.results == (ScramAlterationResult("alice"),)
    assert records == [RemoveUserScramCredentialRecord("alice", 1)]
    response, records = _alter(harness, deletions=(ScramDeletion("alice", 1),))
    assert records == []
    assert response.results == (
        ScramAlterationResult(
            "alice",
            ErrorCode.resource_not_found,
            "Attempt to delete a user credential that does not exist",
        ),
    )


def test_bad_alterations_get_kafkas_errors_and_write_nothing_for_that_user() -> None:
    harness = ControllerHarness.start()
    response, records = _alter(
        harness,
        (
            _upsert("few", iterations=4095),
            _upsert("many", iterations=16385),
            _upsert("unknown", mechanism=3),
            _upsert("twice"),
            _upsert("twice"),
            _upsert("bob", mechanism=2, iterations=8192),
        ),
    )
    assert response.results == (
        ScramAlterationResult(
            "few", ErrorCode.unacceptable_credential, "Too few iterations"
        ),
        ScramAlterationResult(
            "many", ErrorCode.unacceptable_credential, "Too many iterations"
        ),
        ScramAlterationResult(
            "unknown", ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
        ),
        ScramAlterationResult(
            "twice",
            ErrorCode.duplicate_resource,
            "A user credential cannot be altered twice in the same request",
        ),
        ScramAlterationResult("bob"),
    )
    assert [
        (r.name, r.mechanism)
        for r in records
        if isinstance(r, UserScramCredentialRecord)
    ] == [("bob", 2)]
    assert len(records) == 1


def test_one_user_both_mechanisms_in_one_request_is_allowed() -> None:
    harness = ControllerHarness.start()
    response, records = _alter(harness, (_upsert("carol", 1), _upsert("carol", 2)))
    assert response.results == (ScramAlterationResult("carol"),)
    assert len(records) == 2


def test_the_image_holds_credentials_replayed_and_survives_a_snapshot() -> None:
    record = UserScramCredentialRecord("alice", 1, SALT, b"stored", b"server", 4096)
    delta = MetadataDelta(MetadataImage())
    delta.replay(record, 0)
    delta.replay(UserScramCredentialRecord("bob", 2, SALT, b"s", b"k", 8192), 1)
    image = delta.apply()
    assert image.scram[("alice", 1)] == record
    rebuilt = MetadataDelta(MetadataImage())
    for snapshot_record in image.records():
        rebuilt.replay(snapshot_record, image.offset)
    assert rebuilt.apply().scram == image.scram
    removal = MetadataDelta(image)
    removal.replay(RemoveUserScramCredentialRecord("alice", 1), 2)
    assert set(removal.apply().scram) == {("bob", 2)}


def test_describe_lists_mechanisms_and_iterations_and_refuses_unknown_or_twice() -> (
    None
):
    scram = {
        ("alice", 1): UserScramCredentialRecord("alice", 1, SALT, b"a", b"b", 4096),
        ("alice", 2): UserScramCredentialRecord("alice", 2, SALT, b"a", b"b", 8192),
    }
    assert describe_user_scram_credentials(scram, None) == (
        ScramUserDescription("alice", credentials=((1, 4096), (2, 8192))),
    )
    described = describe_user_scram_credentials(scram, ("alice", "nobody", "x", "x"))
    assert [(d.user, d.error_code) for d in described] == [
        ("alice", ErrorCode.none),
        ("nobody", ErrorCode.resource_not_found),
        ("x", ErrorCode.duplicate_resource),
    ]


def test_add_scram_arguments_become_the_records_kafka_storage_writes(
    tmp_path: Path,
) -> None:
    """``--add-scram`` with a password (fresh salt, default 4096 iterations) or with a
    base64 salt and salted password; the bootstrap checkpoint holds them and a new
    cluster's first controller writes them right after metadata.version."""
    alice = parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]")
    derived = generate_credential(SCRAM_SHA_256, "alice-secret", 4096, salt=alice.salt)
    assert (alice.name, alice.mechanism, alice.iterations) == ("alice", 1, 4096)
    assert (alice.stored_key, alice.server_key) == (
        derived.stored_key,
        derived.server_key,
    )
    salted = salted_password(SCRAM_SHA_512, "bob-secret", SALT, 8192)
    bob = parse_add_scram(
        f'SCRAM-SHA-512=[name=bob,salt="{base64.b64encode(SALT).decode()}",'
        f'saltedpassword="{base64.b64encode(salted).decode()}",iterations=8192]'
    )
    expected = generate_credential(SCRAM_SHA_512, "bob-secret", 8192, salt=SALT)
    assert bob == UserScramCredentialRecord(
        "bob", 2, SALT, expected.stored_key, expected.server_key, 8192
    )
    for bad in (
        "SCRAM-SHA-1=[name=a,password=b]",
        "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=20000]",
        "SCRAM-SHA-256=[name=a]",
        "SCRAM-SHA-256=name=a,password=b",
    ):
        with pytest.raises(BootstrapError):
            parse_add_scram(bad)
    write_bootstrap(tmp_path, [alice, bob])
    assert read_bootstrap(tmp_path) == (alice, bob)
    assert read_bootstrap(tmp_path / "elsewhere") == ()
    controller = QuorumController(bootstrap_records=(alice, bob))
    result = controller.become_leader(1, 0.0)
    [append] = result.records
    assert append.records[1:] == (alice, bob)
