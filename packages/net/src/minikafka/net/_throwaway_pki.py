"""A throw-away certificate authority and certificates, for tests and local clusters.

Made with the ``openssl`` command (the workspace does not depend on ``cryptography``),
all in PEM, in one directory: ``ca.pem`` (the CA's certificate: the trust store of the
brokers and of the clients), ``ca.key``; a server certificate for ``localhost`` and
``127.0.0.1`` as a PEM key store (``server.keystore.pem``: private key then certificate,
what ``ssl.keystore.location`` reads) and as separate files; and one certificate per
client, subject ``CN=<name>,OU=clients,O=minikafka``, valid or (for ``expired``) expired
yesterday. Nothing here is fit for anything but a test: the keys are unencrypted unless
a password is given, and the CA signs whatever it is asked to.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

import attrs

CA_SUBJECT = "/O=minikafka/CN=minikafka throw-away CA"
CLIENT_SUBJECT = "/O=minikafka/OU=clients/CN={name}"


@attrs.frozen
class Certificate:
    """One certificate, its unencrypted key, and both in one PEM key store file."""

    cert: Path
    key: Path
    keystore: Path


@attrs.frozen
class ThrowawayPki:
    directory: Path
    ca: Path
    ca_key: Path
    server: Certificate
    clients: dict[str, Certificate]


def _openssl(*args: str) -> None:
    result = subprocess.run(
        ["openssl", *args], capture_output=True, text=True, check=False, timeout=60
    )
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def _sign(
    directory: Path,
    name: str,
    subject: str,
    ca: Path,
    ca_key: Path,
    days: int,
    extensions: str = "",
    key_password: str | None = None,
) -> Certificate:
    key, csr, cert = (directory / f"{name}{ext}" for ext in (".key", ".csr", ".pem"))
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
        "-out", str(csr), "-subj", subject,
    )  # fmt: skip
    args = ["-extfile", str(directory / f"{name}.ext")] if extensions else []
    if extensions:
        (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", str(days), "-sha256", "-out", str(cert), *args,
    )  # fmt: skip
    keystore = directory / f"{name}.keystore.pem"
    if key_password is None:
        keystore.write_text(key.read_text() + cert.read_text())
    else:
        encrypted = directory / f"{name}.key.enc"
        _openssl(
            "pkcs8", "-topk8", "-in", str(key), "-out", str(encrypted),
            "-passout", f"pass:{key_password}",
        )  # fmt: skip
        keystore.write_text(encrypted.read_text() + cert.read_text())
    keystore.chmod(0o600)
    return Certificate(cert, key, keystore)


def make_pki(
    directory: Path,
    clients: Iterable[str] = ("alice",),
    expired: Iterable[str] = (),
    server_key_password: str | None = None,
) -> ThrowawayPki:
    """A CA, a server certificate for localhost, and the clients' certificates.

    ``expired`` clients get a certificate whose validity ended a day ago. With
    ``server_key_password`` the server's key store holds its key encrypted (PKCS#8), as
    ``ssl.key.password`` decrypts it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key),
        "-out", str(ca), "-subj", CA_SUBJECT, "-days", "30",
    )  # fmt: skip
    server = _sign(
        directory,
        "server",
        "/O=minikafka/CN=localhost",
        ca,
        ca_key,
        30,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        server_key_password,
    )
    made = {
        name: _sign(directory, name, CLIENT_SUBJECT.format(name=name), ca, ca_key, 30)
        for name in clients
    }
    for name in expired:
        # -days -1: the certificate's end is a day before its start, now: expired.
        made[name] = _sign(
            directory, name, CLIENT_SUBJECT.format(name=name), ca, ca_key, -1
        )
    return ThrowawayPki(directory, ca, ca_key, server, made)


def tls_listener_properties(pki: ThrowawayPki, listener: str) -> dict[str, str]:
    """The broker keys of a TLS listener ``listener`` with ``pki``'s server certificate
    (per listener: ``listener.name.<name>.ssl.*``)."""
    prefix = f"listener.name.{listener.lower()}."
    return {
        prefix + "ssl.keystore.type": "PEM",
        prefix + "ssl.keystore.location": str(pki.server.keystore),
        prefix + "ssl.truststore.type": "PEM",
        prefix + "ssl.truststore.location": str(pki.ca),
    }
