"""The MetadataCache's encoded bodies: computed once per image and key,
dropped when the image is replaced (by ``update`` or by assigning ``image``), bounded;
and ``wait_until``, which each ``update`` wakes."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import trio
import trio.testing

from minikafka.broker._metadata_cache import MAX_RESPONSE_BODIES, MetadataCache
from minikafka.controller import MetadataImage


def counting(calls: list[str], value: bytes) -> Callable[[], bytes]:
    """A ``make`` that returns ``value`` and notes that it ran."""

    def make() -> bytes:
        calls.append(value.decode())
        return value

    return make


def test_a_body_is_computed_once_per_image_and_key() -> None:
    cache = MetadataCache(1, MetadataImage(offset=3))
    calls: list[str] = []
    assert cache.response_body(("v1", "PLAINTEXT"), counting(calls, b"a")) == b"a"
    assert cache.response_body(("v1", "PLAINTEXT"), counting(calls, b"b")) == b"a"
    assert cache.response_body(("v1", "OTHER"), counting(calls, b"c")) == b"c"
    assert calls == ["a", "c"]


def test_a_new_image_drops_every_body() -> None:
    image = MetadataImage(offset=3)
    cache = MetadataCache(1, image)
    assert cache.response_body("k", lambda: b"old") == b"old"
    cache.update(attrs.evolve(image, offset=4))
    assert cache.response_body("k", lambda: b"new") == b"new"
    # Assigning the image directly counts as well: the check is the image's identity.
    cache.image = attrs.evolve(image, offset=5)
    assert cache.response_body("k", lambda: b"newer") == b"newer"
    # An equal image that is another object is still a replacement.
    cache.image = attrs.evolve(cache.image)
    assert cache.response_body("k", lambda: b"newest") == b"newest"


def test_the_cache_is_bounded_and_stays_right() -> None:
    cache = MetadataCache(1, MetadataImage(offset=3))
    for i in range(MAX_RESPONSE_BODIES * 2 + 3):
        value = str(i).encode()
        assert cache.response_body(i, counting([], value)) == value
        assert len(cache._bodies) <= MAX_RESPONSE_BODIES


async def test_wait_until_returns_on_the_update_that_satisfies_it() -> None:
    # Guarantee: wait_until returns at once for an image that already satisfies it, and
    # otherwise on the first update() that brings one, not on an earlier one.
    image = MetadataImage(offset=3)
    cache = MetadataCache(1, image)
    with trio.fail_after(5):
        await cache.wait_until(lambda i: i.offset == 3)
    seen: list[int] = []

    async def waiter() -> None:
        await cache.wait_until(lambda i: i.offset >= 5)
        seen.append(cache.image.offset)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            cache.update(attrs.evolve(image, offset=4))
            await trio.testing.wait_all_tasks_blocked()
            assert seen == []
            cache.update(attrs.evolve(image, offset=5))
    assert seen == [5]
