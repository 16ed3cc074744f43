"""State diagrams for the book, drawn as SVG straight from the cores' transition tables.

ARCHITECTURE.md, "The book": diagrams of state machines are generated from the tables the code runs
on, so a picture cannot drift from the code. The book builds offline with neither graphviz
nor mermaid, so this module lays the states out itself: rounded boxes spaced evenly on an
ellipse (turned and widened until no two boxes come close), transitions as gently curved
arrows (so A->B and B->A never overlap), self-transitions as small loops on the outer side,
and each label slid along its arrow until it covers no box and no other label. In a chapter::

    from diagrams import state_diagram
    state_diagram(["A", "B"], [("A", "B", "go"), ("B", "B", "stay")], title="Example")

The result is the SVG markup (a ``str``) that also displays itself in a notebook cell. Only
presentation attributes are used, no ``<style>``: inline SVGs share the page's CSS.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "SVG",
    "compaction",
    "ownership_chart",
    "reactor",
    "replica_offsets",
    "segment_layout",
    "sequence_diagram",
    "state_diagram",
]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1
Point = tuple[float, float]

BOX_FONT, LABEL_FONT, TITLE_FONT = 13.0, 11.0, 15.0
CHAR = 0.56  # a generous average sans-serif glyph width, in ems: text never outgrows its box
BOX_H, GAP, SPACE = (
    32.0,
    14.0,
    30.0,
)  # box height; margins; the least space between boxes
LOOP = 40.0  # how far a self-loop reaches out of its box


class SVG(str):
    """SVG markup that Jupyter shows as a picture (``_repr_svg_``) and Python treats as text."""

    def _repr_svg_(self) -> str:
        return str(self)


def _text_box(center: Point, text: str, size: float) -> Box:
    half_w, half_h = len(text) * size * CHAR / 2 + 3, size / 2 + 3
    return (
        center[0] - half_w,
        center[1] - half_h,
        center[0] + half_w,
        center[1] + half_h,
    )


def _overlap(a: Box, b: Box, gap: float = 0.0) -> bool:
    return (
        a[0] - gap < b[2]
        and b[0] - gap < a[2]
        and a[1] - gap < b[3]
        and b[1] - gap < a[3]
    )


def _crossings(
    at: Mapping[str, Point], pairs: Iterable[tuple[str, str]], half_w: float = 0.0
) -> int:
    """How many pairs of transitions cross, drawn as straight lines between centers, and
    how many pass through a third state's box (each counts twice: worse than a cross)."""

    def ccw(a: Point, b: Point, c: Point) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    lines = sorted({tuple(sorted(p)) for p in pairs if p[0] != p[1]})
    count = 0
    for (a, b), (c, d) in itertools.combinations(lines, 2):
        if {a, b} & {c, d}:
            continue
        p, q, r, s = at[a], at[b], at[c], at[d]
        if ccw(p, q, r) * ccw(p, q, s) < 0 and ccw(r, s, p) * ccw(r, s, q) < 0:
            count += 1
    for a, b in lines:
        (x0, y0), (x1, y1) = at[a], at[b]
        for c, (cx, cy) in at.items():
            if c in (a, b):
                continue
            # Points along the line, tested against the box grown by a little.
            if any(
                abs(x0 + (x1 - x0) * t / 20 - cx) < half_w + 6
                and abs(y0 + (y1 - y0) * t / 20 - cy) < BOX_H / 2 + 6
                for t in range(21)
            ):
                count += 2
    return count


def _layout(
    states: Sequence[str], half_w: float, pairs: Iterable[tuple[str, str]] = ()
) -> dict[str, Point]:
    """Box centers on the narrowest ellipse that keeps every two boxes ``SPACE`` apart,
    in the order (and with the one state, if any, in the middle of the ring) that makes
    the fewest transitions cross: a hub such as a state every other one can reach sits
    in the middle."""
    edges = list(pairs)
    best, best_key = dict.fromkeys(states, (0.0, 0.0)), (math.inf, math.inf, 0.0)
    centers: list[str | None] = [None, *states] if len(states) > 3 else [None]
    for center in centers:
        ring = [s for s in states if s != center]
        n = len(ring)
        # The first state stays first: turning the ring changes nothing worth trying.
        # Every order of a small ring; a larger one starts from the given order and
        # swaps two states for as long as a swap removes a crossing.
        exhaustive = n <= 5
        orders = (
            [[ring[0], *rest] for rest in itertools.permutations(ring[1:])]
            if exhaustive
            else [ring]
        )
        for turn, aspect in itertools.product((0.0, 0.25, 0.5), (0.75, 0.9)):
            rx = 50.0 * math.sqrt(n) + 80.0 + (60.0 if center else 0.0)
            while n > 1:
                angles = [2 * math.pi * (i + turn) / n - math.pi / 2 for i in range(n)]
                points = [(rx * math.cos(a), aspect * rx * math.sin(a)) for a in angles]
                if center is not None:
                    points.append((0.0, 0.0))
                boxes = [
                    (x - half_w, y - BOX_H / 2, x + half_w, y + BOX_H / 2)
                    for x, y in points
                ]
                if not any(
                    _overlap(a, b, SPACE)
                    for i, a in enumerate(boxes)
                    for b in boxes[i + 1 :]
                ):
                    break
                rx *= 1.02
            else:
                points = [(0.0, 0.0)] * n

            def placed(
                order: list[str],
                center: str | None = center,
                points: list[Point] = points,
            ) -> dict[str, Point]:
                names = [*order, center] if center is not None else order
                return dict(zip(names, points, strict=True))

            for order in orders:
                at = placed(order)
                crossings = _crossings(at, edges, half_w)
                while not exhaustive and crossings:
                    swaps = []
                    for i, j in itertools.combinations(range(1, n), 2):
                        swapped = list(order)
                        swapped[i], swapped[j] = swapped[j], swapped[i]
                        swaps.append(
                            (_crossings(placed(swapped), edges, half_w), swapped)
                        )
                    fewest, better = min(swaps, key=lambda c: c[0])
                    if fewest >= crossings:
                        break
                    order, crossings, at = better, fewest, placed(better)
                # Fewest crossings first, then the narrowest, then the taller.
                key = (crossings, round(rx), -aspect)
                if key < best_key:
                    best, best_key = at, key
    return {s: best[s] for s in states}


def _rim(center: Point, toward: Point, half_w: float) -> Point:
    """Where the ray from a box's center toward a point leaves the box."""
    dx, dy = toward[0] - center[0], toward[1] - center[1]
    scale = min(
        half_w / abs(dx) if dx else math.inf, BOX_H / 2 / abs(dy) if dy else math.inf
    )
    return center[0] + dx * scale, center[1] + dy * scale


def _quad(p0: Point, c: Point, p1: Point, t: float) -> Point:
    u = 1 - t
    x = u * u * p0[0] + 2 * u * t * c[0] + t * t * p1[0]
    return x, u * u * p0[1] + 2 * u * t * c[1] + t * t * p1[1]


def _path(*commands: tuple[str, Point]) -> str:
    return " ".join(f"{op}{x:.1f},{y:.1f}" for op, (x, y) in commands)


