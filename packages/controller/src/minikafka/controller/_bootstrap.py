"""The bootstrap checkpoint: records a new cluster's first controller writes (KIP-631,
KIP-554).

``kafka-storage.sh format`` writes ``bootstrap.checkpoint`` into ``metadata.log.dir``:
the records the metadata log starts with, as a snapshot file (one record batch). The
first active controller of an empty log writes them after its ``metadata.version``
FeatureLevelRecord, so that what format was told (``--add-scram``'s SCRAM users) is in
the log before any broker serves a client. A log that has records already ignores the
file, as Kafka does.

``--add-scram`` takes Kafka's form, ``SCRAM-SHA-256=[name=alice,password=alice-secret]``
or, with a salt and salted password given in base64,
``SCRAM-SHA-512=[name=bob,salt="...",saltedpassword="...",iterations=8192]``; the
iterations default to 4096 and a password gets a fresh random salt.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import Path

from minikafka.security import (
    SCRAM_MECHANISMS,
    credential_from_salted_password,
    generate_credential,
)

from ._metadata_log import decode_metadata_records, encode_snapshot
from ._records import FeatureLevelRecord, MetadataRecord, UserScramCredentialRecord

BOOTSTRAP_FILE = "bootstrap.checkpoint"
DEFAULT_ITERATIONS = 4096


class BootstrapError(ValueError):
    """An ``--add-scram`` argument kafka-storage.sh would refuse (the message says why)."""


def write_bootstrap(metadata_dir: Path, records: Sequence[MetadataRecord]) -> Path:
    """Write ``bootstrap.checkpoint`` with ``records``; its path."""
    path = Path(metadata_dir) / BOOTSTRAP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_snapshot(records))
    return path


def read_bootstrap(metadata_dir: Path) -> tuple[MetadataRecord, ...]:
    """The records of ``bootstrap.checkpoint`` a new log starts with, but the
    ``metadata.version`` level, which the controller writes itself (none: no file)."""
    path = Path(metadata_dir) / BOOTSTRAP_FILE
    if not path.exists():
        return ()
    return tuple(
        record
        for _, record in decode_metadata_records(path.read_bytes())
        if not isinstance(record, FeatureLevelRecord)
    )


def _fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BootstrapError(f"Expected key=value, not {item!r}")
        fields[key.strip().lower()] = value.strip().strip('"')
    return fields


def parse_add_scram(argument: str) -> UserScramCredentialRecord:
    """One ``--add-scram`` argument as the UserScramCredentialRecord it stands for."""
    mechanism_name, sep, rest = argument.partition("=")
    mechanism = SCRAM_MECHANISMS.get(mechanism_name.strip().upper())
    if mechanism is None:
        raise BootstrapError(
            f"The add-scram mechanism {mechanism_name.strip()} is not supported."
        )
    rest = rest.strip()
    if not sep or not (rest.startswith("[") and rest.endswith("]")):
        raise BootstrapError(f"Expected {mechanism}=[name=...,password=...]")
    fields = _fields(rest[1:-1])
    name = fields.get("name")
    if not name:
        raise BootstrapError("You must supply 'name' to add-scram")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise BootstrapError("iterations must be a number") from None
    if not mechanism.min_iterations <= iterations <= mechanism.max_iterations:
        raise BootstrapError(
            f"The number of iterations must be between {mechanism.min_iterations} "
            f"and {mechanism.max_iterations}"
        )
    if "password" in fields:
        if "saltedpassword" in fields:
            raise BootstrapError("Give either 'password' or 'saltedpassword', not both")
        salt = _base64(fields["salt"]) if "salt" in fields else None
        credential = generate_credential(
            mechanism, fields["password"], iterations, salt=salt
        )
    elif "saltedpassword" in fields and "salt" in fields:
        credential = credential_from_salted_password(
            mechanism,
            _base64(fields["salt"]),
            _base64(fields["saltedpassword"]),
            iterations,
        )
    else:
        raise BootstrapError(
            "You must supply 'password', or 'salt' and 'saltedpassword', to add-scram"
        )
    return UserScramCredentialRecord(
        name,
        mechanism.type,
        credential.salt,
        credential.stored_key,
        credential.server_key,
        credential.iterations,
    )


def _base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise BootstrapError(f"{text!r} is not base64") from None
