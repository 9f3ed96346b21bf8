"""Where the boxes and edges of a graph picture go: the layout, in inches, no drawing.

:func:`graph_layout` places each variable's box and the bends of long edges for
:mod:`fedstruct.drawing.picture`, which draws them.

Layout (deterministic, no Graphviz)
    Each connected component is laid out on its own. When the component's
    oriented edges (``-->`` and ``o->``) form no cycle and make up at least half of
    its edges, it gets a layered drawing in the manner of Sugiyama, Tagawa & Toda
    (1981): every other edge is oriented along a topological order, layers are
    longest paths (sources pulled down next to their children), long edges pass
    through reserved slots in the layers they span, the order within a layer
    follows barycentre sweeps (fewest crossings kept), and positions come from an
    order-preserving least-squares fit to the neighbours (an isotonic regression).
    Any other component is drawn by Kamada & Kawai's (1989) spring layout, scaled
    to the labels and pushed apart where boxes overlap. Components are packed in
    rows, largest first; variables without edges sit in a row of their own below.
    Coordinates are inches, so font, boxes and marks keep their size and the
    figure grows with the graph. Labels are measured with matplotlib's font
    metrics (no figure is made).

Groups (a large graph, drawn as clusters)
    Given groups of variables (the clusters of
    :mod:`fedstruct.drawing.clusters`), each group is laid out as above
    from the edges inside it alone, in a frame headed by its caption; the frames
    are packed in rows, largest first, like components. Edges between groups are
    not laid out: the picture counts them instead of drawing them.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from fedstruct.graphs import ARROW, Edge, Graph

__all__ = [
    "POINTS",
    "Frame",
    "GraphLayout",
    "Pen",
    "Point",
    "bounds",
    "graph_layout",
    "isotonic",
]

#: A point or a size, in inches.
Point = tuple[float, float]
_Box = tuple[float, float, float, float]  # centre x, centre y, half width, half height

POINTS = 72.0  # points per inch; the axes draw one data unit per inch
_NODE_GAP = 0.22  # inches between neighbouring boxes in a layer
_SLOT_WIDTH = 0.12  # inches a long edge takes in a layer it crosses
_LAYER_GAP = 0.62  # inches between layers, at least
_MAX_LAYER_GAP = 1.5
_FLATNESS = 0.5  # wide layered drawings get layers spread to about this height : width
_COMPONENT_GAP = 0.45
_SWEEPS = 24
_PLACEMENT_PASSES = 18
_SLOT_WEIGHT = 6.0
_CLEARANCE = 0.06  # inches a pulled-taut edge keeps from other boxes
_FRAME_PAD = 0.16  # inches between a frame and what it holds
_LINE = 1.3  # a caption's line height, in font sizes


# ==================================================================== sizes
def _font_size(n_nodes: int) -> float:
    """Label size in points: 10 for small graphs, 6.5 from about 60 variables."""
    return float(np.clip(10.5 - 0.065 * n_nodes, 6.5, 10.0))


def _box_sizes(names: Sequence[str], fontsize: float) -> dict[str, Point]:
    """Width and height (inches) of the box around each label."""
    height = (fontsize * 1.25 + 2 * fontsize * 0.35) / POINTS
    return {
        name: (text_width(name, fontsize) + 2 * fontsize * 0.55 / POINTS, height) for name in names
    }


def text_width(text: str, fontsize: float) -> float:
    """The width (inches) of one line of ``text`` at ``fontsize`` points."""
    width, _, _ = _measure().get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False
    )
    return width / POINTS


@functools.cache
def _measure() -> TextToPath:
    return TextToPath()


@dataclass(frozen=True)
class Pen:
    """Sizes of the strokes and marks, in points."""

    linewidth: float
    head: float  # arrowhead mutation scale
    circle: float  # circle mark diameter

    @classmethod
    def for_nodes(cls, n_nodes: int) -> Pen:
        lw = float(np.clip(1.6 - 0.01 * n_nodes, 1.0, 1.6))
        return cls(linewidth=lw, head=7.0 + 3.0 * lw, circle=3.2 + 1.6 * lw)

    @property
    def circle_radius(self) -> float:
        """Outer radius of a circle mark (points), its stroke included."""
        return (self.circle + self.linewidth) / 2

    @property
    def port_spacing(self) -> float:
        """Distance (inches) between the ends of edges that share a side of a box."""
        return (2 * self.circle_radius + 2.0) / POINTS


# =================================================================== layout
@dataclass(frozen=True)
class Frame:
    """A group's frame: its caption (one or more lines, drawn inside its top) and its
    corners ``(x0, y0, x1, y1)`` in inches."""

    caption: str
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class GraphLayout:
    """Where a graph's pieces go, in inches.

    Attributes
    ----------
    positions
        Centre of each variable's box.
    sizes
        Width and height of each variable's box.
    routes
        For edges that pass through layers they do not join: the points the edge
        passes, from ``a`` to ``b`` for the key ``(a, b)`` (and reversed for
        ``(b, a)``). Other edges are straight.
    isolated
        The variables without edges, in the row below the rest.
    fontsize
        Label size in points.
    layered
        The variables drawn in layers; their edges leave and enter at the top and
        bottom of their boxes.
    frames
        With groups: each group's frame, in the groups' order.
    """

    positions: dict[str, Point]
    sizes: dict[str, Point]
    routes: dict[tuple[str, str], list[Point]]
    isolated: tuple[str, ...]
    fontsize: float
    layered: frozenset[str] = frozenset()
    frames: tuple[Frame, ...] = ()

    def route(self, a: str, b: str) -> list[Point]:
        """The points an edge from ``a`` to ``b`` passes between its ends."""
        if (a, b) in self.routes:
            return list(self.routes[(a, b)])
        return list(reversed(self.routes.get((b, a), [])))


@dataclass
class _Block:
    """A laid-out component: positions and routes in local inches."""

    positions: dict[str, Point]
    routes: dict[tuple[str, str], list[Point]]
    layered: frozenset[str] = frozenset()

    def bounds(self, sizes: Mapping[str, Point]) -> tuple[float, float, float, float]:
        """The smallest box around every variable's box and every route point."""
        return bounds(self.positions, sizes, itertools.chain(*self.routes.values()))

    def shifted(self, dx: float, dy: float) -> _Block:
        return _Block(
            {n: (x + dx, y + dy) for n, (x, y) in self.positions.items()},
            {k: [(x + dx, y + dy) for x, y in pts] for k, pts in self.routes.items()},
            self.layered,
        )


