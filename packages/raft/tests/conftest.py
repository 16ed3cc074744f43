"""Every segment a test opens is closed after it (see ``segments_closed_after``)."""

from collections.abc import Iterator

import pytest

from minikafka.log.testing import segments_closed_after


@pytest.fixture(autouse=True)
def _close_segments() -> Iterator[None]:
    with segments_closed_after():
        yield
