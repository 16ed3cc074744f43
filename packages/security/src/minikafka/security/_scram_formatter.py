"""SCRAM's arithmetic and messages (RFC 5802, RFC 7677), as Kafka's ``ScramFormatter``,
``ScramMechanism``, ``ScramCredential`` and ``ScramMessages`` have them.

The server never stores a password: it keeps, per user and mechanism, a *salt*, an
iteration count and two keys derived from ``SaltedPassword = Hi(password, salt, i)``
(PBKDF2 with the mechanism's HMAC): ``StoredKey = H(HMAC(SaltedPassword, "Client
Key"))``, which checks the client's proof, and ``ServerKey = HMAC(SaltedPassword, "Server
Key")``, which signs the server's last message so the client knows the server held the
credential too. Those four are Kafka's ``ScramCredential`` and the fields of KRaft's
``UserScramCredentialRecord`` (KIP-554: salt, stored_key, server_key, iterations).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError

from ._sasl import SaslError


@attrs.frozen
class ScramMechanism:
    """``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` (Kafka's ``ScramMechanism``); ``type`` is
    the admin API's and ``UserScramCredentialRecord.mechanism``'s code."""

    mechanism_name: str
    hash_name: str
    type: int
    min_iterations: int = 4096
    max_iterations: int = 16384

    def __str__(self) -> str:
        return self.mechanism_name


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
SCRAM_MECHANISMS = {m.mechanism_name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


@attrs.frozen
class ScramCredential:
    """What the broker keeps for one user and mechanism (Kafka's ``ScramCredential``)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class UnacceptableCredentialError(ApiError):
    """A SCRAM credential AlterUserScramCredentials must refuse (UNACCEPTABLE_CREDENTIAL)."""

    error_code = ErrorCode.unacceptable_credential


def check_iterations(mechanism: ScramMechanism, iterations: int) -> None:
    """Kafka's bounds on a new credential's iterations (``ScramControlManager``):
    4096 to 16384 for both mechanisms."""
    if iterations < mechanism.min_iterations:
        raise UnacceptableCredentialError("Too few iterations")
    if iterations > mechanism.max_iterations:
        raise UnacceptableCredentialError("Too many iterations")


def secure_random_string(
    token_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> str:
    """A 130-bit random number in base 36, Kafka's nonce and salt source
    (``ScramFormatter.secureRandomString``)."""
    number = int.from_bytes(token_bytes(17), "big") >> 6  # 136 bits down to 130
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, digit = divmod(number, 36)
        out = digits[digit] + out
        if number == 0:
            return out


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def _h(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def xor(first: bytes, second: bytes) -> bytes:
    if len(first) != len(second):
        raise SaslError("Argument arrays must be of the same length")
    return bytes(a ^ b for a, b in zip(first, second, strict=True))


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """``Hi(password, salt, i)``: PBKDF2 over the mechanism's HMAC (RFC 5802 2.2)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Client Key")


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Server Key")


def stored_key(mechanism: ScramMechanism, key: bytes) -> bytes:
    return _h(mechanism, key)


def signature(mechanism: ScramMechanism, key: bytes, auth_message: str) -> bytes:
    """``HMAC(key, AuthMessage)``: the client's signature with StoredKey, the server's
    with ServerKey."""
    return _hmac(mechanism, key, auth_message.encode())


def generate_credential(
    mechanism: ScramMechanism,
    password: str,
    iterations: int,
    salt: bytes | None = None,
    token_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> ScramCredential:
    """A new credential (``ScramFormatter.generateCredential``): the salt is a fresh
    random string's bytes unless given (``kafka-storage.sh --add-scram`` may give one)."""
    if salt is None:
        salt = secure_random_string(token_bytes).encode()
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The credential kept for a salted password an admin client sent
    (AlterUserScramCredentials, KIP-554): the password itself never reaches the broker,
    and the salted password is not kept either, only the keys derived from it."""
    return ScramCredential(
        salt=salt,
        stored_key=stored_key(mechanism, client_key(mechanism, salted)),
        server_key=server_key(mechanism, salted),
        iterations=iterations,
    )


def sasl_name(username: str) -> str:
    """A username as it travels (RFC 5802 5.1): ``=`` as ``=3D``, ``,`` as ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username(name: str) -> str:
    """The username of a ``saslname`` (``ScramFormatter.username``)."""
    decoded = name.replace("=2C", ",")
    if "=" in decoded.replace("=3D", ""):
        raise SaslError("Invalid username: " + name)
    return decoded.replace("=3D", "=")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# The grammar of ScramMessages (RFC 5802 7), as Kafka's patterns read it.
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # any 7-bit char but NUL and ","
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # printable but ","
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64C = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64C}{{4}})*(?:{_B64C}{{3}}=|{_B64C}{{2}}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"

CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
SERVER_FIRST = re.compile(
    rf"(?:m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),"
    rf"i=(?P<iterations>[0-9]+){_EXTENSIONS}"
)
CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"
)
SERVER_FINAL = re.compile(
    rf"(?:e=(?P<error>[\x01-\x2b\x2d-\x3c\x3e-\x7f]+))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}"
)


def parse_extensions(text: str) -> dict[str, str]:
    """``,k=v,k=v`` into a mapping (Kafka's ``ScramExtensions``)."""
    pairs = [item.split("=", 1) for item in text.split(",") if item]
    return dict(pairs)


def client_first_bare(name: str, nonce: str, extensions: dict[str, str]) -> str:
    """``n=<saslname>,r=<nonce>[,k=v...]`` as ``ClientFirstMessage.clientFirstMessageBare``
    writes it (the part of the first message that enters the AuthMessage)."""
    bare = f"n={name},r={nonce}"
    if extensions:
        bare += "," + ",".join(f"{k}={v}" for k, v in extensions.items())
    return bare


def server_first(nonce: str, salt: bytes, iterations: int) -> str:
    return f"r={nonce},s={b64(salt)},i={iterations}"


def client_final_without_proof(channel_binding: bytes, nonce: str) -> str:
    return f"c={b64(channel_binding)},r={nonce}"