def state_diagram(
    states: Sequence[str], edges: Iterable[tuple[str, str, str]], *, title: str = ""
) -> SVG:
    """Draw ``states`` and the ``(from, to, label)`` transitions between them as SVG."""
    transitions = list(edges)
    if not states or len(set(states)) != len(states):
        raise ValueError(f"a state diagram needs distinct states, not {list(states)}")
    pairs = {(a, b) for a, b, _ in transitions}
    unknown = {s for pair in pairs for s in pair} - set(states)
    if unknown:
        raise ValueError(f"edges name states that are not drawn: {sorted(unknown)}")
    half_w = max((len(s) for s in states), default=1) * BOX_FONT * CHAR / 2 + 10
    at = _layout(states, half_w, pairs)
    boxes = [
        (x - half_w, y - BOX_H / 2, x + half_w, y + BOX_H / 2) for x, y in at.values()
    ]
    taken, extent = (
        list(boxes),
        list(boxes),
    )  # what labels avoid; what the canvas must hold
    arrows, labels = [], []
    # Each transition's arrow as points along it (labels keep off other arrows), and the
    # spots its label may take, best first.
    traced: list[list[Point]] = []
    candidates: list[tuple[str, list[Point]]] = []
    for a, b, label in transitions:
        if a == b:  # a loop on the side facing away from the middle of the drawing
            (x, y), norm = at[a], math.hypot(*at[a])
            ux, uy = (x / norm, y / norm) if norm else (0.0, -1.0)
            rim = _rim((x, y), (x + ux, y + uy), half_w)
            # Leave straight out of the side the rim point is on, not diagonally off a corner.
            on_side = abs(abs(rim[0] - x) - half_w) < 1e-6
            ux, uy = (
                (math.copysign(1.0, ux), 0.0)
                if on_side
                else (0.0, math.copysign(1.0, uy))
            )
            px, py = -uy * 10, ux * 10
            p0, p1 = (rim[0] + px, rim[1] + py), (rim[0] - px, rim[1] - py)
            c0 = (p0[0] + ux * LOOP + px, p0[1] + uy * LOOP + py)
            c1 = (p1[0] + ux * LOOP - px, p1[1] + uy * LOOP - py)
            arrows.append(_path(("M", p0), ("C", c0), ("", c1), ("", p1)))
            traced.append([p0, c0, c1, p1])
            extent.append(
                (
                    min(c0[0], c1[0]),
                    min(c0[1], c1[1]),
                    max(c0[0], c1[0]),
                    max(c0[1], c1[1]),
                )
            )
            half = _text_box((0, 0), label, LABEL_FONT)[2:]
            reach = [LOOP * 0.8 + 4 + d for d in (0, 10, 20, 30)]
            spots = [
                (rim[0] + ux * r + ux * half[0], rim[1] + uy * r + uy * half[1])
                for r in reach
            ]
        else:  # a quadratic curve, bent to its left: the arrow back bends the other way
            p, q = at[a], at[b]
            bend = 0.2 if (b, a) in pairs else 0.06
            c = (
                (p[0] + q[0]) / 2 - (q[1] - p[1]) * bend,
                (p[1] + q[1]) / 2 + (q[0] - p[0]) * bend,
            )
            p0, p1 = _rim(p, c, half_w), _rim(q, c, half_w)
            arrows.append(_path(("M", p0), ("Q", c), ("", p1)))
            traced.append([_quad(p0, c, p1, i / 24) for i in range(25)])
            mid = _quad(p0, c, p1, 0.5)
            extent.append((*mid, *mid))
            # Along the arrow first, then beside it (a short arrow has no room on it).
            length = math.dist(p0, p1) or 1.0
            nx, ny = -(p1[1] - p0[1]) / length, (p1[0] - p0[0]) / length
            along = [
                _quad(p0, c, p1, t)
                for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78, 0.15, 0.85)
            ]
            spots = [
                (x + nx * k, y + ny * k)
                for k in (0, 14, -14, 28, -28, 42, -42)
                for x, y in along
            ]
        candidates.append((label, spots))
    for i, (label, spots) in enumerate(candidates):
        if not label:
            continue
        # The first spot that covers no box, label or other arrow; else the one that
        # covers the fewest arrow points, the earliest of those.
        crossed = [p for j, line in enumerate(traced) if j != i for p in line]
        rects = [_text_box(s, label, LABEL_FONT) for s in spots]

        def cost(r: Box, crossed: list[Point] = crossed) -> tuple[int, int]:
            return (
                sum(_overlap(r, t) for t in taken),
                sum(r[0] < x < r[2] and r[1] - 2 < y < r[3] + 2 for x, y in crossed),
            )

        rect = min(rects, key=cost)
        taken.append(rect)
        extent.append(rect)
        labels.append((rect, label))
    x0, y0 = min(e[0] for e in extent) - GAP, min(e[1] for e in extent) - GAP
    x1, y1 = max(e[2] for e in extent) + GAP, max(e[3] for e in extent) + GAP
    if title:
        y0 -= TITLE_FONT + GAP / 2
    # Inline SVGs on one page share ids: name the arrowhead after this diagram's content.
    arrow_id = f"arrow-{zlib.crc32(repr((states, transitions, title)).encode()):08x}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{x1 - x0:.0f}" height="{y1 - y0:.0f}" '
        f'viewBox="{x0:.1f} {y0:.1f} {x1 - x0:.1f} {y1 - y0:.1f}" role="img" '
        'style="max-width:100%;height:auto" '
        f"aria-label={quoteattr(title or 'state diagram')}>",
        f'<defs><marker id="{arrow_id}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        f'<g fill="none" stroke="#555" stroke-width="1.2" marker-end="url(#{arrow_id})">',
        *(f'<path d="{d}"/>' for d in arrows),
        '</g><g font-family="sans-serif" text-anchor="middle" dominant-baseline="central">',
    ]
    for (lx0, ly0, lx1, ly1), label in labels:
        out.append(
            f'<rect x="{lx0:.1f}" y="{ly0:.1f}" width="{lx1 - lx0:.1f}" height="{ly1 - ly0:.1f}" '
            'fill="#fff" fill-opacity="0.85"/>'
            f'<text x="{(lx0 + lx1) / 2:.1f}" y="{(ly0 + ly1) / 2:.1f}" font-size="{LABEL_FONT:g}" '
            f'fill="#333">{escape(label)}</text>'
        )
    for state, (x, y) in at.items():
        out.append(
            f'<rect x="{x - half_w:.1f}" y="{y - BOX_H / 2:.1f}" width="{2 * half_w:.1f}" '
            f'height="{BOX_H:g}" rx="9" fill="#e8f0fb" stroke="#3b5b92" stroke-width="1.5"/>'
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{BOX_FONT:g}" fill="#1b2a49">'
            f"{escape(state)}</text>"
        )
    if title:
        out.append(
            f'<text x="{(x0 + x1) / 2:.1f}" y="{y0 + GAP / 2 + TITLE_FONT / 2:.1f}" '
            f'font-size="{TITLE_FONT:g}" font-weight="bold">{escape(title)}</text>'
        )
    return SVG("".join([*out, "</g></svg>"]))


# --- figures drawn from a run's data --------------------------------------------------------

CELL, ROW, LEFT = (
    26.0,
    24.0,
    250.0,
)  # an offset's width; a replica's row; the label column


def _svg_open(width: float, height: float, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" role="img" style="max-width:100%;height:auto" '
        f'aria-label={quoteattr(label)}><g font-family="sans-serif" font-size="{LABEL_FONT:g}">'
    )