def bounds(
    positions: Mapping[str, Point], sizes: Mapping[str, Point], points: Iterable[Point] = ()
) -> tuple[float, float, float, float]:
    """The smallest box around the variables' boxes and ``points``."""
    corners = [(x - sizes[n][0] / 2, y - sizes[n][1] / 2) for n, (x, y) in positions.items()]
    corners += [(x + sizes[n][0] / 2, y + sizes[n][1] / 2) for n, (x, y) in positions.items()]
    corners += list(points)
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def graph_layout(
    graph: Graph,
    groups: Sequence[Sequence[str]] | None = None,
    captions: Sequence[str] = (),
) -> GraphLayout:
    """Lay ``graph`` out for :func:`~fedstruct.drawing.picture.graph_figure`.

    Deterministic; see the module notes.

    Parameters
    ----------
    graph
        The graph.
    groups
        Disjoint groups of variables with edges, each laid out on its own in a frame
        (edges between groups are left out); ``None``: the whole graph.
    captions
        Each group's caption (lines separated by newlines).
    """
    sized = graph.n_nodes if groups is None else max((len(g) for g in groups), default=1)
    fontsize = _font_size(sized)
    sizes = _box_sizes(graph.names, fontsize)
    spacing = Pen.for_nodes(graph.n_nodes).port_spacing
    frames: tuple[Frame, ...] = ()
    if groups is None:
        packed = _components(graph, sizes, spacing)
    else:
        packed, frames = _framed(graph, groups, captions, sizes, spacing, fontsize)
    degree = graph.adjacency().sum(axis=0)
    isolated = tuple(n for n, d in zip(graph.names, degree, strict=True) if d == 0)
    positions = dict(packed.positions)
    positions.update(_isolated_row(isolated, sizes, packed, bool(packed.positions)))
    return GraphLayout(positions, sizes, packed.routes, isolated, fontsize, packed.layered, frames)


