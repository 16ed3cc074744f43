"""SASL/OAUTHBEARER with unsecured tokens (KIP-255, RFC 7628), as Kafka's
``OAuthBearerSaslServer`` and its unsecured validator.

The client sends one message, ``n,[a=<authzid>],\\x01auth=Bearer <token>\\x01\\x01``
(RFC 7628 3.1, with ``key=value`` extensions between the ``\\x01`` separators). With
no identity provider at hand, Kafka accepts an *unsecured* JWS for tests and development
(``OAuthBearerUnsecuredJws``, RFC 7515 with ``"alg":"none"`` and an empty signature):
``base64url(header).base64url(claims).``. The server checks the claims
(``OAuthBearerValidationUtils``): the principal claim (``sub``) is a string, ``exp`` is
present and not past, ``iat`` if present is not in the future, ``exp`` after ``iat``, each
within ``unsecuredValidatorAllowableClockSkewMs``, and the required scope is held. A
refused token is answered with a JSON error as a challenge (RFC 7628 3.2.2); the client
acknowledges with a lone ``\\x01`` and the exchange fails with that error. The session
lasts until ``exp`` at most: the credential's lifetime KIP-368 bounds it by.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from types import UnionType

import attrs

from ._sasl import SaslAuthenticationError, SaslError

OAUTHBEARER = "OAUTHBEARER"
_SEP = "\x01"
_CLIENT_MESSAGE = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]*\x01)*)\x01"
)


@attrs.frozen
class UnsecuredValidatorOptions:
    """The JAAS options of Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``."""

    principal_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    @classmethod
    def from_jaas_options(cls, options: Mapping[str, str]) -> UnsecuredValidatorOptions:
        skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
        if skew < 0:
            raise ValueError(f"Allowable clock skew must not be negative: {skew}")
        return cls(
            principal_claim_name=options.get(
                "unsecuredValidatorPrincipalClaimName", "sub"
            ),
            scope_claim_name=options.get("unsecuredValidatorScopeClaimName", "scope"),
            required_scope=tuple(
                options.get("unsecuredValidatorRequiredScope", "").split()
            ),
            allowable_clock_skew_ms=skew,
        )


@attrs.frozen
class UnsecuredToken:
    """A validated token: its principal, scope and lifetime (Kafka's
    ``OAuthBearerToken``: ``principalName``, ``scope``, ``lifetimeMs``)."""

    value: str
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int
    start_time_ms: int | None


class TokenValidationError(Exception):
    """A refused token: ``status`` and ``scope`` go into the RFC 7628 error JSON."""

    def __init__(
        self, reason: str, status: str = "invalid_token", scope: str | None = None
    ):
        super().__init__(reason)
        self.status = status
        self.scope = scope


def _convert(value: object) -> object:
    """A claim as Kafka's ``OAuthBearerUnsecuredJws.convert`` keeps it: numbers stay
    numbers, arrays become lists of their elements' text, anything else its text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    if isinstance(value, list):
        return [_text(item) for item in value]
    return _text(value)