def replica_offsets(
    steps: Sequence[tuple[str, dict[str, int], int]], *, title: str = ""
) -> SVG:
    """Each step of a produce as rows of offsets, one row per replica: ``(what happened,
    {replica: log end offset}, high watermark)``. A replica's filled cells are the
    records it has; the red line is the high watermark, below which every in-sync
    replica has the record and a consumer may read it."""
    if not steps:
        raise ValueError("replica_offsets needs at least one step")
    width_offsets = max(max(leos.values()) for _, leos, _ in steps) + 1
    replicas = max(len(leos) for _, leos, _ in steps)
    block = (replicas + 1) * ROW + GAP
    top = TITLE_FONT + GAP if title else GAP
    width, height = (
        LEFT + width_offsets * CELL + 2 * GAP,
        top + len(steps) * block + GAP,
    )
    out = [_svg_open(width, height, title or "log end offsets and the high watermark")]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    for i, (what, leos, high_watermark) in enumerate(steps):
        y = top + i * block
        out.append(
            f'<text x="{GAP:g}" y="{y + ROW * 0.7:.1f}" fill="#1b2a49">{escape(what)}</text>'
        )
        for j, (replica, leo) in enumerate(leos.items()):
            ry = y + (j + 1) * ROW
            out.append(
                f'<text x="{LEFT - GAP:g}" y="{ry + ROW * 0.65:.1f}" text-anchor="end" '
                f'fill="#333">{escape(replica)}: LEO {leo}</text>'
            )
            for offset in range(width_offsets):
                fill = "#9cc3e6" if offset < leo else "#fff"
                out.append(
                    f'<rect x="{LEFT + offset * CELL:.1f}" y="{ry + 3:.1f}" width="{CELL - 2:g}" '
                    f'height="{ROW - 6:g}" fill="{fill}" stroke="#3b5b92" stroke-width="0.8"/>'
                )
        x = LEFT + high_watermark * CELL - 1
        out.append(
            f'<line x1="{x:.1f}" y1="{y + ROW:.1f}" x2="{x:.1f}" y2="{y + block - GAP / 2:.1f}" '
            'stroke="#c0392b" stroke-width="2.5"/>'
            f'<text x="{x + 4:.1f}" y="{y + ROW * 0.7:.1f}" fill="#c0392b">'
            f"HW {high_watermark}</text>"
        )
    out.append("</g></svg>")
    return SVG("".join(out))


def segment_layout(
    batches: Sequence[tuple[int, int, int, int]],
    index_entries: Sequence[tuple[int, int]],
    *,
    find: int | None = None,
    title: str = "",
) -> SVG:
    """A segment's ``.log`` file as its batches ``(position, base offset, last offset,
    size)`` laid out by byte, and the sparse ``.index`` above it, each entry ``(offset,
    position)`` pointing at the batch it names. With ``find``, the lookup of that offset:
    the last entry at or below it, and the batch that holds it."""
    if not batches:
        raise ValueError("segment_layout needs at least one batch")
    end = max(position + size for position, _, _, size in batches)
    scale = min(1.0, 640.0 / end)
    left, top = GAP + 60.0, (TITLE_FONT + GAP if title else GAP) + 10
    index_y, log_y = top + 18, top + 110
    width, height = left + end * scale + 2 * GAP, log_y + 70
    start = max(
        (e for e in index_entries if find is not None and e[0] <= find), default=None
    )
    out = [_svg_open(width, height, title or "a segment and its offset index")]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    out.append(f'<text x="{GAP:g}" y="{index_y + 16:.1f}" fill="#333">.index</text>')
    out.append(f'<text x="{GAP:g}" y="{log_y + 22:.1f}" fill="#333">.log</text>')
    for i, (offset, position) in enumerate(index_entries):
        x = left + i * 92.0
        chosen = (offset, position) == start
        stroke = "#c0392b" if chosen else "#3b5b92"
        out.append(
            f'<rect x="{x:.1f}" y="{index_y:.1f}" width="86" height="24" rx="4" fill="#fff" '
            f'stroke="{stroke}" stroke-width="{2 if chosen else 1}"/>'
            f'<text x="{x + 43:.1f}" y="{index_y + 16:.1f}" text-anchor="middle" fill="#1b2a49">'
            f"{offset} \u2192 {position}</text>"
            f'<line x1="{x + 43:.1f}" y1="{index_y + 24:.1f}" x2="{left + position * scale:.1f}" '
            f'y2="{log_y:.1f}" stroke="{stroke}" stroke-width="1.2"/>'
        )
    for position, base, last, size in batches:
        x, w = left + position * scale, size * scale
        holds = find is not None and base <= find <= last
        scanned = (
            start is not None
            and find is not None
            and start[1] <= position
            and base <= find
        )
        fill = "#f5b7b1" if holds else "#fdebd0" if scanned else "#e8f0fb"
        out.append(
            f'<rect x="{x:.1f}" y="{log_y:.1f}" width="{w - 1:.1f}" height="34" fill="{fill}" '
            'stroke="#3b5b92" stroke-width="0.8"/>'
        )
        if w > 34:
            out.append(
                f'<text x="{x + w / 2:.1f}" y="{log_y + 21:.1f}" text-anchor="middle" '
                f'font-size="10" fill="#1b2a49">{base}-{last}</text>'
            )
    out.append(
        f'<text x="{left:.1f}" y="{log_y + 54:.1f}" fill="#555">0</text>'
        f'<text x="{left + end * scale:.1f}" y="{log_y + 54:.1f}" text-anchor="end" '
        f'fill="#555">{end} bytes</text>'
    )
    out.append("</g></svg>")
    return SVG("".join(out))


OWNER_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2")


def ownership_chart(
    results: Mapping[str, Any], cause: str, partitions: int = 5, topic: str = "topic"
) -> SVG:
    """The simulator's ``results`` (assignor -> ``SimulationResult``) around the
    rebalance ``cause`` started: one panel per assignor, partitions down, time across,
    bars coloured by the consumer that owns the partition (a gap: nobody consumes it),
    from just before the event (dashed line) to just after the group settled (solid)."""
    row, left, width = 16, 110, 520
    windows = {
        name: next(r for r in res.rebalances if r.cause == cause)
        for name, res in results.items()
    }
    members = sorted({c.member for res in results.values() for c in res.ownership})
    colours = {m: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, m in enumerate(members)}
    start = int(min(r.trigger_ms for r in windows.values())) - 500
    after = 500  # the next scripted event is a second after the group settled
    end = int(max(r.end_ms for r in windows.values())) + after

    def x(ms: int) -> float:
        return left + (ms - start) * width / (end - start)

    out, y = [], 10
    for name, result in results.items():
        window = windows[name]
        out.append(
            f'<text x="{left}" y="{y + 12}" font-size="13" font-weight="bold">{escape(name)}</text>'
        )
        y += 20
        top = y
        stop = window.end_ms + after
        changes = [c for c in result.ownership if c.time_ms <= stop]
        times = sorted(
            {start, stop, *(c.time_ms for c in changes if start < c.time_ms < stop)}
        )
        for p in range(partitions):
            label = f"{topic}-{p}"
            out.append(
                f'<text x="{left - 8}" y="{y + row * 0.7}" font-size="11" '
                f'text-anchor="end">{escape(label)}</text>'
            )
            for since, until in itertools.pairwise(times):
                owners = {c.member: c.partitions for c in changes if c.time_ms <= since}
                owner = next(
                    (
                        m
                        for m, ps in owners.items()
                        if any(str(tp) == label for tp in ps)
                    ),
                    None,
                )
                if owner is not None:
                    out.append(
                        f'<rect x="{x(since):.1f}" y="{y + 2}" '
                        f'width="{max(x(until) - x(since), 0.5):.1f}" height="{row - 4}" '
                        f'fill="{colours[owner]}"/>'
                    )
            y += row
        for ms, dash in (
            (window.trigger_ms, ' stroke-dasharray="3,2"'),
            (window.end_ms, ""),
        ):
            out.append(
                f'<line x1="{x(ms):.1f}" x2="{x(ms):.1f}" y1="{top}" y2="{y}" stroke="#000"{dash}/>'
            )
        y += 14
    for tick in range((start // 1000 + 1) * 1000, end, 1000):
        out.append(
            f'<text x="{x(tick):.1f}" y="{y + 12}" font-size="10" '
            f'text-anchor="middle">{tick / 1000:.0f} s</text>'
        )
    legend_x = left
    for member, colour in colours.items():
        out.append(
            f'<rect x="{legend_x}" y="{y + 22}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{y + 31}" font-size="11">{escape(member)}</text>'
        )
        legend_x += 110
    size = left + width + 20, y + 40
    return SVG(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size[0]}" height="{size[1]}" '
        f'viewBox="0 0 {size[0]} {size[1]}" font-family="sans-serif" role="img" '
        'style="max-width:100%;height:auto" '
        f"aria-label={quoteattr('partition ownership during ' + cause)}>{''.join(out)}</svg>"
    )


def _box(
    x: float, y: float, w: float, h: float, text: str, fill: str = "#e8f0fb"
) -> str:
    lines = text.split("\n")
    first = y + h / 2 - (len(lines) - 1) * 7
    spans = "".join(
        f'<tspan x="{x + w / 2:.1f}" y="{first + i * 14:.1f}">{escape(t)}</tspan>'
        for i, t in enumerate(lines)
    )
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6" fill="{fill}" '
        f'stroke="#3b5b92" stroke-width="1.2"/>'
        f'<text text-anchor="middle" dominant-baseline="central" fill="#1b2a49">{spans}</text>'
    )