def _components(graph: Graph, sizes: dict[str, Point], spacing: float) -> _Block:
    """Every connected component of two or more variables laid out, packed in rows
    (largest first); ``sizes`` is updated with the widened boxes."""
    skeleton = nx.Graph()
    skeleton.add_nodes_from(graph.names)
    skeleton.add_edges_from((e.a, e.b) for e in graph.edges())
    order = {name: i for i, name in enumerate(graph.names)}
    components = sorted(
        (sorted(c, key=order.__getitem__) for c in nx.connected_components(skeleton) if len(c) > 1),
        key=lambda c: (-len(c), order[c[0]]),
    )
    blocks = []
    for nodes in components:
        block, widened = _component_block(graph, nodes, sizes, spacing)
        blocks.append(block)
        sizes.update(widened)
    return _pack(blocks, sizes)[0]


def _framed(
    graph: Graph,
    groups: Sequence[Sequence[str]],
    captions: Sequence[str],
    sizes: dict[str, Point],
    spacing: float,
    fontsize: float,
) -> tuple[_Block, tuple[Frame, ...]]:
    """Each group laid out from its own edges, framed under its caption; frames packed."""
    captions = [*captions, *([""] * (len(groups) - len(captions)))]
    blocks, margins = [], []
    for names, caption in zip(groups, captions, strict=True):
        block = _components(graph.restrict(names), sizes, spacing)
        x0, _, x1, _ = block.bounds(sizes)
        lines = caption.split("\n") if caption else []
        text = max((text_width(line, fontsize) for line in lines), default=0.0)
        head = len(lines) * _LINE * fontsize / POINTS
        wider = max(0.0, text - (x1 - x0))
        blocks.append(block)
        margins.append((_FRAME_PAD, _FRAME_PAD, _FRAME_PAD + wider, _FRAME_PAD + head))
    packed, placed = _pack(blocks, sizes, margins)
    frames = tuple(Frame(caption, box) for caption, box in zip(captions, placed, strict=True))
    return packed, frames


def _component_block(
    graph: Graph, nodes: list[str], sizes: Mapping[str, Point], spacing: float
) -> tuple[_Block, dict[str, Point]]:
    """A component's layout and its boxes, widened where many edges share a side."""
    members = set(nodes)
    edges = [e for e in graph.edges() if e.a in members]
    order = _layer_order(nodes, edges)
    if order is None:
        degree = {n: sum(n in (e.a, e.b) for e in edges) for n in nodes}
        widened = _widened(sizes, {n: math.ceil(d / 2) for n, d in degree.items()}, spacing)
        return _spread_block(nodes, edges, widened), widened
    rank = {name: i for i, name in enumerate(order)}
    arcs = [(e.a, e.b) if rank[e.a] < rank[e.b] else (e.b, e.a) for e in edges]
    ins = {n: sum(b == n for _, b in arcs) for n in nodes}
    outs = {n: sum(a == n for a, _ in arcs) for n in nodes}
    widened = _widened(sizes, {n: max(ins[n], outs[n]) for n in nodes}, spacing)
    return _layered_block(order, arcs, widened), widened


def _widened(
    sizes: Mapping[str, Point], ends: Mapping[str, int], spacing: float
) -> dict[str, Point]:
    """Boxes wide enough for ``ends[name]`` edge ends ``spacing`` apart on one side."""
    return {
        name: (max(sizes[name][0], (count - 1) * spacing + 0.1), sizes[name][1])
        for name, count in ends.items()
    }


def _layer_order(nodes: list[str], edges: list[Edge]) -> list[str] | None:
    """A topological order of the oriented edges, or ``None`` if a layered drawing does not fit."""
    oriented = [arc for arc in map(_arc, edges) if arc is not None]
    if 2 * len(oriented) < len(edges):
        return None
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes)
    dag.add_edges_from(oriented)
    if not nx.is_directed_acyclic_graph(dag):
        return None
    rank = {name: i for i, name in enumerate(nodes)}
    return list(nx.lexicographical_topological_sort(dag, key=rank.__getitem__))


