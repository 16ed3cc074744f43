"""A listener's TLS settings, read with Kafka's ``ssl.*`` keys, and its server context.

Kafka resolves each key of a listener separately: ``listener.name.<name>.<key>`` (the
listener's name in lower case) if it is set, else ``<key>`` (``valuesWithPrefixOverride``).
Keys and stores are Kafka's, in the PEM form (KIP-651): the key store is a PEM file
holding the private key and its certificate chain (``ssl.keystore.location``), or the
two as text (``ssl.keystore.key``, ``ssl.keystore.certificate.chain``); the trust store
is a PEM file of CA certificates (``ssl.truststore.location``) or the certificates as text
(``ssl.truststore.certificates``). A bad value raises :class:`ConfigError` naming the key
as it was given, so start-up stops with a message a user can act on.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping

import attrs

from minikafka.common import ConfigError
from minikafka.security import NoMatchingRuleError, SslPrincipalMapper

SSL_KEYS = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
)
"""The ``ssl.*`` keys a TLS listener reads (each may be prefixed per listener); the last
is its inter-broker client's (:meth:`SslSettings.client_context`)."""
ENDPOINT_IDENTIFICATION = "ssl.endpoint.identification.algorithm"

CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
"""The protocols ``ssl.enabled.protocols`` may name (Kafka's default: both; the JDK
disables TLSv1 and TLSv1.1, and so does OpenSSL's default security level)."""
TLS13_SUITES = frozenset(
    {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    }
)


def listener_prefix(listener: str) -> str:
    """``listener.name.<name>.``: Kafka's ``ListenerName.configPrefix``."""
    return f"listener.name.{listener.lower()}."


def listener_value(
    props: Mapping[str, str], listener: str, key: str
) -> tuple[str, str] | None:
    """``(key as given, value)`` of ``key`` for ``listener``: the listener's own first."""
    for name in (listener_prefix(listener) + key, key):
        if name in props:
            return name, props[name].strip()
    return None


KEY_STORE_KEYS = frozenset(
    {"ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain"}
)
"""Any of them set: the client presents a certificate (mutual TLS)."""


