"""The shapes of network partitions, as the links they cut.

A partition is a set of directed links ``(source, destination)`` whose packets are
dropped: ``(1, 2)`` cut means node 1's packets never reach node 2. A symmetric cut lists
both directions; a one-way cut lists one. Whoever applies it (a DROP rule per link
between two network namespaces, or the TCP fault proxies) needs nothing else.

The shapes are Jepsen's nemesis vocabulary:

- ``halves``: the nodes split at random into two sides, one a majority, the other the
  minority; no link crosses.
- ``isolate``: one node cut off from every other.
- ``bridge``: two sides that cannot reach each other, and one node (the bridge) that
  reaches both, so each side sees a majority through it, and no two majorities agree.
- ``ring``: each node reaches only its nearest neighbours in a random ring, as many as
  make a majority with itself, so every node sees a majority and every majority is a
  different one (four nodes or more; fewer get ``halves``).
- ``one-way``: the packets from one side to the other are dropped, those back are not.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal, TypeAlias

Link: TypeAlias = tuple[int, int]
Cut: TypeAlias = tuple[Link, ...]
Shape: TypeAlias = Literal["halves", "isolate", "bridge", "ring", "one-way"]
SHAPES: tuple[Shape, ...] = ("halves", "isolate", "bridge", "ring", "one-way")


def between(side: Sequence[int], other: Sequence[int]) -> Cut:
    """Every link from ``side`` to ``other``, one way, sorted."""
    return tuple(sorted((a, b) for a in side for b in other if a != b))


def symmetric(side: Sequence[int], other: Sequence[int]) -> Cut:
    """Every link between the two sides, both ways, sorted."""
    return tuple(sorted({*between(side, other), *between(other, side)}))


def _halves(nodes: list[int], rng: random.Random) -> tuple[list[int], list[int]]:
    shuffled = nodes[:]
    rng.shuffle(shuffled)
    minority = len(nodes) // 2 if len(nodes) % 2 else len(nodes) // 2 - 1
    minority = max(minority, 1)
    return sorted(shuffled[minority:]), sorted(shuffled[:minority])


def cut(shape: Shape, nodes: Sequence[int], rng: random.Random) -> tuple[Cut, str]:
    """The links ``shape`` cuts among ``nodes`` (at least two), drawn from ``rng``,
    and a one-line description of the sides."""
    pool = sorted(set(nodes))
    if len(pool) < 2:
        raise ValueError("a partition needs at least two nodes")
    if shape == "halves":
        majority, minority = _halves(pool, rng)
        return symmetric(majority, minority), f"{majority} | {minority}"
    if shape == "isolate":
        alone = rng.choice(pool)
        rest = [n for n in pool if n != alone]
        return symmetric([alone], rest), f"[{alone}] | {rest}"
    if shape == "bridge":
        if len(pool) < 3:
            return cut("isolate", pool, rng)
        shuffled = pool[:]
        rng.shuffle(shuffled)
        bridge, rest = shuffled[0], shuffled[1:]
        left, right = sorted(rest[: len(rest) // 2]), sorted(rest[len(rest) // 2 :])
        return symmetric(left, right), f"{left} | {right}, {bridge} reaches both"
    if shape == "ring":
        if len(pool) < 4:
            return cut("halves", pool, rng)
        ring = pool[:]
        rng.shuffle(ring)
        size = len(ring)
        # Neighbours on each side, so a node and its 2 * wide neighbours are a majority.
        wide = (size // 2 + 1) // 2
        reach = {
            node: {ring[(place + step) % size] for step in range(-wide, wide + 1)}
            for place, node in enumerate(ring)
        }
        links = tuple(sorted((a, b) for a in pool for b in pool if b not in reach[a]))
        return links, "ring " + " - ".join(str(n) for n in ring)
    if shape == "one-way":
        senders, receivers = _halves(pool, rng)
        if rng.random() < 0.5:
            senders, receivers = receivers, senders
        return between(senders, receivers), f"{senders} -> {receivers} dropped"
    raise ValueError(f"unknown partition shape {shape!r}")


def reachable(links: Cut, nodes: Sequence[int]) -> dict[int, frozenset[int]]:
    """For each node, the nodes its packets still reach (itself included)."""
    dropped = set(links)
    return {
        a: frozenset(b for b in nodes if a == b or (a, b) not in dropped) for a in nodes
    }