def _arc(edge: Edge) -> tuple[str, str] | None:
    """An oriented edge (``-->`` or ``o->``, either way round) as (tail end, head end)."""
    if edge.mark_b == ARROW and edge.mark_a != ARROW:
        return edge.a, edge.b
    if edge.mark_a == ARROW and edge.mark_b != ARROW:
        return edge.b, edge.a
    return None


# ------------------------------------------------------------ layered layout
@dataclass
class _Layered:
    """A layered graph with one slot per long edge in every layer it crosses."""

    layer: list[int]
    width: list[float]
    up: list[list[int]]
    down: list[list[int]]
    chains: dict[tuple[str, str], list[int]]
    span: dict[int, tuple[int, int, float]]  # slot -> (edge start, edge end, fraction)


def _layered_block(
    order: list[str], arcs: list[tuple[str, str]], sizes: Mapping[str, Point]
) -> _Block:
    """Layers top to bottom along ``order``; every arc ``(a, b)`` points down."""
    layered = _with_slots(order, arcs, _layers(order, arcs), sizes)
    layers = _order_layers(layered, len(order))
    xs = _place_x(layers, layered)
    width = max(xs[v] + layered.width[v] / 2 for v in xs) - min(
        xs[v] - layered.width[v] / 2 for v in xs
    )
    ys = _layer_heights(layers, width, order, sizes)
    point = {v: (xs[v], ys[layered.layer[v]]) for layer in layers for v in layer}
    positions = {name: point[i] for i, name in enumerate(order)}
    boxes = {
        name: (x, y, sizes[name][0] / 2 + _CLEARANCE, sizes[name][1] / 2 + _CLEARANCE)
        for name, (x, y) in positions.items()
    }
    routes = {}
    for (a, b), chain in layered.chains.items():
        others = [box for name, box in boxes.items() if name not in (a, b)]
        via = _pulled_taut([positions[a], *(point[v] for v in chain), positions[b]], others)
        if via:
            routes[(a, b)] = via
    return _Block(positions, routes, frozenset(positions))


def _pulled_taut(points: list[Point], boxes: Sequence[_Box]) -> list[Point]:
    """The inner points a long edge still needs once pulled taut.

    From each kept point the edge jumps to the farthest later point it can reach in a
    straight line without crossing one of ``boxes``.
    """
    kept, here = [], 0
    while here < len(points) - 1:
        reach = next(
            j
            for j in range(len(points) - 1, here, -1)
            if j == here + 1 or not any(_crosses(points[here], points[j], box) for box in boxes)
        )
        if reach < len(points) - 1:
            kept.append(points[reach])
        here = reach
    return kept


def _crosses(p: Point, q: Point, box: _Box) -> bool:
    """Whether the segment ``p``–``q`` meets the box (centre, half width, half height)."""
    cx, cy, hw, hh = box
    t0, t1 = 0.0, 1.0
    for start, delta, low, high in (
        (p[0], q[0] - p[0], cx - hw, cx + hw),
        (p[1], q[1] - p[1], cy - hh, cy + hh),
    ):
        if delta == 0.0:
            if not low <= start <= high:
                return False
            continue
        a, b = (low - start) / delta, (high - start) / delta
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
        if t0 > t1:
            return False
    return True


