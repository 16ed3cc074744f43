"""Reading request bodies across versions."""

from __future__ import annotations

from typing import Any

from minikafka.net import Request


def request_body(request: Request) -> Any:
    """The decoded body, typed dynamically.

    kio generates one class per API version (``ProduceRequest`` of v3 and of v8 are
    different types), and a handler serves a range of versions, reading the fields they
    share. The codec has already checked the body against its version's schema, so the
    handlers read fields by name and use ``getattr`` with Kafka's default for a field
    that older versions lack.
    """
    body = request.body
    if body is None:  # only ApiVersions of an unknown version, handled in the net layer
        raise ValueError(f"{request.api_name} request without a body")
    return body