def reactor(network_threads: int, io_threads: int, queued_max_requests: int) -> SVG:
    """Kafka's Reactor with the numbers of a ``NetConfig``: the Acceptor hands connections
    to the Processors round robin; a Processor reads one whole request from a connection,
    mutes it and puts the request in the bounded RequestChannel; a handler serves it and
    puts the response in the queue of the Processor that owns the connection, which
    writes it and unmutes the connection."""
    rows = max(network_threads, 3)
    row_h, top = 46.0, 40.0
    height = top + rows * row_h + 110
    width = 800.0
    arrow = "arrow-reactor"
    out = [
        _svg_open(
            width,
            height,
            "Kafka's Reactor: Acceptor, Processors, RequestChannel, handlers",
        ),
        f'<defs><marker id="{arrow}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    mid = top + rows * row_h / 2
    out.append(_box(10, mid - 40, 90, 80, "clients\n(one socket\neach)", "#f4f4f4"))
    out.append(_box(130, mid - 25, 90, 50, "Acceptor\naccept(2)"))
    proc_x, chan_x, hand_x = 260.0, 450.0, 620.0
    handler_rows = min(io_threads, rows + 1)
    for i in range(network_threads):
        y = top + i * row_h
        out.append(
            _box(proc_x, y, 150, row_h - 10, f"Processor {i}\nmutes after a request")
        )
        out.append(
            f'<line x1="220" y1="{mid:.1f}" x2="{proc_x:.1f}" y2="{y + row_h / 2 - 5:.1f}" '
            f'stroke="#555" marker-end="url(#{arrow})"/>'
            f'<line x1="{proc_x + 150:.1f}" y1="{y + row_h / 2 - 8:.1f}" x2="{chan_x:.1f}" '
            f'y2="{mid - 10:.1f}" stroke="#555" marker-end="url(#{arrow})"/>'
            # The response goes back under the RequestChannel, not through it.
            f'<path d="M{hand_x + 30:.1f},{mid + 40:.1f} Q{chan_x + 65:.1f},{mid + 110:.1f} '
            f'{proc_x + 150:.1f},{y + row_h / 2 + 4:.1f}" fill="none" stroke="#c0392b" '
            f'stroke-dasharray="4,3" marker-end="url(#{arrow})"/>'
        )
    out.append(
        _box(
            chan_x,
            mid - 35,
            130,
            70,
            f"RequestChannel\nbounded:\n{queued_max_requests} requests",
        )
    )
    out.append(
        f'<line x1="100" y1="{mid:.1f}" x2="130" y2="{mid:.1f}" stroke="#555" '
        f'marker-end="url(#{arrow})"/>'
    )
    h_row = rows * row_h / handler_rows
    for i in range(handler_rows):
        y = top + i * h_row
        label = (
            f"handler {i}"
            if i < handler_rows - 1 or handler_rows == io_threads
            else "..."
        )
        out.append(_box(hand_x + 30, y + 2, 100, h_row - 8, label, "#fdebd0"))
        out.append(
            f'<line x1="{chan_x + 130:.1f}" y1="{mid:.1f}" x2="{hand_x + 30:.1f}" '
            f'y2="{y + h_row / 2 - 2:.1f}" stroke="#555" marker-end="url(#{arrow})"/>'
        )
    out.append(
        f'<text x="{hand_x + 80:.1f}" y="{top - 14:.1f}" text-anchor="middle" fill="#333">'
        f"num.io.threads = {io_threads} (KafkaApis)</text>"
        f'<text x="{proc_x + 75:.1f}" y="{top - 14:.1f}" text-anchor="middle" fill="#333">'
        f"num.network.threads = {network_threads}</text>"
        f'<text x="{width / 2:.1f}" y="{height - 20:.1f}" text-anchor="middle" fill="#c0392b">'
        "responses go back to the queue of the Processor that owns the connection; "
        "it writes them and unmutes</text>"
    )
    out.append("</g></svg>")
    return SVG("".join(out))


def sequence_diagram(
    lanes: Sequence[str],
    events: Sequence[tuple[str, str, str] | tuple[str, str, str, float]],
    *,
    title: str = "",
    time_unit: str = "s",
) -> SVG:
    """A sequence diagram: a vertical line per lane, time going down, one row per event
    ``(from, to, label)`` or ``(from, to, label, time)``; an event from a lane to itself
    is a note on that lane. With times, a time axis on the left gives each row's time
    (once per distinct time: rows at the same moment share it), and a gap in time is a
    wider gap between rows. Lanes are spaced so that the longest label between two
    neighbours fits between them; labels sit on a white ground over the lifelines."""
    unknown = {name for a, b, *_ in events for name in (a, b)} - set(lanes)
    if unknown:
        raise ValueError(f"events name lanes that are not drawn: {sorted(unknown)}")
    timed = all(len(e) == 4 for e in events) and bool(events)
    index = {lane: i for i, lane in enumerate(lanes)}

    def width_of(text: str) -> float:
        return len(text) * LABEL_FONT * CHAR + 12

    # A label sits beside the lane its arrow leaves, in the gap toward its target, and a
    # note to the right of its lane: each gap is as wide as the widest label or note
    # that sits in it, so none crosses a lifeline.
    gaps = [170.0] * max(len(lanes) - 1, 0)
    for a, b, label, *_ in events:
        # A note sits to the right of its lane, in the gap to the next one.
        g = index[a] if index[b] >= index[a] else index[a] - 1
        if g < len(gaps):
            gaps[g] = max(gaps[g], width_of(label) + 16)
    row, axis = 26.0, 70.0 if timed else 0.0
    left = GAP + axis
    top = (TITLE_FONT + GAP if title else GAP) + 30
    x_of, x = {}, left + 90
    for i, lane in enumerate(lanes):
        x_of[lane] = x
        x += gaps[i] if i < len(gaps) else 0
    ys: list[float] = []
    y, previous = top + row / 2, None
    for event in events:
        if timed and previous is not None and event[3] != previous:  # type: ignore[misc]
            y += row * 0.6  # a step in time: a little more room, and a new tick
        ys.append(y)
        previous = event[3] if timed else None  # type: ignore[misc]
        y += row
    notes = [width_of(label) for a, b, label, *_ in events if a == b]
    width = max(x_of.values()) + max(90.0, *notes, 0.0) + GAP
    height = y + GAP
    arrow = f"arrow-seq-{zlib.crc32(repr((lanes, events)).encode()):08x}"
    out = [
        _svg_open(width, height, title or "sequence diagram"),
        f'<defs><marker id="{arrow}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    for lane, lx in x_of.items():
        out.append(_box(lx - 80, top - 30, 160, 24, lane))
        out.append(
            f'<line x1="{lx:.1f}" y1="{top - 6:.1f}" x2="{lx:.1f}" y2="{height - GAP:.1f}" '
            'stroke="#999" stroke-dasharray="3,3"/>'
        )
    if timed:
        ax = GAP + axis - 6
        out.append(
            f'<line x1="{ax:.1f}" y1="{top - 6:.1f}" x2="{ax:.1f}" y2="{height - GAP:.1f}" '
            f'stroke="#555" marker-end="url(#{arrow})"/>'
            f'<text x="{ax - 4:.1f}" y="{top - 12:.1f}" text-anchor="end" fill="#555">'
            f"time</text>"
        )
        shown = None
        for event, ey in zip(events, ys, strict=True):
            t = event[3]  # type: ignore[misc]
            if t != shown:
                out.append(
                    f'<line x1="{ax - 4:.1f}" y1="{ey:.1f}" x2="{ax:.1f}" y2="{ey:.1f}" '
                    'stroke="#555"/>'
                    f'<text x="{ax - 7:.1f}" y="{ey + 4:.1f}" text-anchor="end" '
                    f'font-size="10" fill="#555">{t:g} {escape(time_unit)}</text>'
                )
                shown = t
    for (a, b, label, *_), ey in zip(events, ys, strict=True):
        w = width_of(label)
        if a == b:
            out.append(
                f'<rect x="{x_of[a] + 6:.1f}" y="{ey - 9:.1f}" width="{w:.1f}" height="18" '
                'fill="#fdebd0" stroke="#e0b070"/>'
                f'<text x="{x_of[a] + 12:.1f}" y="{ey + 4:.1f}" fill="#333">{escape(label)}</text>'
            )
            continue
        x0, x1 = x_of[a], x_of[b]
        rightward = x1 > x0
        lx = x0 + 8 if rightward else x0 - 8
        out.append(
            f'<line x1="{x0:.1f}" y1="{ey:.1f}" x2="{x1:.1f}" y2="{ey:.1f}" stroke="#555" '
            f'stroke-width="1.2" marker-end="url(#{arrow})"/>'
            f'<text x="{lx:.1f}" y="{ey - 4:.1f}" '
            f'text-anchor="{"start" if rightward else "end"}" '
            f'fill="#1b2a49">{escape(label)}</text>'
        )
    out.append("</g></svg>")
    return SVG("".join(out))


def compaction(
    before: Sequence[tuple[int, str, bytes | None]],
    after: Sequence[tuple[int, str, bytes | None]],
    *,
    title: str = "",
) -> SVG:
    """A compacted log's records ``(offset, key, value)`` before and after a cleaning
    pass, one cell per offset, coloured by key; a tombstone (value None) is hatched in
    grey, and an offset whose record is gone is left empty."""
    keys = sorted({key for _, key, _ in before})
    colours = {k: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, k in enumerate(keys)}
    last = max(offset for offset, _, _ in before)
    cell, left = 44.0, 70.0
    top = (TITLE_FONT + GAP if title else GAP) + 4
    width, height = left + (last + 1) * cell + GAP, top + 2 * 62 + 24
    out = [
        _svg_open(width, height, title or "a compacted log before and after cleaning")
    ]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    for row, (name, records) in enumerate((("before", before), ("after", after))):
        y = top + row * 62
        out.append(f'<text x="{GAP:g}" y="{y + 26:.1f}" fill="#333">{name}</text>')
        present = {offset: (key, value) for offset, key, value in records}
        for offset in range(last + 1):
            x = left + offset * cell
            if offset not in present:
                out.append(
                    f'<rect x="{x:.1f}" y="{y + 6:.1f}" width="{cell - 3:g}" height="36" '
                    'fill="#fff" stroke="#ddd" stroke-dasharray="2,2"/>'
                )
                continue
            key, value = present[offset]
            fill = "#bbb" if value is None else colours[key]
            shown = "null" if value is None else value.decode(errors="replace")
            out.append(
                f'<rect x="{x:.1f}" y="{y + 6:.1f}" width="{cell - 3:g}" height="36" '
                f'fill="{fill}" stroke="#555" stroke-width="0.6"/>'
                f'<text x="{x + cell / 2 - 1.5:.1f}" y="{y + 20:.1f}" text-anchor="middle" '
                f'font-size="10" fill="#fff">{escape(key)}</text>'
                f'<text x="{x + cell / 2 - 1.5:.1f}" y="{y + 34:.1f}" text-anchor="middle" '
                f'font-size="9" fill="#fff">{escape(shown)}</text>'
            )
            if row == 0:
                out.append(
                    f'<text x="{x + cell / 2 - 1.5:.1f}" y="{y + 2:.1f}" text-anchor="middle" '
                    f'font-size="9" fill="#555">{offset}</text>'
                )
    out.append("</g></svg>")
    return SVG("".join(out))


# --- figures over time: swimlanes, offsets over time -----------------------------------


def _time_axis(
    x: Any, y: float, start: float, end: float, unit: str, width: float
) -> list[str]:
    """Ticks and labels along ``y`` from ``start`` to ``end``: about one tick per 70 px,
    on a round step."""
    span = end - start
    step = next(
        (
            s
            for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)
            if span / s <= width / 70
        ),
        max(span / 10, 1.0),
    )
    out = [
        f'<line x1="{x(start):.1f}" y1="{y:.1f}" x2="{x(end):.1f}" y2="{y:.1f}" '
        'stroke="#555"/>'
    ]
    tick = math.ceil(start / step) * step
    while tick <= end + 1e-9:
        out.append(
            f'<line x1="{x(tick):.1f}" y1="{y:.1f}" x2="{x(tick):.1f}" y2="{y + 4:.1f}" '
            f'stroke="#555"/><text x="{x(tick):.1f}" y="{y + 15:.1f}" font-size="10" '
            f'text-anchor="middle" fill="#555">{tick:g} {escape(unit)}</text>'
        )
        tick += step
    return out


STATE_COLOURS = {
    "Leader": "#3b5b92",
    "Follower": "#9cc3e6",
    "Voted": "#c6dbef",
    "Candidate": "#f28e2b",
    "Prospective": "#f9d27a",
    "Unattached": "#e0e0e0",
    "Resigned": "#b07aa1",
}


def swimlanes(
    lanes: Sequence[str],
    spans: Sequence[tuple[str, float, float, str, str]],
    *,
    end: float,
    marks: Sequence[tuple[str, float, str]] = (),
    bands: Sequence[tuple[str, float, float, str]] = (),
    ticks: Sequence[tuple[str, float]] = (),
    colours: Mapping[str, str] = STATE_COLOURS,
    tick_label: str = "",
    title: str = "",
    unit: str = "s",
) -> SVG:
    """One lane per node, time across. ``spans`` are ``(lane, start, end, state, text)``:
    a bar coloured by the state (``colours``), with ``text`` in it where it fits (an
    epoch, say); ``marks`` ``(lane, time, text)`` are moments (an election won), a
    triangle with its text beside it; ``bands`` ``(lane, start, end, text)`` shade a
    stretch of a lane behind its bars (a crash, a partition); ``ticks`` ``(lane, time)``
    are small strokes under the bar (each time the lane's high watermark moved)."""
    left, plot_w, lane_h = 84.0, 710.0, 58.0
    top = (TITLE_FONT + GAP if title else GAP) + 4
    row = {lane: top + i * lane_h for i, lane in enumerate(lanes)}
    bottom = top + len(lanes) * lane_h
    used = [c for c in colours if any(s[3] == c for s in spans)]
    width, height = left + plot_w + 2 * GAP, bottom + 52 + 18 * ((len(used) + 1) // 6)

    def x(t: float) -> float:
        return left + t * plot_w / end

    out = [_svg_open(width, height, title or "swimlanes")]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    out.append(
        '<defs><pattern id="swim-hatch" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#bbb" stroke-width="2"/>'
        "</pattern></defs>"
    )
    for lane, y in row.items():
        out.append(
            f'<line x1="{left:.1f}" y1="{y + lane_h:.1f}" x2="{left + plot_w:.1f}" '
            f'y2="{y + lane_h:.1f}" stroke="#eee"/>'
            f'<text x="{left - 8:.1f}" y="{y + 36:.1f}" text-anchor="end" '
            f'font-size="12" fill="#1b2a49">{escape(lane)}</text>'
        )
    for lane, start, stop, text in bands:
        y = row[lane]
        out.append(
            f'<rect x="{x(start):.1f}" y="{y + 2:.1f}" width="{x(stop) - x(start):.1f}" '
            f'height="{lane_h - 4:g}" fill="url(#swim-hatch)" fill-opacity="0.6" '
            'stroke="#999" stroke-dasharray="3,2"/>'
            f'<text x="{x(start) + 4:.1f}" y="{y + 13:.1f}" font-size="10" '
            f'fill="#555">{escape(text)}</text>'
        )
    for lane, start, stop, state, text in spans:
        y, w = row[lane], max(x(stop) - x(start), 0.8)
        fill = colours.get(state, "#ccc")
        out.append(
            f'<rect x="{x(start):.1f}" y="{y + 27:.1f}" width="{w:.1f}" height="16" '
            f'fill="{fill}" stroke="#fff" stroke-width="0.5"/>'
        )
        if text and w > len(text) * 10 * CHAR + 6:
            ink = "#fff" if _dark(fill) else "#1b2a49"
            out.append(
                f'<text x="{x(start) + w / 2:.1f}" y="{y + 39:.1f}" font-size="10" '
                f'text-anchor="middle" fill="{ink}">{escape(text)}</text>'
            )
    for lane, t in ticks:
        y = row[lane]
        out.append(
            f'<line x1="{x(t):.1f}" y1="{y + 46:.1f}" x2="{x(t):.1f}" y2="{y + 52:.1f}" '
            'stroke="#2e7d32" stroke-width="0.8"/>'
        )
    placed: dict[str, list[Box]] = {lane: [] for lane in lanes}
    for lane, t, text in sorted(marks, key=lambda m: m[1]):
        y = row[lane]
        out.append(
            f'<path d="M{x(t) - 4:.1f},{y + 18:.1f} L{x(t) + 4:.1f},{y + 18:.1f} '
            f'L{x(t):.1f},{y + 25:.1f} z" fill="#c0392b"/>'
        )
        half = len(text) * 10 * CHAR / 2
        right = (x(t) + 6, y + 14, x(t) + 6 + 2 * half, y + 26)
        leftwards = (x(t) - 6 - 2 * half, y + 14, x(t) - 6, y + 26)
        box = next(
            (
                b
                for b in (right, leftwards)
                if b[2] < left + plot_w + GAP
                and not any(_overlap(b, o) for o in placed[lane])
            ),
            right,
        )
        placed[lane].append(box)
        out.append(
            f'<text x="{box[0]:.1f}" y="{y + 24:.1f}" font-size="10" '
            f'fill="#c0392b">{escape(text)}</text>'
        )
    out.extend(_time_axis(x, bottom + 2, 0.0, end, unit, plot_w))
    legend_y, legend_x = bottom + 40, left
    for state in used:
        if legend_x > left + plot_w - 110:
            legend_x, legend_y = left, legend_y + 18
        out.append(
            f'<rect x="{legend_x:.1f}" y="{legend_y - 9:.1f}" width="12" height="10" '
            f'fill="{colours[state]}"/><text x="{legend_x + 16:.1f}" y="{legend_y:.1f}" '
            f'fill="#333">{escape(state)}</text>'
        )
        legend_x += 110
    if ticks and tick_label:
        out.append(
            f'<line x1="{legend_x + 5:.1f}" y1="{legend_y - 9:.1f}" x2="{legend_x + 5:.1f}" '
            f'y2="{legend_y + 1:.1f}" stroke="#2e7d32"/><text x="{legend_x + 12:.1f}" '
            f'y="{legend_y:.1f}" fill="#333">{escape(tick_label)}</text>'
        )
    out.append("</g></svg>")
    return SVG("".join(out))


def _dark(colour: str) -> bool:
    """True for a ``#rrggbb`` or ``#rgb`` fill that white text reads better on."""
    digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:])
    r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    return 0.299 * r + 0.587 * g + 0.114 * b < 150


