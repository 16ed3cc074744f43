"""A SASL listener's settings, read with Kafka's keys, and its mechanisms' servers.

Each key is resolved per listener as Kafka resolves it (``listener.name.<name>.<key>``
first): ``sasl.enabled.mechanisms``, ``connections.max.reauth.ms`` (KIP-368),
``sasl.server.max.receive.size``; ``connection.failed.authentication.delay.ms`` is the
broker's. Each enabled mechanism reads its JAAS line,
``listener.name.<name>.<mechanism>.sasl.jaas.config`` (the mechanism in lower case):

- PLAIN: ``PlainLoginModule required user_alice="alice-secret";``, the users and their
  passwords, as Kafka's ``PlainServerCallbackHandler`` reads them;
- SCRAM-SHA-256 and SCRAM-SHA-512: Kafka keeps SCRAM credentials in the metadata log
  (KIP-554); until minikafka does, the users come from the same ``user_<name>`` options
  of the mechanism's ``ScramLoginModule`` line, and the broker derives each one's
  credential (a fresh salt, 4096 iterations) at start-up and keeps no password;
- OAUTHBEARER: unsecured tokens (KIP-255), the ``unsecuredValidator*`` options of
  ``OAuthBearerLoginModule``'s line, which may be left out.

A bad value raises :class:`ConfigError` naming the key, so start-up stops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from minikafka.common import ConfigError, ConfigType
from minikafka.security import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    OAuthBearerSaslServer,
    PlainSaslServer,
    SaslServer,
    SaslServerConfig,
    ScramCredential,
    ScramSaslServer,
    UnsecuredValidatorOptions,
    generate_credential,
    parse_jaas_config,
)

from ._ssl_config import listener_value

ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
MAX_REAUTH = "connections.max.reauth.ms"
MAX_RECEIVE = "sasl.server.max.receive.size"
FAILED_DELAY = "connection.failed.authentication.delay.ms"
SASL_LISTENER_KEYS = (ENABLED_MECHANISMS, MAX_REAUTH, MAX_RECEIVE)
"""The keys a SASL listener reads for itself (each may be prefixed per listener)."""
JAAS = "sasl.jaas.config"
SCRAM = {m.mechanism_name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
MECHANISMS = (PLAIN, *SCRAM, OAUTHBEARER)
"""The mechanisms served (Kafka's GSSAPI, Kerberos, is not)."""
SCRAM_ITERATIONS = 4096
LOGIN_MODULES = {
    PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


def jaas_key(listener: str, mechanism: str) -> str:
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.{JAAS}"


def _int(props: Mapping[str, str], listener: str, key: str, default: int) -> int:
    found = listener_value(props, listener, key)
    if found is None:
        return default
    value = ConfigType.LONG.parse(found[0], found[1])
    assert isinstance(value, int)
    if value < 0:
        raise ConfigError(found[0], f"{value} must not be negative")
    return value


@attrs.frozen
class SaslSettings:
    """One SASL listener's settings, and the options of each enabled mechanism."""

    listener: str
    config: SaslServerConfig
    options: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    """(mechanism, its JAAS options) of each enabled mechanism."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str], listener: str) -> SaslSettings:
        found = listener_value(props, listener, ENABLED_MECHANISMS)
        key, raw = found if found is not None else (ENABLED_MECHANISMS, "GSSAPI")
        enabled = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
        unknown = [m for m in enabled if m not in MECHANISMS]
        if unknown or not enabled:
            raise ConfigError(
                key,
                f"{unknown[0] if unknown else 'an empty list'!r} (listener {listener}): "
                f"the mechanisms served are {', '.join(MECHANISMS)}"
                + (" (Kafka's default, GSSAPI, is not)" if found is None else ""),
            )
        options: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        for mechanism in enabled:
            name = jaas_key(listener, mechanism)
            text = props.get(name, "").strip()
            if not text and mechanism == OAUTHBEARER:
                options.append((mechanism, ()))
                continue
            if not text:
                raise ConfigError(
                    name,
                    f"{mechanism} is enabled on listener {listener}: set its users",
                )
            try:
                module, values = parse_jaas_config(text)
            except ValueError as e:
                raise ConfigError(name, str(e)) from None
            if module != LOGIN_MODULES[mechanism]:
                raise ConfigError(
                    name, f"{mechanism} needs {LOGIN_MODULES[mechanism]}, not {module}"
                )
            options.append((mechanism, tuple(sorted(values.items()))))
        config = SaslServerConfig(
            enabled,
            connections_max_reauth_ms=_int(props, listener, MAX_REAUTH, 0),
            failed_authentication_delay_ms=_int(props, listener, FAILED_DELAY, 100),
            max_receive_size=_int(props, listener, MAX_RECEIVE, 524288),
        )
        settings = cls(listener, config, tuple(options))
        settings.mechanisms()  # every check, now: a bad value stops start-up
        return settings

    def mechanisms(self) -> dict[str, Callable[[], SaslServer]]:
        """A factory of a fresh server exchange for each enabled mechanism."""
        factories: dict[str, Callable[[], SaslServer]] = {}
        for mechanism, pairs in self.options:
            options = dict(pairs)
            users = {
                key.removeprefix("user_"): value
                for key, value in options.items()
                if key.startswith("user_")
            }
            if mechanism == PLAIN:
                factories[mechanism] = _plain(users)
            elif mechanism in SCRAM:
                factories[mechanism] = _scram(mechanism, users)
            else:
                try:
                    validator = UnsecuredValidatorOptions.from_jaas_options(options)
                except ValueError as e:
                    raise ConfigError(
                        jaas_key(self.listener, mechanism), str(e)
                    ) from None
                factories[mechanism] = _oauthbearer(validator)
        return factories


def _plain(users: Mapping[str, str]) -> Callable[[], SaslServer]:
    return lambda: PlainSaslServer(users)


def _scram(mechanism: str, users: Mapping[str, str]) -> Callable[[], SaslServer]:
    kind = SCRAM[mechanism]
    credentials: dict[str, ScramCredential] = {
        user: generate_credential(kind, password, SCRAM_ITERATIONS)
        for user, password in users.items()
    }
    return lambda: ScramSaslServer(kind, credentials)


def _oauthbearer(options: UnsecuredValidatorOptions) -> Callable[[], SaslServer]:
    return lambda: OAuthBearerSaslServer(options)
