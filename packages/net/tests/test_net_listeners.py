"""Listener security: a listener never promises what it does not do.

``listener.security.protocol.map`` decides what each listener speaks; a listener that
speaks SASL without its settings is refused at start-up naming the key (TLS and SASL
themselves: test_tls_listener.py, test_sasl_listener.py). A client speaking TLS (or
HTTP) to a PLAINTEXT listener is told apart from a hostile oversized frame: one
WARNING says what happened, and the broker serves on.
"""

from __future__ import annotations

import logging
import socket
import ssl

import pytest
import trio

from minikafka.common import ConfigError
from minikafka.net import (
    DEFAULT_SECURITY_PROTOCOL_MAP,
    ForeignProtocol,
    FrameDecoder,
    FrameTooLarge,
    Listener,
    NetConfig,
    Request,
    parse_security_protocol_map,
)
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
    serving,
)


def refused(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties(props)
    return err.value


def test_the_default_map_is_kafkas() -> None:
    """Without the key, each security protocol's name is a listener speaking it."""
    assert parse_security_protocol_map(DEFAULT_SECURITY_PROTOCOL_MAP) == {
        "PLAINTEXT": "PLAINTEXT",
        "SSL": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
        "SASL_SSL": "SASL_SSL",
    }
    config = NetConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"),)


@pytest.mark.parametrize(
    ("protocol", "key"),
    [
        ("SSL", "ssl.keystore.location"),
        ("SASL_PLAINTEXT", "sasl.enabled.mechanisms"),
        ("SASL_SSL", "ssl.keystore.location"),
    ],
)
def test_a_secure_listener_without_its_settings_is_refused(
    protocol: str, key: str
) -> None:
    """listeners=SASL_PLAINTEXT://... alone: Kafka's default mechanism, GSSAPI, is not
    served; a TLS listener needs its key store. Start-up stops naming the key."""
    error = refused({"listeners": f"{protocol}://127.0.0.1:0"})
    assert error.key == key


def test_a_listener_mapped_to_sasl_reads_its_own_keys() -> None:
    """A custom name mapped to SASL reads listener.name.<name>.* keys."""
    error = refused(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
            "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
        }
    )
    assert error.key == "listener.name.client.plain.sasl.jaas.config"


def test_controller_listener_names_speak_plaintext_without_a_map() -> None:
    """KRaft's effective map: with no map given, controller listeners are PLAINTEXT."""
    config = NetConfig.from_properties(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
        }
    )
    assert [lis.security_protocol for lis in config.listeners] == [
        "PLAINTEXT",
        "PLAINTEXT",
    ]


def test_a_custom_listener_name_mapped_to_plaintext_is_served() -> None:
    config = NetConfig.from_properties(
        {
            "listeners": "INTERNAL://127.0.0.1:0,external://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT, EXTERNAL:plaintext",
        }
    )
    assert [(lis.name, lis.security_protocol) for lis in config.listeners] == [
        ("INTERNAL", "PLAINTEXT"),
        ("EXTERNAL", "PLAINTEXT"),
    ]


@pytest.mark.parametrize(
    ("props", "key", "words"),
    [
        # Kafka: "No security protocol defined for listener INTERNAL".
        ({"listeners": "INTERNAL://127.0.0.1:0"}, "listeners", "no security protocol"),
        (
            {"listener.security.protocol.map": "PLAINTEXT:TLS"},
            "listener.security.protocol.map",
            "invalid security protocol",
        ),
        (
            {"listener.security.protocol.map": "PLAINTEXT"},
            "listener.security.protocol.map",
            "LISTENER_NAME:SECURITY_PROTOCOL",
        ),
        (
            {
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,plaintext:PLAINTEXT"
            },
            "listener.security.protocol.map",
            "more than once",
        ),
    ],
)
def test_bad_maps_and_unmapped_names_are_refused(
    props: dict[str, str], key: str, words: str
) -> None:
    error = refused(props)
    assert error.key == key
    assert words in str(error)


def test_a_tls_listener_built_in_code_without_its_settings_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        NetConfig(listeners=(Listener("SECURE", "127.0.0.1", 0, "SSL"),))
    assert err.value.key == "listeners"


@pytest.mark.parametrize(
    ("first_bytes", "protocol"),
    [
        (b"\x16\x03\x01\x02\x00\x01", "TLS"),  # a TLS 1.0-1.3 ClientHello record
        (b"\x16\x03\x03\x00\x50\x01", "TLS"),
        (b"GET / HTTP/1.1\r\n", "HTTP"),
        (b"POST /x HTTP/1.1\r\n", "HTTP"),
    ],
)
def test_the_decoder_names_tls_and_http(first_bytes: bytes, protocol: str) -> None:
    """The 369 MB (TLS) or 1.2 GB (HTTP) "frame" is recognised from its first bytes."""
    decoder = FrameDecoder()
    decoder.feed(first_bytes)
    with pytest.raises(ForeignProtocol) as err:
        decoder.next_frame()
    assert err.value.protocol == protocol
    assert isinstance(err.value, FrameTooLarge)  # still the oversized-frame refusal


def test_a_kafka_sized_frame_is_never_taken_for_tls() -> None:
    """Only a size above socket.request.max.bytes is checked: a real frame is a frame."""
    decoder = FrameDecoder(max_frame_bytes=2**31 - 1)
    decoder.feed(b"\x16\x03\x01\x02")
    assert decoder.next_frame_size() == 0x16030102


def _tls_handshake(host: str, port: int) -> BaseException | None:
    """What Python's ssl module meets shaking hands with a plaintext Kafka listener."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=20) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="localhost"):
                return None
        except (ssl.SSLError, OSError) as e:
            return e


async def test_a_tls_client_is_closed_with_one_warning_and_the_broker_serves_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A real ClientHello: the connection is closed at once with one WARNING saying a
    client tried TLS on a PLAINTEXT listener; a bystander mid-request is still answered."""

    async def echo(request: Request) -> None:
        echo_metadata(request)

    valid = request_frame(METADATA_V9, 7)
    caplog.set_level(logging.INFO, logger="minikafka.net")
    async with serving(ScriptedHandler(echo)) as server:
        bystander = await RawConnection.open(server)
        await bystander.send(valid[:9])
        host, port = server.bound_address()
        with trio.fail_after(30):
            error = await trio.to_thread.run_sync(_tls_handshake, host, port)
            assert error is not None  # the handshake failed: the server closed on it
            await bystander.send(valid[9:])
            response = await bystander.receive_response(3, 9)
        assert response is not None
        assert response[0] == 7
        await bystander.aclose()
    records = [r for r in caplog.records if r.name == "minikafka.net"]
    tls = [r for r in records if "tried TLS on PLAINTEXT listener" in r.getMessage()]
    assert len(tls) == 1, [r.getMessage() for r in records]
    assert tls[0].levelno == logging.WARNING
    # One line: not the warning *and* a "closed ...: frame of 369 MB" line.
    assert not [r for r in records if r.getMessage().startswith("closed ")]


async def test_an_http_request_is_named_as_such(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """curl on the Kafka port: one WARNING naming HTTP, the connection closed."""

    async def echo(request: Request) -> None:
        echo_metadata(request)

    caplog.set_level(logging.INFO, logger="minikafka.net")
    async with serving(ScriptedHandler(echo)) as server:
        victim = await RawConnection.open(server)
        await victim.send(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        with trio.fail_after(10):
            assert await victim.wait_closed()
    messages = [r.getMessage() for r in caplog.records if r.name == "minikafka.net"]
    assert len([m for m in messages if "sent an HTTP request" in m]) == 1, messages