@attrs.frozen
class SslSettings:
    """One listener's TLS settings: each value with the key it was read from."""

    listener: str
    settings: tuple[tuple[str, str, str], ...]
    """(Kafka key, key as given, value) of each key set."""

    @property
    def values(self) -> Mapping[str, tuple[str, str]]:
        return {key: (given, value) for key, given, value in self.settings}

    @classmethod
    def from_properties(cls, props: Mapping[str, str], listener: str) -> SslSettings:
        values = []
        for key in SSL_KEYS:
            found = listener_value(props, listener, key)
            # An empty identification algorithm is a value: it turns the check off.
            if found is not None and (found[1] != "" or key == ENDPOINT_IDENTIFICATION):
                values.append((key, *found))
        settings = cls(listener, tuple(values))
        settings.server_context()  # every check, now: a bad value stops start-up
        return settings

    def get(self, key: str, default: str = "") -> str:
        found = self.values.get(key)
        return default if found is None else found[1]

    def key_name(self, key: str) -> str:
        """The key as the user wrote it (prefixed or not), for error messages."""
        found = self.values.get(key)
        return key if found is None else found[0]

    def principal_mapper(self) -> SslPrincipalMapper:
        rules = self.get("ssl.principal.mapping.rules", "DEFAULT")
        try:
            return SslPrincipalMapper.from_rules(rules)
        except (ValueError, NoMatchingRuleError) as e:
            raise ConfigError(
                self.key_name("ssl.principal.mapping.rules"), str(e)
            ) from None

    def server_context(self) -> ssl.SSLContext:
        """The ``SSLContext`` of this listener's server side (Kafka's
        ``DefaultSslEngineFactory.createSslEngine`` in server mode)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._protocols(context)
        self._cipher_suites(context)
        self._key_store(context)
        self._trust_store(context)
        self.principal_mapper()
        return context

    def client_context(self) -> ssl.SSLContext:
        """The ``SSLContext`` of a broker's client to this listener on another node
        (Kafka's ``DefaultSslEngineFactory`` in client mode, used by the inter-broker
        and controller channels): the same protocols and suites; the trust store
        checks the server's certificate (the system's CAs without one, as the JDK's
        default trust store); the key store, if set, is what the broker presents when
        the server asks for a client certificate; ``ssl.endpoint.identification.
        algorithm`` ``https`` (the default) checks that the certificate names the host
        connected to, an empty value turns that check off."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._protocols(context)
        self._cipher_suites(context)
        if KEY_STORE_KEYS & set(self.values):
            self._key_store(context)
        kind = self.get("ssl.truststore.type", "PEM")
        if kind.upper() != "PEM":
            raise ConfigError(
                self.key_name("ssl.truststore.type"),
                f"{kind!r}: only PEM trust stores are supported (KIP-651)",
            )
        location = self.get("ssl.truststore.location")
        certificates = self.get("ssl.truststore.certificates")
        try:
            if location:
                context.load_verify_locations(cafile=location)
            elif certificates:
                context.load_verify_locations(cadata=_pem_text(certificates))
            else:
                context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        except (ssl.SSLError, OSError, ValueError) as e:
            key = (
                "ssl.truststore.location" if location else "ssl.truststore.certificates"
            )
            raise ConfigError(
                self.key_name(key), f"cannot load the trust store ({e})"
            ) from None
        algorithm = self.get(ENDPOINT_IDENTIFICATION, "https")
        if algorithm.lower() not in ("https", ""):
            raise ConfigError(
                self.key_name(ENDPOINT_IDENTIFICATION),
                f"{algorithm!r}: the algorithms are https, or empty for none",
            )
        context.check_hostname = algorithm.lower() == "https"
        context.verify_mode = ssl.CERT_REQUIRED
        return context

    def _protocols(self, context: ssl.SSLContext) -> None:
        key = "ssl.protocol"
        protocol = self.get(key, "TLSv1.3")
        if protocol not in ("TLS", "TLSv1.2", "TLSv1.3"):
            raise ConfigError(self.key_name(key), f"unsupported protocol {protocol!r}")
        key = "ssl.enabled.protocols"
        names = [p.strip() for p in self.get(key, "TLSv1.2,TLSv1.3").split(",")]
        unknown = [n for n in names if n and n not in PROTOCOLS]
        versions = sorted(PROTOCOLS[n] for n in names if n in PROTOCOLS)
        if unknown or not versions:
            raise ConfigError(
                self.key_name(key),
                f"{unknown[0] if unknown else 'an empty list'!r}: the enabled protocols "
                f"must be among {', '.join(PROTOCOLS)}",
            )
        context.minimum_version, context.maximum_version = versions[0], versions[-1]

    def _cipher_suites(self, context: ssl.SSLContext) -> None:
        """``ssl.cipher.suites``: IANA names, as Kafka (the JDK) takes them.

        TLS 1.2 suites are translated to OpenSSL's names. Python cannot narrow TLS
        1.3's suites (OpenSSL's defaults, all strong), so a list that names none of
        them disables TLS 1.3, as the JDK would find no TLS 1.3 suite to offer.
        """
        key = "ssl.cipher.suites"
        raw = self.get(key)
        if not raw:
            return
        names = [n.strip() for n in raw.split(",") if n.strip()]
        tls12 = [n for n in names if n not in TLS13_SUITES]
        openssl = [_openssl_name(n) for n in tls12]
        bad = [n for n, o in zip(tls12, openssl, strict=True) if o is None]
        if bad:
            raise ConfigError(self.key_name(key), f"unknown cipher suite {bad[0]!r}")
        if tls12:
            try:
                context.set_ciphers(":".join(o for o in openssl if o is not None))
            except ssl.SSLError:
                raise ConfigError(
                    self.key_name(key), f"no usable cipher suite in {raw!r}"
                ) from None
        elif context.minimum_version < ssl.TLSVersion.TLSv1_3:
            context.minimum_version = ssl.TLSVersion.TLSv1_3
        if len(tls12) == len(names):
            if context.minimum_version > ssl.TLSVersion.TLSv1_2:
                raise ConfigError(
                    self.key_name(key),
                    "only TLS 1.2 suites are named but TLSv1.2 is not enabled",
                )
            context.maximum_version = ssl.TLSVersion.TLSv1_2

    def _key_store(self, context: ssl.SSLContext) -> None:
        kind = self.get("ssl.keystore.type", "PEM")
        if kind.upper() != "PEM":
            raise ConfigError(
                self.key_name("ssl.keystore.type"),
                f"{kind!r}: only PEM key stores are supported (KIP-651)",
            )
        if "ssl.keystore.password" in self.values:
            # Kafka's DefaultSslEngineFactory: a PEM store has no password of its own.
            raise ConfigError(
                self.key_name("ssl.keystore.password"),
                "cannot be set with a PEM key store: only ssl.key.password may be",
            )
        password = self.get("ssl.key.password") or None
        location = self.get("ssl.keystore.location")
        chain, key = (
            self.get("ssl.keystore.certificate.chain"),
            self.get("ssl.keystore.key"),
        )
        if location and (chain or key):
            raise ConfigError(
                self.key_name("ssl.keystore.location"),
                "set either a key store file or ssl.keystore.key and "
                "ssl.keystore.certificate.chain, not both",
            )
        if location:
            self._load_chain(context, location, None, password)
            return
        if not (chain and key):
            missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
            if not chain and not key:
                missing = "ssl.keystore.location"
            raise ConfigError(
                missing,
                f"listener {self.listener} speaks TLS and needs its certificate and key",
            )
        with tempfile.TemporaryDirectory(prefix="minikafka-pem-") as directory:
            # The ssl module loads keys from files only: a private directory, deleted now.
            cert_file = os.path.join(directory, "chain.pem")
            key_file = os.path.join(directory, "key.pem")
            for path, text in ((cert_file, chain), (key_file, key)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                    f.write(_pem_text(text))
            self._load_chain(context, cert_file, key_file, password)

    def _load_chain(
        self,
        context: ssl.SSLContext,
        cert_file: str,
        key_file: str | None,
        password: str | None,
    ) -> None:
        where = "ssl.keystore.location" if key_file is None else "ssl.keystore.key"
        try:
            context.load_cert_chain(cert_file, key_file, password or "")
        except FileNotFoundError:
            raise ConfigError(
                self.key_name(where), f"no such file {cert_file!r}"
            ) from None
        except (ssl.SSLError, OSError, ValueError) as e:
            blame = "ssl.key.password" if "ssl.key.password" in self.values else where
            raise ConfigError(
                self.key_name(blame),
                f"cannot load the key store's private key and certificate ({e}); an "
                "encrypted key needs ssl.key.password",
            ) from None

    def _trust_store(self, context: ssl.SSLContext) -> None:
        kind = self.get("ssl.truststore.type", "PEM")
        if kind.upper() != "PEM":
            raise ConfigError(
                self.key_name("ssl.truststore.type"),
                f"{kind!r}: only PEM trust stores are supported (KIP-651)",
            )
        if "ssl.truststore.password" in self.values:
            raise ConfigError(
                self.key_name("ssl.truststore.password"),
                "cannot be set with a PEM trust store",
            )
        mode = self.get("ssl.client.auth", "none").lower()
        if mode not in CLIENT_AUTH:
            raise ConfigError(
                self.key_name("ssl.client.auth"),
                f"{mode!r} is not one of {', '.join(CLIENT_AUTH)}",
            )
        location = self.get("ssl.truststore.location")
        certificates = self.get("ssl.truststore.certificates")
        try:
            if location:
                context.load_verify_locations(cafile=location)
            elif certificates:
                context.load_verify_locations(cadata=_pem_text(certificates))
        except (ssl.SSLError, OSError, ValueError) as e:
            key = (
                "ssl.truststore.location" if location else "ssl.truststore.certificates"
            )
            raise ConfigError(
                self.key_name(key), f"cannot load the trust store ({e})"
            ) from None
        if mode != "none" and not (location or certificates):
            raise ConfigError(
                self.key_name("ssl.client.auth"),
                f"{mode} needs a trust store (ssl.truststore.location) to check client "
                "certificates against",
            )
        context.verify_mode = CLIENT_AUTH[mode]


def _pem_text(value: str) -> str:
    """A PEM value from a properties file may have its line breaks as spaces or ``\\n``."""
    text = value.replace("\\n", "\n")
    return re.sub(
        r"(-----[A-Z ]+-----)\s*([^-]*?)\s*(-----[A-Z ]+-----)",
        lambda m: f"{m[1]}\n{chr(10).join(m[2].split())}\n{m[3]}\n",
        text,
    )


_KX = {"ECDHE_RSA": "ECDHE-RSA-", "ECDHE_ECDSA": "ECDHE-ECDSA-", "DHE_RSA": "DHE-RSA-"}
_KX_RSA = {"RSA": ""}
_BULK = {
    "AES_128_GCM": "AES128-GCM",
    "AES_256_GCM": "AES256-GCM",
    "AES_128_CBC": "AES128",
    "AES_256_CBC": "AES256",
    "CHACHA20_POLY1305": "CHACHA20-POLY1305",
}


def _openssl_name(iana: str) -> str | None:
    """OpenSSL's name of a TLS 1.2 suite's IANA name (``TLS_ECDHE_RSA_WITH_AES_128_GCM
    _SHA256`` -> ``ECDHE-RSA-AES128-GCM-SHA256``); an OpenSSL name is taken as it is."""
    match = re.fullmatch(r"TLS_(\w+?)_WITH_(\w+?)_(SHA\d*)", iana)
    if match is None:
        return iana if re.fullmatch(r"[A-Z0-9]+(-[A-Z0-9]+)+", iana) else None
    kx, bulk, mac = match.groups()
    prefix = _KX.get(kx, _KX_RSA.get(kx))
    cipher = _BULK.get(bulk)
    if prefix is None or cipher is None:
        return None
    if bulk == "CHACHA20_POLY1305":
        return f"{prefix}{cipher}"
    return f"{prefix}{cipher}-{mac}"
