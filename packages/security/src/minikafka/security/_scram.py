"""SCRAM-SHA-256 and SCRAM-SHA-512's exchange (RFC 5802, RFC 7677), both sides, as Kafka's
``ScramSaslServer`` and ``ScramSaslClient``.

Four messages, two round trips, and the password never sent::

    client-first   n,,n=alice,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<both nonces>,p=<ClientKey XOR HMAC(StoredKey, AuthMessage)>
    server-final   v=<HMAC(ServerKey, AuthMessage)>

``AuthMessage`` is the bare client-first, the server-first and the client-final without
its proof, joined by commas. The server checks the proof by recomputing
``H(proof XOR ClientSignature)`` and comparing it with the StoredKey it holds; the client
checks the server's signature the same way. Kafka adds one extension (KIP-48):
``tokenauth=true`` says the user name is a delegation token's id, allowed only where
delegation tokens are.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hmac
from collections.abc import Callable, Mapping

import attrs

from . import _scram_formatter as fmt
from ._sasl import SaslAuthenticationError, SaslError
from ._scram_formatter import ScramCredential, ScramMechanism

TOKEN_AUTH = "tokenauth"
"""Kafka's one SCRAM extension (``ScramLoginModule.TOKEN_AUTH_CONFIG``)."""


@attrs.frozen
class DelegationTokenCredential:
    """A delegation token as SCRAM sees it: whose it is, its credential (the HMAC is
    the password), and when it expires (epoch ms)."""

    owner: str
    credential: ScramCredential
    expiry_timestamp_ms: int