def _layers(order: list[str], arcs: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layers; a source moves down to just above its highest child."""
    layer = dict.fromkeys(order, 0)
    parents: dict[str, list[str]] = {n: [] for n in order}
    children: dict[str, list[str]] = {n: [] for n in order}
    for a, b in arcs:
        parents[b].append(a)
        children[a].append(b)
    for name in order:
        if parents[name]:
            layer[name] = 1 + max(layer[p] for p in parents[name])
    for name in order:
        if not parents[name] and children[name]:
            layer[name] = min(layer[c] for c in children[name]) - 1
    return layer


def _with_slots(
    order: list[str],
    arcs: list[tuple[str, str]],
    layer: Mapping[str, int],
    sizes: Mapping[str, Point],
) -> _Layered:
    """The layered graph: variables ``0 .. n-1`` in ``order``, then one slot per layer
    that a long arc crosses, chained so that every arc joins adjacent layers."""
    index = {name: i for i, name in enumerate(order)}
    g = _Layered(
        layer=[layer[n] for n in order],
        width=[sizes[n][0] for n in order],
        up=[[] for _ in order],
        down=[[] for _ in order],
        chains={},
        span={},
    )
    for a, b in arcs:
        chain = []
        for level in range(layer[a] + 1, layer[b]):
            g.layer.append(level)
            g.width.append(_SLOT_WIDTH)
            g.up.append([])
            g.down.append([])
            chain.append(len(g.layer) - 1)
            fraction = (level - layer[a]) / (layer[b] - layer[a])
            g.span[chain[-1]] = (index[a], index[b], fraction)
        g.chains[(a, b)] = chain
        path = [index[a], *chain, index[b]]
        for u, v in itertools.pairwise(path):
            g.down[u].append(v)
            g.up[v].append(u)
    return g


def _order_layers(g: _Layered, n_real: int) -> list[list[int]]:
    """Barycentre sweeps down and up; the order with the fewest crossings wins."""
    depth = max(g.layer) + 1
    layers: list[list[int]] = [[] for _ in range(depth)]
    for v in range(n_real):
        layers[g.layer[v]].append(v)
    for v in range(n_real, len(g.layer)):  # slots after the variables; the sweeps sort them
        layers[g.layer[v]].append(v)
    best, best_crossings = [list(layer) for layer in layers], _crossings(layers, g)
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        levels = range(1, depth) if downward else range(depth - 2, -1, -1)
        for level in levels:
            ref = layers[level - 1] if downward else layers[level + 1]
            layers[level] = _by_barycentre(layers[level], ref, g.up if downward else g.down)
        crossings = _crossings(layers, g)
        if crossings < best_crossings:
            best, best_crossings = [list(layer) for layer in layers], crossings
    return best


def _by_barycentre(layer: list[int], ref: list[int], neighbours: list[list[int]]) -> list[int]:
    """``layer`` sorted by the mean position of each member's neighbours in ``ref``."""
    where = {v: i for i, v in enumerate(ref)}
    keys = {}
    for i, v in enumerate(layer):
        near = [where[u] for u in neighbours[v]]
        keys[v] = (sum(near) / len(near), i) if near else (float(i) * len(ref) / len(layer), i)
    return sorted(layer, key=keys.__getitem__)


def _crossings(layers: list[list[int]], g: _Layered) -> int:
    """How many pairs of arcs between adjacent layers cross."""
    total = 0
    for top, bottom in itertools.pairwise(layers):
        where = {v: i for i, v in enumerate(bottom)}
        pairs = np.array(
            [(i, where[v]) for i, u in enumerate(top) for v in g.down[u]], dtype=float
        ).reshape(-1, 2)
        da = pairs[:, 0][:, None] - pairs[:, 0][None, :]
        db = pairs[:, 1][:, None] - pairs[:, 1][None, :]
        total += int(np.count_nonzero(da * db < 0)) // 2
    return total


def _place_x(layers: list[list[int]], g: _Layered) -> dict[int, float]:
    """Order-keeping positions pulled towards the neighbours' mean, pass after pass.

    A slot is pulled onto the straight line between its edge's ends, so that a long
    edge runs straight where no variable stands in its way.
    """
    x: dict[int, float] = {}
    for layer in layers:
        x.update(zip(layer, _packed(layer, g.width), strict=True))
    for step in range(_PLACEMENT_PASSES):
        mode = step % 3
        levels = range(len(layers)) if mode != 1 else range(len(layers) - 1, -1, -1)
        for level in levels:
            layer = layers[level]
            desired = []
            for v in layer:
                if v in g.span:
                    a, b, t = g.span[v]
                    desired.append((1 - t) * x[a] + t * x[b])
                    continue
                near = (g.up[v], g.down[v], g.up[v] + g.down[v])[mode]
                desired.append(sum(x[u] for u in near) / len(near) if near else x[v])
            x.update(zip(layer, _fit_in_order(desired, layer, g.width), strict=True))
    return x


def _separations(layer: list[int], widths: Sequence[float]) -> list[float]:
    """Least centre distance from each member of a layer to the one before it (0 first)."""
    seps = [0.0]
    for u, v in itertools.pairwise(layer):
        gap = _NODE_GAP if widths[u] > _SLOT_WIDTH and widths[v] > _SLOT_WIDTH else _NODE_GAP / 2
        seps.append((widths[u] + widths[v]) / 2 + gap)
    return seps


def _packed(layer: list[int], widths: Sequence[float]) -> list[float]:
    """A layer's members side by side at their least separations, centred on 0."""
    offsets = np.cumsum(_separations(layer, widths))
    return list(offsets - offsets[-1] / 2)


def _fit_in_order(desired: list[float], layer: list[int], widths: Sequence[float]) -> list[float]:
    """Weighted least-squares positions closest to ``desired`` that keep order and separation.

    A long edge's slot weighs more than a variable, so long edges run straight.
    """
    offsets = np.cumsum(_separations(layer, widths))
    weights = [_SLOT_WEIGHT if widths[v] <= _SLOT_WIDTH else 1.0 for v in layer]
    fitted = isotonic(list(np.asarray(desired) - offsets), weights)
    return list(np.asarray(fitted) + offsets)


def isotonic(values: Sequence[float], weights: Sequence[float] | None = None) -> list[float]:
    """The non-decreasing sequence closest to ``values`` in weighted least squares.

    Pool adjacent violators: merge neighbouring blocks while their means decrease.
    """
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for value, weight in zip(values, weights or [1.0] * len(values), strict=True):
        blocks.append([value * weight, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight_sum, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += weight_sum
            blocks[-1][2] += count
    out: list[float] = []
    for total, weight_sum, count in blocks:
        out.extend([total / weight_sum] * int(count))
    return out


def _layer_heights(
    layers: list[list[int]], width: float, order: list[str], sizes: Mapping[str, Point]
) -> list[float]:
    """The y of each layer's middle, top layer at 0.

    Layers are at least ``_LAYER_GAP`` apart, more when the drawing is wide (up to
    ``_MAX_LAYER_GAP``), so that edges between far-apart variables do not run flat.
    """
    heights = [
        max((sizes[order[v]][1] for v in layer if v < len(order)), default=0.0) for layer in layers
    ]
    gaps = max(1, len(layers) - 1)
    gap = min(_MAX_LAYER_GAP, max(_LAYER_GAP, (_FLATNESS * width - sum(heights)) / gaps))
    ys, y = [], 0.0
    for height in heights:
        ys.append(y - height / 2)
        y -= height + gap
    return ys


# ------------------------------------------------------------ spring layout
def _spread_block(nodes: list[str], edges: list[Edge], sizes: Mapping[str, Point]) -> _Block:
    """Kamada-Kawai positions scaled to the labels, overlapping boxes pushed apart."""
    skeleton = nx.Graph()
    skeleton.add_nodes_from(nodes)
    skeleton.add_edges_from((e.a, e.b) for e in edges)
    raw = nx.kamada_kawai_layout(skeleton) if len(nodes) > 2 else nx.circular_layout(skeleton)
    xy = np.array([raw[n] for n in nodes], dtype=float)
    index = {n: i for i, n in enumerate(nodes)}
    lengths = [np.linalg.norm(xy[index[e.a]] - xy[index[e.b]]) for e in edges]
    wh = np.array([sizes[n] for n in nodes])
    target = max(1.1, 1.35 * float(np.mean(wh[:, 0])))
    xy = _principal_axes(xy) * target / max(float(np.median(lengths)), 1e-9)
    xy = _remove_overlaps(xy, wh)
    return _Block({n: (float(x), float(y)) for n, (x, y) in zip(nodes, xy, strict=True)}, {})


def _principal_axes(xy: np.ndarray) -> np.ndarray:
    """Rotate points so that their widest spread is horizontal (signs fixed, deterministic)."""
    centred = xy - xy.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    turned = centred @ axes.T
    for k in range(turned.shape[1]):
        if turned[int(np.argmax(np.abs(turned[:, k]))), k] < 0:
            turned[:, k] = -turned[:, k]
    return turned


def _remove_overlaps(xy: np.ndarray, wh: np.ndarray, passes: int = 200) -> np.ndarray:
    """Push overlapping boxes apart along the axis where they overlap least."""
    xy = xy.copy()
    pad = np.array([_NODE_GAP, _NODE_GAP * 0.8])
    need = (wh[:, None, :] + wh[None, :, :]) / 2 + pad
    n = len(xy)
    tie = np.sign(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(float)
    for _ in range(passes):
        delta = xy[:, None, :] - xy[None, :, :]
        overlap = need - np.abs(delta)
        hit = (overlap[..., 0] > 0) & (overlap[..., 1] > 0)
        np.fill_diagonal(hit, False)
        if not hit.any():
            break
        axis = np.argmin(overlap, axis=2)
        sign = np.where(delta != 0, np.sign(delta), tie[..., None])
        push = np.zeros_like(delta)
        for k in (0, 1):
            chosen = hit & (axis == k)
            push[..., k] = np.where(chosen, sign[..., k] * overlap[..., k] / 2, 0.0)
        xy += 0.5 * push.sum(axis=1)
    return xy


# ----------------------------------------------------------------- packing
def _pack(
    blocks: list[_Block],
    sizes: Mapping[str, Point],
    margins: Sequence[tuple[float, float, float, float]] | None = None,
) -> tuple[_Block, list[tuple[float, float, float, float]]]:
    """Blocks in rows, in order (largest first), each row's tops aligned; with
    ``margins`` (left, bottom, right, top) around each block. Returns the packed block
    and where each block's box, margins included, went."""
    if not blocks:
        return _Block({}, {}), []
    margins = margins or [(0.0, 0.0, 0.0, 0.0)] * len(blocks)
    bounds = [
        (x0 - left, y0 - bottom, x1 + right, y1 + top)
        for (x0, y0, x1, y1), (left, bottom, right, top) in zip(
            (b.bounds(sizes) for b in blocks), margins, strict=True
        )
    ]
    dims = [(x1 - x0, y1 - y0) for x0, y0, x1, y1 in bounds]
    row_width = max(max(w for w, _ in dims), 1.5 * math.sqrt(sum(w * h for w, h in dims)))
    out = _Block({}, {}, frozenset().union(*(b.layered for b in blocks)))
    placed = []
    x, y, row_height = 0.0, 0.0, 0.0
    for block, (x0, _, _, y1), (w, h) in zip(blocks, bounds, dims, strict=True):
        if x > 0 and x + w > row_width:
            x, y, row_height = 0.0, y - row_height - _COMPONENT_GAP, 0.0
        moved = block.shifted(x - x0, y - y1)
        out.positions.update(moved.positions)
        out.routes.update(moved.routes)
        placed.append((x, y - h, x + w, y))
        x += w + _COMPONENT_GAP
        row_height = max(row_height, h)
    return out, placed


def _isolated_row(
    names: tuple[str, ...], sizes: Mapping[str, Point], packed: _Block, below: bool
) -> dict[str, Point]:
    """Boxes for variables without edges, left to right (wrapping) under the rest."""
    if not names:
        return {}
    if below:
        x0, y0, x1, _ = packed.bounds(sizes)
        width, top = max(x1 - x0, 4.0), y0 - _COMPONENT_GAP - 0.2
    else:
        mean_width = sum(sizes[n][0] for n in names) / len(names)
        x0, width, top = 0.0, max(4.0, 1.8 * math.sqrt(len(names)) * mean_width), 0.0
    positions, x, y = {}, x0, top
    for name in names:
        w, h = sizes[name]
        if x > x0 and x + w > x0 + width:
            x, y = x0, y - h - _NODE_GAP
        positions[name] = (x + w / 2, y - h / 2)
        x += w + _NODE_GAP
    return positions