TERM_COLOURS = ("#e0e0e0", "#9cc3e6", "#f9d27a", "#f28e2b", "#59a14f", "#b07aa1")


def _wrap(text: str, chars: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def log_panels(
    panels: Sequence[
        tuple[str, Mapping[str, Sequence[int]], str | None, Sequence[str], str]
    ],
    *,
    marked: Mapping[int, Sequence[tuple[str, int]]] | None = None,
    title: str = "",
) -> SVG:
    """Side by side, one panel per moment ``(name, {server: the epoch of each entry of
    its log}, leader, crashed servers, caption)``: each server's log as a row of cells
    numbered by offset, each cell showing (and coloured by) the epoch its entry was
    written in. The leader's name is bold, a crashed server's grey and struck out.
    ``marked`` outlines entries of a panel (by its index): ``(server, offset)``."""
    cell, label_w, gap = 22.0, 34.0, 22.0
    longest = max(len(log) for _, logs, *_ in panels for log in logs.values())
    servers = max(len(logs) for _, logs, *_ in panels)
    panel_w = label_w + max(longest, 3) * cell + 36  # room for "leader"
    chars = int(panel_w / (LABEL_FONT * CHAR))
    caption_lines = max(len(_wrap(p[4], chars)) for p in panels)
    top = (TITLE_FONT + GAP if title else GAP) + 30
    width = GAP + len(panels) * (panel_w + gap)
    height = top + servers * cell + 14 + caption_lines * 14 + GAP
    out = [_svg_open(width, height, title or "logs by server")]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    for p, (name, logs, leader, crashed, caption) in enumerate(panels):
        x0 = GAP + p * (panel_w + gap)
        out.append(
            f'<text x="{x0:.1f}" y="{top - 18:.1f}" font-size="13" font-weight="bold" '
            f'fill="#1b2a49">{escape(name)}</text>'
        )
        for i in range(longest):
            out.append(
                f'<text x="{x0 + label_w + i * cell + cell / 2:.1f}" y="{top - 4:.1f}" '
                f'font-size="9" text-anchor="middle" fill="#777">{i}</text>'
            )
        outlined = set((marked or {}).get(p, ()))
        for r, (server, log) in enumerate(logs.items()):
            y = top + r * cell
            down = server in crashed
            strike = ' text-decoration="line-through"'
            out.append(
                f'<text x="{x0:.1f}" y="{y + cell * 0.68:.1f}" '
                f'font-weight="{"bold" if server == leader else "normal"}" '
                f'fill="{"#aaa" if down else "#1b2a49"}"{strike if down else ""}>'
                f"{escape(server)}</text>"
            )
            for i in range(longest):
                cx = x0 + label_w + i * cell
                if i >= len(log):
                    out.append(
                        f'<rect x="{cx:.1f}" y="{y + 2:.1f}" width="{cell - 3:g}" '
                        f'height="{cell - 4:g}" fill="none" stroke="#ddd"/>'
                    )
                    continue
                epoch = log[i]
                ring = (server, i) in outlined
                out.append(
                    f'<rect x="{cx:.1f}" y="{y + 2:.1f}" width="{cell - 3:g}" '
                    f'height="{cell - 4:g}" '
                    f'fill="{TERM_COLOURS[epoch % len(TERM_COLOURS)]}" '
                    f'fill-opacity="{0.45 if down else 1}" '
                    f'stroke="{"#c0392b" if ring else "#555"}" '
                    f'stroke-width="{2.2 if ring else 0.6}"/>'
                    f'<text x="{cx + (cell - 3) / 2:.1f}" y="{y + cell * 0.66:.1f}" '
                    f'text-anchor="middle" fill="#1b2a49">{epoch}</text>'
                )
            if server == leader:
                out.append(
                    f'<text x="{x0 + label_w + len(log) * cell + 2:.1f}" '
                    f'y="{y + cell * 0.68:.1f}" font-size="9" fill="#3b5b92">'
                    "leader</text>"
                )
        for k, line in enumerate(_wrap(caption, chars)):
            out.append(
                f'<text x="{x0:.1f}" y="{top + servers * cell + 16 + k * 14:.1f}" '
                f'fill="#333">{escape(line)}</text>'
            )
    out.append("</g></svg>")
    return SVG("".join(out))


def offsets_over_time(
    times: Sequence[float],
    leos: Mapping[str, Sequence[int | None]],
    high_watermark: Sequence[int | None],
    isr: Sequence[Iterable[str]],
    leader: Sequence[str | None],
    *,
    events: Sequence[tuple[float, str]] = (),
    title: str = "",
    unit: str = "s",
) -> SVG:
    """A partition over time, sampled at ``times``: each replica's log end offset as a
    step line (``leos``: replica -> a value per sample, None while it is down), the
    leader's high watermark as a thick red one, and under the chart one strip per
    replica, filled while it is in the ISR (``isr``: the members per sample) and dark
    while it leads (``leader``). ``events`` ``(time, what)`` are dashed lines across
    both, labelled at the top."""
    if not times:
        raise ValueError("offsets_over_time needs at least one sample")
    left, plot_w, plot_h = 90.0, 660.0, 190.0
    replicas = list(leos)
    colours = {r: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, r in enumerate(replicas)}
    label_rows = 2
    top = (TITLE_FONT + GAP if title else GAP) + 14 * label_rows + 4
    strip_top = top + plot_h + 30
    strip_h = 16.0
    bottom = strip_top + len(replicas) * (strip_h + 4)
    width, height = left + plot_w + 120, bottom + 30
    start, end = times[0], times[-1] + (times[-1] - times[0]) / max(len(times), 1)
    top_offset = max(
        [v for series in leos.values() for v in series if v is not None] + [1]
    )

    def x(t: float) -> float:
        return left + (t - start) * plot_w / (end - start or 1.0)

    def y(offset: float) -> float:
        return top + plot_h - offset * plot_h / top_offset

    out = [_svg_open(width, height, title or "log end offsets, high watermark and ISR")]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    # The offset axis, with a light line per offset when there are few.
    step = max(1, math.ceil(top_offset / 8))
    for offset in range(0, top_offset + 1, step):
        out.append(
            f'<line x1="{left:.1f}" y1="{y(offset):.1f}" x2="{left + plot_w:.1f}" '
            f'y2="{y(offset):.1f}" stroke="#eee"/>'
            f'<text x="{left - 6:.1f}" y="{y(offset) + 4:.1f}" text-anchor="end" '
            f'font-size="10" fill="#555">{offset}</text>'
        )
    out.append(
        f'<text x="{GAP:g}" y="{top + plot_h / 2:.1f}" fill="#333">offset</text>'
    )

    def steps(series: Sequence[int | None], shift: float) -> list[str]:
        paths, current = [], ""
        for i, value in enumerate(series):
            t1 = times[i + 1] if i + 1 < len(times) else end
            if value is None:
                if current:
                    paths.append(current)
                current = ""
                continue
            vy = y(value) + shift
            current += f"{'L' if current else 'M'}{x(times[i]):.1f},{vy:.1f} "
            current += f"L{x(t1):.1f},{vy:.1f} "
        if current:
            paths.append(current)
        return paths

    # Equal offsets would hide each other: each replica's line a little apart.
    for k, replica in enumerate(replicas):
        shift = (k - (len(replicas) - 1) / 2) * 2.5
        for d in steps(leos[replica], shift):
            out.append(
                f'<path d="{d}" fill="none" stroke="{colours[replica]}" '
                'stroke-width="1.8"/>'
            )
    for d in steps(high_watermark, 0.0):
        out.append(
            f'<path d="{d}" fill="none" stroke="#c0392b" stroke-width="3.2" '
            'stroke-opacity="0.55"/>'
        )
    legend_y = top + 4
    for replica in replicas:
        out.append(
            f'<line x1="{left + plot_w + 12:.1f}" y1="{legend_y:.1f}" '
            f'x2="{left + plot_w + 30:.1f}" y2="{legend_y:.1f}" '
            f'stroke="{colours[replica]}" stroke-width="2"/>'
            f'<text x="{left + plot_w + 34:.1f}" y="{legend_y + 4:.1f}" fill="#333">'
            f"{escape(replica)} LEO</text>"
        )
        legend_y += 16
    out.append(
        f'<line x1="{left + plot_w + 12:.1f}" y1="{legend_y:.1f}" '
        f'x2="{left + plot_w + 30:.1f}" y2="{legend_y:.1f}" stroke="#c0392b" '
        'stroke-width="3.2" stroke-opacity="0.55"/>'
        f'<text x="{left + plot_w + 34:.1f}" y="{legend_y + 4:.1f}" fill="#333">'
        "leader's HW</text>"
    )
    # The ISR strips.
    out.append(
        f'<text x="{GAP:g}" y="{strip_top - 8:.1f}" fill="#333">in the ISR '
        "(dark: leads)</text>"
    )
    members = [set(m) for m in isr]
    for k, replica in enumerate(replicas):
        sy = strip_top + k * (strip_h + 4)
        out.append(
            f'<text x="{left - 6:.1f}" y="{sy + 12:.1f}" text-anchor="end" '
            f'fill="#333">{escape(replica)}</text>'
            f'<rect x="{left:.1f}" y="{sy:.1f}" width="{plot_w:.1f}" '
            f'height="{strip_h:g}" fill="#fafafa" stroke="#eee"/>'
        )
        for i, t in enumerate(times):
            t1 = times[i + 1] if i + 1 < len(times) else end
            if replica in members[i]:
                opacity = 1.0 if leader[i] == replica else 0.35
                out.append(
                    f'<rect x="{x(t):.1f}" y="{sy:.1f}" width="{x(t1) - x(t):.1f}" '
                    f'height="{strip_h:g}" fill="{colours[replica]}" '
                    f'fill-opacity="{opacity}"/>'
                )
    out.extend(_time_axis(x, bottom + 2, start, end, unit, plot_w))
    # Events: a dashed line each, their labels in rows so that none overlaps another.
    rows: list[list[Box]] = [[] for _ in range(label_rows)]
    for t, what in sorted(events):
        half = len(what) * LABEL_FONT * CHAR / 2
        for r, taken in enumerate(rows):
            ly = top - 6 - (label_rows - 1 - r) * 14
            box = (x(t) - 2, ly - 10, x(t) + 2 * half + 2, ly + 2)
            if not any(_overlap(box, o) for o in taken):
                taken.append(box)
                break
        out.append(
            f'<line x1="{x(t):.1f}" y1="{ly + 2:.1f}" x2="{x(t):.1f}" '
            f'y2="{bottom:.1f}" stroke="#777" stroke-dasharray="3,3"/>'
            f'<text x="{x(t) + 2:.1f}" y="{ly:.1f}" fill="#555">{escape(what)}</text>'
        )
    out.append("</g></svg>")
    return SVG("".join(out))


Block = tuple[str, float, float, float, float, str, str]
"""A box of a block diagram: ``(name, x, y, width, height, text, fill)``."""


def _edge_point(box: Block, toward: Point) -> Point:
    """Where the line from a block's center toward a point leaves the block."""
    _, x, y, w, h, _, _ = box
    center = (x + w / 2, y + h / 2)
    dx, dy = toward[0] - center[0], toward[1] - center[1]
    scale = min(
        (w / 2) / abs(dx) if dx else math.inf, (h / 2) / abs(dy) if dy else math.inf
    )
    return center[0] + dx * scale, center[1] + dy * scale


def block_diagram(
    blocks: Sequence[Block],
    arrows: Sequence[tuple[str, str, str, str]],
    *,
    groups: Sequence[tuple[str, float, float, float, float]] = (),
    title: str = "",
    note: str = "",
) -> SVG:
    """Boxes at the places the caller gives (``Block``; ``text`` may have several lines
    and ``fill`` is a colour) joined by ``arrows`` ``(from, to, label, kind)``: a
    ``"request"`` arrow is solid, a ``"response"`` one dashed red, a ``"data"`` one
    green. An arrow runs between the boxes' centers, from rim to rim; its label sits
    at its middle on a white ground, moved along it until it covers no box and no
    other label. ``groups`` ``(label, x, y, width, height)`` are dashed frames behind
    the boxes (a package, a thread)."""
    at = {b[0]: b for b in blocks}
    unknown = {n for a, b, _, _ in arrows for n in (a, b)} - set(at)
    if unknown:
        raise ValueError(f"arrows name blocks that are not drawn: {sorted(unknown)}")
    top = (TITLE_FONT + GAP if title else GAP) + 4
    extent_x = max(
        [x + w for _, x, _, w, _, _, _ in blocks] + [x + w for _, x, _, w, _ in groups]
    )
    extent_y = max(
        [y + h for _, _, y, _, h, _, _ in blocks] + [y + h for _, _, y, _, h in groups]
    )
    width = max(extent_x, len(note) * LABEL_FONT * CHAR) + 2 * GAP
    height = top + extent_y + GAP + (24 if note else 0)
    arrow_id = f"arrow-block-{zlib.crc32(repr((blocks, arrows)).encode()):08x}"
    strokes = {"request": "#555", "response": "#c0392b", "data": "#2e7d32"}
    out = [
        _svg_open(width, height, title or "block diagram"),
        "<defs>",
        *(
            f'<marker id="{arrow_id}-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
            'markerWidth="7" markerHeight="7" orient="auto">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for kind, colour in strokes.items()
        ),
        "</defs>",
    ]
    if title:
        out.append(
            f'<text x="{GAP:g}" y="{TITLE_FONT:g}" font-size="{TITLE_FONT:g}" '
            f'font-weight="bold" fill="#1b2a49">{escape(title)}</text>'
        )
    out.append(f'<g transform="translate({GAP:g},{top:g})">')
    for label, x, y, w, h in groups:
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" '
            'fill="#fafafa" stroke="#aaa" stroke-dasharray="4,3"/>'
            f'<text x="{x + 8:.1f}" y="{y + 14:.1f}" font-size="10" fill="#666">'
            f"{escape(label)}</text>"
        )
    taken: list[Box] = [(x, y, x + w, y + h) for _, x, y, w, h, _, _ in blocks]
    labels: list[str] = []
    for a, b, label, kind in arrows:
        ba, bb = at[a], at[b]
        ca = (ba[1] + ba[3] / 2, ba[2] + ba[4] / 2)
        cb = (bb[1] + bb[3] / 2, bb[2] + bb[4] / 2)
        # Two arrows between the same boxes (a request and its response) run apart.
        back = any(p == b and q == a for p, q, _, _ in arrows)
        shift = 7.0 if back else 0.0
        length = math.dist(ca, cb) or 1.0
        nx, ny = -(cb[1] - ca[1]) / length * shift, (cb[0] - ca[0]) / length * shift
        p0 = _edge_point(ba, (cb[0] + nx, cb[1] + ny))
        p1 = _edge_point(bb, (ca[0] + nx, ca[1] + ny))
        p0, p1 = (p0[0] + nx, p0[1] + ny), (p1[0] + nx, p1[1] + ny)
        # Boxes side by side (or one above the other): a straight horizontal (vertical)
        # arrow across the middle of what they share, not a diagonal between centers.
        low, high = max(ba[2], bb[2]), min(ba[2] + ba[4], bb[2] + bb[4])
        if high - low > 12 and (ba[1] + ba[3] < bb[1] or bb[1] + bb[3] < ba[1]):
            yy = (low + high) / 2 + (shift if ca[0] < cb[0] else -shift)
            right = ca[0] < cb[0]
            p0 = (ba[1] + ba[3] if right else ba[1], yy)
            p1 = (bb[1] if right else bb[1] + bb[3], yy)
        low, high = max(ba[1], bb[1]), min(ba[1] + ba[3], bb[1] + bb[3])
        if high - low > 12 and (ba[2] + ba[4] < bb[2] or bb[2] + bb[4] < ba[2]):
            xx = (low + high) / 2 + (shift if ca[1] < cb[1] else -shift)
            down = ca[1] < cb[1]
            p0 = (xx, ba[2] + ba[4] if down else ba[2])
            p1 = (xx, bb[2] if down else bb[2] + bb[4])
        dash = ' stroke-dasharray="5,3"' if kind == "response" else ""
        out.append(
            f'<line x1="{p0[0]:.1f}" y1="{p0[1]:.1f}" x2="{p1[0]:.1f}" y2="{p1[1]:.1f}" '
            f'stroke="{strokes.get(kind, "#555")}" stroke-width="1.3"{dash} '
            f'marker-end="url(#{arrow_id}-{kind if kind in strokes else "request"})"/>'
        )
        if not label:
            continue
        spots = [
            (p0[0] + (p1[0] - p0[0]) * t, p0[1] + (p1[1] - p0[1]) * t)
            for t in (0.5, 0.35, 0.65, 0.25, 0.75)
        ]
        rects = [_text_box(s, label, 10.0) for s in spots]
        rect = next(
            (r for r in rects if not any(_overlap(r, t) for t in taken)), rects[0]
        )
        taken.append(rect)
        labels.append(
            f'<rect x="{rect[0]:.1f}" y="{rect[1]:.1f}" width="{rect[2] - rect[0]:.1f}" '
            f'height="{rect[3] - rect[1]:.1f}" fill="#fff" fill-opacity="0.9"/>'
            f'<text x="{(rect[0] + rect[2]) / 2:.1f}" y="{(rect[1] + rect[3]) / 2 + 3.5:.1f}" '
            f'font-size="10" text-anchor="middle" fill="{strokes.get(kind, "#555")}">'
            f"{escape(label)}</text>"
        )
    for _, x, y, w, h, text, fill in blocks:
        out.append(_box(x, y, w, h, text, fill))
    out.extend(labels)
    if note:
        out.append(
            f'<text x="0" y="{extent_y + 20:.1f}" fill="#555">{escape(note)}</text>'
        )
    out.append("</g></g></svg>")
    return SVG("".join(out))