class ScramServerState(enum.Enum):
    """``ScramSaslServer.State``."""

    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslServer:
    """The server side of one SCRAM exchange.

    ``credentials`` maps a user name to its credential for this mechanism (the
    broker's copy of the UserScramCredentialRecords); ``tokens`` maps a delegation token
    id to its credential, and is None where delegation tokens are not enabled, so a
    ``tokenauth`` first message fails as an unknown token would.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: Mapping[str, ScramCredential],
        tokens: Mapping[str, DelegationTokenCredential] | None = None,
        nonce: Callable[[], str] = fmt.secure_random_string,
    ) -> None:
        self.mechanism = mechanism
        self._credentials = credentials
        self._tokens = tokens
        self._nonce = nonce
        self.state = ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce_expected = ""
        self._authorization_id: str | None = None
        self._token_expiry_ms: int | None = None
        self.extensions: dict[str, str] = {}

    @property
    def mechanism_name(self) -> str:
        return self.mechanism.mechanism_name

    @property
    def complete(self) -> bool:
        return self.state is ScramServerState.COMPLETE

    @property
    def token_authenticated(self) -> bool:
        return self.extensions.get(TOKEN_AUTH, "").lower() == "true"

    def evaluate_response(self, response: bytes, now: float) -> bytes:
        try:
            if self.state is ScramServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                challenge = self._client_first(response.decode("utf-8", "replace"))
                self.state = ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE
                return challenge
            if self.state is ScramServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                final = self._client_final(response.decode("utf-8", "replace"))
                self.state = ScramServerState.COMPLETE
                return final
            raise SaslError(
                f"Unexpected challenge in Sasl server state {self.state.value}"
            )
        except (SaslError, SaslAuthenticationError):
            self._credential = None
            self.state = ScramServerState.FAILED
            raise

    def _client_first(self, message: str) -> bytes:
        found = fmt.CLIENT_FIRST.fullmatch(message)
        if found is None:
            raise SaslError("Invalid SCRAM client first message format: " + message)
        self.extensions = fmt.parse_extensions(found["extensions"])
        name = fmt.username(found["saslname"])
        if self.token_authenticated:
            token = None if self._tokens is None else self._tokens.get(name)
            if token is None:
                raise SaslError(
                    "Token Authentication failed: Invalid tokenId : " + name
                )
            credential: ScramCredential | None = token.credential
            self._authorization_id = token.owner
            self._token_expiry_ms = token.expiry_timestamp_ms
        else:
            credential = self._credentials.get(name)
            self._authorization_id = name
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        authzid = found["authzid"] or ""
        if authzid and authzid != name:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslError(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism}"
            )
        self._credential = credential
        self._client_first_bare = fmt.client_first_bare(
            found["saslname"], found["nonce"], self.extensions
        )
        self._nonce_expected = found["nonce"] + self._nonce()
        self._server_first = fmt.server_first(
            self._nonce_expected, credential.salt, credential.iterations
        )
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        found = fmt.CLIENT_FINAL.fullmatch(message)
        if found is None:
            raise SaslError("Invalid SCRAM client final message format: " + message)
        if found["nonce"] != self._nonce_expected:
            raise SaslError("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None  # set by the first message
        channel = base64.b64decode(found["channel"])
        auth_message = ",".join(
            (
                self._client_first_bare,
                self._server_first,
                fmt.client_final_without_proof(channel, found["nonce"]),
            )
        )
        proof = base64.b64decode(found["proof"])
        client_signature = fmt.signature(
            self.mechanism, credential.stored_key, auth_message
        )
        computed = fmt.stored_key(self.mechanism, fmt.xor(client_signature, proof))
        if not hmac.compare_digest(computed, credential.stored_key):
            raise SaslError("Invalid client credentials")
        server_signature = fmt.signature(
            self.mechanism, credential.server_key, auth_message
        )
        self._credential = None
        return f"v={fmt.b64(server_signature)}".encode()

    def authorization_id(self) -> str:
        if not self.complete or self._authorization_id is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._authorization_id

    def credential_lifetime_ms(self) -> int | None:
        return self._token_expiry_ms


class ScramClientState(enum.Enum):
    """``ScramSaslClient.State``."""

    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslClient:
    """The client side of one SCRAM exchange (Kafka's ``ScramSaslClient``): the tests'
    client now, minikafka's client's later."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        extensions: Mapping[str, str] | None = None,
        nonce: Callable[[], str] = fmt.secure_random_string,
    ) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._extensions = dict(extensions or {})
        self._client_nonce = nonce()
        self.state = ScramClientState.SEND_CLIENT_FIRST_MESSAGE
        self._bare = ""
        self._salted = b""
        self._auth_message = ""

    @property
    def complete(self) -> bool:
        return self.state is ScramClientState.COMPLETE

    def first_message(self) -> bytes:
        if self.state is not ScramClientState.SEND_CLIENT_FIRST_MESSAGE:
            raise SaslError(f"Unexpected first message in state {self.state.value}")
        name = fmt.sasl_name(self._username)
        self._bare = fmt.client_first_bare(name, self._client_nonce, self._extensions)
        self.state = ScramClientState.RECEIVE_SERVER_FIRST_MESSAGE
        return ("n,," + self._bare).encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        try:
            message = challenge.decode("utf-8", "replace")
            if self.state is ScramClientState.RECEIVE_SERVER_FIRST_MESSAGE:
                answer = self._server_first(message)
                self.state = ScramClientState.RECEIVE_SERVER_FINAL_MESSAGE
                return answer
            if self.state is ScramClientState.RECEIVE_SERVER_FINAL_MESSAGE:
                self._server_final(message)
                self.state = ScramClientState.COMPLETE
                return b""
            raise SaslError(
                f"Unexpected challenge in Sasl client state {self.state.value}"
            )
        except (SaslError, binascii.Error):
            self.state = ScramClientState.FAILED
            raise

    def _server_first(self, message: str) -> bytes:
        found = fmt.SERVER_FIRST.fullmatch(message)
        if found is None:
            raise SaslError("Invalid SCRAM server first message format: " + message)
        nonce, iterations = found["nonce"], int(found["iterations"])
        if not nonce.startswith(self._client_nonce):
            raise SaslError("Invalid server nonce: does not start with client nonce")
        if iterations < self.mechanism.min_iterations:
            raise SaslError(
                f"Requested iterations {iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism}"
            )
        salt = base64.b64decode(found["salt"])
        self._salted = fmt.salted_password(
            self.mechanism, self._password, salt, iterations
        )
        without_proof = fmt.client_final_without_proof(b"n,,", nonce)
        self._auth_message = ",".join((self._bare, message, without_proof))
        key = fmt.client_key(self.mechanism, self._salted)
        stored = fmt.stored_key(self.mechanism, key)
        proof = fmt.xor(key, fmt.signature(self.mechanism, stored, self._auth_message))
        return f"{without_proof},p={fmt.b64(proof)}".encode()

    def _server_final(self, message: str) -> None:
        found = fmt.SERVER_FINAL.fullmatch(message)
        if found is None:
            raise SaslError("Invalid SCRAM server final message format: " + message)
        if found["error"] is not None:
            raise SaslError(
                "Sasl authentication using "
                + self.mechanism.mechanism_name
                + " failed with error: "
                + found["error"]
            )
        key = fmt.server_key(self.mechanism, self._salted)
        expected = fmt.signature(self.mechanism, key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(found["signature"]), expected):
            raise SaslError("Sasl server signature verification failed")