def _text(value: object) -> str:
    """Jackson's ``asText``: a string as it is, null as "null", an object as ""."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return ""


def _java_type(value: object) -> str:
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, int):
        return "Integer"
    return "Double" if isinstance(value, float) else "String"


def _to_map(part: str) -> dict[str, object]:
    """A Base64URL-encoded JSON object (``OAuthBearerUnsecuredJws.toMap``)."""
    try:
        decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError) as exc:
        raise TokenValidationError("malformed Base64 URL encoded value") from exc
    try:
        value = json.loads(decoded)
    except ValueError as exc:
        raise TokenValidationError("malformed JSON") from exc
    if not isinstance(value, dict):
        raise TokenValidationError("malformed JSON")
    return {key: _convert(item) for key, item in value.items()}


def _claim(claims: Mapping[str, object], name: str, kind: type | UnionType) -> object:
    """A claim of one type, or None; another type is refused (``claim(name, type)``)."""
    value = claims.get(name)
    if value is None or isinstance(value, kind):
        return value
    java = "String" if kind is str else "List" if kind is list else "Number"
    raise TokenValidationError(
        f"The '{name}' claim was not of type {java}: {_java_type(value)}"
    )


def _scope(claims: Mapping[str, object], name: str) -> frozenset[str]:
    """A string claim is one scope element, a list several (``calculateScope``)."""
    value = claims.get(name)
    if isinstance(value, str):
        return frozenset({value.strip()}) if value.strip() else frozenset()
    listed = _claim(claims, name, list)
    assert listed is None or isinstance(listed, list)
    return frozenset(str(item).strip() for item in listed or () if str(item).strip())


def validate_unsecured_token(
    token: str, now_ms: int, options: UnsecuredValidatorOptions
) -> UnsecuredToken:
    """Parse an unsecured JWS (Kafka's ``OAuthBearerUnsecuredJws``) and check it at
    ``now_ms`` (epoch ms) as ``OAuthBearerUnsecuredValidatorCallbackHandler`` does, or
    raise :class:`TokenValidationError` with Kafka's reason."""
    if ".." in token:
        raise TokenValidationError("Malformed compact serialization contains '..'")
    splits = token.split(".")
    if len(splits) != 3:
        raise TokenValidationError(
            "Unsecured JWS compact serializations must have 3 dot-separated "
            "Base64URL-encoded values"
        )
    header, claims = _to_map(splits[0]), _to_map(splits[1])
    if "alg" not in header:
        raise TokenValidationError("JWS header must have an Algorithm value")
    if header["alg"] != "none":
        raise TokenValidationError("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise TokenValidationError("Unsecured JWS must not contain a digital signature")
    scope = _scope(claims, options.scope_claim_name)
    expiration = _claim(claims, "exp", int | float)
    if expiration is None:
        raise TokenValidationError("No expiration time in JWT")
    assert isinstance(expiration, int | float)
    principal = _claim(claims, options.principal_claim_name, str)
    if not isinstance(principal, str) or not principal.strip():
        raise TokenValidationError(
            f"No principal name in JWT claim: {options.principal_claim_name}"
        )
    issued_at = _claim(claims, "iat", int | float)
    assert issued_at is None or isinstance(issued_at, int | float)
    # What the validator checks, in its order (OAuthBearerValidationUtils).
    skew = options.allowable_clock_skew_ms
    if issued_at is not None and 1000 * issued_at > now_ms + skew:
        raise TokenValidationError(
            f"The Issued At value ({issued_at:f} seconds) was after the indicated time "
            f"({now_ms} ms) plus allowable clock skew ({skew} ms)"
        )
    if now_ms - skew >= 1000 * expiration:
        raise TokenValidationError(
            f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was "
            f"on or after the Expiration Time value ({expiration:f} seconds)"
        )
    if issued_at is not None and expiration <= issued_at:
        raise TokenValidationError(
            f"The Expiration Time time ({expiration:f} seconds) was not after the Issued "
            f"At time ({issued_at:f} seconds)"
        )
    for needed in options.required_scope:
        if needed not in scope:
            required = "[" + ", ".join(options.required_scope) + "]"
            raise TokenValidationError(
                f"The provided scope ([{', '.join(sorted(scope))}]) was missing a required "
                f"scope ({needed}).  All required scope elements: {required}",
                status="insufficient_scope",
                scope=required,
            )
    return UnsecuredToken(
        value=token,
        principal_name=principal,
        scope=scope,
        lifetime_ms=round(1000 * expiration),
        start_time_ms=None if issued_at is None else round(1000 * issued_at),
    )


def _error_json(error: TokenValidationError) -> str:
    text = f'{{"status":"{error.status}"'
    if error.scope is not None:
        text += f', "scope":"{error.scope}"'
    return text + "}"


class OAuthBearerSaslServer:
    """The server side of one OAUTHBEARER exchange, unsecured tokens."""

    mechanism_name = OAUTHBEARER

    def __init__(self, options: UnsecuredValidatorOptions) -> None:
        self._options = options
        self._token: UnsecuredToken | None = None
        self._error: str | None = None
        self.extensions: dict[str, str] = {}

    @property
    def complete(self) -> bool:
        return self._token is not None

    def evaluate_response(self, response: bytes, now: float) -> bytes:
        if response == _SEP.encode() and self._error is not None:
            # The client acknowledged our error (RFC 7628 3.2.3): the exchange fails.
            raise SaslAuthenticationError(self._error)
        self._error = None
        found = _CLIENT_MESSAGE.fullmatch(response.decode("utf-8", "replace"))
        if found is None:
            raise SaslError("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.split("=", 1) for kv in found["kvpairs"].split(_SEP) if kv)
        auth = pairs.pop("auth", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise SaslError("Invalid OAUTHBEARER client first message")
        self.extensions = pairs
        try:
            token = validate_unsecured_token(
                auth[7:].strip(), int(now * 1000), self._options
            )
        except TokenValidationError as exc:
            self._error = _error_json(exc)
            return self._error.encode()
        authzid = found["authzid"] or ""
        if authzid and authzid != token.principal_name:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) "
                f"that is different from the token's principal name ({token.principal_name})"
            )
        self._token = token
        return b""

    def authorization_id(self) -> str:
        if self._token is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._token.principal_name

    def credential_lifetime_ms(self) -> int | None:
        return None if self._token is None else self._token.lifetime_ms


def _b64url(value: object) -> str:
    data = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unsecured_token(
    principal: str,
    now: float,
    lifetime_seconds: float = 3600,
    scope: Sequence[str] = (),
) -> str:
    """An unsecured JWS as Kafka's ``OAuthBearerUnsecuredLoginCallbackHandler`` makes
    one (``unsecuredLoginStringClaim_sub``, ``unsecuredLoginLifetimeSeconds``, default
    an hour), issued at ``now`` (epoch seconds)."""
    claims: dict[str, object] = {
        "iat": round(now, 3),
        "exp": round(now + lifetime_seconds, 3),
        "sub": principal,
    }
    if scope:
        claims["scope"] = list(scope)
    return f"{_b64url({'alg': 'none'})}.{_b64url(claims)}."


def client_initial_response(
    token: str, authzid: str = "", extensions: Mapping[str, str] | None = None
) -> bytes:
    """The client's message (Kafka's ``OAuthBearerClientInitialResponse.toBytes``)."""
    head = f"n,a={authzid}," if authzid else "n,,"
    ext = "".join(f"{k}={v}{_SEP}" for k, v in (extensions or {}).items())
    return f"{head}{_SEP}auth=Bearer {token}{_SEP}{ext}{_SEP}".encode()
