"""A blocking Kafka client of the smallest kind: one socket, one request at a time.

The conformance runner needs to send exactly the bytes kio encodes for one API version
and read back exactly what the broker answered, including answers a real client would
hide (an error it retries) and a connection the broker closes. The request header and
body are kio's encoders (through ``minikafka.net``); the frame is the 4-byte size prefix.
"""

from __future__ import annotations

import socket
import struct

import attrs
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.net import (
    decode_response_body,
    encode_entity,
    encode_request_header,
    response_header_version,
)

CLIENT_ID = "conformance"


class Closed(Exception):
    """The broker closed the connection instead of answering."""


@attrs.define(eq=False)
class Connection:
    """One TCP connection to a broker; requests are answered in the order sent."""

    address: str
    timeout: float = 30.0  # seconds an answer may take on a loaded machine
    sock: socket.socket | None = attrs.field(init=False, default=None)
    correlation_id: int = attrs.field(init=False, default=0)

    def _socket(self) -> socket.socket:
        if self.sock is None:
            host, port = self.address.rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)), self.timeout)
            self.sock.settimeout(self.timeout)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def call(self, body: RequestPayload) -> ResponsePayload:
        """Sends ``body`` and returns its response; :class:`Closed` if the broker closed
        the connection (the next call opens a new one)."""
        api_key, version = int(body.__api_key__), int(body.__version__)
        payload = self.raw_call(api_key, version, encode_entity(body))
        assert payload is not None
        offset = 4 if response_header_version(api_key, version) == 0 else 5
        return decode_response_body(api_key, version, payload, offset)

    def send_only(self, body: RequestPayload) -> None:
        """Sends ``body`` without waiting (a Produce with acks=0 is never answered)."""
        self.raw_call(
            int(body.__api_key__), int(body.__version__), encode_entity(body), False
        )

    def raw_call(
        self,
        api_key: int,
        version: int,
        body: bytes,
        answered: bool = True,
        header_override: bytes | None = None,
    ) -> bytes | None:
        """Sends a frame of the header kio encodes (or ``header_override``) and ``body``."""
        self.correlation_id += 1
        header = header_override or encode_request_header(
            api_key, version, self.correlation_id, CLIENT_ID
        )
        frame = struct.pack(">i", len(header) + len(body)) + header + body
        sock = self._socket()
        try:
            sock.sendall(frame)
            if not answered:
                return None
            (size,) = struct.unpack(">i", self._read(4))
            payload = self._read(size)
        except (ConnectionError, Closed) as exc:
            self.close()
            raise Closed(str(exc)) from exc
        (correlation,) = struct.unpack_from(">i", payload)
        if correlation != self.correlation_id:
            raise AssertionError(
                f"{self.address} answered correlation id {correlation}, "
                f"expected {self.correlation_id}"
            )
        return payload

    def _read(self, size: int) -> bytes:
        assert self.sock is not None
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise Closed("EOF")
            data += chunk
        return bytes(data)
